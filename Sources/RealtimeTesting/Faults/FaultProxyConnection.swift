#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import RealtimeCore
import RealtimeWebSocket

/// One proxied connection on its proxy's loop thread: two non-blocking sockets, the bytes read and not yet
/// written in each direction, and loop timers for the waits its schedule asks for. The ``FaultSchedule``
/// itself lives in ``ProxyShared`` (a control may change it from any thread): every read and write asks it
/// under that lock, so a control applies exactly between two of them.
final class ProxyConnection: LoopHandler {
    private enum Phase { case connecting, forwarding, resetting, closing, closed }

    /// A socket and its registration with the selector (nil: not registered).
    private struct Endpoint {
        var fd: Int32
        let token: UInt64
        var interest: SelectorInterest?
    }

    /// One direction: bytes read from its source wait here until they are written to its destination.
    private struct Pipe {
        /// Bytes read and not all written yet; `base` is the stream offset of the first.
        var pending: [UInt8] = []
        var base = 0
        var sourceEnded = false
        var shutDown = false
        /// The timer of the wait the schedule asked for.
        var timer: (id: UInt64, deadline: Duration)?
    }

    /// The most one read takes (a part of the loop's shared read buffer).
    private static let readSize = 65_536
    private static let noInterest = SelectorInterest(read: false, write: false)

    let index: Int
    private weak var hub: ProxyHub?
    private let shared: ProxyShared
    private var phase = Phase.connecting
    /// The client (0) and the upstream server (1): the sources of upstream and downstream, in that order.
    private var endpoints: [Endpoint]
    /// Upstream (0), downstream (1).
    private var pipes = [Pipe(), Pipe()]
    private var addresses: [SocketAddress] = []
    /// A reset waiting for its bytes to leave, or a close waiting for the peers' FINs.
    private var endTimer: UInt64?

    init(index: Int, client: Int32, hub: ProxyHub, context: LoopContext) {
        self.index = index
        self.hub = hub
        shared = hub.shared
        endpoints = [Endpoint(fd: client, token: context.loop.makeToken()),
                     Endpoint(fd: -1, token: context.loop.makeToken())]
    }

    private static var now: Duration { .nanoseconds(EventLoop.now()) }

    // MARK: Connecting

    /// Attaches both sockets' tokens and connects upstream (a host name resolves off the loop first).
    func start(in context: LoopContext) {
        for endpoint in endpoints { context.attach(self, token: endpoint.token) }
        let (host, port) = (shared.upstreamHost, shared.upstreamPort)
        if SocketIO.isIPLiteral(host) {
            connect(to: (try? SocketIO.resolve(host: host, port: port)) ?? [], in: context)
        } else {
            hub?.resolve(host, port: port, for: endpoints[1].token)
        }
    }

    /// Tries `addresses` in turn; when none answers, the client is closed.
    func connect(to addresses: [SocketAddress], in context: LoopContext) {
        guard phase == .connecting, endpoints[1].fd < 0 else { return }
        self.addresses = addresses
        connectNext(in: context)
    }

    private func connectNext(in context: LoopContext) {
        while !addresses.isEmpty {
            let address = addresses.removeFirst()
            guard let fd = try? SocketIO.makeStreamSocket(family: address.family) else { continue }
            endpoints[1].fd = fd
            let status = SocketIO.startConnect(fd, to: address)
            if status == 0 { return startForwarding(in: context) }
            // In progress: the socket turns writable once the connect has succeeded or failed.
            if status == EINPROGRESS, setInterest(1, SelectorInterest(read: false, write: true), in: context) { return }
            dropUpstream(in: context)
        }
        finish(resetting: false, in: context)
    }

    private func connectCompleted(in context: LoopContext) {
        guard SocketIO.pendingError(endpoints[1].fd) == 0 else {
            dropUpstream(in: context)
            return connectNext(in: context)
        }
        startForwarding(in: context)
    }

    private func dropUpstream(in context: LoopContext) {
        _ = setInterest(1, Self.noInterest, in: context)
        SocketIO.closeFD(endpoints[1].fd)
        endpoints[1].fd = -1
    }

    private func startForwarding(in context: LoopContext) {
        phase = .forwarding
        refresh(in: context)
    }

    // MARK: Forwarding

    func handle(_ event: SelectorEvent, in context: LoopContext) {
        let endpoint = event.id == endpoints[0].token ? 0 : 1
        switch phase {
        case .connecting:
            if endpoint == 1 { connectCompleted(in: context) }
        case .forwarding:
            // An endpoint is the source of one direction and the destination of the other.
            if event.readable { receive(FaultDirection.both[endpoint], in: context) }
            if event.writable, phase == .forwarding { send(FaultDirection.both[1 - endpoint], in: context) }
            refresh(in: context)
        case .closing:
            discard(endpoint, in: context)
        case .resetting, .closed:
            break
        }
    }

