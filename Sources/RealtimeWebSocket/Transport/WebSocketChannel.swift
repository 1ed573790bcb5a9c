import Foundation
import RealtimeCore

/// How a channel starts: dialing out (client) or just accepted (server).
enum ChannelSetup {
    struct Client {
        var host: String
        var port: Int
        var handshake: WebSocketClientHandshake
        var tlsContext: TLSContext?
        var connectTimeout: Duration
        /// Reach the server through this proxy's `CONNECT` tunnel.
        var proxy: ProxyConfiguration? = nil

        /// Where the socket connects (and what is resolved): the proxy when there is one, else the server.
        var dialHost: String { proxy?.host ?? host }
        var dialPort: Int { proxy?.port ?? port }
    }

    case client(Client)
    case server(upgrader: ServerUpgrader, tlsContext: TLSContext?, handshakeTimeout: Duration)
}

/// Read sizes of the channel, shared with the benchmark's record-layer floor.
package enum WebSocketChannelSizes {
    /// Bytes per TLS socket read: small enough that ciphertext, OpenSSL's record buffer and plaintext stay
    /// in cache (256 KiB reads measured 20-30 % slower for wss than 64 KiB).
    package static let tlsReadSize = 64 * 1024
}

/// One WebSocket connection on its loop thread: socket, optional TLS and write buffer, executing what its
/// ``WebSocketConnectionMachine`` (upgrade, codec, close handshake, pings, timeouts) decides. Client and
/// server connections share it. Every method runs on the loop thread.
final class WebSocketChannel: LoopHandler {
    /// How far the byte stream is; from `.stream` on, the machine's phase tells the rest.
    private enum Phase {
        case resolving
        case connecting
        /// Connected to the proxy, waiting for its answer to `CONNECT`.
        case tunnel(ProxyTunnelHandshake)
        case tlsHandshake
        case stream
        case finished
    }

    /// Bytes per TLS socket read and per plaintext chunk handed to the codec.
    static let tlsReadSize = WebSocketChannelSizes.tlsReadSize
    /// Bytes of an unencrypted read handed to the codec at a time.
    static let decodeSliceSize = 16 * 1024

    let token: UInt64
    private let outbox: ConnectionOutbox
    private let deliver: (TransportEvent) -> Void
    private let setup: ChannelSetup
    private var machine: WebSocketConnectionMachine
    private var phase: Phase = .resolving
    private var socket: LoopSocket
    private var tls: TLSEngine?
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    /// The machine's next action list, kept emptied between inputs so that a read allocates none.
    private var spareActions: [WebSocketConnectionAction] = []
    /// The most actions an emptied list keeps room for.
    private static let keptActions = 16
    /// The loop timer armed for the machine's ``WebSocketConnectionMachine/nextDeadline``.
    private var timer: (id: UInt64, deadline: UInt64)?
    /// The app paused reading (back-pressure).
    private var readingPaused = false

    init(token: UInt64, setup: ChannelSetup, options: ChannelOptions, outbox: ConnectionOutbox,
         deliver: @escaping (TransportEvent) -> Void) {
        self.token = token
        self.setup = setup
        self.outbox = outbox
        self.deliver = deliver
        socket = LoopSocket(token: token)
        switch setup {
        case .client(let client): machine = WebSocketConnectionMachine(upgrade: .client(client.handshake), options: options)
        case .server(let upgrader, _, _): machine = WebSocketConnectionMachine(upgrade: .server(upgrader), options: options)
        }
    }

    // MARK: Starting

    /// Client: arms the connect timeout; addresses come next through ``connect(to:in:)``.
    func startClient(in context: LoopContext) {
        guard case .client(let client) = setup else { return }
        machine.start(now: EventLoop.now(), timeout: client.connectTimeout)
        armTimer(in: context)
    }

    /// Client: name resolution finished.
    func resolved(_ result: Result<[SocketAddress], RealtimeError>, in context: LoopContext) {
        guard case .resolving = phase else { return }
        switch result {
        case .failure(let error): fail(error, in: context)
        case .success(let addresses):
            phase = .connecting
            dialed(socket.dial(addresses, in: context), in: context)
        }
    }

    /// Server: takes over an accepted socket.
    func startServer(fd: Int32, in context: LoopContext) {
        guard case .server(_, let tlsContext, let timeout) = setup else { return }
        phase = .stream
        do throws(RealtimeError) {
            try socket.adopt(fd, interest: SelectorInterest(read: true, write: false), in: context)
            if let tlsContext {
                tls = try TLSEngine(server: tlsContext)
                phase = .tlsHandshake
            }
        } catch {
            fail(error, in: context)
            return
        }
        machine.start(now: EventLoop.now(), timeout: timeout)
        if tls == nil { drive(in: context) { machine, output in machine.streamReady(into: &output) } }
        armTimer(in: context)
    }

