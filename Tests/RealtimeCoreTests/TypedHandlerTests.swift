import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// `on(_:as:)` / `once(_:as:)`: decoded payloads for handlers, and decode failures for `onError`.
@Suite("Typed handlers")
struct TypedHandlerTests {
    struct Move: Decodable, Equatable {
        var x: Int
        var y: Int
    }

    struct Stamped: Decodable, Equatable {
        var sentAt: Date
    }

    private static func harness() -> EngineHarness {
        EngineHarness(script: { index in
            EngineHarness.welcome(id: "c\(index)") + [.expect(subRoom, reply: [subOkRoom])]
        })
    }

    @Test("a typed handler gets each decodable payload with its event; one that does not decode reaches onError as .decodingFailed, in order, and the handler takes the next")
    func decodesAndReports() async throws {
        let harness = Self.harness()
        let room = harness.session.channel("room")
        let seen = Locked<[String]>([])
        room.on("move", as: Move.self) { move, event in
            seen.withLock { $0.append("\(event.name) \(move.x),\(move.y)") }
        }
        harness.session.onError { error in seen.withLock { $0.append("error \(error.code)") } }
        try await harness.session.connect()
        try await room.subscribed()
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":{"x":1,"y":2}}"#)
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":{"x":"one"}}"#)
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":{"x":3,"y":4}}"#)
        #expect(seen.withLock { $0 } == ["move 1,2", "error decoding-failed", "move 3,4"])

        let error = try #require(harness.errorLog.first)
        #expect(error.code == .decodingFailed)
        #expect(error.message == #""move" on room was not passed on: its data is not a Move"#)
        #expect(error.context.channel == "room")
        #expect(error.context.serverPayload == ["x": "one"])
        #expect(error.context.detail?.isEmpty == false)
        #expect(harness.session.state == .connected)
    }

    @Test("the decoder's strategies apply; a session-scope typed handler hears every channel; untyped handlers of the same event still run")
    func decoderAndScopes() async throws {
        let harness = Self.harness()
        let room = harness.session.channel("room")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .secondsSince1970
        let stamps = Locked<[Date]>([])
        let untyped = Locked(0)
        harness.session.on("stamp", as: Stamped.self, decoder: decoder) { value, _ in
            stamps.withLock { $0.append(value.sentAt) }
        }
        room.on("stamp") { _ in untyped.withLock { $0 += 1 } }
        try await harness.session.connect()
        try await room.subscribed()
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"stamp","data":{"sent_at":60}}"#)
        harness.peers[0].send(text: #"{"t":"ev","name":"stamp","data":{"sent_at":120}}"#)
        #expect(stamps.withLock { $0 } == [Date(timeIntervalSince1970: 60), Date(timeIntervalSince1970: 120)])
        #expect(untyped.withLock { $0 } == 1)
        #expect(harness.errorLog.isEmpty)
    }

    @Test("once(_:as:) is used up by one event, decoded or reported; off(id:) removes a typed handler")
    func onceAndOff() async throws {
        let harness = Self.harness()
        let room = harness.session.channel("room")
        let moves = Locked<[Move]>([])
        room.once("move", as: Move.self) { move, _ in moves.withLock { $0.append(move) } }
        let kept = room.on("move", as: Move.self) { move, _ in moves.withLock { $0.append(move) } }
        try await harness.session.connect()
        try await room.subscribed()
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":[]}"#)
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":{"x":5,"y":6}}"#)
        #expect(moves.withLock { $0 } == [Move(x: 5, y: 6)])   // the once handler went with the bad one
        #expect(harness.errorLog.map(\.code) == [.decodingFailed, .decodingFailed])
        room.off(id: kept)
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":{"x":7,"y":8}}"#)
        #expect(moves.withLock { $0 } == [Move(x: 5, y: 6)])
    }
}