    /// Acts on what the schedule says now: registers for the reads and writes it allows, arms the timers of
    /// its waits, or starts a reset or a close. Called after every event, timer and control.
    func refresh(in context: LoopContext) {
        guard phase == .forwarding else { return }
        let now = Self.now
        let actions = shared.state.withLock { state in
            FaultDirection.both.map { state.open[index]?.next($0, at: now) ?? .close }
        }
        var wanted = [Self.noInterest, Self.noInterest]
        for (direction, action) in zip(FaultDirection.both, actions) {
            let source = direction.index
            switch action {
            case .wait(let deadline):
                arm(direction, at: deadline, in: context)
                continue
            case .reset(let drain): return beginReset(drain: drain, in: context)
            case .close: return beginClose(in: context)
            case .write: wanted[1 - source].write = true
            case .read where !pipes[source].sourceEnded: wanted[source].read = true
            case .read: passEndOfStream(direction)
            case .hold: break
            }
            disarm(direction, in: context)
        }
        if pipes.allSatisfy(\.shutDown) { return beginClose(in: context) }
        for endpoint in 0..<2 where !setInterest(endpoint, wanted[endpoint], in: context) {
            return finish(resetting: false, in: context)
        }
    }

    /// Reads once from the source of `direction`, as much as the schedule allows.
    private func receive(_ direction: FaultDirection, in context: LoopContext) {
        let source = direction.index
        guard !pipes[source].sourceEnded else { return }
        let (fd, now) = (endpoints[source].fd, Self.now)
        let count = shared.state.withLock { state -> Int in
            guard case .read(let limit)? = state.open[index]?.next(direction, at: now) else { return -Int(EAGAIN) }
            let buffer = UnsafeMutableRawBufferPointer(rebasing: context.readBuffer.prefix(min(limit, Self.readSize)))
            let count = SocketIO.receive(fd, into: buffer)
            guard count > 0, let offset = state.open[index]?.read(direction) else { return count }
            state.open[index]?.received(count, direction, at: now)
            if pipes[source].pending.isEmpty { pipes[source].base = offset }
            pipes[source].pending.append(contentsOf: buffer.prefix(count))
            return count
        }
        if count == 0 {
            pipes[source].sourceEnded = true
        } else if count < 0 && count != -Int(EAGAIN) {
            beginReset(drain: nil, in: context)  // the peer reset: pass it on
        }
    }

    /// Writes once to the destination of `direction`: the bytes the schedule says are due.
    private func send(_ direction: FaultDirection, in context: LoopContext) {
        let source = direction.index
        let (fd, now) = (endpoints[1 - source].fd, Self.now)
        // Written and counted in one step under the lock: no control sees bytes on the wire uncounted.
        let written = shared.state.withLock { state -> Int in
            guard case .write(let range)? = state.open[index]?.next(direction, at: now) else { return 0 }
            let start = range.lowerBound - pipes[source].base
            let written = pipes[source].pending.withUnsafeBytes { bytes in
                SocketIO.send(fd, UnsafeRawBufferPointer(rebasing: bytes[start..<start + range.count]))
            }
            guard written > 0 else { return written }
            state.open[index]?.wrote(written, direction, at: now)
            state.forwarded[source] += written
            if start + written == pipes[source].pending.count { pipes[source].pending.removeAll(keepingCapacity: true) }
            return written
        }
        if written < 0 { beginReset(drain: nil, in: context) }
    }

    /// The source of `direction` ended and all it sent was written: the end goes on as a FIN.
    private func passEndOfStream(_ direction: FaultDirection) {
        guard !pipes[direction.index].shutDown else { return }
        ProxySocket.shutDownWriting(endpoints[1 - direction.index].fd)
        pipes[direction.index].shutDown = true
    }

    private func arm(_ direction: FaultDirection, at deadline: Duration, in context: LoopContext) {
        guard pipes[direction.index].timer?.deadline != deadline else { return }
        disarm(direction, in: context)
        let id = context.schedule(at: UInt64(clamping: deadline.nanoseconds)) { [weak self, unowned context] in
            guard let self else { return }
            self.pipes[direction.index].timer = nil
            self.refresh(in: context)
        }
        pipes[direction.index].timer = (id, deadline)
    }

    private func disarm(_ direction: FaultDirection, in context: LoopContext) {
        context.cancelTimer(pipes[direction.index].timer?.id)
        pipes[direction.index].timer = nil
    }

    // MARK: Ending

