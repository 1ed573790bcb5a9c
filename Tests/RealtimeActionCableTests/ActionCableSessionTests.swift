import Foundation
@_spi(DialectAuthoring) import RealtimeActionCable
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// A scripted Action Cable server on an in-memory connection: welcome on open, confirm or reject
/// subscriptions by channel class, record everything.
final class FakeCable: Sendable {
    struct Rules: Sendable {
        var subprotocol: String? = "actioncable-v1-json"
        var welcome = true
        /// Channel classes answered with reject_subscription.
        var rejected: Set<String> = ["RejectChannel"]
        /// Channel classes never answered.
        var silent: Set<String> = []
        /// Subscribe commands to ignore before answering (per connection), to exercise the guarantor.
        var ignoreFirstSubscribes = 0
    }

    let rules: Rules
    private let ignored = Locked<[Int: Int]>([:])

    init(_ rules: Rules = Rules()) { self.rules = rules }

    func attach(_ peer: InMemoryPeer) {
        peer.onReceive { [self] frame, peer in self.received(frame, on: peer) }
        peer.accept(subprotocol: rules.subprotocol)
        if rules.welcome { peer.send(text: #"{"type":"welcome"}"#) }
    }

    private func received(_ frame: TransportFrame, on peer: InMemoryPeer) {
        guard case .text(let text) = frame, let command = try? JSONValue.parse(text),
              command["command"] == "subscribe", let identifier = command["identifier"]?.stringValue,
              let channel = (try? JSONValue.parse(identifier))?["channel"]?.stringValue else { return }
        if rules.silent.contains(channel) { return }
        let skip = ignored.withLock { counts -> Bool in
            let seen = counts[peer.index, default: 0]
            counts[peer.index] = seen + 1
            return seen < rules.ignoreFirstSubscribes
        }
        if skip { return }
        let type = rules.rejected.contains(channel) ? "reject_subscription" : "confirm_subscription"
        peer.send(text: JSONValue.object(["identifier": .string(identifier), "type": .string(type)]).serialized())
    }
}

/// A session with the Action Cable dialect over the in-memory transport, a manual clock and inline delivery.
final class CableHarness: Sendable {
    let clock = ManualClock()
    let transport = InMemoryTransport(autoAccept: false)
    let session: RealtimeSession
    let events = Locked<[RealtimeEvent]>([])
    let errors = Locked<[RealtimeError]>([])

    static let testPolicy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(30),
                                            jitter: .none)

    init(dialect: ActionCableDialect = .actionCable(url: URL(string: "ws://127.0.0.1:3000/cable")!),
         policy: ReconnectPolicy = CableHarness.testPolicy,
         server: @escaping @Sendable (InMemoryPeer) -> Void = { FakeCable().attach($0) }) {
        session = RealtimeSession(dialect: dialect, transport: transport,
                                  options: SessionOptions(delivery: .inline, reconnectPolicy: policy, clock: clock,
                                                          randomSource: .seeded(7)))
        transport.onOpen(server)
        session.onAny { [events] event in events.withLock { $0.append(event) } }
        session.onError { [errors] error in errors.withLock { $0.append(error) } }
    }

    var peers: [InMemoryPeer] { transport.peers }
    func sent(_ index: Int) -> [String] { peers[index].receivedTexts }
}

func failedError(_ state: ConnectionState) -> RealtimeError? {
    if case .failed(let error) = state { return error }
    return nil
}

@Suite("Action Cable over the session engine")
struct ActionCableSessionTests {
    @Test("welcome connects; held channels subscribe; perform waits for the confirm; broadcasts reach handlers")
    func roundTrip() async throws {
        let harness = CableHarness()
        let room = harness.session.channel(echo42)
        let seen = Locked<[JSONValue]>([])
        room.on("message") { event in seen.withLock { $0.append(event.data) } }
        let performing = Task { try await room.perform("speak", ["text": "hi"]) }
        await eventually { harness.session.bufferedSendCount == 1 }
        try await harness.session.connect()
        try await performing.value
        #expect(room.state == .subscribed(recovered: nil))
        #expect(harness.sent(0) == [
            subscribeEcho42,
            #"{"command":"message","data":"{\"action\":\"speak\",\"text\":\"hi\"}","identifier":\#(quoted(echo42ID))}"#,
        ])
        harness.peers[0].send(text: #"{"identifier":\#(quoted(echo42ID)),"message":{"from":"alice","text":"hi"}}"#)
        harness.peers[0].send(text: #"{"type":"ping","message":1796219807}"#)
        #expect(seen.withLock { $0 } == [["from": "alice", "text": "hi"]])
        #expect(harness.events.withLock { $0.count } == 1)
    }

    @Test("handlers written for Socket.IO and Pusher fire: {\"event\":\"x\"} reaches on(\"x\"), a string on(\"message\")")
    func portableEventNames() async throws {
        let harness = CableHarness()
        let room = harness.session.channel(echo42)
        let named = Locked<[JSONValue]>([])
        let plain = Locked<[JSONValue]>([])
        room.on("order-updated") { event in named.withLock { $0.append(event.data) } }
        room.on("message") { event in plain.withLock { $0.append(event.data) } }
        try await harness.session.connect()
        try await room.subscribed()
        harness.peers[0].send(text: #"{"identifier":\#(quoted(echo42ID)),"message":{"event":"order-updated","id":7}}"#)
        harness.peers[0].send(text: #"{"identifier":\#(quoted(echo42ID)),"message":"plain text"}"#)
        #expect(named.withLock { $0 } == [["event": "order-updated", "id": 7]])
        #expect(plain.withLock { $0 } == ["plain text"])
        #expect(harness.events.withLock { $0.map(\.name) } == ["order-updated", "message"])
    }

    @Test("a broadcast that beats the confirm is delivered, not dropped")
    func broadcastBeforeConfirm() async throws {
        let harness = CableHarness(server: { FakeCable(.init(silent: ["EchoChannel"])).attach($0) })
        let room = harness.session.channel(echo42)
        let seen = Locked<[JSONValue]>([])
        room.on("message") { event in seen.withLock { $0.append(event.data) } }
        try await harness.session.connect()
        #expect(room.state == .pending)
        harness.peers[0].send(text: #"{"identifier":\#(quoted(echo42ID)),"message":12345}"#)
        #expect(seen.withLock { $0 } == [12345])
        harness.peers[0].send(text: confirmEcho42)
        #expect(room.state == .subscribed(recovered: nil))
    }

    @Test("the guarantor resends subscribe on the manual clock until the server answers")
    func guarantorRetries() async throws {
        let harness = CableHarness(server: { FakeCable(.init(ignoreFirstSubscribes: 2)).attach($0) })
        let room = harness.session.channel(echo42)
        try await harness.session.connect()
        #expect(harness.sent(0) == [subscribeEcho42])
        harness.clock.advance(by: .milliseconds(499))
        #expect(harness.sent(0).count == 1)
        harness.clock.advance(by: .milliseconds(1))
        #expect(harness.sent(0) == [subscribeEcho42, subscribeEcho42])
        #expect(room.state == .pending)
        harness.clock.advance(by: .milliseconds(500))
        #expect(room.state == .subscribed(recovered: nil))
        harness.clock.advance(by: .seconds(10))
        #expect(harness.sent(0).count == 3)
    }

    @Test("a channel nobody answers fails with .timedOut at the guarantor's cap")
    func guarantorGivesUp() async throws {
        let dialect = ActionCableDialect.actionCable(url: URL(string: "ws://127.0.0.1:3000/cable")!,
                                                     guarantor: .init(interval: .seconds(1), maximumAttempts: 4))
        let harness = CableHarness(dialect: dialect, server: { FakeCable(.init(silent: ["NoSuchChannel"])).attach($0) })
        let missing = harness.session.channel("NoSuchChannel")
        try await harness.session.connect()
        let waiting = Task { _ = try await missing.subscribed() }
        harness.clock.advance(by: .seconds(3))
        #expect(missing.state == .pending)
        harness.clock.advance(by: .seconds(1))
        do {
            try await waiting.value
            Issue.record("the subscription must time out")
        } catch let error as RealtimeError {
            #expect(error.code == .timedOut)
        }
        let subscribes = harness.sent(0).filter { $0.contains(#""command":"subscribe""#) }
        #expect(subscribes.count == 4)
        #expect(harness.sent(0).last == #"{"command":"unsubscribe","identifier":"{\"channel\":\"NoSuchChannel\"}"}"#)
        #expect(harness.errors.withLock { $0.map(\.code) } == [.timedOut])
        #expect(harness.session.state == .connected)
    }

    @Test("reject_subscription fails the channel, its sends and its waiters; it is not retried")
    func rejected() async throws {
        let harness = CableHarness()
        let reject = harness.session.channel("RejectChannel")
        try await harness.session.connect()
        await #expect(throws: RealtimeError.self) { try await reject.subscribed() }
        guard case .rejected(let error) = reject.state else {
            Issue.record("expected failed, got \(reject.state)")
            return
        }
        #expect(error.code == .subscriptionRejected)
        do {
            try await reject.perform("anything")
            Issue.record("a rejected channel cannot send")
        } catch let error as RealtimeError {
            #expect(error.code == .channelUnavailable)
        }
        harness.clock.advance(by: .seconds(30))
        #expect(harness.sent(0) == [#"{"command":"subscribe","identifier":"{\"channel\":\"RejectChannel\"}"}"#])
    }

    @Test("a silent link is stale after 6 s; pings keep it alive; the reconnect re-subscribes")
    func staleness() async throws {
        let harness = CableHarness()
        let room = harness.session.channel(echo42)
        try await harness.session.connect()
        harness.clock.advance(by: .seconds(3))
        harness.peers[0].send(text: #"{"type":"ping","message":1}"#)
        harness.clock.advance(by: .milliseconds(5_999))
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .milliseconds(1))
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: .livenessTimeout))
        #expect(harness.peers[0].closeRequest?.code == 1006)
        harness.clock.advance(by: .seconds(1))
        #expect(harness.session.state == .connected)
        #expect(harness.sent(1) == [subscribeEcho42])
        #expect(room.state == .subscribed(recovered: nil))
    }

    @Test("liveness: a longer pingTimeout waits longer for the beat; .disabled turns the monitor off")
    func livenessOption() async throws {
        let url = URL(string: "ws://127.0.0.1:3000/cable")!
        let patient = CableHarness(dialect: .actionCable(url: url, liveness: Liveness(pingTimeout: .seconds(20))))
        try await patient.session.connect()
        patient.clock.advance(by: .milliseconds(22_999))
        #expect(patient.session.state == .connected)
        patient.clock.advance(by: .milliseconds(1))
        #expect(patient.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: .livenessTimeout))
        #expect(patient.errors.withLock { $0.map(\.code) } == [.livenessTimeout])

        let unmonitored = CableHarness(dialect: .actionCable(url: url, liveness: .disabled))
        try await unmonitored.session.connect()
        unmonitored.clock.advance(by: .seconds(3_600))
        #expect(unmonitored.session.state == .connected)
        #expect(unmonitored.peers.count == 1)
        #expect(unmonitored.errors.withLock { $0 }.isEmpty)
    }

    @Test("restartDelay set on .actionCable is the least wait after server_restart")
    func restartDelayOption() async throws {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(30), jitter: .none)
        let harness = CableHarness(dialect: .actionCable(url: URL(string: "ws://127.0.0.1:3000/cable")!,
                                                         restartDelay: .seconds(2)),
                                   policy: policy)
        try await harness.session.connect()
        harness.peers[0].send(text: #"{"type":"disconnect","reason":"server_restart","reconnect":true}"#)
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(2), reason: .serverRestart))
        harness.clock.advance(by: .milliseconds(1_999))
        #expect(harness.peers.count == 1)
        harness.clock.advance(by: .milliseconds(1))
        #expect(harness.peers.count == 2)
    }

    @Test("auth: .value adds the same headers and query items to every attempt, with no asynchronous step")
    func fixedAuth() async throws {
        let credentials = ActionCableDialect.Credentials(headers: [HTTPHeader("Authorization", "Bearer valid-ann")],
                                                         queryItems: [URLQueryItem(name: "v", value: "1")])
        let dialect = ActionCableDialect.actionCable(url: URL(string: "ws://127.0.0.1:3000/cable")!,
                                                     auth: .value(credentials))
        guard case .ready(let request) = dialect.connectionRequest(attempt: 3) else {
            Issue.record("a fixed credential needs no asynchronous step")
            return
        }
        #expect(request.headers == [HTTPHeader("Authorization", "Bearer valid-ann")])
        #expect(request.url.absoluteString == "ws://127.0.0.1:3000/cable?v=1")
        let harness = CableHarness(dialect: dialect)
        try await harness.session.connect()
        harness.peers[0].drop()
        harness.clock.advance(by: .seconds(1))
        let second = await harness.transport.peer(1)
        #expect(second.request.headers == [HTTPHeader("Authorization", "Bearer valid-ann")])
    }

    @Test("unauthorized is terminal: the session fails with .connectionRefused and never reconnects")
    func unauthorized() async throws {
        let harness = CableHarness(server: { peer in
            peer.accept(subprotocol: "actioncable-v1-json")
            peer.send(text: #"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
            peer.close(code: 1000)
        })
        do {
            try await harness.session.connect()
            Issue.record("connect must fail")
        } catch let error as RealtimeError {
            #expect(error.code == .connectionRefused)
        }
        #expect(failedError(harness.session.state)?.code == .connectionRefused)
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.peers.count == 1)
    }

    @Test("server_restart reconnects after the backoff (never under 500 ms) and re-subscribes")
    func serverRestart() async throws {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(30), jitter: .none)
        let harness = CableHarness(policy: policy)
        let room = harness.session.channel(echo42)
        try await harness.session.connect()
        harness.peers[0].send(text: #"{"type":"disconnect","reason":"server_restart","reconnect":true}"#)
        #expect(harness.peers[0].closeRequest?.code == 1000)
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .milliseconds(500), reason: .serverRestart))
        harness.clock.advance(by: .milliseconds(499))
        #expect(harness.peers.count == 1)
        harness.clock.advance(by: .milliseconds(1))
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
        #expect(harness.sent(1) == [subscribeEcho42])
        #expect(room.state == .subscribed(recovered: nil))
    }

