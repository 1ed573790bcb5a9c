import Foundation
import Realtime
import RealtimeActionCableTesting
import RealtimeTesting
import Testing

/// The in-process `ActionCableTestServer` over real loopback WebSockets, with the fixture app's rules.
@Suite("Action Cable against the embedded loopback server")
struct ActionCableEmbeddedServerTests {
    static func makeServer() -> ActionCableTestServer {
        let server = ActionCableTestServer(authenticate: { request in
            let token = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?
                .queryItems?.first { $0.name == "token" }?.value
            guard let token, token.hasPrefix("valid-") else { return nil }
            return String(token.dropFirst("valid-".count))
        })
        @Sendable func stream(_ params: [String: JSONValue]) -> String { "echo:\(params["room_id"]?.serialized() ?? "")" }
        server.define("EchoChannel") { .confirm(streams: [stream($0.params)]) }
        server.define("RejectChannel") { _ in .reject }
        server.onAction("EchoChannel", "speak") { call in
            var data = call.data
            data["action"] = nil
            call.broadcast(to: stream(call.params), ["from": .string(call.user), "data": .object(data)])
        }
        return server
    }

    static func client(_ listener: WebSocketServer, path: String = "/cable", token: String?,
                       events: Locked<[RealtimeEvent]>) -> RealtimeSession {
        let query = token.map { "?token=\($0)" } ?? ""
        let url = URL(string: "ws://127.0.0.1:\(listener.port)\(path)\(query)")!
        let session = RealtimeSession(dialect: .actionCable(url: url),
                                      transport: ActionCableLive.transport,
                                      options: SessionOptions(reconnectPolicy: ActionCableLive.policy,
                                                              connectTimeout: .seconds(3)))
        session.onAny { event in events.withLock { $0.append(event) } }
        return session
    }

    @Test("two clients in a room hear a speak; reject, unauthorized and a wrong path are refused")
    func roomAndRefusals() async throws {
        let server = Self.makeServer()
        let listener = try server.listen()
        defer { listener.stop() }
        let aliceEvents = Locked<[RealtimeEvent]>([])
        let bobEvents = Locked<[RealtimeEvent]>([])
        let alice = Self.client(listener, token: "valid-alice", events: aliceEvents)
        let bob = Self.client(listener, token: "valid-bob", events: bobEvents)
        defer {
            alice.disconnect()
            bob.disconnect()
        }
        try await alice.connect()
        try await bob.connect()
        let room = alice.channel(cableRoom42)
        try await room.subscribed()
        try await bob.channel(cableRoom42).subscribed()
        try await room.perform("speak", ["text": "hi"])
        let expected: JSONValue = ["from": "alice", "data": ["text": "hi"]]
        try await cableWaitUntil("both to hear alice") {
            aliceEvents.withLock { $0.map(\.data) } == [expected] && bobEvents.withLock { $0.map(\.data) } == [expected]
        }
        #expect(server.connectedUsers == ["alice", "bob"])
        await #expect(throws: RealtimeError.self) { try await alice.channel("RejectChannel").subscribed() }

        let anonymous = Self.client(listener, token: nil, events: Locked([]))
        do {
            try await anonymous.connect()
            Issue.record("no token must be unauthorized")
        } catch let error as RealtimeError {
            #expect(error.code == .connectionRefused)
        }
        let lost = Self.client(listener, path: "/elsewhere", token: "valid-carol", events: Locked([]))
        do {
            try await lost.connect()
            Issue.record("a wrong path must be refused")
        } catch let error as RealtimeError {
            #expect(error.code == .handshakeRejected)
            #expect(error.context.httpStatus == 404)
            #expect(error.message.hasPrefix("Action Cable refused the upgrade of /elsewhere with HTTP 404"), "\(error.message)")
        }
    }

    @Test("restart: every client reconnects over loopback and re-subscribes")
    func restart() async throws {
        let server = Self.makeServer()
        let listener = try server.listen()
        defer { listener.stop() }
        let events = Locked<[RealtimeEvent]>([])
        let alice = Self.client(listener, token: "valid-alice", events: events)
        defer { alice.disconnect() }
        try await alice.connect()
        let room = alice.channel(cableRoom42)
        try await room.subscribed()
        server.restart()
        try await cableWaitUntil("re-subscribed after the restart") {
            alice.state == .connected && room.state == .subscribed(recovered: nil) && server.connectedUsers == ["alice"]
        }
        server.broadcast(to: "echo:42", "after restart")
        try await cableWaitUntil("the broadcast") { events.withLock { $0.map(\.data) } == ["after restart"] }
    }
}
