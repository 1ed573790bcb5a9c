import Foundation
import RealtimeCore

/// What a server-side upgrade step decided after reading request bytes.
enum ServerUpgradeResult {
    /// The request head is incomplete.
    case needMoreBytes
    /// Write `response` (a 101), then speak WebSocket; `leftover` are frame bytes that followed the request.
    case accept(response: [UInt8], info: TransportOpenInfo, leftover: [UInt8])
    /// Write `response` (an HTTP error) and close; `error` explains why.
    case reject(response: [UInt8], error: RealtimeError)
}

/// Parses an upgrade request as it arrives; built per accepted socket by the server.
typealias ServerUpgrader = (UnsafeRawBufferPointer) -> ServerUpgradeResult

/// How a channel starts: dialing out (client) or just accepted (server).
enum ChannelSetup {
    struct Client {
        var host: String
        var port: Int
        var handshake: WebSocketClientHandshake
        var tlsContext: TLSContext?
        var connectTimeout: Duration
    }

    case client(Client)
    case server(upgrader: ServerUpgrader, tlsContext: TLSContext?, handshakeTimeout: Duration)
}

/// Timeouts and limits of one channel.
struct ChannelOptions {
    var limits: WebSocketLimits
    var closeTimeout: Duration
    var pingTimeout: Duration
}

/// Read sizes of the channel, shared with the benchmark's record-layer floor.
package enum WebSocketChannelSizes {
    /// Bytes per TLS socket read: small enough that ciphertext, OpenSSL's record buffer and plaintext stay
    /// in cache (256 KiB reads measured 20-30 % slower for wss than 64 KiB).
    package static let tlsReadSize = 64 * 1024
}

/// One WebSocket connection on its loop thread: socket, optional TLS, upgrade, codec and write buffer.
/// Client and server connections share it. Every method runs on the loop thread.
final class WebSocketChannel: LoopHandler {
    private enum Phase {
        case resolving
        case connecting(addresses: [SocketAddress], index: Int)
        case tlsHandshake
        case upgrading
        case open
        case finished
    }

    /// Bytes per TLS socket read and per plaintext chunk handed to the codec.
    static let tlsReadSize = WebSocketChannelSizes.tlsReadSize
    /// Bytes of an unencrypted read handed to the codec at a time.
    static let decodeSliceSize = 16 * 1024

    let token: UInt64
    private let outbox: ConnectionOutbox
    private let deliver: (TransportEvent) -> Void
    private let options: ChannelOptions
    private var setup: ChannelSetup
    private var phase: Phase = .resolving
    private var fd: Int32 = -1
    private var isWatched = false
    private var interest = SelectorInterest(read: false, write: false)
    private var tls: TLSEngine?
    private var codec: WebSocketCodec
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    private var startTimer: UInt64?
    private var closeTimer: UInt64?
    private var pingTimers: [UInt64: UInt64] = [:]
    /// Set when this side started the close handshake.
    private var localClose: ConnectionOutbox.CloseRequest?
    private var lastConnectError: RealtimeError?
    /// The app paused reading (back-pressure).
    private var readingPaused = false

    init(token: UInt64, setup: ChannelSetup, options: ChannelOptions, outbox: ConnectionOutbox,
         deliver: @escaping (TransportEvent) -> Void) {
        self.token = token
        self.setup = setup
        self.options = options
        self.outbox = outbox
        self.deliver = deliver
        switch setup {
        case .client: codec = WebSocketCodec(role: .client, limits: options.limits)
        case .server: codec = WebSocketCodec(role: .server, limits: options.limits)
        }
    }

    // MARK: Starting

    /// Client: arms the connect timeout; addresses come next through ``connect(to:in:)``.
    func startClient(in context: LoopContext) {
        guard case .client(let client) = setup else { return }
        startTimer = context.schedule(after: client.connectTimeout) { [unowned self] in
            startTimer = nil
            let seconds = Double(client.connectTimeout.nanoseconds) / 1e9
            fail(RealtimeError(.connectTimedOut,
                               "could not connect to \(client.host):\(client.port) within \(seconds) s",
                               context: .init(detail: "phase: \(phaseName)")), in: context)
        }
    }

