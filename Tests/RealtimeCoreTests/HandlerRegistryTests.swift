import Dispatch
import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("HandlerRegistry")
struct HandlerRegistryTests {
    private func event(_ name: String, channel: ChannelID? = "room") -> RealtimeEvent {
        RealtimeEvent(channel: channel, name: name, data: .null)
    }

    @Test("a once handler runs exactly once when 8 threads dispatch the same event")
    func onceUnderRace() {
        for _ in 0..<50 {
            let registry = HandlerRegistry()
            let calls = Locked(0)
            registry.add(channel: nil, event: "tick", once: true) { _ in calls.withLock { $0 += 1 } }
            let event = event("tick")
            DispatchQueue.concurrentPerform(iterations: 8) { _ in registry.dispatch(event) }
            #expect(calls.withLock { $0 } == 1)
            #expect(registry.count == 0)
        }
    }

    @Test("off(id:) inside a running handler takes effect for the next event")
    func offInsideHandler() {
        let registry = HandlerRegistry()
        let calls = Locked<[String]>([])
        let id = Locked<HandlerID?>(nil)
        id.withLock {
            $0 = registry.add(channel: nil, event: "e") { _ in
                calls.withLock { $0.append("self-removing") }
                registry.remove(id: id.withLock { $0 }!)
            }
        }
        registry.add(channel: nil, event: "e") { _ in calls.withLock { $0.append("stays") } }
        registry.dispatch(event("e"))
        registry.dispatch(event("e"))
        #expect(calls.withLock { $0 } == ["self-removing", "stays", "stays"])
    }

