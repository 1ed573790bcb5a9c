import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Pusher presence: members as values")
struct PusherMembersTests {
    static func event(_ name: String, _ data: JSONValue) -> RealtimeEvent {
        RealtimeEvent(channel: "presence-room", name: name, data: data)
    }

    @Test("apply says what changed; me carries its info; ids and members are strings; info decodes")
    func applyAndRead() throws {
        var members = PusherMembers()
        let snapshot = Self.event("pusher:subscription_succeeded", [
            "presence": ["ids": ["1", "7"], "hash": ["1": ["name": "Zed"], "7": ["name": "Ann", "age": 30]], "count": 2],
            "me": "7"])
        #expect(members.apply(snapshot) == .replaced)
        #expect(members.myID == "7")
        #expect(members.me == PresenceMember(id: "7", info: ["name": "Ann", "age": 30]))
        #expect(members.count == 2)
        #expect(members.all.map(\.id) == ["1", "7"])
        struct Profile: Decodable, Equatable { var name: String; var age: Int? }
        #expect(try members.me?.info(as: Profile.self) == Profile(name: "Ann", age: 30))
        #expect(throws: DecodingError.self) { try PresenceMember(id: "x", info: "text").info(as: Profile.self) }

        let added = Self.event("pusher:member_added", ["user_id": "9", "user_info": ["name": "Bo"]])
        #expect(members.apply(added) == .added(PresenceMember(id: "9", info: ["name": "Bo"])))
        #expect(members.member(id: "9")?.info == ["name": "Bo"])
        let removed = Self.event("pusher:member_removed", ["user_id": "1"])
        #expect(members.apply(removed) == .removed(PresenceMember(id: "1", info: ["name": "Zed"])))
        // Removing someone who is not here, or an unrelated event, changes nothing.
        #expect(members.apply(removed) == nil)
        #expect(members.apply(Self.event("client-typing", [:])) == nil)
        #expect(members.ids == ["7", "9"])
        #expect(members.member(id: "1") == nil)
    }

    @Test("Bird: member_id/member_info, and myID from the snapshot's me")
    func bird() {
        var members = PusherMembers()
        members.apply(Self.event("bird:subscription_succeeded", [
            "presence": ["ids": ["me", "you"], "hash": ["me": ["m": 1]], "count": 2], "me": "me"]))
        #expect(members.myID == "me")
        #expect(members.me?.info == ["m": 1])
        #expect(members.member(id: "you") == PresenceMember(id: "you", info: .null))
        #expect(members.apply(Self.event("bird:member_added", ["member_id": "new", "member_info": ["m": 3]]))
                == .added(PresenceMember(id: "new", info: ["m": 3])))
        #expect(members.apply(Self.event("bird:member_removed", ["member_id": "you"]))
                == .removed(PresenceMember(id: "you")))
        #expect(members.ids == ["me", "new"])
    }
}

@Suite("Pusher presence: the roster over a session")
struct PusherRosterTests {
    static let added = #"{"event":"pusher_internal:member_added","channel":"presence-room","data":"{\"user_id\":3,\"user_info\":{\"name\":\"Cy\"}}"}"#
    static let removed = #"{"event":"pusher_internal:member_removed","channel":"presence-room","data":"{\"user_id\":\"1\"}"}"#