    /// Client: name resolution finished.
    func resolved(_ result: Result<[SocketAddress], RealtimeError>, in context: LoopContext) {
        guard case .resolving = phase else { return }
        switch result {
        case .failure(let error): fail(error, in: context)
        case .success(let addresses): connect(addresses: addresses, index: 0, in: context)
        }
    }

    /// Server: takes over an accepted socket.
    func startServer(fd: Int32, in context: LoopContext) {
        guard case .server(_, let tlsContext, let timeout) = setup else { return }
        self.fd = fd
        phase = .upgrading
        do throws(RealtimeError) {
            if let tlsContext {
                tls = try TLSEngine(server: tlsContext)
                phase = .tlsHandshake
            }
            interest = SelectorInterest(read: true, write: false)
            try context.watch(fd: fd, token: token, interest: interest)
            isWatched = true
        } catch {
            fail(error, in: context)
            return
        }
        startTimer = context.schedule(after: timeout) { [unowned self] in
            startTimer = nil
            fail(RealtimeError(.connectTimedOut, "the client did not finish the upgrade in time"), in: context)
        }
    }

    private func connect(addresses: [SocketAddress], index: Int, in context: LoopContext) {
        guard index < addresses.count else {
            fail(lastConnectError ?? RealtimeError(.transportFailed, "no address to connect to"), in: context)
            return
        }
        let address = addresses[index]
        phase = .connecting(addresses: addresses, index: index)
        do {
            fd = try SocketIO.makeStreamSocket(family: address.family)
        } catch {
            lastConnectError = error
            connect(addresses: addresses, index: index + 1, in: context)
            return
        }
        let status = SocketIO.startConnect(fd, to: address)
        guard status == 0 || status == EINPROGRESS else {
            lastConnectError = SocketError.connectFailed(address: address, code: status)
            closeSocket(in: context)
            connect(addresses: addresses, index: index + 1, in: context)
            return
        }
        do {
            interest = SelectorInterest(read: false, write: true)
            try context.watch(fd: fd, token: token, interest: interest)
            isWatched = true
        } catch {
            closeSocket(in: context)
            fail(error, in: context)
        }
    }

