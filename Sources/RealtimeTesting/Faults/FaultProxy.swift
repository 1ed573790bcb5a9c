#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeWebSocket

/// Which way bytes travel through a ``FaultProxy``.
public enum FaultDirection: Sendable, Hashable, CustomStringConvertible {
    /// From the client (the side that connects to the proxy) to the upstream server.
    case upstream
    /// From the upstream server back to the client.
    case downstream

    /// `upstream` or `downstream`.
    public var description: String { self == .upstream ? "upstream" : "downstream" }
}

/// What a ``FaultProxy`` does to one connection.
///
/// Byte offsets count the bytes forwarded in one direction of that connection: `.reset(afterBytes: 100,
/// direction: .downstream)` delivers exactly 100 bytes of the server's answer to the client, then resets.
public indirect enum Fault: Sendable, Hashable, CustomStringConvertible {
    /// Forwards everything unchanged.
    case pass
    /// Accepts the connection, then closes it at once without connecting upstream.
    case refuse
    /// Forwards `afterBytes` bytes in `direction`, then resets both sides (RST, through `SO_LINGER` 0) once
    /// those bytes have left the proxy.
    case reset(afterBytes: Int, direction: FaultDirection)
    /// Forwards `afterBytes` bytes in `direction`, then closes both sides with a FIN.
    case close(afterBytes: Int, direction: FaultDirection)
    /// Forwards `afterBytes` bytes in `direction`, then stops forwarding both ways while keeping both sockets
    /// open: a dead link that only a liveness check can notice. ``FaultProxy/resumeAll()`` heals it.
    case stall(afterBytes: Int, direction: FaultDirection)
    /// Forwards in writes of at most `chunk` bytes each (sockets without Nagle), pausing `pause` between
    /// writes, so frames and TLS records arrive split at every point.
    case dribble(chunk: Int, pause: Duration = .microseconds(50))
    /// Holds every read for `latency` before writing it (in both directions). One read is in flight per
    /// direction, so throughput drops too: meant for tests.
    case latency(Duration)
    /// Several faults on the same connection (for example dribble and a reset); the first cut reached wins.
    case combined([Fault])

    /// The fault as written in Swift, for failure messages.
    public var description: String {
        switch self {
        case .pass: "pass"
        case .refuse: "refuse"
        case .reset(let bytes, let direction): "reset(afterBytes: \(bytes), \(direction))"
        case .close(let bytes, let direction): "close(afterBytes: \(bytes), \(direction))"
        case .stall(let bytes, let direction): "stall(afterBytes: \(bytes), \(direction))"
        case .dribble(let chunk, let pause): "dribble(chunk: \(chunk), pause: \(pause))"
        case .latency(let latency): "latency(\(latency))"
        case .combined(let faults): "combined(\(faults.map(\.description).joined(separator: ", ")))"
        }
    }
}

/// Chooses the ``Fault`` of each connection a ``FaultProxy`` accepts, given its index (0 for the first).
///
/// ```swift
/// let plan = FaultPlan.sequence([.pass, .refuse, .reset(afterBytes: 10, direction: .downstream)])
/// let chaos = FaultPlan.random(seed: 42, faultyConnections: 10)   // print `chaos` in failure messages
/// ```
public struct FaultPlan: Sendable, CustomStringConvertible {
    /// Names the plan in failure messages; a random plan names its seed.
    public let description: String
    /// The seed of a ``random(seed:faultyConnections:passRate:maximumOffset:)`` plan.
    public let seed: UInt64?
    private let choose: @Sendable (Int) -> Fault

    /// A plan from a closure of the connection index (0 for the first connection).
    public init(_ description: String = "custom plan", _ choose: @escaping @Sendable (_ index: Int) -> Fault) {
        self.description = description
        self.seed = nil
        self.choose = choose
    }

    private init(description: String, seed: UInt64?, choose: @escaping @Sendable (Int) -> Fault) {
        self.description = description
        self.seed = seed
        self.choose = choose
    }

    /// The fault for connection number `index` (0-based, in accept order).
    public func fault(forConnection index: Int) -> Fault { choose(index) }

    /// Every connection passes.
    public static var pass: FaultPlan { always(.pass) }

    /// Every connection gets `fault`.
    public static func always(_ fault: Fault) -> FaultPlan {
        FaultPlan(description: "always \(fault)", seed: nil) { _ in fault }
    }

    /// The n-th connection gets `faults[n]`; the ones after the list get `rest`.
    public static func sequence(_ faults: [Fault], then rest: Fault = .pass) -> FaultPlan {
        FaultPlan(description: "sequence \(faults) then \(rest)", seed: nil) { index in
            index < faults.count ? faults[index] : rest
        }
    }