    @Test("memberAdded/memberRemoved handlers and the roster survive removeAllHandlers and off(event); app handlers do not")
    func survivesRemoveAllHandlers() async throws {
        let harness = PusherHarness()
        let roster = try harness.session.presence("presence-room")
        let joined = Locked<[PresenceMember]>([])
        let left = Locked<[PresenceMember]>([])
        roster.onMemberAdded { member in joined.withLock { $0.append(member) } }
        roster.onMemberRemoved { member in left.withLock { $0.append(member) } }
        let appSaw = Locked(0)
        let room = harness.session.channel("presence-room")
        room.on("pusher:member_added") { _ in appSaw.withLock { $0 += 1 } }
        try await harness.session.connect()
        await eventually("members") { roster.count == 2 }
        #expect(roster.myID == "7")
        #expect(roster.me == PresenceMember(id: "7", info: ["name": "Ann"]))

        harness.session.removeAllHandlers()
        room.removeAllHandlers()
        harness.session.off("pusher:member_added")
        room.off("pusher:member_added")
        harness.peers[0].send(text: Self.added)
        harness.peers[0].send(text: Self.removed)
        #expect(joined.withLock { $0 } == [PresenceMember(id: "3", info: ["name": "Cy"])])
        #expect(left.withLock { $0 } == [PresenceMember(id: "1", info: ["name": "Zed"])])
        #expect(roster.members.ids == ["3", "7"])
        #expect(appSaw.withLock { $0 } == 0)

        // The roster still resets on a drop and refills after the reconnect: its state observer survived too.
        harness.peers[0].close(code: 4100, reason: "over capacity")
        await eventually("reset") { roster.count == 0 && !harness.session.state.isConnected }
        harness.clock.advance(by: .seconds(1))
        await eventually("refilled") { roster.count == 2 }
    }

    @Test("roster.off(id:) stops one member handler and leaves the other")
    func offStopsOne() async throws {
        let harness = PusherHarness()
        let roster = try harness.session.presence("presence-room")
        let first = Locked(0)
        let second = Locked(0)
        let id = roster.onMemberAdded { _ in first.withLock { $0 += 1 } }
        roster.onMemberAdded { _ in second.withLock { $0 += 1 } }
        try await harness.session.connect()
        await eventually("members") { roster.count == 2 }
        roster.off(id: id)
        harness.peers[0].send(text: Self.added)
        #expect(first.withLock { $0 } == 0)
        #expect(second.withLock { $0 } == 1)
    }

    @Test("updates: the roster now, then every change; the sequence ends when the roster is released")
    func updatesSequence() async throws {
        let harness = PusherHarness()
        var roster: PusherPresenceRoster? = try harness.session.presence("presence-room")
        var updates = try #require(roster?.updates.makeAsyncIterator())
        try await harness.session.connect()
        await eventually("members") { roster?.count == 2 }
        harness.peers[0].send(text: Self.added)
        #expect(await updates.next()?.count == 0)
        let snapshot = await updates.next()
        #expect(snapshot?.ids == ["1", "7"])
        #expect(snapshot?.myID == "7")
        #expect(await updates.next()?.ids == ["1", "3", "7"])
        weak let released = roster
        roster = nil
        #expect(released == nil)
        #expect(await updates.next() == nil)
        // Its persistent handlers went with it: events after release reach nothing and break nothing.
        harness.peers[0].send(text: Self.removed)
        #expect(harness.session.state == .connected)
    }

    /// A delivery target that runs nothing until the test says so: whatever the roster shows before
    /// `release()` cannot come from a handler.
    final class HeldDelivery: Sendable {
        private let work = Locked<[@Sendable () -> Void]>([])
        var target: DeliveryTarget { .custom { [work] item in work.withLock { $0.append(item) } } }
        var isEmpty: Bool { work.withLock { $0.isEmpty } }

        func release() {
            while true {
                let batch = work.withLock { work in defer { work = [] }; return work }
                if batch.isEmpty { return }
                for item in batch { item() }
            }
        }
    }

    /// A roster subscribed with its handlers held, after member 3 joined.
    static func subscribedWithHeldDelivery() async throws -> (HeldDelivery, PusherHarness, PusherPresenceRoster) {
        let delivery = HeldDelivery()
        let harness = PusherHarness { $0.delivery = delivery.target }
        let roster = try harness.session.presence("presence-room")
        try await harness.session.connect()
        try await roster.channel.subscribed()
        harness.peers[0].send(text: Self.added)
        return (delivery, harness, roster)
    }