    /// Resets both sides (RST); when a cut chose it, once the bytes written in `drain` have left.
    private func beginReset(drain: FaultDirection?, in context: LoopContext) {
        phase = .resetting
        for endpoint in 0..<2 { _ = setInterest(endpoint, Self.noInterest, in: context) }
        guard let drain else { return finish(resetting: true, in: context) }
        waitUntilSent(endpoints[1 - drain.index].fd, deadline: Self.now + .seconds(1), in: context)
    }

    /// Resets once the kernel has sent `fd`'s bytes and had them acknowledged, or at `deadline`. No readiness
    /// event reports an acknowledgement, so a timer looks every millisecond.
    private func waitUntilSent(_ fd: Int32, deadline: Duration, in context: LoopContext) {
        guard let unsent = ProxySocket.unacknowledgedBytes(fd) else {
            // No such query here: give the bytes 50 ms.
            endTimer = context.schedule(after: .milliseconds(50)) { [weak self, unowned context] in
                self?.finish(resetting: true, in: context)
            }
            return
        }
        guard unsent > 0, Self.now < deadline else { return finish(resetting: true, in: context) }
        endTimer = context.schedule(after: .milliseconds(1)) { [weak self, unowned context] in
            self?.waitUntilSent(fd, deadline: deadline, in: context)
        }
    }

    /// FIN to both peers, then reads and drops what they still send until their FINs (at most half a second):
    /// closing a socket with unread bytes would turn its FIN into an RST.
    private func beginClose(in context: LoopContext) {
        phase = .closing
        for direction in FaultDirection.both { disarm(direction, in: context) }
        for endpoint in endpoints { ProxySocket.shutDownWriting(endpoint.fd) }
        for endpoint in 0..<2 where !setInterest(endpoint, SelectorInterest(read: true, write: false), in: context) {
            return finish(resetting: false, in: context)
        }
        endTimer = context.schedule(after: .milliseconds(500)) { [weak self, unowned context] in
            self?.finish(resetting: false, in: context)
        }
    }

    private func discard(_ endpoint: Int, in context: LoopContext) {
        let count = SocketIO.receive(endpoints[endpoint].fd, into: context.readBuffer)
        guard count == 0 || (count < 0 && count != -Int(EAGAIN)) else { return }
        _ = setInterest(endpoint, Self.noInterest, in: context)  // this peer is done
        if endpoints.allSatisfy({ $0.interest == nil }) { finish(resetting: false, in: context) }
    }

    /// The proxy stops: a forwarding connection closes as its schedule now says; one still connecting at once.
    func stop(in context: LoopContext) {
        switch phase {
        case .connecting: finish(resetting: false, in: context)
        case .forwarding: refresh(in: context)
        case .resetting, .closing, .closed: break
        }
    }

    /// Closes both sockets at once.
    func abort(in context: LoopContext) {
        finish(resetting: false, in: context)
    }

    func loopStopping(in context: LoopContext) {
        abort(in: context)
    }

    /// Closes both sockets (with `SO_LINGER` 0 when `resetting`), cancels the timers and detaches.
    private func finish(resetting: Bool, in context: LoopContext) {
        guard phase != .closed else { return }
        phase = .closed
        for endpoint in endpoints.indices where endpoints[endpoint].fd >= 0 {
            _ = setInterest(endpoint, Self.noInterest, in: context)
            if resetting { ProxySocket.reset(endpoints[endpoint].fd) } else { SocketIO.closeFD(endpoints[endpoint].fd) }
            endpoints[endpoint].fd = -1
        }
        for direction in FaultDirection.both { disarm(direction, in: context) }
        context.cancelTimer(endTimer)
        for endpoint in endpoints { context.detach(endpoint.token) }
        hub?.ended(index)
    }

    /// Registers `endpoint` for `interest`. No interest unregisters it: epoll reports a hangup whatever the
    /// interest, and a socket with nothing to do must not wake the loop. False when the selector refused.
    private func setInterest(_ endpoint: Int, _ interest: SelectorInterest, in context: LoopContext) -> Bool {
        let (fd, token, current) = (endpoints[endpoint].fd, endpoints[endpoint].token, endpoints[endpoint].interest)
        let wanted = interest == Self.noInterest ? nil : interest
        guard fd >= 0, wanted != current else { return true }
        switch (current, wanted) {
        case (nil, let wanted?):
            do { try context.watch(fd: fd, token: token, interest: wanted) } catch { return false }
        case (_?, let wanted?): context.setInterest(fd: fd, token: token, wanted)
        case (_?, nil): context.unwatch(fd: fd)
        case (nil, nil): break
        }
        endpoints[endpoint].interest = wanted
        return true
    }
}
