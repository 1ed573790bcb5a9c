import Foundation
import Realtime
import Testing

/// Shared set-up of the live tests: one transport for every client, and why the tests may not run here.
enum ActionCableLive {
    static let transport = WebSocketTransport()

    /// `nil` when puma and the Rails fixture are available.
    static var skipReason: String? { RailsCableServer.unavailableReason }

    /// Fast reconnects so the tests stay short; no jitter so timings are readable.
    static let policy = ReconnectPolicy(initialDelay: .milliseconds(200), multiplier: 2, maximumDelay: .seconds(2),
                                        jitter: .none)
}

/// One client session against the live server, recording everything it sees.
final class CableLiveClient: Sendable {
    let session: RealtimeSession
    let events = Locked<[RealtimeEvent]>([])
    let states = Locked<[ConnectionState]>([])

    init(_ server: RailsCableServer, token: String? = nil, origin: String? = nil,
         auth: ActionCableAuth? = nil,
         guarantor: ActionCableDialect.SubscriptionGuarantor = .init()) {
        var components = URLComponents(url: server.url, resolvingAgainstBaseURL: false)!
        if let token { components.queryItems = [URLQueryItem(name: "token", value: token)] }
        let dialect = ActionCableDialect.actionCable(url: components.url!, origin: origin, auth: auth,
                                                     guarantor: guarantor)
        // A slow attempt would add a reconnect that tests of the state history do not expect: puma on a
        // loaded 2-core machine gets 10 s per attempt.
        session = RealtimeSession(dialect: dialect, transport: ActionCableLive.transport,
                                  options: SessionOptions(reconnectPolicy: ActionCableLive.policy,
                                                          connectTimeout: .seconds(10)))
        session.onAny { [events] event in events.withLock { $0.append(event) } }
        session.onStateChange { [states] _, new in states.withLock { $0.append(new) } }
    }

    /// The `message` values delivered on `channel`, in order.
    func messages(on channel: ChannelID) -> [JSONValue] {
        events.withLock { $0.filter { $0.channel == channel }.map(\.data) }
    }

    /// Joins `channel` and waits for the server's confirmation.
    func join(_ channel: ChannelID) async throws -> RealtimeChannel {
        let handle = session.channel(channel)
        try await handle.subscribed()
        return handle
    }

    deinit { session.disconnect() }
}

let cableRoom42 = ChannelID("EchoChannel", params: ["room_id": 42])
let cableRoom7 = ChannelID("EchoChannel", params: ["room_id": 7])

@Suite("Action Cable against a real Rails server", .serialized,
       .enabled(if: ActionCableLive.skipReason == nil || PeerRequirement.required,
                Comment(rawValue: ActionCableLive.skipReason ?? "")))
struct ActionCableIntegrationTests {
    @Test("welcome, then a subscription with params is confirmed")
    func welcomeAndSubscribe() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        #expect(alice.session.state == .connected)
        let lobby = ChannelID("EchoChannel", params: ["room_id": "lobby", "tags": ["a", "b"]])
        let channel = try await alice.join(lobby)
        #expect(channel.state == .subscribed(recovered: nil))
        // Rails 6.1 registers the connection after sending its welcome, on a worker thread of its own.
        try await cableWaitUntil("alice registered") { (try? server.connectedUsers()) == ["alice"] }
        #expect(try server.connectedUsers() == ["alice"])
        try server.broadcast(stream: "echo:lobby", #"{"text":"from HTTP"}"#)
        try await cableWaitUntil("the HTTP broadcast") { alice.messages(on: lobby) == [["text": "from HTTP"]] }
    }

    @Test("session.ping(): puma's WebSocket layer answers the ping; nothing reaches a handler")
    func pingRoundTrip() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        _ = try await alice.join(cableRoom42)
        let seen = alice.events.withLock { $0.count }
        let first = try await alice.session.ping()
        let second = try await alice.session.ping()
        for roundTrip in [first, second] { #expect(roundTrip > .zero && roundTrip < .seconds(10)) }
        #expect(alice.events.withLock { $0.count } == seen)
        #expect(alice.session.state == .connected)
    }

