import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Pusher typed APIs: event names, counts, the user scope, the watchlist")
struct PusherTypedAPITests {
    @Test("event-name constants are the names the machine delivers, per vendor")
    func constants() async {
        #expect(PusherEvents.pusher.memberAdded == "pusher:member_added")
        #expect(PusherEvents.bird.memberRemoved == "bird:member_removed")
        #expect(PusherEvents.pusher.subscriptionCount == "pusher:subscription_count")
        #expect(PusherEvents.bird.subscriptionCount == "bird:connection_count")
        #expect(PusherVendor.bird.events == PusherEvents.bird)
        // Checked against what the machine actually delivers, not against the strings above.
        var driver = PusherDriver()
        driver.establish()
        let names = [
            driver.receive(#"{"event":"pusher:error","data":{"message":"m"}}"#).delivered.first?.name,
            driver.receive(#"{"event":"pusher_internal:subscription_count","channel":"c","data":"{\"subscription_count\":2}"}"#).delivered.first?.name,
            driver.receive(#"{"event":"pusher:cache_miss","channel":"cache-c","data":"{}"}"#).delivered.first?.name,
            driver.receive(##"{"event":"pusher_internal:watchlist_events","channel":"#server-to-user-7","data":"{\"events\":[]}"}"##).delivered.first?.name,
        ]
        let events = PusherEvents.pusher
        #expect(names == [events.error, events.subscriptionCount, events.cacheMiss, events.watchlistEvents])
        _ = await driver.runWork(driver.handle(.subscribe("private-x")))
        let refused = driver.receive(#"{"event":"pusher_internal:subscription_error","channel":"private-x","data":"{}"}"#)
        #expect(refused.delivered.map(\.name) == [events.subscriptionError])
    }

    @Test("subscription counts: Pusher's object, Bird's number or object; other events give nil")
    func countParsing() {
        func event(_ name: String, _ data: JSONValue) -> RealtimeEvent { RealtimeEvent(channel: "c", name: name, data: data) }
        #expect(PusherEvents.subscriptionCount(event("pusher:subscription_count", ["subscription_count": 3])) == 3)
        #expect(PusherEvents.subscriptionCount(event("bird:connection_count", 5)) == 5)
        #expect(PusherEvents.subscriptionCount(event("bird:connection_count", ["connection_count": 6])) == 6)
        #expect(PusherEvents.subscriptionCount(event("pusher:member_added", ["subscription_count": 3])) == nil)
        #expect(PusherEvents.subscriptionCount(event("pusher:subscription_count", "many")) == nil)
    }

    @Test("watchlist: one change per entry, ids as strings, unknown names skipped, other events empty")
    func watchlistParsing() {
        let event = RealtimeEvent(channel: "#server-to-user-7", name: "pusher:watchlist_events", data: [
            "events": [["name": "online", "user_ids": ["1", 2]], ["name": "away", "user_ids": ["3"]],
                       ["name": "offline", "user_ids": ["4"]]]])
        #expect(PusherWatchlistEvent.parse(event) == [PusherWatchlistEvent(kind: .online, userIDs: ["1", "2"]),
                                                      PusherWatchlistEvent(kind: .offline, userIDs: ["4"])])
        #expect(PusherWatchlistEvent.parse(RealtimeEvent(channel: nil, name: "online", data: [:])).isEmpty)
    }

    @Test("over a session: channel counts, user-scope events only from the user channel, watchlist changes")
    func overSession() async throws {
        let harness = PusherHarness()
        let news = harness.session.channel("news")
        let counts = Locked<[Int]>([])
        try news.onSubscriptionCount { count in counts.withLock { $0.append(count) } }
        var countStream = try news.subscriptionCounts.makeAsyncIterator()
        let notices = Locked<[JSONValue]>([])
        try harness.session.user.on("notice") { event in notices.withLock { $0.append(event.data) } }
        let all = Locked<[String]>([])
        try harness.session.user.onAny { event in all.withLock { $0.append(event.name) } }
        let changes = Locked<[PusherWatchlistEvent]>([])
        let watchID = try harness.session.user.onWatchlist { change in changes.withLock { $0.append(change) } }
        var watchStream = try harness.session.user.watchlist.makeAsyncIterator()
        try await harness.session.connect()
        _ = try await news.subscribed()
        #expect(try await harness.session.user.signIn().id == "7")
        let peer = harness.peers[0]
        peer.send(text: #"{"event":"pusher_internal:subscription_count","channel":"news","data":"{\"subscription_count\":4}"}"#)
        #expect(counts.withLock { $0 } == [4])
        #expect(await countStream.next() == 4)

        // The same event name on an ordinary channel is not the user's.
        peer.send(text: #"{"event":"notice","channel":"news","data":"{\"n\":0}"}"#)
        peer.send(text: ##"{"event":"notice","channel":"#server-to-user-7","data":"{\"n\":1}"}"##)
        #expect(notices.withLock { $0 } == [["n": 1]])
        peer.send(text: ##"{"event":"pusher_internal:watchlist_events","channel":"#server-to-user-7","data":"{\"events\":[{\"name\":\"online\",\"user_ids\":[\"8\"]}]}"}"##)
        #expect(changes.withLock { $0 } == [PusherWatchlistEvent(kind: .online, userIDs: ["8"])])
        #expect(await watchStream.next() == PusherWatchlistEvent(kind: .online, userIDs: ["8"]))
        #expect(all.withLock { $0 } == ["notice", "pusher:watchlist_events"])
        try harness.session.user.off(id: watchID)
        peer.send(text: ##"{"event":"pusher_internal:watchlist_events","channel":"#server-to-user-7","data":"{\"events\":[{\"name\":\"offline\",\"user_ids\":[\"8\"]}]}"}"##)
        #expect(changes.withLock { $0.count } == 1)
        #expect(await watchStream.next() == PusherWatchlistEvent(kind: .offline, userIDs: ["8"]))
    }
}
