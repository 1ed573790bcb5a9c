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

    @Test("a broadcast's route is the last few identifier texts, forgotten when a subscription goes")
    func routes() {
        var table = ActionCableSubscriptionTable()
        let rooms = (0..<6).map { ChannelID("RoomChannel", params: ["room": .integer(Int64($0))]) }
        for room in rooms { table.set(.init(channel: room, phase: .confirmed), literal: Self.literal(room)) }
        #expect(table.routedChannel(Self.literal(rooms[0])) == nil)
        for room in rooms { table.remember(Self.literal(room), routesTo: table.key(of: Self.literal(room))!) }
        // The first two were replaced by the last two.
        let kept = ActionCableSubscriptionTable.routeCapacity
        #expect(rooms.map { table.routedChannel(Self.literal($0)) }
                == Array(repeating: nil, count: rooms.count - kept) + rooms.suffix(kept).map(Optional.some))
        // A server's own spelling routes as remembered.
        let spelled: Substring = #""{\"channel\":\"RoomChannel\",\"room\":\u0031}""#
        table.remember(spelled, routesTo: table.key(of: Self.literal(rooms[1]))!)
        #expect(table.routedChannel(spelled) == rooms[1])
        table.setPhase(.settling, at: table.key(of: Self.literal(rooms[5]))!)
        #expect(table.routedChannel(Self.literal(rooms[5])) == rooms[5])
        table.remove(table.key(of: Self.literal(rooms[0]))!)
        #expect(rooms.allSatisfy { table.routedChannel(Self.literal($0)) == nil })
        #expect(table.routedChannel(spelled) == nil)
    }
}
