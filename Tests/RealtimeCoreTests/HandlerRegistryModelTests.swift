@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// The registry against a plain model (a list in registration order, matched by a filter) over long seeded
/// runs of registrations, removals and events, so that its remembered routes, wildcard counts and reused
/// slots never change who runs, in what order, or how often.
@Suite("HandlerRegistry against a model")
struct HandlerRegistryModelTests {
    private struct ModelEntry {
        var id: HandlerID
        var channel: ChannelID?
        var event: String?
        var once: Bool
        var persistent: Bool

        func matches(channel eventChannel: ChannelID?, name: String) -> Bool {
            (channel == nil || channel == eventChannel) && (event == nil || event == name)
        }
    }

    private static let channels: [ChannelID?] = [
        nil, "c0", "c1", "c2", ChannelID("Room", params: ["id": .integer(1)]), ChannelID("Room", params: ["id": .integer(2)]),
    ]
    private static let names = ["e0", "e1", "e2"]

    @Test("handlers run as the model says for 20,000 seeded operations", arguments: [1, 2, 3, 4] as [UInt64])
    func seededRun(seed: UInt64) {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let registry = HandlerRegistry()
        let calls = Locked<[HandlerID]>([])
        var model: [ModelEntry] = []
        // Events go to a few busy pairs for a while, then anywhere: both the remembered routes and misses.
        var busy: [(ChannelID?, String)] = []
        var failures = 0

        func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &generator)] }

        for step in 0..<20_000 {
            if step % 500 == 0 {
                busy = (0..<Int.random(in: 0...3, using: &generator)).map { _ in (pick(Self.channels), pick(Self.names)) }
            }
            let roll = Int.random(in: 0..<100, using: &generator)
            switch roll {
            case 0..<14:
                // A fresh id, or now and then a held one, which replaces its earlier registration.
                let reuse = !model.isEmpty && Int.random(in: 0..<10, using: &generator) == 0
                let entry = ModelEntry(id: reuse ? pick(model).id : HandlerID(), channel: pick(Self.channels),
                                       event: Int.random(in: 0..<4, using: &generator) == 0 ? nil : pick(Self.names),
                                       once: Int.random(in: 0..<4, using: &generator) == 0,
                                       persistent: Int.random(in: 0..<8, using: &generator) == 0)
                let id = entry.id
                registry.add(channel: entry.channel, event: entry.event, once: entry.once,
                             persistent: entry.persistent, id: id) { _ in calls.withLock { $0.append(id) } }
                model.removeAll { $0.id == id }
                model.append(entry)
            case 14..<20:
                let known = !model.isEmpty && Int.random(in: 0..<5, using: &generator) != 0
                let id = known ? pick(model).id : HandlerID()
                let removed = registry.remove(id: id)
                if removed != known { failures += 1 }
                #expect(removed == known, "step \(step): remove(id:) answered \(removed)")
                model.removeAll { $0.id == id }
            case 20..<22:
                let channel = pick(Self.channels)
                let name = pick(Self.names)
                registry.remove(event: name, channel: channel)
                model.removeAll { !$0.persistent && $0.channel == channel && $0.event == name }
            case 22..<23:
                let channel = pick(Self.channels)
                registry.removeAll(channel: channel)
                model.removeAll { !$0.persistent && $0.channel == channel }
            case 23..<24 where Int.random(in: 0..<4, using: &generator) == 0:
                registry.removeEverything()
                model.removeAll { !$0.persistent }
            default:
                let (channel, name) = !busy.isEmpty && roll < 85 ? pick(busy) : (pick(Self.channels), pick(Self.names))
                let expected = model.filter { $0.matches(channel: channel, name: name) }.map(\.id)
                model.removeAll { $0.once && $0.matches(channel: channel, name: name) }
                calls.withLock { $0.removeAll() }
                registry.dispatch(RealtimeEvent(channel: channel, name: name, data: .null))
                let ran = calls.withLock { $0 }
                if ran != expected { failures += 1 }
                #expect(ran == expected, "step \(step): \(name) on \(String(describing: channel))")
            }
            if registry.count != model.count { failures += 1 }
            #expect(registry.count == model.count, "step \(step)")
            if failures > 5 { break }  // the first few are enough to read
        }
    }
}