    @Test("a remote disconnect: the 7.1 frame with reconnect:false is terminal, a bare close 1000 backs off")
    func remoteDisconnects() async throws {
        let bare = CableHarness()
        try await bare.session.connect()
        bare.peers[0].close(code: 1000)
        #expect(bare.session.state == .reconnecting(attempt: 1, delay: .seconds(1),
                                                    reason: .closedByServer(code: 1000, reason: "")))
        bare.clock.advance(by: .seconds(1))
        #expect(bare.session.state == .connected)

        let framed = CableHarness()
        try await framed.session.connect()
        framed.peers[0].send(text: #"{"type":"disconnect","reason":"remote","reconnect":false}"#)
        #expect(failedError(framed.session.state)?.code == .connectionClosed)
        #expect(failedError(framed.session.state)?.context.detail == "remote")
        framed.clock.advance(by: .seconds(60))
        #expect(framed.peers.count == 1)
    }

    @Test("a server that selects actioncable-unsupported fails the session with .handshakeInvalid")
    func unsupportedProtocol() async throws {
        let harness = CableHarness(server: { FakeCable(.init(subprotocol: "actioncable-unsupported", welcome: false)).attach($0) })
        await #expect(throws: RealtimeError.self) { try await harness.session.connect() }
        #expect(failedError(harness.session.state)?.code == .handshakeInvalid)
        #expect(harness.peers[0].closeRequest?.code == 1000)
        harness.clock.advance(by: .seconds(60))
        #expect(harness.peers.count == 1)
    }

    @Test("HTTP 404 on the upgrade fails the session with .handshakeRejected and the Origin hint")
    func originRejected() async throws {
        let harness = CableHarness(server: { peer in
            peer.fail(RealtimeError(.handshakeRejected, "wrong path (or origin refused): HTTP 404 Not Found for /cable",
                                    context: .init(httpStatus: 404)))
        })
        await #expect(throws: RealtimeError.self) { try await harness.session.connect() }
        let error = failedError(harness.session.state)
        #expect(error?.code == .handshakeRejected)
        #expect(error?.context.httpStatus == 404)
        #expect(error?.message.contains("Origin") == true)
        #expect(harness.peers[0].request.origin == "http://127.0.0.1:3000")
    }

    @Test("leaving and re-joining at once sends unsubscribe, then subscribe only after the settle delay")
    func leaveAndRejoin() async throws {
        let harness = CableHarness()
        let room = harness.session.channel(echo42)
        try await harness.session.connect()
        room.leave()
        let again = harness.session.channel(echo42)
        #expect(harness.sent(0) == [subscribeEcho42, unsubscribeEcho42])
        harness.clock.advance(by: .milliseconds(500))
        #expect(harness.sent(0) == [subscribeEcho42, unsubscribeEcho42, subscribeEcho42])
        #expect(again.state == .subscribed(recovered: nil))
    }

    @Test("requests and malformed sends are refused at the call site")
    func callSiteErrors() async throws {
        let harness = CableHarness()
        let room = harness.session.channel(echo42)
        try await harness.session.connect()
        for attempt in [
            { _ = try await room.request("speak", ["text": "hi"]) } as @Sendable () async throws -> Void,
            { try await room.send("speak", "just a string") },
            { try await room.perform("") },
            { try await room.perform("speak", ["action": "other"]) },
        ] {
            do {
                try await attempt()
                Issue.record("the call must be refused")
            } catch let error as RealtimeError {
                #expect([.unsupported, .invalidArgument].contains(error.code))
            }
        }
        #expect(harness.sent(0) == [subscribeEcho42])
    }

    @Test("the credentials provider runs again before the reconnect")
    func credentialsRefresh() async throws {
        let calls = Locked(0)
        let dialect = ActionCableDialect.actionCable(
            url: URL(string: "ws://127.0.0.1:3000/cable")!,
            auth: .provider {
                let call = calls.withLock { $0 += 1; return $0 }
                return .init(headers: [HTTPHeader("Authorization", "Bearer valid-\(call)")])
            })
        let harness = CableHarness(dialect: dialect)
        try await harness.session.connect()
        harness.peers[0].drop()
        harness.clock.advance(by: .seconds(1))
        let second = await harness.transport.peer(1)
        #expect(harness.peers[0].request.headers == [HTTPHeader("Authorization", "Bearer valid-1")])
        #expect(second.request.headers == [HTTPHeader("Authorization", "Bearer valid-2")])
        #expect(calls.withLock { $0 } == 2)
    }
}

/// Waits (yielding, never sleeping) until `condition` holds; records an issue if it never does.
func eventually(_ description: String = "condition", sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: () -> Bool) async {
    for _ in 0..<200_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("timed out waiting for \(description)", sourceLocation: sourceLocation)
}