    /// A reproducible random plan: the fault of each connection depends only on `seed` and its index.
    /// - Parameters:
    ///   - faultyConnections: connections from this index on pass (nil: every connection draws a fault).
    ///   - passRate: the share of faulty connections that pass anyway.
    ///   - maximumOffset: the largest byte offset of a cut.
    public static func random(seed: UInt64, faultyConnections: Int? = nil, passRate: Double = 0.25,
                              maximumOffset: Int = 2_048) -> FaultPlan {
        let limit = faultyConnections.map { " for the first \($0) connections" } ?? ""
        return FaultPlan(description: "FaultPlan.random(seed: \(seed))\(limit)", seed: seed) { index in
            if let faultyConnections, index >= faultyConnections { return .pass }
            var generator = SeededRandomNumberGenerator(seed: seed &+ UInt64(index) &* 0xD1B5_4A32_D192_ED03)
            if Double.random(in: 0..<1, using: &generator) < passRate { return .pass }
            let offset = Int.random(in: 0...max(0, maximumOffset), using: &generator)
            let direction: FaultDirection = Bool.random(using: &generator) ? .upstream : .downstream
            switch Int.random(in: 0..<7, using: &generator) {
            case 0: return .refuse
            case 1: return .reset(afterBytes: offset, direction: direction)
            case 2: return .close(afterBytes: offset, direction: direction)
            case 3: return .stall(afterBytes: offset, direction: direction)
            case 4: return .combined([.dribble(chunk: Int.random(in: 1...16, using: &generator)),
                                      .reset(afterBytes: offset, direction: direction)])
            case 5: return .latency(.milliseconds(Int.random(in: 1...40, using: &generator)))
            default: return .dribble(chunk: Int.random(in: 1...64, using: &generator))
            }
        }
    }
}

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
/// One thread per connection polling its two sockets: made for a handful of test connections, not for load.
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

    /// Starts listening at once.
    /// - Parameters:
    ///   - upstreamHost: a host name or numeric address to forward to.
    ///   - plan: the fault of each accepted connection; replace it later with ``plan``.
    public init(upstreamHost: String = "127.0.0.1", upstreamPort: Int, plan: FaultPlan = .pass) throws(RealtimeError) {
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        let (fd, address) = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 128)
        port = address.port
        shared = ProxyShared(plan: plan, upstreamHost: upstreamHost, upstreamPort: upstreamPort)
        shared.startAccepting(fd)
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
        shared.state.withLock { direction == .upstream ? $0.forwardedUpstream : $0.forwardedDownstream }
    }
    /// Every accepted connection with its fault, in accept order: print it when a test fails.
    public var records: [Record] { shared.state.withLock { $0.records } }

    /// Resets (RST) every open connection at once, both sides.
    public func resetAll() { shared.controlAll { $0.end = .reset } }
    /// Stops forwarding on every open connection, keeping its sockets open (a dead link).
    public func stallAll() { shared.controlAll { $0.stalled = true } }
    /// Forwards again on every stalled connection; what waited is delivered.
    public func resumeAll() { shared.controlAll { $0.stalled = false } }

    /// Applies `fault` to every open connection, byte offsets counted from now: `.reset(afterBytes: 100,
    /// direction: .downstream)` resets after 100 more bytes reach the client. `.dribble` and `.latency`
    /// change how the rest is forwarded; `.pass` lifts cuts not reached yet, dribble and latency;
    /// `.refuse` closes at once.
    public func inject(_ fault: Fault) {
        shared.controlAll { $0.injected.append(.init(fault: fault, offsets: $0.forwarded)) }
    }

    /// Stops listening and closes every connection; returns once every proxy thread has ended.
    public func stop() { shared.stop() }
}

// MARK: - Internals

/// State shared by the accept thread, the connection threads and the ``FaultProxy`` handle.
final class ProxyShared: Sendable {
    struct State {
        var plan: FaultPlan
        var accepted = 0
        var open: [Int: ProxyConnection] = [:]
        var records: [FaultProxy.Record] = []
        var forwardedUpstream = 0
        var forwardedDownstream = 0
        var threads = 0
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

    var isStopped: Bool { state.withLock { $0.stopped } }

    func controlAll(_ change: (inout ProxyConnection.Control) -> Void) {
        for connection in state.withLock({ Array($0.open.values) }) { connection.control.withLock(change) }
    }

