import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import RealtimeWebSocket
import Testing

@Suite("Pusher options: TLS, timeouts, identities")
struct PusherOptionsTests {
    static func request(_ dialect: PusherDialect) -> ConnectionRequest? {
        if case .ready(let request) = dialect.connectionRequest(attempt: 0) { return request }
        return nil
    }

    @Test("useTLS: nil picks ws for loopback only; true gives wss on loopback; false gives ws elsewhere, refused without the opt-in")
    func tlsChoice() {
        #expect(PusherDialect.pusher(key: "k", host: "127.0.0.1", port: 6001).url.scheme == "ws")
        #expect(PusherDialect.pusher(key: "k", host: "localhost").url.scheme == "ws")
        #expect(PusherDialect.pusher(key: "k", host: "192.168.1.20").url.scheme == "wss")
        #expect(PusherDialect.pusher(key: "k", host: "127.0.0.1", useTLS: true).url.scheme == "wss")
        #expect(PusherDialect.bird(key: "k", host: "::1", useTLS: true).url.scheme == "wss")
        // An IPv6 literal gets its brackets (it used to give no URL at all).
        #expect(PusherDialect.pusher(key: "k", host: "::1", port: 6001).url.absoluteString.hasPrefix("ws://[::1]:6001/app/k?"))
        let lan = PusherDialect.pusher(key: "k", host: "192.168.1.20", port: 6001, useTLS: false)
        #expect(lan.url.absoluteString.hasPrefix("ws://192.168.1.20:6001/app/k?"))
        #expect(Self.request(lan)?.allowsInsecureTransportToRemoteHosts == false)
        let allowed = PusherDialect.bird(key: "k", host: "192.168.1.20", useTLS: false,
                                         allowsInsecureTransportToRemoteHosts: true)
        #expect(allowed.url.scheme == "ws")
        #expect(Self.request(allowed)?.allowsInsecureTransportToRemoteHosts == true)
    }

    @Test("ws to a LAN host without the opt-in fails the session with invalidArgument and no retry")
    func plainToLANRefused() async {
        let session = RealtimeSession(dialect: .pusher(key: "k", host: "192.168.1.20", port: 6001, useTLS: false),
                                      transport: WebSocketTransport(),
                                      options: SessionOptions(delivery: .inline, clock: ManualClock()))
        do {
            try await session.connect()
            Issue.record("ws:// to a LAN host must be refused")
        } catch let error as RealtimeError {
            #expect(error.code == .invalidArgument)
        } catch {
            Issue.record("unexpected \(error)")
        }
        if case .failed(let error) = session.state { #expect(error.code == .invalidArgument) }
        else { Issue.record("expected failed, got \(session.state)") }
    }

    @Test("liveness (pingInterval, pingTimeout) reaches the machine from both constructors")
    func timeouts() {
        let liveness = Liveness(pingInterval: .seconds(50), pingTimeout: .seconds(7))
        for dialect in [PusherDialect.pusher(key: "k", host: "127.0.0.1", liveness: liveness),
                        PusherDialect.bird(key: "k", host: "127.0.0.1", liveness: liveness)] {
            #expect(dialect.liveness == liveness)
            var driver = PusherDriver(dialect)
            let bird = dialect.vendor == .bird
            // The server asks for 120 s: Pusher keeps the smaller 50 s, Bird takes the server's.
            let rules = driver.establish(bird ? "c-1" : "1.1", activity: 120, vendor: dialect.vendor.name,
                                         idKey: dialect.vendor.connectionIDKey).livenessRules
            guard case .clientPings(let idle, let timeout, _)? = rules.first else {
                Issue.record("no client pings for \(dialect.vendor.name)")
                continue
            }
            #expect(idle == (bird ? .seconds(120) : .seconds(50)))
            #expect(timeout == .seconds(7))
        }
    }

    @Test("liveness: zero and negative durations reach the machine raised to Liveness.minimumDuration")
    func livenessNeverZero() {
        var driver = PusherDriver(.pusher(key: "k", host: "127.0.0.1",
                                          liveness: Liveness(pingInterval: .zero, pingTimeout: .seconds(-1))))
        guard case .clientPings(let idle, let timeout, _)? = driver.establish(activity: 120).livenessRules.first else {
            Issue.record("no client pings")
            return
        }
        #expect(idle == .milliseconds(100) && timeout == .milliseconds(100))
    }

    @Test("liveness: unset values are 120 s and 30 s; .disabled sends no pings and checks nothing")
    func livenessDefaultsAndDisabled() {
        var automatic = PusherDriver(.pusher(key: "k", host: "127.0.0.1"))
        guard case .clientPings(let idle, let timeout, _)? = automatic.establish(activity: 500).livenessRules.first else {
            Issue.record("no client pings by default")
            return
        }
        #expect(idle == .seconds(120) && timeout == .seconds(30))
        var onlyTimeout = PusherDriver(.pusher(key: "k", host: "127.0.0.1", liveness: Liveness(pingTimeout: .seconds(4))))
        guard case .clientPings(let idle2, let timeout2, _)? = onlyTimeout.establish(activity: 60).livenessRules.first else {
            Issue.record("no client pings with a pingTimeout")
            return
        }
        #expect(idle2 == .seconds(60) && timeout2 == .seconds(4))
        for dialect in [PusherDialect.pusher(key: "k", host: "127.0.0.1", liveness: .disabled),
                        PusherDialect.bird(key: "k", host: "127.0.0.1", liveness: .disabled)] {
            var driver = PusherDriver(dialect)
            let actions = driver.establish(bird(dialect) ? "c-1" : "1.1", vendor: dialect.vendor.name,
                                           idKey: dialect.vendor.connectionIDKey)
            #expect(actions.livenessRules == [LivenessRule.none])
            #expect(actions.contains { if case .connected = $0 { true } else { false } })
        }
    }

    private func bird(_ dialect: PusherDialect) -> Bool { dialect.vendor == .bird }

    @Test("a silent link with liveness .disabled stays connected on the session")
    func livenessDisabledOnTheSession() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(autoAccept: false)
        let server = FakePusher()
        transport.onOpen { server.attach($0) }
        let session = RealtimeSession(dialect: .pusher(key: FakePusher.key, host: "127.0.0.1", port: 6001, liveness: .disabled),
                                      transport: transport, options: SessionOptions(delivery: .inline, clock: clock))
        try await session.connect()
        clock.advance(by: .seconds(3_600))
        #expect(session.state == .connected)
        #expect(transport.peers.count == 1)
        #expect(!transport.peers[0].receivedTexts.contains { $0.contains("pusher:ping") })
    }
}

