import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) @testable import RealtimeSocketIO
import RealtimeTesting
import Testing

/// Drives `EngineIOPolling` with scripted HTTP answers and probe events.
private struct PollingHarness {
    var polling: EngineIOPolling

    init(upgrade: Bool = false, closeTimeout: Duration = .seconds(5)) {
        let request = ConnectionRequest(url: URL(string: "http://127.0.0.1:3000/socket.io/?EIO=4&transport=polling")!)
        polling = EngineIOPolling(request: request, upgrade: upgrade, closeTimeout: closeTimeout)
    }

    static func body(_ frames: [TransportFrame]) -> Data { PollingPayload.encode(frames).body }

    static let open = TransportFrame.text(#"0{"sid":"S1","upgrades":["websocket"],"pingInterval":1000,"pingTimeout":2000,"maxPayload":40}"#)

    mutating func get(_ frames: [TransportFrame], status: Int = 200) -> [EngineIOPolling.Action] {
        polling.handle(.getFinished(.success(.init(status: status, body: Self.body(frames)))))
    }

    mutating func postOK() -> [EngineIOPolling.Action] {
        polling.handle(.postFinished(.success(.init(status: 200, body: Data("OK".utf8)))))
    }

    mutating func started() -> [EngineIOPolling.Action] {
        _ = polling.handle(.start)
        return get([Self.open])
    }
}

extension Array where Element == EngineIOPolling.Action {
    var gets: [URL] { compactMap { if case .get(let url, _) = $0 { url } else { nil } } }
    var posts: [(URL, Data)] { compactMap { if case .post(let url, let body, _) = $0 { (url, body) } else { nil } } }
    var events: [TransportEvent] { compactMap { if case .event(let event) = $0 { event } else { nil } } }
    var receivedFrames: [TransportFrame] {
        events.flatMap { event -> [TransportFrame] in if case .received(let frames) = event { frames } else { [] } }
    }
    var closures: [TransportClosure] {
        events.compactMap { if case .closed(let closure) = $0 { closure } else { nil } }
    }
    var probeSends: [TransportFrame] { flatMap { action -> [TransportFrame] in if case .probeSend(let frames, _) = action { frames } else { [] } } }
    var probeOpens: [ConnectionRequest] { compactMap { if case .openProbe(let request) = $0 { request } else { nil } } }
    var isOpened: Bool { events.contains { if case .opened = $0 { true } else { false } } }
}

private func query(_ url: URL, _ name: String) -> String? {
    URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == name }?.value
}

@Suite("Engine.IO long-polling")
struct PollingTests {
    @Test func handshakeOpensAndPolls() throws {
        var harness = PollingHarness()
        let start = harness.polling.handle(.start)
        let first = try #require(start.gets.first)
        #expect(query(first, "sid") == nil)
        #expect(query(first, "EIO") == "4")
        #expect(query(first, "transport") == "polling")

        let actions = harness.get([PollingHarness.open, .text("40")])
        #expect(actions.isOpened)
        #expect(actions.receivedFrames == [PollingHarness.open, .text("40")])
        let next = try #require(actions.gets.first)
        #expect(query(next, "sid") == "S1")
        #expect(actions.probeOpens.isEmpty)  // upgrade not enabled
    }

    @Test func onePostAtATimeBatchedWithinMaxPayload() throws {
        var harness = PollingHarness()
        _ = harness.started()
        let first = harness.polling.handle(.send([.text("40")]))
        #expect(first.posts.map(\.1) == [Data("40".utf8)])
        // While that POST is in flight, more frames queue.
        let queued = harness.polling.handle(.send([.text("42[\"a\"]"), .binary(Data([1, 2, 3])),
                                                   .text(String(repeating: "x", count: 30))]))
        #expect(queued.posts.isEmpty)
        let second = harness.postOK()
        // maxPayload is 40 bytes: the first two packets fit (7 + 1 + 5), the 30-byte one waits.
        #expect(second.posts.map(\.1) == [PollingHarness.body([.text("42[\"a\"]"), .binary(Data([1, 2, 3]))])])
        let third = harness.postOK()
        #expect(third.posts.map(\.1) == [Data(String(repeating: "x", count: 30).utf8)])
        #expect(harness.postOK().posts.isEmpty)
    }