    func counted(_ bytes: Int, _ direction: FaultDirection) {
        state.withLock {
            if direction == .upstream { $0.forwardedUpstream += bytes } else { $0.forwardedDownstream += bytes }
        }
    }

    /// Runs `body` on a new thread, counted so ``stop()`` can wait for it.
    func spawn(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.threads += 1 }
        Thread.detachNewThread { [self] in
            body()
            state.withLock { $0.threads -= 1 }
        }
    }

    func startAccepting(_ listener: Int32) {
        spawn { [self] in
            defer { _ = ProxySocket.close(listener) }
            while !isStopped {
                guard ProxySocket.waitReadable(listener, milliseconds: 20) else { continue }
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                // One step, so a live control issued after this accept (resetAll, a new plan) sees the connection.
                let connection = state.withLock { state -> ProxyConnection? in
                    let index = state.accepted
                    let fault = state.plan.fault(forConnection: index)
                    state.accepted += 1
                    state.records.append(.init(index: index, fault: fault))
                    let behaviour = ProxyBehaviour(fault)
                    guard !behaviour.refuse, !state.stopped else { return nil }
                    let connection = ProxyConnection(index: index, client: client, behaviour: behaviour, shared: self)
                    state.open[index] = connection
                    return connection
                }
                guard let connection else {
                    _ = ProxySocket.close(client)
                    continue
                }
                spawn { connection.run() }
            }
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        controlAll { $0.end = $0.end ?? .close }
        // The threads notice within one poll interval (20 ms).
        for _ in 0..<1_000 where state.withLock({ $0.threads }) > 0 { usleep(2_000) }
    }

    func ended(_ index: Int) {
        state.withLock { _ = $0.open.removeValue(forKey: index) }
    }
}

/// The resolved form of a ``Fault``.
struct ProxyBehaviour {
    enum CutKind { case reset, close, stall }
    struct Cut {
        var kind: CutKind
        var afterBytes: Int
        var direction: FaultDirection
    }

    var refuse = false
    var cuts: [Cut] = []
    var chunk: Int?
    var pause: Duration = .zero
    var latency: Duration = .zero

    init(_ fault: Fault, offsets: (FaultDirection) -> Int = { _ in 0 }) {
        apply(fault, offsets: offsets)
    }

    /// Adds `fault`; cut offsets are relative to `offsets(direction)` (bytes already forwarded).
    mutating func apply(_ fault: Fault, offsets: (FaultDirection) -> Int) {
        switch fault {
        case .pass:
            cuts = []
            chunk = nil
            latency = .zero
        case .refuse:
            refuse = true
        case .reset(let bytes, let direction):
            cuts.append(Cut(kind: .reset, afterBytes: offsets(direction) + max(0, bytes), direction: direction))
        case .close(let bytes, let direction):
            cuts.append(Cut(kind: .close, afterBytes: offsets(direction) + max(0, bytes), direction: direction))
        case .stall(let bytes, let direction):
            cuts.append(Cut(kind: .stall, afterBytes: offsets(direction) + max(0, bytes), direction: direction))
        case .dribble(let size, let pause):
            chunk = max(1, size)
            self.pause = pause
        case .latency(let latency):
            self.latency = latency
        case .combined(let faults):
            for fault in faults where fault != .pass { apply(fault, offsets: offsets) }
        }
    }

    /// The nearest cut in `direction`.
    func nextCut(_ direction: FaultDirection) -> Cut? {
        cuts.filter { $0.direction == direction }.min { $0.afterBytes < $1.afterBytes }
    }
}

/// One proxied connection, run by its own thread with non-blocking sockets and `poll`.
final class ProxyConnection: Sendable {
    enum End { case reset, close }
    /// A fault injected live, with the bytes forwarded each way (upstream, downstream) when it was injected.
    struct Injection {
        var fault: Fault
        var offsets: [Int]
    }

    /// What the controls ask of the connection thread, and what it forwarded so far (upstream, downstream).
    struct Control {
        var stalled = false
        var end: End?
        var injected: [Injection] = []
        var forwarded = [0, 0]
    }

    /// One direction: bytes read from `source` wait in `pending` until written to `destination`.
    struct Pipe {
        let direction: FaultDirection
        let source: Int32
        let destination: Int32
        var pending: [UInt8] = []
        var start = 0
        var releaseAt: ContinuousClock.Instant = .now
        var forwarded = 0
        var sourceEnded = false
        var shutDown = false
        var waiting: Int { pending.count - start }
    }

    let index: Int
    let client: Int32
    let control = Locked(Control())
    private let initial: Locked<ProxyBehaviour>
    private let shared: ProxyShared