    @Test("perform round trips: whisper (transmit), receive (no action), and a bare-number broadcast")
    func performRoundTrip() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        let room = try await alice.join(cableRoom42)
        try await room.perform("whisper", ["text": "psst"])
        try await cableWaitUntil("the whisper") { alice.messages(on: cableRoom42).count == 1 }
        #expect(alice.messages(on: cableRoom42) == [["whisper": ["text": "psst"], "from": "alice"]])
        try await room.send("", ["note": 1])
        try await cableWaitUntil("the receive reply") { alice.messages(on: cableRoom42).count == 2 }
        #expect(alice.messages(on: cableRoom42).last == ["received": ["note": 1], "from": "alice"])
        try server.broadcast(stream: "echo:42", "12345")
        try await cableWaitUntil("the numeric broadcast") { alice.messages(on: cableRoom42).count == 3 }
        #expect(alice.messages(on: cableRoom42).last == 12345)
        #expect(alice.events.withLock { $0.last?.rawData } == "12345")
    }

    @Test("a broadcast reaches both clients in the room and nobody in another room")
    func broadcastToRoom() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        let bob = CableLiveClient(server, token: "valid-bob")
        let carol = CableLiveClient(server, token: "valid-carol")
        for client in [alice, bob, carol] { try await client.session.connect() }
        let aliceRoom = try await alice.join(cableRoom42)
        _ = try await bob.join(cableRoom42)
        _ = try await carol.join(cableRoom7)
        try await aliceRoom.perform("speak", ["text": "hi"])
        let expected: JSONValue = ["action": "speak", "from": "alice", "room_id": 42, "data": ["text": "hi"]]
        try await cableWaitUntil("both room members to hear alice") {
            alice.messages(on: cableRoom42) == [expected] && bob.messages(on: cableRoom42) == [expected]
        }
        // Room 7 hears its own broadcast only.
        try server.broadcast(stream: "echo:7", #""seven""#)
        try await cableWaitUntil("room 7's broadcast") { carol.messages(on: cableRoom7) == ["seven"] }
        #expect(carol.events.withLock { $0.count } == 1)
        #expect(bob.messages(on: cableRoom42) == [expected])
    }

    @Test("portable event names: a broadcast {\"event\":\"x\"} fires on(\"x\"), a plain string on(\"message\"), speak on(\"speak\")")
    func portableEventNames() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        let room = try await alice.join(cableRoom42)
        let named = Locked<[JSONValue]>([])
        let plain = Locked<[JSONValue]>([])
        let spoken = Locked<[JSONValue]>([])
        room.on("order-updated") { event in named.withLock { $0.append(event.data) } }
        room.on("message") { event in plain.withLock { $0.append(event.data) } }
        room.on("speak") { event in spoken.withLock { $0.append(event.data) } }
        try server.broadcast(stream: "echo:42", #"{"event":"order-updated","id":7}"#)
        try server.broadcast(stream: "echo:42", #""plain text""#)
        try await room.perform("speak", ["text": "hi"])   // EchoChannel#speak broadcasts {"action":"speak",…}
        try await cableWaitUntil("the three broadcasts") { alice.events.withLock { $0.count } == 3 }
        // The room's handlers run after the session's onAny (registered first) for each event.
        try await cableWaitUntil("the room's handlers") {
            named.withLock { $0.count } == 1 && plain.withLock { $0.count } == 1 && spoken.withLock { $0.count } == 1
        }
        #expect(named.withLock { $0 } == [["event": "order-updated", "id": 7]])
        #expect(plain.withLock { $0 } == ["plain text"])
        #expect(spoken.withLock { $0 } == [["action": "speak", "from": "alice", "room_id": 42, "data": ["text": "hi"]]])
        // Rails' async adapter may deliver the three broadcasts in any order.
        #expect(alice.events.withLock { $0.map(\.name).sorted() } == ["message", "order-updated", "speak"])
        #expect(alice.events.withLock { $0.first { $0.name == "order-updated" }?.rawData }
                == #"{"event":"order-updated","id":7}"#)
    }

    @Test("reject_subscription fails the channel with .subscriptionRejected")
    func reject() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        do {
            _ = try await alice.join("RejectChannel")
            Issue.record("RejectChannel must be rejected")
        } catch let error as RealtimeError {
            #expect(error.code == .subscriptionRejected)
        }
        #expect(alice.session.state == .connected)
    }

    @Test("a channel the server never answers times out at the guarantor's cap; the connection survives")
    func guarantorTimeout() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        // 5 attempts 1 s apart: the cap still ends NoSuchChannel, and Rails gets 5 s, not 1 s, to confirm
        // the room joined afterwards on a loaded machine.
        let alice = CableLiveClient(server, token: "valid-alice",
                                   guarantor: .init(interval: .seconds(1), maximumAttempts: 5))
        try await alice.session.connect()
        do {
            _ = try await alice.join("NoSuchChannel")
            Issue.record("an unknown channel cannot be confirmed")
        } catch let error as RealtimeError {
            // The configured cap (5 sends), not the default (20), ended it.
            #expect(error.code == .timedOut)
            #expect(error.message.hasPrefix("no answer to 5 subscribe commands"), "\(error)")
        }
        _ = try await alice.join(cableRoom42)
        #expect(alice.session.state == .connected)
    }

    @Test("a bad token is unauthorized: the session fails for good; a Bearer header from the provider is accepted")
    func authorization() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let anonymous = CableLiveClient(server, token: "nope")
        do {
            try await anonymous.session.connect()
            Issue.record("an invalid token must be refused")
        } catch let error as RealtimeError {
            #expect(error.code == .connectionRefused)
        }
        try await Task.sleep(for: .seconds(1))
        guard case .failed(let error) = anonymous.session.state else {
            Issue.record("expected failed, got \(anonymous.session.state)")
            return
        }
        #expect(error.code == .connectionRefused)
        #expect(!anonymous.states.withLock { $0 }.contains { if case .reconnecting = $0 { true } else { false } })

        let dave = CableLiveClient(server, auth: .provider { .init(headers: [HTTPHeader("Authorization", "Bearer valid-dave")]) })
        try await dave.session.connect()
        _ = try await dave.join(cableRoom42)
        // Rails 6.1 registers the connection after sending its welcome, on a worker thread of its own.
        try await cableWaitUntil("dave registered") { (try? server.connectedUsers()) == ["dave"] }
        #expect(try server.connectedUsers() == ["dave"])
    }

    @Test("server restart: the client reconnects and re-subscribes")
    func serverRestart() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        let lifecycle = Locked<[ChannelLifecycleEvent]>([])
        alice.session.onChannelEvent { event in lifecycle.withLock { $0.append(event) } }
        try await alice.session.connect()
        _ = try await alice.join(cableRoom42)
        #expect(try server.post("/control/restart") == 200)
        try await cableWaitUntil("a reconnect") {
            alice.states.withLock { $0 }.contains { if case .reconnecting = $0 { true } else { false } }
        }
        try await cableWaitUntil("connected again") { alice.session.state == .connected }
        try await cableWaitUntil("re-subscribed") { alice.session.channel(cableRoom42).state == .subscribed(recovered: nil) }
        try server.broadcast(stream: "echo:42", #""after restart""#)
        try await cableWaitUntil("a broadcast after the restart") { alice.messages(on: cableRoom42) == ["after restart"] }
        // Rails said why, and the channel reported its resubscription.
        let reasons = alice.states.withLock { $0 }.compactMap { state -> DisconnectReason? in
            if case .reconnecting(_, _, let reason) = state { reason } else { nil }
        }
        #expect(reasons.first == .serverRestart)
        let confirmations = lifecycle.withLock { $0 }.map { event -> SubscriptionInfo? in
            if case .subscribed(let info) = event.kind { info } else { nil }
        }
        #expect(confirmations.map { $0?.isResubscription } == [false, true])
        #expect(confirmations.allSatisfy { $0?.recovered == nil && $0?.serverPayload == nil })
        // The resubscription says how long the channel went without a subscription: from the restart's
        // close to the new confirmation, the reconnect delay included.
        #expect(confirmations.first??.gap == nil)
        let gap = try #require(confirmations.last??.gap)
        #expect(gap > .zero && gap < .seconds(30), "\(gap)")
    }

    @Test("remote disconnect, Rails 6.1 style (bare close 1000): the client backs off and comes back")
    func remoteDisconnectBareClose() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let erin = CableLiveClient(server, token: "valid-erin")
        try await erin.session.connect()
        let room = try await erin.join(cableRoom42)
        let reconnects = { erin.states.withLock { $0 }.filter { if case .reconnecting = $0 { true } else { false } }.count }
        // Rails 6.1 registers a connection for remote disconnects asynchronously after its welcome, so
        // a disconnect sent right after joining can miss it; the trigger is repeated, never the check.
        try await cableRetrying("a reconnect", trigger: { try await room.perform("kick_me") }) { reconnects() >= 1 }
        try await cableWaitUntil("re-subscribed") { room.state == .subscribed(recovered: nil) && erin.session.state == .connected }
        let before = reconnects()
        try await cableRetrying("a second reconnect", trigger: {
            let status = try server.post("/control/disconnect?user=erin")
            #expect(status == 200)
        }) { reconnects() > before }
        try await cableWaitUntil("back again") { room.state == .subscribed(recovered: nil) && erin.session.state == .connected }
    }

    @Test("remote disconnect, Rails 7.1 style (disconnect frame, reconnect:false): terminal")
    func remoteDisconnectFrame() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let erin = CableLiveClient(server, token: "valid-erin")
        try await erin.session.connect()
        let room = try await erin.join(cableRoom42)
        try await room.perform("close_me")
        try await cableWaitUntil("the session to fail") {
            if case .failed = erin.session.state { return true }
            return false
        }
        guard case .failed(let error) = erin.session.state else { return }
        #expect(error.code == .connectionClosed)
        #expect(error.context.detail == "remote")
        // Rails forgets the connection when it handles the close, on a worker thread; then it must stay gone.
        try await cableWaitUntil("Rails dropped erin") { (try? server.connectedUsers())?.isEmpty == true }
        try await Task.sleep(for: .seconds(1))
        #expect(try server.connectedUsers().isEmpty)
    }

    @Test("a server that stops pinging (SIGSTOP) is declared stale; after SIGCONT the client is back")
    func staleness() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        let room = try await alice.join(cableRoom42)
        server.suspend()
        let stopped = ContinuousClock.now
        try await cableWaitUntil("the stale link to be noticed", timeout: .seconds(9)) { alice.session.state != .connected }
        let noticed = ContinuousClock.now - stopped
        // Rails pings every 3 s and the link is stale 6 s after the last frame: 3–6 s after the stop.
        #expect(noticed <= .milliseconds(7_500))  // slack for a loaded 2-core machine
        #expect(noticed >= .milliseconds(2_500))
        print("actioncable staleness: noticed \(noticed) after SIGSTOP")
        server.resume()
        try await cableWaitUntil("connected again", timeout: .seconds(15)) {
            alice.session.state == .connected && room.state == .subscribed(recovered: nil)
        }
        try server.broadcast(stream: "echo:42", #""alive""#)
        try await cableWaitUntil("a broadcast after resuming") { alice.messages(on: cableRoom42).contains("alive") }
    }

    @Test("an Origin the server does not allow gets HTTP 404: a distinct terminal error")
    func originRejected() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let stranger = CableLiveClient(server, token: "valid-alice", origin: "http://evil.example")
        do {
            try await stranger.session.connect()
            Issue.record("a foreign origin must be refused")
        } catch let error as RealtimeError {
            #expect(error.code == .handshakeRejected)
            #expect(error.context.httpStatus == 404)
            #expect(error.message.contains("the Origin http://evil.example is not in the server's allowed_request_origins"),
                    "\(error.message)")
        }
        guard case .failed = stranger.session.state else {
            Issue.record("expected failed, got \(stranger.session.state)")
            return
        }
    }

    @Test("leave and re-join at once, 10 times: every re-subscription is confirmed (the unsubscribe race)")
    func leaveRejoinRace() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        var room = try await alice.join(cableRoom42)
        let clock = ContinuousClock()
        var slowest = Duration.zero
        for _ in 0..<10 {
            room.leave()
            let started = clock.now
            room = try await alice.join(cableRoom42)
            slowest = max(slowest, clock.now - started)
        }
        print("actioncable leave/re-join: slowest confirm \(slowest)")
        try await room.perform("speak", ["text": "still here"])
        try await cableWaitUntil("the speak broadcast, once") {
            alice.messages(on: cableRoom42).contains { $0["data"]?["text"] == "still here" }
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(alice.messages(on: cableRoom42).filter { $0["data"]?["text"] == "still here" }.count == 1)
    }
}