@Suite("Pusher close 4000: one retry over wss")
struct PusherTLSRetryTests {
    static func closed(_ code: Int) -> TransportClosure { TransportClosure(.closedByPeer(code: code, reason: "use TLS")) }

    @Test("machine: 4000 over ws retries at once over wss (same host and port); a second 4000 is final")
    func machineRetriesOnce() {
        let dialect = PusherDialect.pusher(key: "k", host: "127.0.0.1", port: 6001)
        var machine = dialect.makeMachine()
        var request = PusherOptionsTests.request(dialect)!
        machine.willOpen(&request)
        #expect(request.url.scheme == "ws")
        #expect(machine.connectionEnded(Self.closed(4000)) == .reconnectImmediately)
        var retry = PusherOptionsTests.request(dialect)!
        machine.willOpen(&retry)
        #expect(retry.url.absoluteString == dialect.url.absoluteString.replacingOccurrences(of: "ws://", with: "wss://"))
        guard case .terminal(let error) = machine.connectionEnded(Self.closed(4000)) else {
            Issue.record("a 4000 over wss must be final")
            return
        }
        #expect(error.code == .connectionRefused)
        #expect(error.context.closeCode == 4000)
        // Once switched, the session stays on wss for every later attempt.
        var later = PusherOptionsTests.request(dialect)!
        machine.willOpen(&later)
        #expect(later.url.scheme == "wss")
    }

    @Test("machine: 4000 over wss from the start, and Bird's 4000 over ws, are final at once")
    func finalCases() {
        for dialect in [PusherDialect.pusher(key: "k", host: "127.0.0.1", useTLS: true),
                        PusherDialect.bird(key: "k", host: "127.0.0.1")] {
            var machine = dialect.makeMachine()
            var request = PusherOptionsTests.request(dialect)!
            machine.willOpen(&request)
            if case .terminal(let error) = machine.connectionEnded(Self.closed(4000)) {
                #expect(error.code == .connectionRefused)
            } else {
                Issue.record("4000 must be final for \(dialect.vendor.name) over \(request.url.scheme ?? "")")
            }
        }
    }

    /// Skips a reconnect delay when the session is waiting one; always `true`, to chain in conditions.
    static func advanceIfWaiting(_ session: RealtimeSession, _ clock: ManualClock) -> Bool {
        if case .reconnecting = session.state { clock.advance(by: .seconds(30)) }
        return true
    }

    /// A session whose server refuses `ws` with 4000 and, unless `refuseTLS`, speaks Pusher over `wss`.
    static func session(vendor: PusherVendor = .pusher, refuseTLS: Bool = false)
        -> (RealtimeSession, InMemoryTransport, ManualClock) {
        let clock = ManualClock()
        let transport = InMemoryTransport(autoAccept: false)
        let server = FakePusher()
        transport.onOpen { peer in
            if peer.request.url.scheme == "wss", !refuseTLS {
                server.attach(peer)
            } else {
                peer.accept()
                peer.close(code: 4000, reason: "Application only accepts TLS connections")
            }
        }
        let dialect: PusherDialect = vendor == .bird
            ? .bird(key: FakePusher.key, host: "127.0.0.1", port: 6001)
            : .pusher(key: FakePusher.key, host: "127.0.0.1", port: 6001)
        let session = RealtimeSession(dialect: dialect, transport: transport,
                                      options: SessionOptions(delivery: .inline, reconnectPolicy: PusherHarness.policy,
                                                              clock: clock, randomSource: .seeded(3)))
        return (session, transport, clock)
    }