    init(index: Int, client: Int32, behaviour: ProxyBehaviour, shared: ProxyShared) {
        self.index = index
        self.client = client
        self.initial = Locked(behaviour)
        self.shared = shared
    }

    func run() {
        defer { shared.ended(index) }
        guard let upstream = ProxySocket.connect(host: shared.upstreamHost, port: shared.upstreamPort) else {
            _ = ProxySocket.close(client)
            return
        }
        ProxySocket.prepare(client)
        ProxySocket.prepare(upstream)
        var behaviour = initial.withLock { $0 }
        var pipes = [Pipe(direction: .upstream, source: client, destination: upstream),
                     Pipe(direction: .downstream, source: upstream, destination: client)]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let clock = ContinuousClock()

        func finish(_ end: End, drain: Int32? = nil) {
            switch end {
            case .reset:
                if let drain { ProxySocket.waitUntilSent(drain) }
                ProxySocket.reset(client)
                ProxySocket.reset(upstream)
            case .close:
                ProxySocket.closeGracefully(client, upstream)
            }
        }

        /// Applies the faults injected since the last look, offsets counted from when each was injected;
        /// `false` when one asks to close at once.
        func absorbInjected() -> Bool {
            let injected = control.withLock { control -> [Injection] in
                defer { control.injected = [] }
                return control.injected
            }
            for injection in injected {
                if injection.fault == .refuse { return false }
                behaviour.apply(injection.fault) { injection.offsets[$0 == .upstream ? 0 : 1] }
            }
            return true
        }

        while true {
            // Controls first: an end, a stall, faults injected on the fly.
            let request = control.withLock { $0 }
            if let end = request.end { return finish(end) }
            if shared.isStopped { return finish(.close) }
            guard absorbInjected() else { return finish(.close) }
            // A cut whose offset is reached applies before anything more moves.
            for index in pipes.indices {
                guard let cut = behaviour.nextCut(pipes[index].direction), pipes[index].forwarded >= cut.afterBytes
                else { continue }
                switch cut.kind {
                case .reset: return finish(.reset, drain: pipes[index].destination)
                case .close: return finish(.close)
                case .stall:
                    behaviour.cuts.removeAll { $0.direction == cut.direction && $0.afterBytes == cut.afterBytes }
                    control.withLock { $0.stalled = true }
                }
            }
            if control.withLock({ $0.stalled }) {
                usleep(2_000)
                continue
            }
            if pipes.allSatisfy({ $0.sourceEnded && $0.waiting == 0 && $0.shutDown }) { return finish(.close) }

            // Poll: read where nothing waits, write where something is due.
            let now = clock.now
            var descriptors: [pollfd] = []
            var slots: [(pipe: Int, reading: Bool)] = []
            var timeout = 20
            for index in pipes.indices {
                let pipe = pipes[index]
                if pipe.waiting == 0 {
                    if !pipe.sourceEnded {
                        descriptors.append(pollfd(fd: pipe.source, events: Int16(POLLIN), revents: 0))
                        slots.append((index, true))
                    }
                } else if pipe.releaseAt <= now {
                    descriptors.append(pollfd(fd: pipe.destination, events: Int16(POLLOUT), revents: 0))
                    slots.append((index, false))
                } else {
                    let wait = pipe.releaseAt - now
                    timeout = min(timeout, max(1, Int((wait.seconds * 1_000).rounded(.up))))
                }
            }
            let ready = descriptors.isEmpty ? 0 : poll(&descriptors, nfds_t(descriptors.count), Int32(timeout))
            if descriptors.isEmpty { usleep(UInt32(timeout) * 1_000) }
            guard ready > 0 else { continue }

            for (slot, descriptor) in zip(slots, descriptors) where descriptor.revents != 0 {
                var pipe = pipes[slot.pipe]
                defer { pipes[slot.pipe] = pipe }
                let cut = behaviour.nextCut(pipe.direction)
                if slot.reading {
                    let room = cut.map { $0.afterBytes - pipe.forwarded } ?? buffer.count
                    let count = buffer.withUnsafeMutableBytes {
                        recv(pipe.source, $0.baseAddress, min($0.count, max(1, room)), 0)
                    }
                    if count > 0 {
                        pipe.pending = Array(buffer[0..<count])
                        pipe.start = 0
                        pipe.releaseAt = clock.now + behaviour.latency
                    } else if count == 0 {
                        pipe.sourceEnded = true
                    } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                        return finish(.reset)  // the peer reset: pass it on
                    }
                } else {
                    // A fault injected while this thread waited in poll counts before this write.
                    guard absorbInjected() else { return finish(.close) }
                    var size = min(pipe.waiting, behaviour.chunk ?? pipe.waiting)
                    if let cut = behaviour.nextCut(pipe.direction) {
                        size = min(size, max(0, cut.afterBytes - pipe.forwarded))
                    }
                    guard size > 0 else { continue }  // the cut applies at the top of the loop
                    // Written and counted under the control lock (the write does not block): whatever the
                    // peer may have read is counted before a live control can look at the counts.
                    let (written, error) = control.withLock { control -> (Int, Int32) in
                        let written = pipe.pending.withUnsafeBytes {
                            ProxySocket.write(pipe.destination, $0.baseAddress! + pipe.start, size)
                        }
                        let error = errno
                        if written > 0 {
                            control.forwarded[pipe.direction == .upstream ? 0 : 1] += written
                            shared.counted(written, pipe.direction)
                        }
                        return (written, error)
                    }
                    if written > 0 {
                        pipe.start += written
                        pipe.forwarded += written
                        if pipe.waiting == 0 { pipe.pending = [] ; pipe.start = 0 }
                        if behaviour.chunk != nil, behaviour.pause > .zero {
                            usleep(UInt32(max(1, behaviour.pause.seconds * 1_000_000)))
                        }
                    } else if written < 0 && error != EAGAIN && error != EWOULDBLOCK && error != EINTR {
                        return finish(.reset)
                    }
                }
                if pipe.sourceEnded && pipe.waiting == 0 && !pipe.shutDown {
                    shutdown(pipe.destination, Int32(SHUT_WR))
                    pipe.shutDown = true
                }
            }
        }
    }
}

