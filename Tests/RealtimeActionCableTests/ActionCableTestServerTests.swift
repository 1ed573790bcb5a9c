import Foundation
@_spi(DialectAuthoring) import RealtimeActionCable
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeActionCableTesting
import RealtimeTesting
import Testing

/// A Rails-like in-memory server with the fixture app's channels: EchoChannel (speak, whisper, receive)
/// and RejectChannel; tokens `valid-<name>`.
func makeEchoServer() -> ActionCableTestServer {
    let server = ActionCableTestServer(authenticate: { request in
        guard let query = request.url.query, query.hasPrefix("token=valid-") else { return nil }
        return String(query.dropFirst("token=valid-".count))
    })
    @Sendable func stream(_ params: [String: JSONValue]) -> String { "echo:\(params["room_id"]?.serialized() ?? "")" }
    server.define("EchoChannel") { .confirm(streams: [stream($0.params)]) }
    server.define("RejectChannel") { _ in .reject }
    server.onAction("EchoChannel", "speak") { call in
        var data = call.data
        data["action"] = nil
        call.broadcast(to: stream(call.params), ["from": .string(call.user), "data": .object(data)])
    }
    server.onAction("EchoChannel", "whisper") { call in call.transmit(["whisper": .string(call.user)]) }
    server.onAction("EchoChannel", "receive") { call in call.transmit(["received": .object(call.data)]) }
    return server
}

/// One session on its own in-memory transport, served by `server`.
final class TestServerClient: Sendable {
    let clock: ManualClock
    let transport = InMemoryTransport(autoAccept: false)
    let session: RealtimeSession
    let events = Locked<[RealtimeEvent]>([])

    init(_ server: ActionCableTestServer, token: String?, clock: ManualClock = ManualClock(), origin: String? = nil) {
        self.clock = clock
        let url = URL(string: "ws://127.0.0.1:3000/cable" + (token.map { "?token=\($0)" } ?? ""))!
        session = RealtimeSession(dialect: .actionCable(url: url, origin: origin),
                                  transport: transport,
                                  options: SessionOptions(delivery: .inline, reconnectPolicy: CableHarness.testPolicy,
                                                          clock: clock))
        server.attach(to: transport)
        session.onAny { [events] event in events.withLock { $0.append(event) } }
    }

    func data(on channel: ChannelID) -> [JSONValue] {
        events.withLock { $0.filter { $0.channel == channel }.map(\.data) }
    }
}

@Suite("Action Cable against the in-memory test server")
struct ActionCableTestServerTests {
    @Test("a connection still open when the test ends is freed with the server (no peer ↔ server cycle)")
    func noRetainCycle() {
        weak var peer: InMemoryPeer?
        do {
            let server = makeEchoServer()
            let transport = InMemoryTransport(autoAccept: false)
            server.attach(to: transport)
            let request = ConnectionRequest(url: URL(string: "ws://127.0.0.1:3000/cable?token=valid-alice")!,
                                            subprotocols: ["actioncable-v1-json"], origin: "http://127.0.0.1:3000")
            _ = transport.open(request) { _ in }
            peer = transport.lastPeer
            #expect(peer?.phase == .open)
            #expect(server.connectedUsers == ["alice"])
        }
        #expect(peer == nil)
    }

    @Test("two clients in a room both hear a speak; a whisper and a receive reach the sender only")
    func room() async throws {
        let server = makeEchoServer()
        let alice = TestServerClient(server, token: "valid-alice")
        let bob = TestServerClient(server, token: "valid-bob")
        try await alice.session.connect()
        try await bob.session.connect()
        let aliceRoom = alice.session.channel(echo42)
        try await aliceRoom.subscribed()
        try await bob.session.channel(echo42).subscribed()
        try await aliceRoom.perform("speak", ["text": "hi"])
        let expected: JSONValue = ["from": "alice", "data": ["text": "hi"]]
        #expect(alice.data(on: echo42) == [expected])
        #expect(bob.data(on: echo42) == [expected])
        try await aliceRoom.perform("whisper")
        try await aliceRoom.send("", ["n": 1])
        #expect(alice.data(on: echo42).dropFirst() == [["whisper": "alice"], ["received": ["n": 1]]])
        #expect(bob.data(on: echo42) == [expected])
        #expect(server.connectedUsers == ["alice", "bob"])
    }

    @Test("the server's rules: reject, unauthorized, and HTTP 404 for a foreign Origin")
    func refusals() async throws {
        let server = makeEchoServer()
        let alice = TestServerClient(server, token: "valid-alice")
        try await alice.session.connect()
        await #expect(throws: RealtimeError.self) { try await alice.session.channel("RejectChannel").subscribed() }

        let anonymous = TestServerClient(server, token: nil)
        do {
            try await anonymous.session.connect()
            Issue.record("no token must be unauthorized")
        } catch let error as RealtimeError {
            #expect(error.code == .connectionRefused)
        }

        let stranger = TestServerClient(server, token: "valid-eve", origin: "https://evil.example")
        do {
            try await stranger.session.connect()
            Issue.record("a foreign origin must be refused")
        } catch let error as RealtimeError {
            #expect(error.code == .handshakeRejected)
            #expect(error.context.httpStatus == 404)
        }
    }

    @Test("heartbeats keep the link alive; without them it goes stale; restart reconnects and re-subscribes")
    func heartbeatAndRestart() async throws {
        let server = makeEchoServer()
        let alice = TestServerClient(server, token: "valid-alice")
        try await alice.session.connect()
        let room = alice.session.channel(echo42)
        try await room.subscribed()
        for _ in 0..<3 {
            alice.clock.advance(by: .seconds(3))
            server.ping()
        }
        #expect(alice.session.state == .connected)
        server.restart()
        #expect(alice.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: .serverRestart))
        alice.clock.advance(by: .seconds(1))
        #expect(alice.session.state == .connected)
        #expect(room.state == .subscribed(recovered: nil))
        alice.clock.advance(by: .seconds(6))
        guard case .reconnecting = alice.session.state else {
            Issue.record("six silent seconds must make the link stale, got \(alice.session.state)")
            return
        }
    }

    @Test("remote disconnects: a bare close backs off and returns; the frame with reconnect:false is final")
    func remoteDisconnects() async throws {
        let server = makeEchoServer()
        let erin = TestServerClient(server, token: "valid-erin")
        try await erin.session.connect()
        server.disconnect(user: "erin", reason: nil)
        #expect(erin.session.state == .reconnecting(attempt: 1, delay: .seconds(1),
                                                    reason: .closedByServer(code: 1000, reason: "")))
        erin.clock.advance(by: .seconds(1))
        #expect(erin.session.state == .connected)
        server.disconnect(user: "erin", reason: "remote", reconnect: false)
        guard case .failed(let error) = erin.session.state else {
            Issue.record("expected failed, got \(erin.session.state)")
            return
        }
        #expect(error.code == .connectionClosed)
    }

    @Test("unanswered subscribes are retried by the guarantor; duplicates get no second confirm")
    func guarantorAgainstServer() async throws {
        let server = makeEchoServer()
        server.ignoreNextSubscribes(2)
        let alice = TestServerClient(server, token: "valid-alice")
        try await alice.session.connect()
        let room = alice.session.channel(echo42)
        #expect(room.state == .pending)
        alice.clock.advance(by: .milliseconds(500))
        #expect(room.state == .pending)
        alice.clock.advance(by: .milliseconds(500))
        #expect(room.state == .subscribed(recovered: nil))
        #expect(server.receivedCommands.filter { $0.contains(#""command":"subscribe""#) }.count == 3)
    }
}
