import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// Every stream of the Pusher extensions is bounded: the user's events by the delivery budget (like
/// `session.events`), the others by a 1,024-element buffer whose documented end is kept.
@Suite("Pusher streams: back-pressured or bounded")
struct PusherStreamTests {
    /// More than the 1,024 an observer stream holds.
    static let overflow = 1_100

    static func userEvent(_ name: String, _ n: Int) -> String {
        ##"{"event":"\##(name)","channel":"#server-to-user-7","data":"{\"n\":\##(n)}"}"##
    }

    static func watchlist(_ user: String) -> String {
        ##"{"event":"pusher_internal:watchlist_events","channel":"#server-to-user-7","data":"{\"events\":[{\"name\":\"online\",\"user_ids\":[\"\##(user)\"]}]}"}"##
    }

    @Test("user.events() is back-pressured: a consumer that falls behind pauses reading; other channels cost it nothing")
    func userEventsBackPressure() async throws {
        let harness = PusherHarness(options: { $0.deliveryHighWatermark = 4 })
        try await harness.session.connect()
        _ = try await harness.session.channel("news").subscribed()
        _ = try await harness.session.signIn()
        let notices = try harness.session.user.events("notice")
        let peer = harness.peers[0]
        // The same name on an ordinary channel is not the user's: not in the stream, not in the budget.
        for n in 0..<8 { peer.send(text: #"{"event":"notice","channel":"news","data":"{\"n\":\#(n)}"}"#) }
        #expect(harness.session.deliveryBacklog.events == 0)
        #expect(!peer.isReadingPaused)

        for n in 0..<6 { peer.send(text: Self.userEvent("notice", n)) }
        #expect(peer.isReadingPaused)
        #expect(harness.session.deliveryBacklog.events == 6)
        var iterator = notices.makeAsyncIterator()
        for n in 0..<4 { #expect(await iterator.next()?.data == ["n": .integer(Int64(n))]) }
        #expect(!peer.isReadingPaused)
        #expect(harness.session.deliveryBacklog.events == 2)
        // Nothing was dropped while reading was paused.
        for n in 4..<6 { #expect(await iterator.next()?.data == ["n": .integer(Int64(n))]) }
    }

    @Test("roster.updates keeps the newest 1,024 rosters: the oldest are dropped, the current one arrives")
    func rosterUpdatesKeepNewest() async throws {
        let harness = PusherHarness()
        let roster = try harness.session.presence("presence-room")
        let updates = roster.updates
        try await harness.session.connect()
        await eventually("members") { roster.count == 2 }
        for user in 0..<Self.overflow {
            harness.peers[0].send(text: #"{"event":"pusher_internal:member_added","channel":"presence-room","data":"{\"user_id\":\"u\#(user)\"}"}"#)
        }
        let current = roster.count
        #expect(current == 2 + Self.overflow)
        var counts: [Int] = []
        for await members in updates {
            counts.append(members.count)
            if counts.count == observerStreamLimit { break }
        }
        // One roster per change, the newest 1,024 of them, in order, ending with the current one.
        #expect(counts == Array((current - observerStreamLimit + 1)...current))
    }

    @Test("subscriptionCounts keeps the newest 1,024 counts")
    func subscriptionCountsKeepNewest() async throws {
        let harness = PusherHarness()
        let news = harness.session.channel("news")
        let counts = try news.subscriptionCounts
        try await harness.session.connect()
        _ = try await news.subscribed()
        for count in 1...Self.overflow {
            harness.peers[0].send(text: #"{"event":"pusher_internal:subscription_count","channel":"news","data":"{\"subscription_count\":\#(count)}"}"#)
        }
        var seen: [Int] = []
        for await count in counts {
            seen.append(count)
            if seen.count == observerStreamLimit { break }
        }
        #expect(seen == Array((Self.overflow - observerStreamLimit + 1)...Self.overflow))
    }

    @Test("user.watchlist keeps the oldest 1,024 changes and drops later ones until the consumer catches up")
    func watchlistKeepsOldest() async throws {
        let harness = PusherHarness()
        try await harness.session.connect()
        _ = try await harness.session.signIn()
        var changes = try harness.session.user.watchlist.makeAsyncIterator()
        for user in 0..<Self.overflow { harness.peers[0].send(text: Self.watchlist("u\(user)")) }
        for user in 0..<observerStreamLimit {
            #expect(await changes.next()?.userIDs == ["u\(user)"])
        }
        // The changes past the bound were dropped: the next one is the first sent after catching up.
        harness.peers[0].send(text: Self.watchlist("late"))
        #expect(await changes.next()?.userIDs == ["late"])
    }
}
