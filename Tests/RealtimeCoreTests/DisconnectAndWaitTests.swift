import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// The in-memory transport, except that a connection the client closes reports `closed` only when the
/// test says so: a server slow to answer the close frame.
final class SlowClosingTransport: RealtimeTransport {
    let inner = InMemoryTransport(autoAccept: false)
    private let held = Locked<[(connection: any TransportConnection, code: Int, reason: String)]>([])

    /// How many closes wait for ``finishCloses()``.
    var heldCloses: Int { held.withLock { $0.count } }

    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        Connection(inner: inner.open(request, handler: handler), held: held)
    }

    /// Lets every held close reach the peer, which reports `closed`.
    func finishCloses() {
        for close in held.withLock({ held in defer { held = [] }; return held }) {
            close.connection.close(code: close.code, reason: close.reason)
        }
    }

    private final class Connection: TransportConnection {
        let inner: any TransportConnection
        let held: Locked<[(connection: any TransportConnection, code: Int, reason: String)]>
        init(inner: any TransportConnection,
             held: Locked<[(connection: any TransportConnection, code: Int, reason: String)]>) {
            self.inner = inner
            self.held = held
        }
        func send(_ frames: [TransportFrame]) { inner.send(frames) }
        func send(_ frames: [TransportFrame], compress: Bool) { inner.send(frames, compress: compress) }
        func close(code: Int, reason: String) { held.withLock { $0.append((inner, code, reason)) } }
        func abort() { inner.abort() }
        func setReadingPaused(_ paused: Bool) { inner.setReadingPaused(paused) }
    }
}

@Suite("disconnectAndWait()", .timeLimit(.minutes(1)))
struct DisconnectAndWaitTests {
    let transport = SlowClosingTransport()
    let session: RealtimeSession

    init() {
        session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                  options: SessionOptions(delivery: .inline, clock: ManualClock(),
                                                          randomSource: .seeded(1)))
        transport.inner.onOpen { peer in ScriptedPeer(EngineHarness.welcome()).attach(to: peer) }
    }

    /// Starts `disconnectAndWait()` and waits until the transport holds its close.
    func startWaiting() async -> (task: Task<Void, Never>, returned: Locked<Bool>) {
        let returned = Locked(false)
        let task = Task { [session] in
            await session.disconnectAndWait()
            returned.withLock { $0 = true }
        }
        await eventually("the close reaches the transport") { transport.heldCloses == 1 }
        return (task, returned)
    }

    /// Gives a wrongly finished wait every chance to show (yields, never sleeps).
    func settle() async {
        for _ in 0..<2_000 { await Task.yield() }
    }

    @Test("returns only once the transport reports the connection closed; the session is disconnected at once")
    func waitsForClosed() async throws {
        try await session.connect()
        let (task, returned) = await startWaiting()
        #expect(session.state == .disconnected)
        await settle()
        #expect(returned.withLock { $0 } == false, "returned while the close handshake was still running")
        transport.finishCloses()
        await task.value
        #expect(returned.withLock { $0 })
        #expect(transport.inner.peers[0].closeRequest?.code == 1000)
        #expect(transport.inner.peers[0].phase == .closed)
    }

    @Test("after disconnect(), it still waits for the connection that is closing")
    func afterDisconnect() async throws {
        try await session.connect()
        session.disconnect()
        await eventually("the close reaches the transport") { transport.heldCloses == 1 }
        let returned = Locked(false)
        let task = Task { [session] in
            await session.disconnectAndWait()
            returned.withLock { $0 = true }
        }
        await settle()
        #expect(returned.withLock { $0 } == false)
        transport.finishCloses()
        await task.value
        #expect(transport.inner.peers[0].phase == .closed)
    }

    @Test("with no connection, it returns at once")
    func noConnection() async {
        await session.disconnectAndWait()
        #expect(transport.inner.peers.isEmpty)
        #expect(session.state == .disconnected)
        // And once the connection has closed, a second call returns at once too.
        try? await session.connect()
        let (task, _) = await startWaiting()
        transport.finishCloses()
        await task.value
        await session.disconnectAndWait()
    }

    @Test("a connection opened after the call is not waited for")
    func laterConnectionIgnored() async throws {
        try await session.connect()
        let (task, returned) = await startWaiting()
        session.start()
        await eventually("a second connection") { session.state == .connected }
        transport.finishCloses()
        await task.value
        #expect(returned.withLock { $0 })
        #expect(transport.inner.peers.count == 2)
        #expect(transport.inner.peers[1].phase == .open)
        session.disconnect()
        transport.finishCloses()
    }

    @Test("returns after the handlers queued before it ran: the state handler has seen .disconnected",
          arguments: [false, true])
    func afterQueuedHandlers(slowClose: Bool) async throws {
        let held = Locked<[@Sendable () -> Void]>([])
        let slow = SlowClosingTransport()
        let transport = slow.inner
        transport.onOpen { peer in ScriptedPeer(EngineHarness.welcome()).attach(to: peer) }
        let session = RealtimeSession(dialect: LineDialect(), transport: slowClose ? slow : transport,
                                      options: SessionOptions(delivery: .custom { work in held.withLock { $0.append(work) } },
                                                              clock: ManualClock(), randomSource: .seeded(1)))
        let states = Locked<[ConnectionState]>([])
        session.onStateChange { _, new in states.withLock { $0.append(new) } }
        /// Runs what the delivery target holds, as its queue would.
        func runHandlers() { for work in held.withLock({ held in defer { held = [] }; return held }) { work() } }
        let connecting = Task { try await session.connect() }
        await eventually("connected") { session.state == .connected }
        runHandlers()
        try await connecting.value
        let returned = Locked(false)
        let task = Task {
            await session.disconnectAndWait()
            returned.withLock { $0 = true }
        }
        if slowClose {
            // The close reaches the transport, and its `closed` comes after the engine looked.
            await eventually("the close reaches the transport") { slow.heldCloses == 1 }
            await settle()
            slow.finishCloses()
        }
        await eventually("the connection closed") { transport.peers.first?.phase == .closed }
        await settle()
        #expect(returned.withLock { $0 } == false, "returned before the queued handlers ran")
        #expect(states.withLock { $0 } == [.connecting, .connected])
        await eventually("the wait is queued behind the handlers") {
            runHandlers()
            return returned.withLock { $0 }
        }
        #expect(states.withLock { $0 } == [.connecting, .connected, .disconnected])
        await task.value
    }

    @Test("cancelling the waiting task returns at once; the connection still closes")
    func cancelled() async throws {
        try await session.connect()
        let (task, returned) = await startWaiting()
        task.cancel()
        await task.value
        #expect(returned.withLock { $0 })
        #expect(transport.inner.peers[0].phase != .closed)
        transport.finishCloses()
        #expect(transport.inner.peers[0].phase == .closed)
        // A task cancelled before it calls returns too, though the close is held again.
        try await session.connect()
        let early = Task { [session] in
            withUnsafeCurrentTask { $0?.cancel() }
            await session.disconnectAndWait()
        }
        await early.value
        #expect(transport.heldCloses == 1)
        transport.finishCloses()
    }
}