    /// Connected to the server or its proxy: the tunnel, TLS or the upgrade starts.
    private func dialed(_ dialing: LoopSocket.Dialing, in context: LoopContext) {
        switch dialing {
        case .inProgress: break
        case .failed(let error): fail(error, in: context)
        case .connected: connected(in: context)
        }
    }

    private func connected(in context: LoopContext) {
        guard case .client(let client) = setup else { return }
        if let proxy = client.proxy {
            let tunnel = ProxyTunnelHandshake(proxy: proxy, targetHost: client.host, targetPort: client.port)
            phase = .tunnel(tunnel)
            outbound += tunnel.requestBytes
            writeOutbound(in: context)
            return
        }
        streamConnected(leftover: [], in: context)
    }

    /// The proxy answered `CONNECT`.
    private func tunnelReceived(_ bytes: UnsafeRawBufferPointer, in context: LoopContext) {
        guard case .tunnel(var tunnel) = phase else { return }
        let progress = tunnel.receive(bytes)
        phase = .tunnel(tunnel)
        switch progress {
        case .needsMore: break
        case .failed(let error): fail(error, in: context)
        case .established(let leftover): streamConnected(leftover: leftover, in: context)
        }
    }

    /// The byte stream to the server is up, directly or through the proxy's tunnel: TLS (for the server's
    /// name, never the proxy's) or the upgrade starts. `leftover` is what the proxy passed on after its answer.
    private func streamConnected(leftover: [UInt8], in context: LoopContext) {
        guard case .client(let client) = setup else { return }
        if let tlsContext = client.tlsContext {
            do {
                let engine = try TLSEngine(client: tlsContext, host: client.host)
                tls = engine
                phase = .tlsHandshake
                _ = try engine.advanceHandshake()
                engine.drainCiphertext(into: &outbound)
            } catch {
                fail(error, in: context)
                return
            }
        } else {
            phase = .stream
            drive(in: context) { machine, output in machine.streamReady(into: &output) }
        }
        if isActive { writeOutbound(in: context) }
        guard !leftover.isEmpty, isActive else { return }
        if let tls {
            leftover.withUnsafeBytes { bytes in tls.withBorrowedCiphertext(bytes) { readTLSRecords(tls, in: context) } }
        } else {
            leftover.withUnsafeBytes { receivePlaintext($0, in: context) }
            finishRead(in: context)
        }
    }

    // MARK: Events from the selector

    func handle(_ event: SelectorEvent, in context: LoopContext) {
        if case .connecting = phase {
            dialed(socket.dialingEvent(event, in: context), in: context)
            return
        }
        if event.writable { writeOutbound(in: context) }
        // A hang-up is read even while paused: the peer is gone and the read reports how.
        if event.readable || event.hangup, isActive, !readingPaused || event.hangup { readSocket(in: context) }
    }

    func loopStopping(in context: LoopContext) {
        fail(RealtimeError(.transportFailed, "the event loop was shut down"), in: context)
    }

    private var isActive: Bool {
        if case .finished = phase { return false }
        return true
    }

    private var phaseName: String {
        switch phase {
        case .resolving: "resolving"
        case .connecting: "connecting"
        case .tunnel: "proxy CONNECT"
        case .tlsHandshake: "TLS handshake"
        case .stream: machine.phase == .open ? "open" : "upgrade"
        case .finished: "finished"
        }
    }

    // MARK: Reading

