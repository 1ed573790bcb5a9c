@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// A transport whose connections cannot ping, as Socket.IO's long-polling ones cannot.
private struct NonPingingTransport: RealtimeTransport {
    let inner: InMemoryTransport

    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        Connection(inner: inner.open(request, handler: handler))
    }

    final class Connection: TransportConnection {
        let inner: any TransportConnection
        init(inner: any TransportConnection) { self.inner = inner }
        func send(_ frames: [TransportFrame]) { inner.send(frames) }
        func close(code: Int, reason: String) { inner.close(code: code, reason: reason) }
        func abort() { inner.abort() }
        func setReadingPaused(_ paused: Bool) { inner.setReadingPaused(paused) }
    }
}

@Suite("session.ping(): the round trip on the open connection", .timeLimit(.minutes(1)))
struct PingTests {
    @Test("it returns the round trip the connection measured; no frame is written and no handler runs")
    func measures() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        let sentBefore = harness.peers[0].received
        harness.peers[0].roundTrip = .milliseconds(42)
        #expect(try await harness.session.ping() == .milliseconds(42))
        harness.peers[0].roundTrip = .microseconds(180)
        #expect(try await harness.session.ping() == .microseconds(180))
        #expect(harness.peers[0].pingsReceived == 2)
        #expect(harness.peers[0].received == sentBefore)
        #expect(harness.eventLog.isEmpty)
    }

    @Test("without an open connection it throws at once, typed by the session's state")
    func needsAConnection() async throws {
        let harness = EngineHarness()
        await expectPingError(harness.session, .connectionClosed, "ping needs an open connection; the session is initialized")
        try await harness.session.connect()
        harness.peers[0].drop()
        await expectPingError(harness.session, .connectionClosed, "ping needs an open connection; the session is reconnecting")
        harness.session.disconnect()
        await expectPingError(harness.session, .disconnected, "ping needs an open connection; the session is disconnected")
        #expect(harness.peers.allSatisfy { $0.pingsReceived == 0 })
    }

    @Test("an unanswered ping: cancelling the task throws CancellationError at once; a closing connection fails it")
    func unansweredPing() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        harness.peers[0].roundTrip = nil
        let cancelled = Task { try await harness.session.ping() }
        await eventually("ping sent") { harness.peers[0].pingsReceived == 1 }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }

        let waiting = Task { try await harness.session.ping() }
        await eventually("second ping sent") { harness.peers[0].pingsReceived == 2 }
        harness.peers[0].drop()
        do {
            _ = try await waiting.value
            Issue.record("a ping on a dropped connection returned")
        } catch let error as RealtimeError {
            #expect(error.code == .connectionClosed)
        }
    }

    @Test("a connection that cannot ping throws .unsupported")
    func unsupported() async throws {
        let inner = InMemoryTransport(autoAccept: false) { peer in
            peer.accept()
            peer.send(text: #"{"t":"welcome","id":"conn-1"}"#)
        }
        let session = RealtimeSession(dialect: LineDialect(), transport: NonPingingTransport(inner: inner),
                                      options: SessionOptions(delivery: .inline, clock: ManualClock()))
        defer { session.disconnect() }
        try await session.connect()
        await expectPingError(session, .unsupported, "ping is not supported by this connection's transport; it needs a WebSocket")
    }

    private func expectPingError(_ session: RealtimeSession, _ code: RealtimeError.Code, _ prefix: String,
                                 sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            let roundTrip = try await session.ping()
            Issue.record("ping returned \(roundTrip)", sourceLocation: sourceLocation)
        } catch let error as RealtimeError {
            #expect(error.code == code, sourceLocation: sourceLocation)
            #expect(error.message.hasPrefix(prefix), "\(error.message)", sourceLocation: sourceLocation)
            #expect(error.context.detail == "ping", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }
}