    @Test("a burst goes out 16 packets per POST at most: python-engineio drops a longer payload whole")
    func atMostSixteenPacketsPerPost() {
        var harness = PollingHarness()
        _ = harness.polling.handle(.start)
        // A server allowing large payloads, so only the packet count splits the burst.
        _ = harness.get([.text(#"0{"sid":"S1","upgrades":[],"pingInterval":1000,"pingTimeout":2000,"maxPayload":100000}"#)])
        _ = harness.polling.handle(.send([.text("40")]))
        let burst = (0..<40).map { TransportFrame.text("42[\"n\",\($0)]") }
        #expect(harness.polling.handle(.send(burst)).posts.isEmpty)
        var posted: [[TransportFrame]] = []
        for _ in 0..<4 {
            for (_, body) in harness.postOK().posts { posted.append((try? PollingPayload.decode(body)) ?? []) }
        }
        #expect(posted.map(\.count) == [16, 16, 8])
        #expect(Array(posted.joined()) == burst)
    }

    @Test func oneGetAtATimeAndPausedReading() {
        var harness = PollingHarness()
        let opened = harness.started()
        #expect(opened.gets.count == 1)
        #expect(harness.polling.handle(.setReadingPaused(true)).gets.isEmpty)
        let answered = harness.get([.text("2")])
        #expect(answered.receivedFrames == [.text("2")])
        #expect(answered.gets.isEmpty)  // paused: no new poll
        #expect(harness.polling.handle(.setReadingPaused(false)).gets.count == 1)
        #expect(harness.polling.handle(.setReadingPaused(false)).gets.isEmpty)
    }

    @Test func handshakeErrors() {
        var rejected = PollingHarness()
        _ = rejected.polling.handle(.start)
        let closure = rejected.get([.text("bad")], status: 400).closures.first
        #expect(closure?.duringOpen == true)
        if case .failed(let error)? = closure?.kind {
            #expect(error.code == .handshakeRejected)
            #expect(error.context.httpStatus == 400)
        } else {
            Issue.record("expected a failure")
        }

        // The body's trailing newline (and any control character) stays out of the message.
        var plain = PollingHarness()
        _ = plain.polling.handle(.start)
        let answer = HTTPResponse(status: 400, body: Data("Bad request: missing Upgrade: websocket\n".utf8))
        if case .failed(let error)? = plain.polling.handle(.getFinished(.success(answer))).closures.first?.kind {
            #expect(error.message == "polling GET answered HTTP 400 for /socket.io/")
            #expect(error.context.detail == "Bad request: missing Upgrade: websocket")
            #expect(error.description.hasSuffix("HTTP 400; Bad request: missing Upgrade: websocket"))
        } else {
            Issue.record("expected a failure")
        }

        var noOpen = PollingHarness()
        _ = noOpen.polling.handle(.start)
        if case .failed(let error)? = noOpen.get([.text("40")]).closures.first?.kind {
            #expect(error.code == .handshakeInvalid)
        } else {
            Issue.record("expected a failure")
        }
    }

    @Test func serverCloseEndsTheConnection() {
        var harness = PollingHarness()
        _ = harness.started()
        let actions = harness.get([.text("1")])
        #expect(actions.receivedFrames == [.text("1")])
        #expect(actions.closures.first?.kind == .closedByPeer(code: 1000, reason: "Engine.IO close"))
        #expect(actions.gets.isEmpty)
        #expect(harness.polling.handle(.send([.text("3")])).isEmpty)
    }

    @Test("a local close posts the close packet; closed follows the server's answer")
    func localCloseSendsTheClosePacket() {
        var harness = PollingHarness()
        _ = harness.started()
        let actions = harness.polling.handle(.close(code: 1000, reason: "bye"))
        #expect(actions.posts.map(\.1) == [Data("1".utf8)])
        #expect(actions.closures.isEmpty)
        #expect(harness.polling.handle(.close(code: 1000, reason: "again")).isEmpty)
        #expect(harness.polling.handle(.send([.text("4late")])).isEmpty, "a send after the close went out")
        // The long-poll's answer no longer matters.
        #expect(harness.get([.text("4news")]).isEmpty)
        let answered = harness.postOK()
        #expect(answered.closures.map(\.kind) == [.closedLocally(code: 1000, reason: "bye")])
        #expect(answered.contains { if case .abandonRequests = $0 { true } else { false } })
        #expect(harness.postOK().isEmpty)
    }

    @Test("what was sent before a close goes out before the close packet, after the POST in flight")
    func localCloseSendsWhatWaitedFirst() {
        var harness = PollingHarness()
        _ = harness.started()
        #expect(harness.polling.handle(.send([.text("4first")])).posts.map(\.1) == [Data("4first".utf8)])
        #expect(harness.polling.handle(.send([.text("4second"), .text("4third")])).posts.isEmpty)  // behind the POST
        #expect(harness.polling.handle(.close(code: 1000, reason: "bye")).posts.isEmpty)
        let next = harness.postOK()
        #expect(next.posts.map(\.1) == [PollingHarness.body([.text("4second"), .text("4third"), .text("1")])])
        #expect(next.closures.isEmpty)
        #expect(harness.postOK().closures.map(\.kind) == [.closedLocally(code: 1000, reason: "bye")])
    }

    @Test("while closing, a failed POST or an abort ends the connection at once, as the app's close")
    func closingEndsOnFailureOrAbort() {
        var failing = PollingHarness()
        _ = failing.started()
        _ = failing.polling.handle(.close(code: 1000, reason: "bye"))
        let failed = failing.polling.handle(.postFinished(.failure(RealtimeError(.timedOut, "no answer"))))
        #expect(failed.closures.map(\.kind) == [.closedLocally(code: 1000, reason: "bye")])

        var refused = PollingHarness()
        _ = refused.started()
        _ = refused.polling.handle(.close(code: 1000, reason: "bye"))
        let answer = refused.polling.handle(.postFinished(.success(.init(status: 400, body: Data()))))
        #expect(answer.closures.map(\.kind) == [.closedLocally(code: 1000, reason: "bye")])

        var aborted = PollingHarness()
        _ = aborted.started()
        _ = aborted.polling.handle(.close(code: 1000, reason: "bye"))
        #expect(aborted.polling.handle(.abort).closures.map(\.kind) == [.closedLocally(code: 1006, reason: "aborted")])
        #expect(aborted.postOK().isEmpty)
    }

    @Test("a close whose POSTs get no answer ends at the close timeout, as a WebSocket's close does")
    func closeTimeout() {
        var harness = PollingHarness(closeTimeout: .seconds(3))
        _ = harness.started()
        #expect(harness.polling.handle(.closeTimerExpired).isEmpty, "a stray timer closed an open connection")
        _ = harness.polling.handle(.send([.text("4first")]))
        let close = harness.polling.handle(.close(code: 1000, reason: "bye"))
        let timers = close.compactMap { action -> Duration? in
            if case .armCloseTimer(let timeout) = action { timeout } else { nil }
        }
        #expect(timers == [.seconds(3)])
        #expect(close.posts.isEmpty)  // behind the POST in flight
        let expired = harness.polling.handle(.closeTimerExpired)
        #expect(expired.closures.map(\.kind) == [.closedLocally(code: 1000, reason: "bye")])
        #expect(expired.contains { if case .abandonRequests = $0 { true } else { false } })
        #expect(harness.postOK().isEmpty, "the late answer reopened the close")
        #expect(harness.polling.handle(.closeTimerExpired).isEmpty)

        // A timer that runs out after the server's answer changes nothing.
        var answered = PollingHarness()
        _ = answered.started()
        _ = answered.polling.handle(.close(code: 1000, reason: "bye"))
        #expect(answered.postOK().closures.count == 1)
        #expect(answered.polling.handle(.closeTimerExpired).isEmpty)

        // Upgraded, the WebSocket's close has its own timeout: no second timer.
        var upgraded = PollingHarness(upgrade: true)
        _ = upgraded.started()
        _ = upgraded.polling.handle(.probe(.opened(TransportOpenInfo())))
        _ = upgraded.polling.handle(.probe(.received([.text("3probe")])))
        _ = upgraded.get([.text("6")])
        #expect(upgraded.polling.isUpgraded)
        let upgradedClose = upgraded.polling.handle(.close(code: 1000, reason: "bye"))
        #expect(upgradedClose.contains { if case .probeClose(1000, "bye") = $0 { true } else { false } })
        #expect(!upgradedClose.contains { if case .armCloseTimer = $0 { true } else { false } })
    }

    @Test("a close during the upgrade probe drops the probe and closes over polling")
    func closeDuringProbe() {
        var harness = PollingHarness(upgrade: true)
        let opened = harness.started()
        #expect(opened.probeOpens.count == 1)
        let actions = harness.polling.handle(.close(code: 1000, reason: "bye"))
        #expect(actions.contains { if case .probeAbort = $0 { true } else { false } })
        #expect(actions.posts.map(\.1) == [Data("1".utf8)])
        #expect(harness.polling.handle(.probe(.opened(TransportOpenInfo()))).isEmpty)
        #expect(harness.postOK().closures.map(\.kind) == [.closedLocally(code: 1000, reason: "bye")])
    }

    @Test func httpFailuresAreTransportFailures() {
        var harness = PollingHarness()
        _ = harness.started()
        _ = harness.polling.handle(.send([.text("3")]))
        let actions = harness.polling.handle(.postFinished(.success(.init(status: 400, body: Data()))))
        if case .failed(let error)? = actions.closures.first?.kind {
            #expect(error.code == .transportFailed)
            #expect(error.context.httpStatus == 400)
        } else {
            Issue.record("expected a failure")
        }
    }

    @Test func upgradeProbesPausesAndSwitches() throws {
        var harness = PollingHarness(upgrade: true)
        let opened = harness.started()
        let probe = try #require(opened.probeOpens.first)
        #expect(probe.url.scheme == "ws")
        #expect(query(probe.url, "transport") == "websocket")
        #expect(query(probe.url, "sid") == "S1")

        #expect(harness.polling.handle(.probe(.opened(TransportOpenInfo()))).probeSends == [.text("2probe")])
        _ = harness.polling.handle(.send([.text("40")]))  // a POST is in flight
        let probed = harness.polling.handle(.probe(.received([.text("3probe")])))
        #expect(probed.probeSends.isEmpty)  // GET and POST still in flight
        #expect(harness.polling.handle(.send([.text("42[\"queued\"]")])).posts.isEmpty)
        #expect(harness.postOK().posts.isEmpty)
        // The server releases the pending GET with a noop; no new GET, and the upgrade completes.
        let released = harness.get([.text("6")])
        #expect(released.gets.isEmpty)
        #expect(released.probeSends == [.text("5"), .text("42[\"queued\"]")])
        #expect(harness.polling.isUpgraded)

        #expect(harness.polling.handle(.send([.text("3")])).probeSends == [.text("3")])
        #expect(harness.polling.handle(.probe(.received([.text("6"), .text("2")]))).receivedFrames == [.text("6"), .text("2")])
        let closed = harness.polling.handle(.probe(.closed(TransportClosure(.closedByPeer(code: 1006, reason: "")))))
        #expect(closed.closures.first?.kind == .closedByPeer(code: 1006, reason: ""))
    }

    @Test("compress: false reaches the upgraded WebSocket, for frames queued during the upgrade too")
    func uncompressedSendsSurviveTheUpgrade() throws {
        var harness = PollingHarness(upgrade: true)
        _ = harness.started()
        _ = harness.polling.handle(.probe(.opened(TransportOpenInfo())))
        _ = harness.polling.handle(.send([.text("40")]))  // a POST is in flight
        _ = harness.polling.handle(.probe(.received([.text("3probe")])))
        _ = harness.polling.handle(.send([.text("42[\"plain\"]")], compress: false))
        _ = harness.polling.handle(.send([.text("42[\"a\"]"), .text("42[\"b\"]")]))
        _ = harness.postOK()
        let released = harness.get([.text("6")])
        let sends = released.compactMap { action -> ProbeSend? in
            if case .probeSend(let frames, let compress) = action { ProbeSend(frames: frames, compress: compress) } else { nil }
        }
        let expected = [ProbeSend(frames: [.text("5")], compress: true),
                        ProbeSend(frames: [.text("42[\"plain\"]")], compress: false),
                        ProbeSend(frames: [.text("42[\"a\"]"), .text("42[\"b\"]")], compress: true)]
        #expect(sends == expected)
        #expect(harness.polling.isUpgraded)
        let after = harness.polling.handle(.send([.text("42[\"late\"]")], compress: false))
        let late = after.compactMap { action -> Bool? in if case .probeSend(_, let compress) = action { compress } else { nil } }
        #expect(late == [false])
    }

    private struct ProbeSend: Equatable {
        var frames: [TransportFrame]
        var compress: Bool
    }

    @Test func failedProbeKeepsPolling() throws {
        var harness = PollingHarness(upgrade: true)
        _ = harness.started()
        _ = harness.polling.handle(.probe(.opened(TransportOpenInfo())))
        let failed = harness.polling.handle(.probe(.closed(TransportClosure(.failed(RealtimeError(.handshakeRejected, "400"))))))
        #expect(failed.closures.isEmpty)
        #expect(!harness.polling.isUpgraded)
        #expect(harness.polling.handle(.send([.text("3")])).posts.count == 1)
        #expect(harness.get([.text("2")]).gets.count == 1)
    }

    @Test func unexpectedProbeAnswerAbandonsTheUpgrade() {
        var harness = PollingHarness(upgrade: true)
        _ = harness.started()
        _ = harness.polling.handle(.probe(.opened(TransportOpenInfo())))
        let actions = harness.polling.handle(.probe(.received([.text("3nope")])))
        #expect(actions.contains { if case .probeAbort = $0 { true } else { false } })
        #expect(!harness.polling.isUpgraded)
    }

    @Test func noUpgradeWhenTheServerOffersNone() {
        var harness = PollingHarness(upgrade: true)
        _ = harness.polling.handle(.start)
        let actions = harness.get([.text(#"0{"sid":"S","upgrades":[],"pingInterval":1000,"pingTimeout":1000}"#)])
        #expect(actions.probeOpens.isEmpty)
    }

    @Test func plainHTTPToARemoteHostIsRefusedBeforeAnyRequest() {
        let transport = EngineIOPollingTransport(upgradeTransport: nil)
        let events = Locked<[TransportEvent]>([])
        let request = ConnectionRequest(url: URL(string: "http://example.com/socket.io/?EIO=4&transport=polling")!)
        _ = transport.open(request) { event in events.withLock { $0.append(event) } }
        guard case .closed(let closure)? = events.withLock({ $0.first }), case .failed(let error) = closure.kind else {
            Issue.record("expected an immediate failure")
            return
        }
        #expect(error.code == .invalidArgument)
        #expect(closure.duringOpen)
        #expect(events.withLock { $0.count } == 1)
    }
}

/// A transport that only reports a TLS policy of its own; polling must not reach the server around it.
private struct PinningTransport: RealtimeTransport {
    var customizesTLSTrust: Bool { true }
    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        InMemoryTransport().open(request, handler: handler)
    }
}

@Suite("Socket.IO polling and the transport's TLS policy")
struct PollingTLSPolicyTests {
    @Test("https polling is refused, for good, when the session's transport pins or adds roots",
          arguments: [[SocketIODialect.Transport.polling], [.polling, .websocket]])
    func httpsPollingRefused(_ transports: [SocketIODialect.Transport]) async throws {
        let dialect = SocketIODialect.socketIO(url: URL(string: "https://chat.example.com")!, transports: transports)
        let session = RealtimeSession(dialect: dialect, transport: PinningTransport(),
                                      options: SessionOptions(delivery: .inline, clock: ManualClock()))
        await #expect(throws: RealtimeError.self) { try await session.connect() }
        guard case .failed(let error) = session.state else {
            Issue.record("expected failed, got \(session.state)")
            return
        }
        #expect(error.code == .unsupported)
        #expect(error.message.contains("transports: [.websocket]"))
    }

    @Test("polling's HTTP trust policy follows the session's transport: the platform's unless it customizes trust")
    func trustPolicyOfTransport() {
        guard case .platformDefault = HTTPTrustPolicy(of: InMemoryTransport()) else {
            Issue.record("a transport with no policy of its own leaves the platform's")
            return
        }
        #if !canImport(Security)
        guard case .refusesHTTPS = HTTPTrustPolicy(of: PinningTransport()) else {
            Issue.record("a policy URLSession cannot apply refuses https")
            return
        }
        #endif
    }

    @Test("a transport without a TLS policy of its own reports none, and the WebSocket transport is kept as is")
    func notRefused() {
        #expect(!InMemoryTransport().customizesTLSTrust)
        let websocket = SocketIODialect.socketIO(url: URL(string: "https://chat.example.com")!)
        #expect(websocket.transport(wrapping: PinningTransport()) is PinningTransport)
    }

    @Test("polling closes within the session's transport's close timeout, 5 s when it states none")
    func closeTimeoutOfTransport() throws {
        let url = URL(string: "http://127.0.0.1:3000")!
        for transports: [SocketIODialect.Transport] in [[.polling], [.polling, .websocket]] {
            let dialect = SocketIODialect.socketIO(url: url, transports: transports)
            let stated = try #require(dialect.transport(wrapping: SlowClosingTransport()) as? EngineIOPollingTransport)
            #expect(stated.closeTimeout == .seconds(2))
            let unstated = try #require(dialect.transport(wrapping: InMemoryTransport()) as? EngineIOPollingTransport)
            #expect(unstated.closeTimeout == .seconds(5))
        }
    }
}

/// A transport whose closes wait 2 s for the server.
private struct SlowClosingTransport: CloseTimeoutProviding {
    var closeTimeout: Duration { .seconds(2) }
    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        InMemoryTransport().open(request, handler: handler)
    }
}