    @Test("session: refused over ws with 4000, connected over wss on the next attempt")
    func sessionSwitchesToTLS() async {
        let (session, transport, clock) = Self.session()
        session.start()
        await eventually("connected over wss") { Self.advanceIfWaiting(session, clock) && session.state.isConnected }
        #expect(transport.peers.map { $0.request.url.scheme } == ["ws", "wss"])
        #expect(transport.peers[1].request.url.port == 6001)
        // A later drop reconnects over wss again, not back to ws.
        transport.peers[1].close(code: 4200, reason: "reconnect")
        await eventually("third connection") { Self.advanceIfWaiting(session, clock) && transport.peers.count == 3 }
        #expect(transport.peers[2].request.url.scheme == "wss")
    }

    @Test("session: 4000 over wss too fails the session after exactly two attempts; Bird fails after one")
    func sessionFailsAfterOneRetry() async {
        let (session, transport, clock) = Self.session(refuseTLS: true)
        session.start()
        await eventually("failed") {
            guard Self.advanceIfWaiting(session, clock), case .failed = session.state else { return false }
            return true
        }
        #expect(transport.peers.map { $0.request.url.scheme } == ["ws", "wss"])
        if case .failed(let error) = session.state {
            #expect(error.code == .connectionRefused)
            #expect(error.context.closeCode == 4000)
        }

        let (bird, birdTransport, _) = Self.session(vendor: .bird)
        bird.start()
        await eventually("Bird failed") { if case .failed = bird.state { true } else { false } }
        #expect(birdTransport.peers.count == 1)
    }
}

@Suite("Pusher inline signer with a userDataFetcher")
struct PusherUserDataFetcherTests {
    @Test("presence and sign-in identities come from the fetcher, per vendor; private channels never ask it")
    func identities() async throws {
        let asked = Locked(0)
        let authorizer = PusherAuth.inlineFetching(secret: "secret") {
            asked.withLock { $0 += 1 }
            return PresenceMember(id: "u1", info: ["n": 1])
        }
        let pusher = PusherAuthRequest(connectionID: "1.2", channel: "presence-room", vendor: .pusher)
        let presence = try await authorizer.authorize(pusher, key: "app-key", context: DialectWorkContext())
        #expect(presence.channelData == #"{"user_id":"u1","user_info":{"n":1}}"#)
        #expect(presence.auth == expectedAuth(#"1.2:presence-room:{"user_id":"u1","user_info":{"n":1}}"#))
        let signin = try await authorizer.authorize(PusherAuthRequest(connectionID: "1.2", channel: nil, vendor: .pusher),
                                                    key: "app-key", context: DialectWorkContext())
        #expect(signin.userData == #"{"id":"u1","user_info":{"n":1}}"#)
        #expect(signin.auth == expectedAuth(#"1.2::user::{"id":"u1","user_info":{"n":1}}"#))
        let bird = try await authorizer.authorize(PusherAuthRequest(connectionID: "c", channel: "presence-r", vendor: .bird),
                                                  key: "k", context: DialectWorkContext())
        #expect(bird.channelData == #"{"member_id":"u1","member_info":{"n":1}}"#)
        #expect(asked.withLock { $0 } == 3)
        let privateAnswer = try await authorizer.authorize(
            PusherAuthRequest(connectionID: "1.2", channel: "private-x", vendor: .pusher), key: "app-key",
            context: DialectWorkContext())
        #expect(privateAnswer.channelData == nil)
        #expect(asked.withLock { $0 } == 3)
    }

    @Test("the fetcher runs again after a reconnect: a new identity joins the presence channel")
    func dynamicAcrossReconnects() async throws {
        let identity = Locked("first")
        let harness = PusherHarness(auth: .inlineFetching(secret: FakePusher.secret) {
            PresenceMember(id: identity.withLock { $0 })
        })
        let roster = try harness.session.presence("presence-room")
        try await harness.session.connect()
        await eventually("joined") { roster.myID == "first" }
        identity.withLock { $0 = "second" }
        harness.peers[0].close(code: 4200, reason: "reconnect")
        await eventually("second connection") { harness.peers.count == 2 }
        await eventually("joined again") { roster.myID == "second" }
        let subscribe = harness.peers[1].receivedTexts.first { $0.contains("pusher:subscribe") }
        #expect(subscribe?.contains(#"\"user_id\":\"second\""#) == true)
    }

    @Test("a fetcher that throws fails the channel with operationFailed, and sign-in with signInFailed")
    func fetcherThrows() async throws {
        struct Offline: Error {}
        let harness = PusherHarness(auth: .inlineFetching(secret: FakePusher.secret) { throw Offline() })
        let room = harness.session.channel("presence-room")
        try await harness.session.connect()
        await #expect(throws: RealtimeError.self) { _ = try await room.subscribed() }
        if case .rejected(let error) = room.state { #expect(error.code == .operationFailed) }
        else { Issue.record("expected a failed channel, got \(room.state)") }
        do {
            _ = try await harness.session.signIn()
            Issue.record("sign-in must fail")
        } catch let error as RealtimeError {
            #expect(error.code == .signInFailed)
        }
    }
}
