import Foundation
import RealtimeCore
import RealtimeWebSocket

/// A loopback TCP proxy that injects network faults, for tests (yours too).
///
/// It listens on 127.0.0.1 at a free port and forwards each accepted connection to `upstream`. The
/// ``plan`` picks a ``Fault`` for each new connection by its index; live controls act on the connections
/// open now: ``resetAll()``, ``stallAll()``, ``resumeAll()``, ``inject(_:)``.
///
/// ```swift
/// let server = try SocketIOServer()
/// let proxy = try FaultProxy(upstream: server.url, plan: .sequence([.pass, .refuse]))
/// defer { proxy.stop() }
/// let session = RealtimeSession(dialect: .socketIO(url: proxy.url(for: server.url)), transport: WebSocketTransport())
/// try await session.connect()
/// proxy.resetAll()          // the session sees a reset; its next attempt is refused, the one after passes
/// ```
///
/// A proxy runs all its connections on one event-loop thread of its own (the package's selector and
/// non-blocking sockets). Dribble pauses and latency are loop timers, of millisecond resolution: a shorter
/// pause lasts about a millisecond. Made for test connections, not for load.
public final class FaultProxy: Sendable {
    /// One accepted connection and the fault it got.
    public struct Record: Sendable, Hashable, CustomStringConvertible {
        /// 0 for the first connection accepted.
        public var index: Int
        /// What the plan chose for it.
        public var fault: Fault
        /// `#index: fault`.
        public var description: String { "#\(index): \(fault)" }
    }

    /// The port the proxy listens on (127.0.0.1).
    public let port: Int
    /// Where accepted connections are forwarded.
    public let upstreamHost: String
    /// The upstream port.
    public let upstreamPort: Int
    private let shared: ProxyShared
    private let group: EventLoopGroup
    private let loop: EventLoop
    /// The ``ProxyHub`` on the loop: the listener and the open connections.
    private let hubToken: UInt64

