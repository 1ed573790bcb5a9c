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

    @Test("events(_:as:) yields each decodable payload with its event; one that does not decode is skipped, reported as .decodingFailed, and the loop goes on")
    func typedStream() async throws {
        let harness = Self.harness()
        let room = harness.session.channel("room")
        var moves = room.events("move", as: Move.self).makeAsyncIterator()
        var anywhere = harness.session.events("move", as: Move.self).makeAsyncIterator()
        try await harness.session.connect()
        try await room.subscribed()
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":{"x":1,"y":2}}"#)
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":"north"}"#)
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"move","data":{"x":3,"y":4}}"#)

        let first = try #require(await moves.next())
        #expect(first.0 == Move(x: 1, y: 2) && first.1.name == "move" && first.1.channel == "room")
        #expect(harness.errorLog.isEmpty)
        let second = try #require(await moves.next())
        #expect(second.0 == Move(x: 3, y: 4))
        #expect(harness.errorLog.map(\.message) == [#""move" on room was not passed on: its data is not a Move"#])
        #expect(harness.errorLog.first?.context.serverPayload == "north")

        // A session-scope stream reads the same events and reports its own skip.
        #expect(await anywhere.next()?.0 == Move(x: 1, y: 2))
        #expect(await anywhere.next()?.0 == Move(x: 3, y: 4))
        #expect(harness.errorLog.map(\.code) == [.decodingFailed, .decodingFailed])
        #expect(harness.session.state == .connected)
    }

    @Test("a typed stream's skipped events leave the delivery budget as they are taken, so reading resumes")
    func typedStreamBudget() async throws {
        let harness = EngineHarness(options: { $0.deliveryHighWatermark = 4 })
        var ticks = harness.session.events("tick", as: Int.self).makeAsyncIterator()
        try await harness.session.connect()
        for index in 0..<6 {
            let data = index < 4 ? #""bad""# : String(index)
            harness.peers[0].send(text: #"{"t":"ev","name":"tick","data":\#(data)}"#)
        }
        #expect(harness.peers[0].isReadingPaused)
        #expect(await ticks.next()?.0 == 4)   // four skipped on the way
        #expect(!harness.peers[0].isReadingPaused)
        #expect(harness.session.deliveryBacklog.events == 1)
        #expect(harness.errorLog.count == 4)
    }
}
