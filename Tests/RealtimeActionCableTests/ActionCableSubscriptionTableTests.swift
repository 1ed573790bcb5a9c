@_spi(DialectAuthoring) @testable import RealtimeActionCable
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Action Cable subscription table")
struct ActionCableSubscriptionTableTests {
    static let channels: [ChannelID] = [
        ChannelID("ChatChannel"),
        ChannelID("ChatChannel", params: ["room": .integer(1)]),
        ChannelID("ChatChannel", params: ["room": .integer(10)]),
        ChannelID("ChatChannel", params: ["room": .string("1")]),
        ChannelID("Chat\"Channel\\", params: ["a": .string("line\nbreak\t\u{1}"), "z": .double(1.5)]),
        ChannelID("ÉchoChannel", params: ["html": .string("</script>&<b>"), "list": .array([.null, .bool(true)])]),
        ChannelID("NestedChannel", params: ["filter": .object(["b": .integer(2), "a": .object(["c": .string("é")])])]),
    ]

    static func literal(_ channel: ChannelID) -> Substring {
        ActionCableIdentifier.literal(try! ActionCableIdentifier.make(for: channel))
    }

    @Test("the literal written from a channel is byte for byte the literal of its identifier")
    func writtenLiteral() throws {
        var literal: [UInt8] = []
        var scratch: [UInt8] = []
        for channel in Self.channels {
            try ActionCableIdentifier.writeLiteral(of: channel, into: &literal, scratch: &scratch)
            #expect(literal == Array(Self.literal(channel).utf8), "\(channel)")
        }
        #expect(throws: RealtimeError.self) {
            try ActionCableIdentifier.writeLiteral(of: ChannelID(""), into: &literal, scratch: &scratch)
        }
    }

    @Test("each subscription is found by its own literal alone, with standard hashes and with one hash for all",
          arguments: [ActionCableSubscriptionTable.Hashing.standard, .fixed(0), .fixed(.max)])
    func lookups(hashing: ActionCableSubscriptionTable.Hashing) {
        var table = ActionCableSubscriptionTable(hashing: hashing)
        let held = Array(Self.channels.dropLast())
        for channel in held {
            table.set(.init(channel: channel, phase: .confirmed), literal: Self.literal(channel))
        }
        #expect(table.entries.count == held.count)
        for channel in held {
            let key = table.key(of: Self.literal(channel))
            #expect(key.map { table[$0].channel } == channel, "\(channel)")
        }
        #expect(table.key(of: Self.literal(Self.channels.last!)) == nil)
        #expect(table.key(of: #""{\"channel\":\"ChatChannel\",\"room\":1 }""#) == nil)

        // Setting a held literal again replaces its entry.
        table.set(.init(channel: held[1], phase: .settling), literal: Self.literal(held[1]))
        #expect(table.entries.count == held.count)
        #expect(table.key(of: Self.literal(held[1])).map { table[$0].phase } == .settling)

        // Removing the first of a run of equal hashes leaves the rest reachable, and its key is reused.
        let first = table.key(of: Self.literal(held[0]))!
        #expect(table.remove(first)?.channel == held[0])
        #expect(table.key(of: Self.literal(held[0])) == nil)
        for channel in held.dropFirst() {
            #expect(table.key(of: Self.literal(channel)).map { table[$0].channel } == channel, "\(channel)")
        }
        let added = Self.channels.last!
        table.set(.init(channel: added, phase: .confirmed), literal: Self.literal(added))
        let addedKey = table.key(of: Self.literal(added))
        #expect(addedKey.map { table[$0].channel } == added)
        if case .fixed = hashing { #expect(addedKey == first) }

        table.removeAll()
        #expect(table.isEmpty)
        #expect(table.key(of: Self.literal(held[2])) == nil)
    }

    @Test("beyond the literals it keeps, the table checks a literal written again from the channel",
          arguments: [ActionCableSubscriptionTable.Hashing.standard, .fixed(42)])
    func coldLookups(hashing: ActionCableSubscriptionTable.Hashing) {
        var table = ActionCableSubscriptionTable(hashing: hashing)
        let count = ActionCableSubscriptionTable.hotCapacity + 40
        let rooms = (0..<count).map { ChannelID("RoomChannel", params: ["room": .integer(Int64($0))]) }
        for room in rooms { table.set(.init(channel: room, phase: .confirmed), literal: Self.literal(room)) }
        // Twice round, so that each lookup finds its literal evicted by the ones before it.
        for _ in 0..<2 {
            for room in rooms {
                #expect(table.key(of: Self.literal(room)).map { table[$0].channel } == room, "\(room)")
            }
        }
        let stranger = ChannelID("RoomChannel", params: ["room": .integer(Int64(count))])
        #expect(table.key(of: Self.literal(stranger)) == nil)
        for room in rooms.prefix(100) { table.remove(table.key(of: Self.literal(room))!) }
        #expect(table.entries.count == count - 100)
        for room in rooms.prefix(100) { #expect(table.key(of: Self.literal(room)) == nil) }
        for room in rooms.dropFirst(100) { #expect(table.key(of: Self.literal(room)).map { table[$0].channel } == room) }
    }

    @Test("a broadcast's route is one of a few identifier texts, replaced after a hit or eight misses, forgotten when a subscription goes")
    func routes() {
        typealias Table = ActionCableSubscriptionTable
        var table = Table()
        let rooms = (0..<6).map { ChannelID("RoomChannel", params: ["room": .integer(Int64($0))]) }
        for room in rooms { table.set(.init(channel: room, phase: .confirmed), literal: Self.literal(room)) }
        func key(_ room: ChannelID) -> Table.Key { table.key(of: Self.literal(room))! }
        #expect(table.routedChannel(Self.literal(rooms[0])) == nil)
        for room in rooms { #expect(table.remember(Self.literal(room), routesTo: key(room)) == room) }
        // The first four fill the routes; the next two wait (no route was used). A miss counts nothing.
        let kept = Table.routeCapacity
        #expect(table.routedChannel(Self.literal(rooms[5])) == nil)
        // Eight misses in a row let a new text in, in the oldest route's place.
        for _ in 0..<(Table.admitAfterMisses - 3) { table.remember(Self.literal(rooms[5]), routesTo: key(rooms[5])) }
        #expect(table.routedChannel(Self.literal(rooms[5])) == nil)
        table.remember(Self.literal(rooms[5]), routesTo: key(rooms[5]))
        #expect(rooms.map { table.routedChannel(Self.literal($0)) }
                == [nil] + rooms[1..<kept].map(Optional.some) + [nil, rooms[5]])
        // A route was just used: the next new text gets in at once.
        table.remember(Self.literal(rooms[4]), routesTo: key(rooms[4]))
        #expect(table.routedChannel(Self.literal(rooms[4])) == rooms[4])
        #expect(table.routedChannel(Self.literal(rooms[1])) == nil)
        // A server's own spelling routes as remembered.
        let spelled: Substring = #""{\"channel\":\"RoomChannel\",\"room\":\u0031}""#
        table.remember(spelled, routesTo: key(rooms[1]))
        #expect(table.routedChannel(spelled) == rooms[1])
        table.setPhase(.settling, at: key(rooms[5]))
        #expect(table.routedChannel(Self.literal(rooms[5])) == rooms[5])
        table.remove(key(rooms[0]))
        #expect(rooms.allSatisfy { table.routedChannel(Self.literal($0)) == nil })
        #expect(table.routedChannel(spelled) == nil)
        // Forgotten routes fill again without waiting.
        table.remember(Self.literal(rooms[3]), routesTo: key(rooms[3]))
        #expect(table.routedChannel(Self.literal(rooms[3])) == rooms[3])
    }

    @Test("the table answers as a dictionary of literals would over 20,000 seeded operations",
          arguments: [ActionCableSubscriptionTable.Hashing.standard, .fixed(0), .fixed(.max), .lowBits(2)],
          [3, ActionCableSubscriptionTable.hotCapacity])
    func seededRun(hashing: ActionCableSubscriptionTable.Hashing, keptLiterals: Int) {
        typealias Table = ActionCableSubscriptionTable
        var generator = SeededRandomNumberGenerator(seed: 7)
        var table = Table(hashing: hashing, keptLiterals: keptLiterals)
        let pool = Self.channels + (0..<24).map { ChannelID("RoomChannel", params: ["room": .integer(Int64($0))]) }
        let literals = pool.map { String(Self.literal($0)) }
        // The model: held subscriptions by literal, and the routes as the table keeps them.
        var held: [String: Table.Subscription] = [:]
        var routes: [(text: String, channel: ChannelID)] = []
        var nextRoute = 0
        var misses = 0
        let phases: [Table.Phase] = [.settling, .pending(attempts: 1, sentAfterTick: 3), .confirmed]
        var failures = 0

        func pick(_ count: Int) -> Int { Int.random(in: 0..<count, using: &generator) }
        func check(_ ok: Bool, _ what: @autoclosure () -> String) {
            if !ok { failures += 1 }
            #expect(ok, "\(what())")
        }

        for step in 0..<20_000 where failures < 5 {
            let index = pick(pool.count)
            let literal = literals[index]
            // Every other thousand steps a stream: no subscription changes, so the routes fill and turn over.
            let streaming = step / 1_000 % 2 == 1
            switch streaming ? 32 + pick(68) : pick(100) {
            case 0..<20:
                let subscription = Table.Subscription(channel: pool[index], phase: phases[pick(phases.count)])
                table.set(subscription, literal: literal[...])
                if held.updateValue(subscription, forKey: literal) != nil {
                    routes = []
                    nextRoute = 0
                    misses = 0
                }
            case 20..<30:
                guard held[literal] != nil, let key = table.key(of: literal[...]) else {
                    check(table.key(of: literal[...]) == nil, "step \(step): \(literal) found, not held")
                    continue
                }
                let removed = table.remove(key)
                check(removed?.channel == pool[index], "step \(step): removing \(literal) gave \(String(describing: removed))")
                held[literal] = nil
                routes = []
                nextRoute = 0
                misses = 0
            case 30..<32 where pick(10) == 0:
                table.removeAll()
                held = [:]
                routes = []
                nextRoute = 0
                misses = 0
            case 32..<40:
                guard let key = table.key(of: literal[...]) else { continue }
                let phase = phases[pick(phases.count)]
                table.setPhase(phase, at: key)
                held[literal]?.phase = phase
            case 40..<55:
                // A server's own spelling (a trailing space here) routes like any other text.
                let text = pick(2) == 0 ? literal : literal + " "
                guard held[literal] != nil, let key = table.key(of: literal[...]) else { continue }
                check(table.remember(text[...], routesTo: key) == pool[index], "step \(step): remember \(text)")
                if routes.count == Table.routeCapacity {
                    misses += 1
                    guard misses >= Table.admitAfterMisses else { continue }
                }
                misses = 0
                if routes.count < Table.routeCapacity {
                    routes.append((text, pool[index]))
                } else {
                    routes[nextRoute] = (text, pool[index])
                    nextRoute = (nextRoute + 1) % Table.routeCapacity
                }
            case 55..<70:
                let text = pick(2) == 0 ? literal : literal + " "
                let expected = routes.first { $0.text == text }?.channel
                if expected != nil { misses = Table.admitAfterMisses }
                check(table.routedChannel(text[...]) == expected, "step \(step): route of \(text)")
            default:
                let key = table.key(of: literal[...])
                let expected = held[literal]
                check(key.map { table[$0].channel } == expected?.channel, "step \(step): lookup of \(literal)")
                check(key.map { table[$0].phase } == expected?.phase, "step \(step): phase of \(literal)")
                // A text no subscription has is never found, however its hash falls.
                check(table.key(of: (literal + " ")[...]) == nil, "step \(step): \(literal) with a space found")
            }
            check(table.entries.count == held.count, "step \(step): \(table.entries.count) entries, \(held.count) held")
        }
    }
}