    @Test("subscribed() returns with the roster filled, though no handler has run yet; the handlers then see each change once, in order")
    func filledWhenSubscribedReturns() async throws {
        let delivery = HeldDelivery()
        let harness = PusherHarness { $0.delivery = delivery.target }
        let changes = Locked<[[String]]>([])
        let roster = try harness.session.presence("presence-room") { members in
            changes.withLock { $0.append(members.ids) }
        }
        let joined = Locked<[String]>([])
        roster.onMemberAdded { member in joined.withLock { $0.append(member.id) } }
        try await harness.session.connect()
        try await roster.channel.subscribed()
        #expect(!delivery.isEmpty)
        #expect(changes.withLock { $0 }.isEmpty)
        #expect(roster.count == 2)
        #expect(roster.members.ids == ["1", "7"])
        #expect(roster.myID == "7")
        #expect(roster.me == PresenceMember(id: "7", info: ["name": "Ann"]))
        #expect(roster.member(id: "1")?.info == ["name": "Zed"])

        // A change after the snapshot shows at once too, and the handlers get both in wire order.
        harness.peers[0].send(text: Self.added)
        #expect(roster.members.ids == ["1", "3", "7"])
        delivery.release()
        #expect(changes.withLock { $0 } == [["1", "7"], ["1", "3", "7"]])
        #expect(joined.withLock { $0 } == ["3"])
    }

    @Test("the report: a fresh session on the default delivery queue reads members, me and myID right after subscribed()")
    func filledOnTheDefaultQueue() async throws {
        let harness = PusherHarness { $0.delivery = nil }
        let roster = try harness.session.presence("presence-room")
        try await harness.session.connect()
        try await roster.channel.subscribed()
        #expect(roster.count == 2)
        #expect(roster.me == PresenceMember(id: "7", info: ["name": "Ann"]))
        #expect(roster.myID == "7")
    }

    @Test("a lifecycle .subscribed observer reads the filled roster (inline delivery: it runs before the snapshot's event)")
    func filledForLifecycleObservers() async throws {
        let harness = PusherHarness()
        let roster = try harness.session.presence("presence-room")
        let seen = Locked<[String]>([])
        // Weakly: the session keeps its observers, and the roster keeps the session (a cycle LeakSanitizer sees).
        roster.channel.onLifecycle { [weak roster] event in
            guard case .subscribed = event.kind, let roster else { return }
            seen.withLock { $0.append("\(roster.count) \(roster.myID ?? "?")") }
        }
        try await harness.session.connect()
        try await roster.channel.subscribed()
        #expect(seen.withLock { $0 } == ["2 7"])
    }

    @Test("after a reconnect: cleared while down and filled with the new snapshot when subscribed() returns, handlers held")
    func filledAfterResubscription() async throws {
        let (delivery, harness, roster) = try await Self.subscribedWithHeldDelivery()
        #expect(roster.members.ids == ["1", "3", "7"])

        harness.peers[0].close(code: 4100, reason: "over capacity")   // backs off: the drop stays visible
        await eventually("down") { !harness.session.state.isConnected }
        #expect(roster.count == 0 && roster.myID == nil)
        harness.clock.advance(by: .seconds(1))
        try await roster.channel.subscribed()
        #expect(harness.peers.count == 2)
        // The new snapshot, without member 3 of the old connection, whose handlers have not run yet.
        #expect(roster.members.ids == ["1", "7"])
        #expect(roster.me == PresenceMember(id: "7", info: ["name": "Ann"]))
        delivery.release()
        #expect(roster.members.ids == ["1", "7"])
    }

    @Test("updates starts from the roster now and never goes back to a change its handlers had not published yet")
    func updatesStartNowWithoutGoingBack() async throws {
        let (delivery, harness, roster) = try await Self.subscribedWithHeldDelivery()
        var updates = roster.updates.makeAsyncIterator()
        #expect(await updates.next()?.ids == ["1", "3", "7"])
        // The snapshot's and the addition's publications are older than what the stream already gave.
        delivery.release()
        harness.peers[0].send(text: Self.removed)
        delivery.release()
        #expect(await updates.next()?.ids == ["3", "7"])
    }
}