/// The socket calls of the proxy.
enum ProxySocket {
    #if canImport(Darwin)
    static let streamType = SOCK_STREAM
    static let sendFlags: Int32 = 0
    #else
    static let streamType = Int32(SOCK_STREAM.rawValue)
    static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif

    static func failure(_ call: String) -> RealtimeError {
        RealtimeError(.transportFailed, "fault proxy: \(call) failed",
                      context: .init(detail: String(cString: strerror(errno))))
    }

    /// A blocking connect to the first address of `host` that answers; nil when none does.
    static func connect(host: String, port: Int) -> Int32? {
        var hints = addrinfo()
        hints.ai_socktype = streamType
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(first) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, streamType, 0)
            guard fd >= 0 else { continue }
            if systemConnect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            _ = close(fd)
        }
        return nil
    }

    /// Non-blocking, no Nagle (so a dribble's writes leave one by one), no SIGPIPE.
    static func prepare(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
    }

    static func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0
    }

    static func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        send(fd, bytes, count, sendFlags)
    }

    /// Waits (at most a second) until the kernel has sent and had acknowledged everything written to `fd`.
    static func waitUntilSent(_ fd: Int32) {
        #if os(Linux)
        for _ in 0..<500 {
            var unsent: Int32 = 0
            let status = withUnsafeMutablePointer(to: &unsent) { ioctl(fd, UInt(0x5411 /* TIOCOUTQ */), $0) }
            guard status == 0, unsent > 0 else { return }
            usleep(2_000)
        }
        #else
        usleep(50_000)
        #endif
    }

    /// Closes with `SO_LINGER` 0: the peer gets an RST, unsent data is dropped.
    static func reset(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        _ = close(fd)
    }

    /// FIN to both peers, then waits (at most half a second) for their FINs, discarding what they still
    /// send, so the close is not turned into a reset by unread data.
    static func closeGracefully(_ first: Int32, _ second: Int32) {
        shutdown(first, Int32(SHUT_WR))
        shutdown(second, Int32(SHUT_WR))
        var open = [first, second]
        var scratch = [UInt8](repeating: 0, count: 16_384)
        let deadline = ContinuousClock.now + .milliseconds(500)
        while !open.isEmpty && ContinuousClock.now < deadline {
            var descriptors = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard poll(&descriptors, nfds_t(descriptors.count), 20) > 0 else { continue }
            for descriptor in descriptors where descriptor.revents != 0 {
                let count = scratch.withUnsafeMutableBytes { recv(descriptor.fd, $0.baseAddress, $0.count, 0) }
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                    open.removeAll { $0 == descriptor.fd }
                }
            }
        }
        _ = close(first)
        _ = close(second)
    }

    @discardableResult
    static func close(_ fd: Int32) -> Int32 { SocketIO.closeFD(fd) }
}

private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