    private func connected(in context: LoopContext) {
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
            phase = .upgrading
            outbound += client.handshake.requestBytes()
        }
        writeOutbound(in: context)
    }

    // MARK: Events from the selector

    func handle(_ event: SelectorEvent, in context: LoopContext) {
        if case .connecting(let addresses, let index) = phase {
            guard event.writable || event.hangup else { return }
            let status = SocketIO.pendingError(fd)
            if status == 0 {
                connected(in: context)
            } else {
                lastConnectError = SocketError.connectFailed(address: addresses[index], code: status)
                closeSocket(in: context)
                connect(addresses: addresses, index: index + 1, in: context)
            }
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
        case .tlsHandshake: "TLS handshake"
        case .upgrading: "upgrade"
        case .open: "open"
        case .finished: "finished"
        }
    }

    // MARK: Reading

    private func readSocket(in context: LoopContext) {
        // Reads for OpenSSL's record layer are smaller so ciphertext, its record buffer and plaintext stay
        // in cache; the direct reader decrypts in place, so its reads are as large as unencrypted ones.
        let readSpace = tls.map { !$0.readsRecordsDirectly } ?? false
            ? UnsafeMutableRawBufferPointer(rebasing: context.readBuffer[0..<Self.tlsReadSize]) : context.readBuffer
        let count = SocketIO.receive(fd, into: readSpace)
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
        guard let tls else {
            var frames: [TransportFrame] = []
            // Decoded a slice at a time, so the codec's events for each slice stay in cache (as they do
            // for TLS, which hands over one 16 KiB record at a time): measured about 8 % faster.
            var start = 0
            while start < count, isActive {
                let end = min(count, start + Self.decodeSliceSize)
                receivePlaintext(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), frames: &frames, in: context)
                start = end
            }
            finishRead(frames: frames, in: context)
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
                phase = .upgrading
                if case .client(let client) = setup {
                    try tls.writePlaintext(client.handshake.requestBytes())
                    tls.drainCiphertext(into: &outbound)
                }
            }
            var frames: [TransportFrame] = []
            while isActive {
                let (filled, stop) = try tls.readPlaintext(
                    into: UnsafeMutableRawBufferPointer(rebasing: context.plaintextBuffer[0..<Self.tlsReadSize]))
                if filled > 0 {
                    receivePlaintext(UnsafeRawBufferPointer(rebasing: context.plaintextBuffer[0..<filled]),
                                     frames: &frames, in: context)
                }
                if stop == .bufferFull { continue }
                if stop == .closedByPeer, isActive {
                    finishRead(frames: frames, in: context)
                    endOfStream(in: context)
                    return
                }
                break
            }
            if isActive { tls.drainCiphertext(into: &outbound) }
            finishRead(frames: frames, in: context)
        } catch {
            fail(error, in: context)
        }
    }

    /// Decodes every record the last read completed with the engine's own TLS 1.3 record reader.
    private func readTLSRecordsDirectly(_ tls: TLSEngine, _ bytes: UnsafeMutableRawBufferPointer, in context: LoopContext) {
        var frames: [TransportFrame] = []
        do throws(RealtimeError) {
            let stop = try tls.readRecordsDirectly(bytes) { plaintext in
                receivePlaintext(plaintext, frames: &frames, in: context)
                return isActive
            }
            if isActive { tls.drainCiphertext(into: &outbound) }  // a KeyUpdate the peer asked for
            finishRead(frames: frames, in: context)
            if stop == .closedByPeer, isActive { endOfStream(in: context) }
        } catch {
            // Records before the bad one were authenticated: their messages still reach the app.
            if !frames.isEmpty, isActive { deliver(.received(frames)) }
            fail(error, in: context)
        }
    }

    /// Delivers one batch for the read, then acts on a close the read revealed.
    private func finishRead(frames: [TransportFrame], in context: LoopContext) {
        if !frames.isEmpty, isActive || pendingClosure != nil { deliver(.received(frames)) }
        if !bytesAfterBatch.isEmpty, isActive {
            // The batch ended where the peer's close or a protocol error begins: send what the app
            // answered to the batch first, then decode the rest, which writes our close frame.
            let rest = bytesAfterBatch
            bytesAfterBatch = []
            encodeQueuedFrames()
            var ignored: [TransportFrame] = []
            rest.withUnsafeBytes { decode($0, frames: &ignored, in: context, mayDefer: false) }
        }
        if let closure = pendingClosure {
            pendingClosure = nil
            finish(closure, in: context)
            return
        }
        if isActive { writeOutbound(in: context) }
    }

    /// A closure decided in the middle of a read, reported after that read's frames.
    private var pendingClosure: TransportClosure?
    /// Input from the close (or protocol error) on, decoded only after the app saw the messages before it.
    private var bytesAfterBatch: [UInt8] = []

    private func receivePlaintext(_ bytes: UnsafeRawBufferPointer, frames: inout [TransportFrame], in context: LoopContext) {
        guard pendingClosure == nil else { return }
        if !bytesAfterBatch.isEmpty {
            bytesAfterBatch.append(contentsOf: bytes)
            return
        }
        switch phase {
        case .upgrading:
            upgrade(with: bytes, frames: &frames, in: context)
        case .open:
            decode(bytes, frames: &frames, in: context)
        default:
            break
        }
    }

    private func upgrade(with bytes: UnsafeRawBufferPointer, frames: inout [TransportFrame], in context: LoopContext) {
        switch setup {
        case .client(var client):
            let result: (info: TransportOpenInfo, leftover: [UInt8])?
            do {
                result = try client.handshake.receive(bytes)
                setup = .client(client)
            } catch {
                fail(error, in: context)
                return
            }
            guard let (info, leftover) = result else { return }
            opened(info, leftover: leftover, frames: &frames, in: context)
        case .server(let upgrader, _, _):
            switch upgrader(bytes) {
            case .needMoreBytes:
                return
            case .reject(let response, let error):
                appendPlaintext(response)
                writeOutbound(in: context)
                fail(error, in: context, reportAs: .closedLocally(code: 1002, reason: error.message))
            case .accept(let response, let info, let leftover):
                appendPlaintext(response)
                opened(info, leftover: leftover, frames: &frames, in: context)
            }
        }
    }

    private func opened(_ info: TransportOpenInfo, leftover: [UInt8], frames: inout [TransportFrame], in context: LoopContext) {
        context.cancelTimer(startTimer)
        startTimer = nil
        phase = .open
        deliver(.opened(info))
        guard isActive else { return }
        serviceOutbox(in: context)
        if !leftover.isEmpty, isActive {
            leftover.withUnsafeBytes { decode($0, frames: &frames, in: context) }
        }
    }

    private func decode(_ bytes: UnsafeRawBufferPointer, frames: inout [TransportFrame], in context: LoopContext,
                        mayDefer: Bool = true) {
        var events = context.codecEvents
        events.removeAll(keepingCapacity: true)
        var output: [UInt8] = []
        // Scalars only: a copy of the whole codec would share its buffers and make the decode below
        // copy them (measured: about 10 % of a ws receive of small messages).
        let closeState = codec.closeState
        codec.receive(bytes, events: &events, output: &output)
        if mayDefer, events.contains(where: \.endsConnection), let boundary = codec.lastMessageBoundary {
            // Stop at the last message before the ending, so that replies the app sends to those
            // messages go out before our close frame (Autobahn 3.x, 4.x, 5.15: echo, then fail); the
            // rest is decoded again after the batch.
            codec.rewindToLastMessage(closeState: closeState)
            events.removeSubrange(boundary.eventCount...)
            output.removeSubrange(boundary.outputCount...)
            bytesAfterBatch = Array(UnsafeRawBufferPointer(rebasing: bytes[boundary.inputUsed...]))
        }
        if !output.isEmpty { appendPlaintext(output) }
        for event in events {
            switch event {
            case .message(let frame):
                frames.append(frame)
            case .ping:
                break  // the codec already queued the pong
            case .pong(let payload):
                pongReceived(payload, in: context)
            case .closed(let code, let reason):
                if let localClose {
                    pendingClosure = TransportClosure(.closedLocally(code: localClose.code, reason: localClose.reason))
                } else {
                    pendingClosure = TransportClosure(.closedByPeer(code: code, reason: reason))
                }
            case .failed(let error, _):
                pendingClosure = TransportClosure(.failed(error))
            }
        }
        context.codecEvents = events
    }

    private func endOfStream(in context: LoopContext) {
        switch phase {
        case .upgrading:
            if case .client(let client) = setup {
                fail(client.handshake.errorForClosedConnection(), in: context)
            } else {
                fail(RealtimeError(.transportFailed, "the client closed the connection during the upgrade"), in: context)
            }
        case .tlsHandshake:
            fail(RealtimeError(.tlsFailed, "the peer closed the connection during the TLS handshake"), in: context)
        default:
            if let localClose {
                // We asked to close and the peer dropped the socket instead of answering: still our close.
                finish(TransportClosure(.closedLocally(code: localClose.code, reason: localClose.reason)), in: context)
            } else {
                let midRecord = tls?.holdsPartialRecord == true
                fail(RealtimeError(.transportFailed, "the connection closed without a close frame"
                                   + (midRecord ? ", in the middle of a TLS record" : ""),
                                   context: .init(closeCode: 1006, detail: midRecord ? "TLS record cut short" : nil)),
                     in: context)
            }
        }
    }

    // MARK: Writing

    /// Adds bytes meant for the peer, encrypting them when TLS is on.
    private func appendPlaintext(_ bytes: [UInt8]) {
        guard let tls else {
            outbound += bytes
            return
        }
        do throws(RealtimeError) {
            try tls.writePlaintext(bytes)
            tls.drainCiphertext(into: &outbound)
        } catch {
            pendingClosure = TransportClosure(.failed(error))
        }
    }

    /// Writes as much of the outbound buffer as the socket takes, then watches for writability if needed.
    private func writeOutbound(in context: LoopContext) {
        guard fd >= 0 else { return }
        while outboundStart < outbound.count {
            let written = outbound.withUnsafeBytes { raw in
                SocketIO.send(fd, UnsafeRawBufferPointer(rebasing: raw[outboundStart...]))
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
            if outbound.capacity > 16 * 1024 { outbound = [] } else { outbound.removeAll(keepingCapacity: true) }
            outboundStart = 0
        } else if outboundStart > 64 * 1024, outboundStart * 2 > outbound.count {
            outbound.removeFirst(outboundStart)
            outboundStart = 0
        }
        let unsent = outbound.count - outboundStart
        outbox.state.withLock { $0.unsentBytes = unsent }
        updateInterest(in: context)
    }

    private func updateInterest(in context: LoopContext) {
        guard isWatched, fd >= 0 else { return }
        var wanted = SelectorInterest(read: !readingPaused, write: outboundStart < outbound.count)
        if case .connecting = phase { wanted = SelectorInterest(read: false, write: true) }
        if wanted != interest {
            interest = wanted
            context.setInterest(fd: fd, token: token, wanted)
        }
    }

    /// Acts on what other threads queued: frames, close, abort, pause, pings.
    func serviceOutbox(in context: LoopContext) {
        guard isActive else { return }
        let isOpen: Bool
        if case .open = phase { isOpen = true } else { isOpen = false }
        let (frames, close, abort, paused, overflowed, pings) = outbox.state.withLock { state in
            state.serviceScheduled = false
            var frames: [TransportFrame] = []
            var pings: [UInt64] = []
            if isOpen {
                frames = state.frames
                state.frames = []
                state.unsentBytes += state.queuedBytes
                state.queuedBytes = 0
                pings = state.pingsToSend
                state.pingsToSend = []
            }
            return (frames, state.closeRequest, state.abortRequested, state.readingPaused, state.overflowed, pings)
        }
        if abort {
            finish(TransportClosure(.closedLocally(code: 1006, reason: "aborted")), in: context)
            return
        }
        if overflowed {
            fail(RealtimeError(.limitExceeded,
                               "more than \(outbox.maximumBufferedBytes) bytes were queued for sending",
                               context: .init(closeCode: 1008)), in: context)
            return
        }
        if paused != readingPaused {
            readingPaused = paused
            updateInterest(in: context)
        }
        guard isOpen else {
            if let close, localClose == nil {
                // Closing before the upgrade finished: nothing to hand-shake with.
                localClose = close
                finish(TransportClosure(.closedLocally(code: close.code, reason: close.reason)), in: context)
            }
            return
        }
        if !frames.isEmpty || !pings.isEmpty {
            var plaintext: [UInt8] = []
            if tls == nil { swap(&plaintext, &outbound) }
            for frame in frames where !codec.hasSentClose { codec.encode(frame, into: &plaintext) }
            for id in pings where !codec.hasSentClose {
                codec.encodePing(withUnsafeBytes(of: id.bigEndian) { Array($0) }, into: &plaintext)
                pingTimers[id] = context.schedule(after: options.pingTimeout) { [unowned self] in
                    pingTimers[id] = nil
                    let pending = outbox.state.withLock { $0.pings.removeValue(forKey: id) }
                    pending?.continuation.resume(throwing: RealtimeError(.timedOut, "no pong within the ping timeout"))
                }
            }
            if tls == nil { swap(&plaintext, &outbound) } else { appendPlaintext(plaintext) }
        }
        if let close, localClose == nil {
            localClose = close
            if readingPaused {
                // The peer's close reply (or its hang-up) must be read, or every close paused by
                // back-pressure would hold its socket for the whole close timeout.
                readingPaused = false
                updateInterest(in: context)
            }
            if !codec.hasSentClose {
                var bytes: [UInt8] = []
                codec.encodeClose(code: close.code, reason: close.reason, into: &bytes)
                appendPlaintext(bytes)
            }
            closeTimer = context.schedule(after: options.closeTimeout) { [unowned self] in
                closeTimer = nil
                finish(TransportClosure(.closedLocally(code: close.code, reason: close.reason)), in: context)
            }
        }
        if let closure = pendingClosure {
            pendingClosure = nil
            finish(closure, in: context)
            return
        }
        writeOutbound(in: context)
    }

    /// Encodes the frames the app queued so far (used before a close frame we are about to write).
    private func encodeQueuedFrames() {
        let frames = outbox.state.withLock { state -> [TransportFrame] in
            defer {
                state.unsentBytes += state.queuedBytes
                state.queuedBytes = 0
                state.frames = []
            }
            return state.frames
        }
        guard !frames.isEmpty else { return }
        var plaintext: [UInt8] = []
        for frame in frames { codec.encode(frame, into: &plaintext) }
        appendPlaintext(plaintext)
    }

    private func pongReceived(_ payload: [UInt8], in context: LoopContext) {
        guard payload.count == 8 else { return }  // unsolicited pongs are allowed and ignored
        let id = payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        context.cancelTimer(pingTimers.removeValue(forKey: id))
        guard let pending = outbox.state.withLock({ $0.pings.removeValue(forKey: id) }) else { return }
        let elapsed = EventLoop.now() &- pending.started
        pending.continuation.resume(returning: .nanoseconds(Int64(clamping: elapsed)))
    }

    // MARK: Ending

    private func fail(_ error: RealtimeError, in context: LoopContext, reportAs kind: TransportClosure.Kind? = nil) {
        finish(TransportClosure(kind ?? .failed(error)), in: context)
    }

    /// Ends the channel once: flushes what can be flushed, closes the socket, reports `closed`.
    private func finish(_ closure: TransportClosure, in context: LoopContext) {
        guard isActive else { return }
        var closure = closure
        if case .open = phase {} else { closure.duringOpen = true }
        if let tls, tls.isHandshakeComplete {
            tls.shutdown()
            tls.drainCiphertext(into: &outbound)
        }
        if fd >= 0, outboundStart < outbound.count {
            // Best effort: the close frame or HTTP error response usually fits the socket buffer.
            _ = outbound.withUnsafeBytes { raw in
                SocketIO.send(fd, UnsafeRawBufferPointer(rebasing: raw[outboundStart...]))
            }
        }
        phase = .finished
        outbound = []
        outboundStart = 0
        tls = nil
        context.cancelTimer(startTimer)
        context.cancelTimer(closeTimer)
        for timer in pingTimers.values { context.cancelTimer(timer) }
        pingTimers = [:]
        closeSocket(in: context)
        context.detach(token)
        let pings = outbox.state.withLock { state in
            state.finished = true
            state.frames = []
            state.queuedBytes = 0
            state.unsentBytes = 0
            defer { state.pings = [:] }
            return Array(state.pings.values)
        }
        for ping in pings {
            ping.continuation.resume(throwing: RealtimeError(.connectionClosed, "the connection closed before the pong",
                                                             context: .init(closeCode: closure.closeCode)))
        }
        deliver(.closed(closure))
    }

    private func closeSocket(in context: LoopContext) {
        if isWatched {
            context.unwatch(fd: fd)
            isWatched = false
        }
        if fd >= 0 {
            SocketIO.closeFD(fd)
            fd = -1
        }
        interest = SelectorInterest(read: false, write: false)
    }
}

extension WebSocketEvent {
    /// A close or a protocol failure: nothing after it is decoded.
    var endsConnection: Bool {
        switch self {
        case .closed, .failed: true
        case .message, .ping, .pong: false
        }
    }
}