    @Test("remembered lookups follow every change to the handlers between dispatches")
    func rememberedLookupsFollowChanges() {
        let registry = HandlerRegistry()
        let calls = Locked<[String]>([])
        func record(_ label: String) -> HandlerRegistry.EventHandler {
            { event in calls.withLock { $0.append("\(label):\(event.channel?.name ?? "-"):\(event.name)") } }
        }
        func take() -> [String] { calls.withLock { list in defer { list = [] }; return list } }
        let first = registry.add(channel: "room", event: "tick", record("a"))
        // More pairs than the registry remembers, twice over, so remembered routes are evicted and rebuilt.
        for round in 0..<2 {
            for index in 0..<(HandlerRegistry.routeCacheSize + 2) {
                registry.dispatch(event("e\(index)", channel: ChannelID("c\(index)")))
            }
            registry.dispatch(event("tick"))
            #expect(take() == ["a:room:tick"], "round \(round)")
        }
        registry.add(channel: nil, event: "tick", record("any-channel"))
        registry.add(channel: "room", event: nil, record("any-event"))
        registry.dispatch(event("tick"))
        #expect(take() == ["a:room:tick", "any-channel:room:tick", "any-event:room:tick"])
        registry.add(channel: "room", event: "tick", once: true, record("once"))
        registry.dispatch(event("tick"))
        registry.dispatch(event("tick"))
        #expect(take() == ["a:room:tick", "any-channel:room:tick", "any-event:room:tick", "once:room:tick",
                           "a:room:tick", "any-channel:room:tick", "any-event:room:tick"])
        registry.remove(id: first)
        registry.remove(event: "tick", channel: nil)
        registry.dispatch(event("tick"))
        #expect(take() == ["any-event:room:tick"])
        // The same names on another channel, and the same channel with parameters, are other routes.
        registry.dispatch(event("tick", channel: "hall"))
        registry.dispatch(event("tick", channel: ChannelID("room", params: ["id": 1])))
        #expect(take() == [])
        registry.removeAll(channel: "room")
        registry.dispatch(event("tick"))
        #expect(take() == [])
    }

    @Test("a wildcard handler is found after others of its kind came and went, on events over many channels",
          arguments: ["channel-wide", "name-wide", "session-wide"])
    func wildcardKindsAfterChurn(kind: String) {
        let registry = HandlerRegistry()
        let calls = Locked<[String]>([])
        func take() -> [String] { calls.withLock { list in defer { list = [] }; return list } }
        let channels = (0..<(HandlerRegistry.routeCacheSize * 3)).map { ChannelID("c\($0)") }
        for channel in channels { registry.add(channel: channel, event: "tick") { _ in } }
        func addWildcard(_ label: String, once: Bool = false) -> HandlerID {
            let record: HandlerRegistry.EventHandler = { event in
                calls.withLock { $0.append("\(label):\(event.channel?.name ?? "-")") }
            }
            switch kind {
            case "channel-wide": return registry.add(channel: "c5", event: nil, once: once, record)
            case "name-wide": return registry.add(channel: nil, event: "tick", once: once, record)
            default: return registry.add(channel: nil, event: nil, once: once, record)
            }
        }
        func removeWildcards() {
            switch kind {
            case "channel-wide": registry.removeAll(channel: "c5")
            case "name-wide": registry.remove(event: "tick", channel: nil)
            default: registry.removeEverything()
            }
        }
        func dispatchAll() { for channel in channels { registry.dispatch(event("tick", channel: channel)) } }
        let expected = kind == "channel-wide" ? ["w:c5"] : channels.map { "w:\($0.name)" }

        // By id, then through a once handler, then by the bulk removal of their scope: each time the next
        // one (whose key may take a freed place) is still found.
        registry.remove(id: addWildcard("gone"))
        dispatchAll()
        #expect(take() == [])
        _ = addWildcard("once", once: true)
        dispatchAll()
        #expect(take() == [kind == "channel-wide" ? "once:c5" : "once:c0"])
        dispatchAll()
        #expect(take() == [])
        _ = addWildcard("bulk")
        removeWildcards()
        if kind == "session-wide" {
            for channel in channels { registry.add(channel: channel, event: "tick") { _ in } }
        }
        dispatchAll()
        #expect(take() == [])
        _ = addWildcard("w")
        dispatchAll()
        #expect(take() == expected)
    }

    @Test("events spread over many channels replace remembered routes rarely; a busy pair is soon remembered again")
    func routeAdmission() {
        let registry = HandlerRegistry()
        let channels = (0..<64).map { ChannelID("c\($0)") }
        for channel in channels { registry.add(channel: channel, event: "tick") { _ in } }
        func remembered() -> [ChannelID] { channels.filter { registry.remembersRoute(channel: $0, event: "tick") } }
        for channel in channels.prefix(HandlerRegistry.routeCacheSize) { registry.dispatch(event("tick", channel: channel)) }
        let first = remembered()
        #expect(first == Array(channels.prefix(HandlerRegistry.routeCacheSize)))
        // Misses without a hit: one route replaced per eight misses, not one per miss.
        for channel in channels[HandlerRegistry.routeCacheSize..<(HandlerRegistry.routeCacheSize + 7)] {
            registry.dispatch(event("tick", channel: channel))
        }
        #expect(remembered() == first)
        registry.dispatch(event("tick", channel: channels[40]))
        #expect(remembered() == Array(first.dropFirst()) + [channels[40]])
        // A hit lets the next miss in at once, so a new pair of busy channels is remembered after a round.
        registry.dispatch(event("tick", channel: channels[40]))
        for _ in 0..<2 {
            registry.dispatch(event("tick", channel: channels[50]))
            registry.dispatch(event("tick", channel: channels[51]))
        }
        #expect(registry.remembersRoute(channel: channels[50], event: "tick"))
        #expect(registry.remembersRoute(channel: channels[51], event: "tick"))
    }

    @Test("adding and removing 10,000 handlers leaves nothing behind")
    func massAddRemove() {
        let registry = HandlerRegistry()
        var ids: [HandlerID] = []
        for index in 0..<10_000 {
            let channel: ChannelID? = index % 3 == 0 ? nil : ChannelID("c\(index % 7)")
            let name: String? = index % 5 == 0 ? nil : "e\(index % 11)"
            ids.append(registry.add(channel: channel, event: name, once: index % 2 == 0) { _ in })
        }
        #expect(registry.count == 10_000)
        for id in ids.shuffled() { #expect(registry.remove(id: id)) }
        #expect(registry.count == 0)
        let called = Locked(false)
        registry.add(channel: nil, event: nil) { _ in called.withLock { $0 = true } }
        registry.dispatch(event("e1"))
        #expect(called.withLock { $0 })
        #expect(registry.count == 1)
    }

    @Test("a key left without handlers gives its place to the next new key, and nothing of it is dispatched")
    func freedKeysAreReused() {
        let registry = HandlerRegistry()
        let calls = Locked<[String]>([])
        func record(_ label: String) -> HandlerRegistry.EventHandler {
            { _ in calls.withLock { $0.append(label) } }
        }
        func take() -> [String] { calls.withLock { list in defer { list = [] }; return list } }
        let first = registry.add(channel: "room", event: "x", record("x"))
        registry.add(channel: nil, event: "z", record("any-z"))
        registry.add(channel: "room", event: "y", once: true, record("y-once"))
        registry.remove(id: first)
        registry.dispatch(event("y"))
        // Both of room's lists are free now; two new keys take their places.
        let reused = registry.add(channel: "room", event: "z", record("z"))
        registry.add(channel: "room", event: nil, record("any-event"))
        registry.dispatch(event("x"))
        registry.dispatch(event("y"))
        registry.dispatch(event("z"))
        #expect(take() == ["y-once", "any-event", "any-event", "any-z", "z", "any-event"])
        #expect(registry.count == 3)
        registry.remove(id: reused)
        registry.removeAll(channel: "room")
        registry.dispatch(event("z"))
        #expect(take() == ["any-z"])
        #expect(registry.count == 1)
    }

    @Test("handlers run in registration order across scopes")
    func order() {
        let registry = HandlerRegistry()
        let calls = Locked<[Int]>([])
        registry.add(channel: nil, event: nil) { _ in calls.withLock { $0.append(1) } }
        registry.add(channel: "room", event: "e") { _ in calls.withLock { $0.append(2) } }
        registry.add(channel: nil, event: "e") { _ in calls.withLock { $0.append(3) } }
        registry.add(channel: "room", event: nil) { _ in calls.withLock { $0.append(4) } }
        registry.add(channel: "other", event: "e") { _ in calls.withLock { $0.append(99) } }
        registry.dispatch(event("e"))
        #expect(calls.withLock { $0 } == [1, 2, 3, 4])
    }

    @Test("off(event) and removeAll(channel) remove only their scope")
    func scopedRemoval() {
        let registry = HandlerRegistry()
        let calls = Locked<[String]>([])
        registry.add(channel: nil, event: "e") { _ in calls.withLock { $0.append("session-e") } }
        registry.add(channel: "room", event: "e") { _ in calls.withLock { $0.append("room-e") } }
        registry.add(channel: "room", event: "f") { _ in calls.withLock { $0.append("room-f") } }
        registry.remove(event: "e", channel: "room")
        registry.dispatch(event("e"))
        registry.removeAll(channel: "room")
        registry.dispatch(event("f"))
        #expect(calls.withLock { $0 } == ["session-e"])
        #expect(registry.count == 1)
    }

    @Test("observers are removed by the same off(id:)")
    func observers() {
        let registry = HandlerRegistry()
        let states = Locked(0)
        let id = registry.addStateObserver { _, _ in states.withLock { $0 += 1 } }
        registry.dispatchState(from: .initialized, to: .connecting)
        #expect(registry.remove(id: id))
        registry.dispatchState(from: .connecting, to: .connected)
        #expect(states.withLock { $0 } == 1)
        #expect(!registry.remove(id: id))
    }
}