    /// Starts listening at once.
    /// - Parameters:
    ///   - upstreamHost: a host name or numeric address to forward to.
    ///   - plan: the fault of each accepted connection; replace it later with ``plan``.
    public init(upstreamHost: String = "127.0.0.1", upstreamPort: Int, plan: FaultPlan = .pass) throws(RealtimeError) {
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        group = try EventLoopGroup(threadCount: 1)
        let (fd, address) = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 128)
        port = address.port
        loop = group.next()
        hubToken = loop.makeToken()
        let shared = ProxyShared(plan: plan, upstreamHost: upstreamHost, upstreamPort: upstreamPort)
        self.shared = shared
        let started = loop.execute { [hubToken] context in
            ProxyHub.start(listener: fd, token: hubToken, shared: shared, in: context)
        }
        guard started else {
            SocketIO.closeFD(fd)
            throw RealtimeError(.transportFailed, "fault proxy: its event loop did not start")
        }
    }

    /// Forwards to the host and port of `url` (default ports for `ws`/`http` 80, `wss`/`https` 443).
    public convenience init(upstream url: URL, plan: FaultPlan = .pass) throws(RealtimeError) {
        guard let host = url.host else { throw RealtimeError(.invalidArgument, "no host in \(url)") }
        let secure = ["https", "wss"].contains(url.scheme?.lowercased() ?? "")
        try self.init(upstreamHost: host, upstreamPort: url.port ?? (secure ? 443 : 80), plan: plan)
    }

    deinit { stop() }

    /// `url` with its host and port replaced by the proxy's (`127.0.0.1:port`): what the client should dial.
    public func url(for url: URL) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.host = "127.0.0.1"
        components.port = port
        return components.url ?? url
    }

    /// The plan for connections accepted from now on.
    public var plan: FaultPlan {
        get { shared.state.withLock { $0.plan } }
        set { shared.state.withLock { $0.plan = newValue } }
    }

    /// Connections open now (refused ones are never open).
    public var connectionCount: Int { shared.state.withLock { $0.open.count } }
    /// Connections accepted since the start, refused ones included.
    public var acceptedCount: Int { shared.state.withLock { $0.accepted } }
    /// Bytes forwarded in `direction`, over every connection since the start.
    public func bytesForwarded(_ direction: FaultDirection) -> Int {
        shared.state.withLock { $0.forwarded[direction.index] }
    }
    /// Every accepted connection with its fault, in accept order: print it when a test fails.
    public var records: [Record] { shared.state.withLock { $0.records } }

    /// Resets (RST) every open connection at once, both sides.
    public func resetAll() { controlAll { $0.end(.reset) } }
    /// Stops forwarding on every open connection, keeping its sockets open (a dead link).
    public func stallAll() { controlAll { $0.stall() } }
    /// Forwards again on every stalled connection; what waited is delivered.
    public func resumeAll() { controlAll { $0.resume() } }

    /// Applies `fault` to every open connection, byte offsets counted from now: `.reset(afterBytes: 100,
    /// direction: .downstream)` resets after 100 more bytes reach the client. `.dribble` and `.latency`
    /// change how the rest is forwarded; `.pass` lifts cuts not reached yet, dribble and latency;
    /// `.refuse` closes at once.
    public func inject(_ fault: Fault) { controlAll { $0.apply(fault) } }

    /// Stops listening and closes every connection (a FIN, or the RST a cut already chose); returns once every
    /// socket of the proxy is closed. Its loop thread ends right after.
    public func stop() {
        let first = shared.state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.stopped = true
            for index in state.open.values.indices { state.open.values[index].end(.close) }
            return true
        }
        guard first else { return }
        let closed = DispatchSemaphore(value: 0)
        let posted = loop.execute { [hubToken] context in
            guard let hub = context.handler(hubToken) as? ProxyHub else {
                closed.signal()
                return
            }
            hub.stop(in: context) { closed.signal() }
        }
        // A close waits at most 0.5 s for the peers' FINs, a reset at most 1 s for its bytes to leave.
        if posted { _ = closed.wait(timeout: .now() + .seconds(3)) }
        group.shutdown()
    }

    /// Changes the schedule of every open connection in one step (so the loop's next write already obeys it),
    /// then has the loop act on the change.
    private func controlAll(_ change: (inout FaultSchedule) -> Void) {
        shared.state.withLock { state in
            for index in state.open.values.indices { change(&state.open.values[index]) }
        }
        loop.execute { [hubToken] context in (context.handler(hubToken) as? ProxyHub)?.refreshAll(in: context) }
    }
}

/// What the ``FaultProxy`` handle and its loop share: the plan, the counts and every open connection's
/// schedule, under one lock, so that a control and the loop's reads and writes never interleave.
final class ProxyShared: Sendable {
    struct State {
        var plan: FaultPlan
        var accepted = 0
        var records: [FaultProxy.Record] = []
        /// Upstream, downstream.
        var forwarded = [0, 0]
        /// The schedule of each open connection, by index.
        var open: [Int: FaultSchedule] = [:]
        var stopped = false
    }

    let state: Locked<State>
    let upstreamHost: String
    let upstreamPort: Int

    init(plan: FaultPlan, upstreamHost: String, upstreamPort: Int) {
        state = Locked(State(plan: plan))
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
    }

    /// Records a connection just accepted and returns its index, or nil when it is refused (or the proxy
    /// stops). One step, so a control issued after the accept (a reset, a new plan) sees the connection.
    func admit() -> Int? {
        state.withLock { state in
            let index = state.accepted
            let fault = state.plan.fault(forConnection: index)
            state.accepted += 1
            state.records.append(FaultProxy.Record(index: index, fault: fault))
            let schedule = FaultSchedule(fault)
            guard !schedule.refuses, !state.stopped else { return nil }
            state.open[index] = schedule
            return index
        }
    }
}