    private func readSocket(in context: LoopContext) {
        // Reads for OpenSSL's record layer are smaller so ciphertext, its record buffer and plaintext stay
        // in cache; the direct reader decrypts in place, so its reads are as large as unencrypted ones.
        let readSpace = tls.map { !$0.readsRecordsDirectly } ?? false
            ? UnsafeMutableRawBufferPointer(rebasing: context.readBuffer[0..<Self.tlsReadSize]) : context.readBuffer
        let count = SocketIO.receive(socket.fd, into: readSpace)
        if count == -Int(EAGAIN) { return }
        if count < 0 {
            fail(SocketError.posix("recv", Int32(-count)), in: context)
            return
        }
        if count == 0 {
            endOfStream(in: context)
            return
        }
        let bytes = UnsafeRawBufferPointer(rebasing: context.readBuffer[0..<count])
        if case .tunnel = phase {
            tunnelReceived(bytes, in: context)
            return
        }
        guard let tls else {
            // Decoded a slice at a time, so the codec's events for each slice stay in cache (as they do
            // for TLS, which hands over one 16 KiB record at a time): measured about 8 % faster.
            var start = 0
            while start < count, isActive {
                let end = min(count, start + Self.decodeSliceSize)
                receivePlaintext(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), in: context)
                start = end
            }
            finishRead(in: context)
            return
        }
        if tls.readsRecordsDirectly {
            readTLSRecordsDirectly(tls, UnsafeMutableRawBufferPointer(rebasing: context.readBuffer[0..<count]), in: context)
        } else {
            tls.withBorrowedCiphertext(bytes) { readTLSRecords(tls, in: context) }
        }
        // The socket is drained: likely idle for a while, so hand OpenSSL's buffers back. (Freeing them
        // per record instead, with SSL_MODE_RELEASE_BUFFERS, costs a malloc and a free per 16 KiB.)
        if count < readSpace.count, isActive, self.tls != nil { tls.releaseBuffers() }
    }

    /// Advances the TLS handshake and decodes every record the last read completed.
    private func readTLSRecords(_ tls: TLSEngine, in context: LoopContext) {
        do throws(RealtimeError) {
            if case .tlsHandshake = phase {
                let done = try tls.advanceHandshake()
                tls.drainCiphertext(into: &outbound)
                guard done else {
                    writeOutbound(in: context)
                    return
                }
                phase = .stream
                drive(in: context) { machine, output in machine.streamReady(into: &output) }
            }
            while isActive {
                let (filled, stop) = try tls.readPlaintext(
                    into: UnsafeMutableRawBufferPointer(rebasing: context.plaintextBuffer[0..<Self.tlsReadSize]))
                if filled > 0 {
                    receivePlaintext(UnsafeRawBufferPointer(rebasing: context.plaintextBuffer[0..<filled]), in: context)
                }
                if stop == .bufferFull { continue }
                if stop == .closedByPeer, isActive {
                    finishRead(in: context)
                    endOfStream(in: context)
                    return
                }
                break
            }
            if isActive { tls.drainCiphertext(into: &outbound) }
            finishRead(in: context)
        } catch {
            fail(error, in: context)
        }
    }

    /// Decodes every record the last read completed with the engine's own TLS 1.3 record reader.
    private func readTLSRecordsDirectly(_ tls: TLSEngine, _ bytes: UnsafeMutableRawBufferPointer, in context: LoopContext) {
        do throws(RealtimeError) {
            let stop = try tls.readRecordsDirectly(bytes) { plaintext in
                receivePlaintext(plaintext, in: context)
                return isActive
            }
            if isActive { tls.drainCiphertext(into: &outbound) }  // a KeyUpdate the peer asked for
            finishRead(in: context)
            if stop == .closedByPeer, isActive { endOfStream(in: context) }
        } catch {
            // Records before the bad one were authenticated: their messages still reach the app.
            if isActive { drive(in: context) { machine, output in machine.readFinished(into: &output) } }
            fail(error, in: context)
        }
    }

    /// Delivers the read's messages in one batch; when the read revealed the peer's close or a protocol
    /// error, what the app sent in answer goes out before our close frame.
    private func finishRead(in context: LoopContext) {
        guard isActive else { return }
        drive(in: context) { machine, output in machine.readFinished(into: &output) }
        if machine.isEnding {
            let replies = takeQueuedFrames()
            drive(in: context) { machine, output in machine.finishEnding(after: replies, into: &output) }
            return
        }
        if isActive { writeOutbound(in: context) }
    }

    private func receivePlaintext(_ bytes: UnsafeRawBufferPointer, in context: LoopContext) {
        drive(in: context) { machine, output in machine.receive(bytes, now: EventLoop.now(), into: &output) }
    }

    private func endOfStream(in context: LoopContext) {
        if case .tunnel(let tunnel) = phase {
            fail(tunnel.errorForEndOfStream(), in: context)
            return
        }
        if case .tlsHandshake = phase {
            fail(RealtimeError(.tlsFailed, "the peer closed the connection during the TLS handshake"), in: context)
            return
        }
        let midRecord = tls?.holdsPartialRecord == true
        drive(in: context) { machine, output in machine.streamEnded(midTLSRecord: midRecord, into: &output) }
    }

    // MARK: Executing the machine

    /// Feeds the machine one input, then carries out what it returned: its bytes first (straight into
    /// the write buffer without TLS, so sends are encoded in place), then its actions.
    private func drive(in context: LoopContext,
                       _ input: (inout WebSocketConnectionMachine, inout WebSocketConnectionMachine.Output) -> Void) {
        var output = WebSocketConnectionMachine.Output()
        if tls == nil { swap(&output.bytes, &outbound) }
        swap(&output.actions, &spareActions)
        input(&machine, &output)
        if tls == nil {
            swap(&output.bytes, &outbound)
        } else if !output.bytes.isEmpty {
            appendPlaintext(output.bytes, in: context)
        }
        for action in output.actions { perform(action, in: context) }
        // A drive that `perform` started took the spare meanwhile and gave back its own.
        output.actions.removeAll(keepingRoomUpTo: Self.keptActions)
        swap(&output.actions, &spareActions)
        if isActive { armTimer(in: context) }
    }

    private func perform(_ action: WebSocketConnectionAction, in context: LoopContext) {
        switch action {
        case .opened(let info):
            deliver(.opened(info))
            // What the app queued before the upgrade (or from the handler just now) goes out next.
            serviceOutbox(in: context)
        case .deliver(let frames):
            if isActive { deliver(.received(frames)) }
        case .pauseReading(let paused):
            readingPaused = paused
            updateInterest(in: context)
        case .pongReceived(let id):
            let now = EventLoop.now()
            guard let (waiter, roundTrip) = outbox.state.withLock({ $0.pings.answered(id, now: now) }) else { return }
            waiter.resume(returning: roundTrip)
        case .pingTimedOut(let id):
            outbox.state.withLock { $0.pings.timedOut(id) }?.resume(throwing: PendingPings.timeoutError)
        case .startTimedOut:
            fail(startTimeoutError, in: context)
        case .finish(let closure):
            finish(closure, in: context)
        }
    }

    private var startTimeoutError: RealtimeError {
        switch setup {
        case .client(let client):
            let seconds = Double(client.connectTimeout.nanoseconds) / 1e9
            if let proxy = client.proxy, case .tunnel(let tunnel) = phase {
                return RealtimeError(.connectTimedOut,
                                     "the proxy \(proxy.authority) did not answer CONNECT to \(tunnel.target) within \(seconds) s",
                                     context: .init(detail: "phase: \(phaseName)"))
            }
            let through = client.proxy.map { " through the proxy \($0.authority)" } ?? ""
            return RealtimeError(.connectTimedOut, "could not connect to \(client.host):\(client.port)\(through) within \(seconds) s",
                                 context: .init(detail: "phase: \(phaseName)"))
        case .server:
            return RealtimeError(.connectTimedOut, "the client did not finish the upgrade in time")
        }
    }

    /// Keeps one loop timer at the machine's next deadline.
    private func armTimer(in context: LoopContext) {
        let wanted = machine.nextDeadline
        guard wanted != timer?.deadline else { return }
        context.cancelTimer(timer?.id)
        timer = nil
        guard let wanted else { return }
        // A method call, not code in the closure: `self` must stay alive while a finish detaches it.
        let id = context.schedule(at: wanted) { [unowned self] in timerFired(in: context) }
        timer = (id, wanted)
    }

    private func timerFired(in context: LoopContext) {
        timer = nil
        drive(in: context) { machine, output in machine.timerFired(now: EventLoop.now(), into: &output) }
        if isActive { writeOutbound(in: context) }
    }

    // MARK: Writing

    /// Adds bytes meant for the peer, encrypting them when TLS is on.
    private func appendPlaintext(_ bytes: [UInt8], in context: LoopContext) {
        guard let tls else {
            outbound += bytes
            return
        }
        do throws(RealtimeError) {
            try tls.writePlaintext(bytes)
            tls.drainCiphertext(into: &outbound)
        } catch {
            fail(error, in: context)
        }
    }

    /// Writes as much of the outbound buffer as the socket takes, then watches for writability if needed.
    private func writeOutbound(in context: LoopContext) {
        guard socket.fd >= 0 else { return }
        while outboundStart < outbound.count {
            let written = outbound.withUnsafeBytes { raw in
                SocketIO.send(socket.fd, UnsafeRawBufferPointer(rebasing: raw[outboundStart...]))
            }
            if written == 0 { break }
            if written < 0 {
                fail(SocketError.posix("send", Int32(-written)), in: context)
                return
            }
            outboundStart += written
        }
        if outboundStart == outbound.count {
            // Idle connections keep no big buffer.
            outbound.removeAll(keepingRoomUpTo: 16 * 1024)
            outboundStart = 0
        } else if outboundStart > 64 * 1024, outboundStart * 2 > outbound.count {
            outbound.removeFirst(outboundStart)
            outboundStart = 0
        }
        let unsent = outbound.count - outboundStart + machine.bytesQueuedBeforeOpen
        outbox.state.withLock { $0.unsentBytes = unsent }
        updateInterest(in: context)
    }

    private func updateInterest(in context: LoopContext) {
        var wanted = SelectorInterest(read: !readingPaused, write: outboundStart < outbound.count)
        if case .connecting = phase { wanted = SelectorInterest(read: false, write: true) }
        socket.setInterest(wanted, in: context)
    }

    /// Acts on what other threads queued: frames, close, abort, pause, pings. Frames and pings queued
    /// before the upgrade wait in the machine.
    func serviceOutbox(in context: LoopContext) {
        guard isActive else { return }
        let (frames, close, abort, paused, overflowed, pings) = outbox.state.withLock { state in
            state.serviceScheduled = false
            let frames = state.frames
            let pings = state.pingsToSend
            state.frames = []
            state.unsentBytes += state.queuedBytes
            state.queuedBytes = 0
            state.pingsToSend = []
            return (frames, state.closeRequest, state.abortRequested, state.readingPaused, state.overflowed, pings)
        }
        drive(in: context) { machine, output in
            if abort {
                machine.abort(into: &output)
                return
            }
            if overflowed {
                machine.sendLimitExceeded(limit: outbox.maximumBufferedBytes, into: &output)
                return
            }
            machine.setReadingPaused(paused, into: &output)
            machine.send(frames, into: &output)
            let now = EventLoop.now()
            for id in pings { machine.ping(id: id, now: now, into: &output) }
            if let close { machine.close(code: close.code, reason: close.reason, now: now, into: &output) }
        }
        if isActive { writeOutbound(in: context) }
    }

    /// Takes the frames the app queued so far (its replies, sent before the close frame we owe).
    private func takeQueuedFrames() -> [QueuedFrame] {
        outbox.state.withLock { state -> [QueuedFrame] in
            defer {
                state.unsentBytes += state.queuedBytes
                state.queuedBytes = 0
                state.frames = []
            }
            return state.frames
        }
    }

    // MARK: Ending

    /// Ends the channel through the machine (which decides `duringOpen` and forgets its timers).
    private func fail(_ error: RealtimeError, in context: LoopContext) {
        guard isActive else { return }
        let error = attributedToProxy(error)
        drive(in: context) { machine, output in machine.fail(error, into: &output) }
    }

    /// A transport failure before the tunnel is up is one between us and the proxy: `.proxyFailed`, saying so.
    private func attributedToProxy(_ error: RealtimeError) -> RealtimeError {
        guard error.code == .transportFailed, case .client(let client) = setup, let proxy = client.proxy else { return error }
        switch phase {
        case .resolving, .connecting:
            return RealtimeError(.proxyFailed, "could not reach the proxy \(proxy.authority): \(error.message)",
                                 context: error.context)
        case .tunnel:
            return RealtimeError(.proxyFailed,
                                 "the connection to the proxy \(proxy.authority) failed before the tunnel was up: \(error.message)",
                                 context: error.context)
        case .tlsHandshake, .stream, .finished:
            return error
        }
    }

    /// Carries out the machine's `finish`: flushes what can be flushed, closes the socket, reports `closed`.
    private func finish(_ closure: TransportClosure, in context: LoopContext) {
        guard isActive else { return }
        if let tls, tls.isHandshakeComplete {
            tls.shutdown()
            tls.drainCiphertext(into: &outbound)
        }
        if socket.fd >= 0, outboundStart < outbound.count {
            // Best effort: the close frame or HTTP error response usually fits the socket buffer.
            _ = outbound.withUnsafeBytes { raw in
                SocketIO.send(socket.fd, UnsafeRawBufferPointer(rebasing: raw[outboundStart...]))
            }
        }
        phase = .finished
        outbound = []
        outboundStart = 0
        tls = nil
        context.cancelTimer(timer?.id)
        timer = nil
        socket.close(in: context)
        context.detach(token)
        let pings = outbox.state.withLock { state in
            state.finished = true
            state.frames = []
            state.queuedBytes = 0
            state.unsentBytes = 0
            return state.pings.removeAll()
        }
        for waiter in pings { waiter.resume(throwing: PendingPings.closedError(closure)) }
        deliver(.closed(closure))
    }
}
