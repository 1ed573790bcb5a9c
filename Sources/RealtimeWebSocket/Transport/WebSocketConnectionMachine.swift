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

/// A frame the app queued, and whether permessage-deflate may compress it.
struct QueuedFrame: Sendable {
    var frame: TransportFrame
    var compress = true
}

/// Timeouts and limits of one connection.
struct ChannelOptions: Sendable {
    var limits: WebSocketLimits
    var closeTimeout: Duration
    var pingTimeout: Duration
}

/// What ``WebSocketConnectionMachine`` asks its driver to do besides writing bytes, in order, after
/// the driver has handed the input's bytes to the peer's stream.
enum WebSocketConnectionAction: Sendable {
    /// The upgrade completed: report `.opened`, then hand over what the app queued meanwhile.
    case opened(TransportOpenInfo)
    /// Report one batch of received messages.
    case deliver([TransportFrame])
    /// Stop or resume reading from the peer.
    case pauseReading(Bool)
    /// The pong for ping `id` arrived.
    case pongReceived(pingID: UInt64)
    /// Ping `id` went unanswered for the ping timeout.
    case pingTimedOut(pingID: UInt64)
    /// The connect or upgrade timeout passed: fail with the driver's words for where it got stuck.
    case startTimedOut
    /// The connection is over: flush what can be, close the stream, fail open pings, report `closure`.
    case finish(TransportClosure)
}

/// The WebSocket connection lifecycle without I/O: upgrade → open, frames and pings queued before open,
/// the close handshake with its timeout, pings with theirs, and the order of what goes out. Drivers feed
/// it what happened (bytes read, the app's requests, the time) and carry out what it returns: bytes for
/// the peer and ``WebSocketConnectionAction``s. Time is whatever monotonic nanoseconds the driver passes
/// (a manual clock in tests); the machine asks to be woken at ``nextDeadline``.
///
/// Replies before the close: a read that reveals the peer's close (or a protocol error) after messages
/// holds back our close frame; the driver delivers the messages, then hands the app's replies to
/// ``finishEnding(after:into:)``, which writes them, then the close (Autobahn 3.x, 4.x, 5.15).
///
/// Not Sendable (the server's upgrader is a loop-confined closure): one value per connection, touched
/// by one thread or under one lock.
struct WebSocketConnectionMachine {
    /// How the byte stream becomes a WebSocket.
    enum Upgrade {
        case client(WebSocketClientHandshake)
        case server(ServerUpgrader)
    }

    /// Where the connection is, as far as WebSocket is concerned.
    enum Phase: Equatable {
        /// The byte stream is not up yet (resolving, connecting, TLS).
        case connecting
        case upgrading
        case open
        case finished
    }

    /// What one input produced.
    struct Output: Sendable {
        /// Bytes for the peer, in wire order; the driver writes them before carrying out `actions`.
        var bytes: [UInt8] = []
        var actions: [WebSocketConnectionAction] = []
    }

    /// A close this side asked for.
    struct CloseRequest: Sendable, Equatable {
        var code: Int
        var reason: String
    }

    private(set) var phase: Phase = .connecting { didSet { updateIsEnding() } }
    private var upgrade: Upgrade
    private var codec: WebSocketCodec
    private let options: ChannelOptions
    /// Set when this side started the close handshake.
    private(set) var localClose: CloseRequest?
    /// How the connection ends, decided in the middle of a read and carried out after its messages.
    private var ending: TransportClosure? { didSet { updateIsEnding() } }
    /// Messages of the current read, delivered as one batch by ``readFinished(into:)``.
    private var received: [TransportFrame] = []
    /// Reused for the codec's events.
    private var events: [WebSocketEvent] = []
    private var framesBeforeOpen: [QueuedFrame] = []
    /// Payload bytes of the frames waiting for the upgrade (they count against the send limit).
    private(set) var bytesQueuedBeforeOpen = 0
    private var pingsBeforeOpen: [UInt64] = []
    private var readingPaused = false
    private var startDeadline: UInt64? { didSet { updateNextDeadline() } }
    private var closeDeadline: UInt64? { didSet { updateNextDeadline() } }
    private var pingDeadlines: [UInt64: UInt64] = [:] { didSet { updateNextDeadline() } }
    /// The earliest time the driver must call ``timerFired(now:into:)``, if any. Stored, not computed:
    /// the driver reads it after every input, and a computed getter on the driver's stored machine made
    /// Swift copy the whole machine for each read.
    private(set) var nextDeadline: UInt64?

    init(upgrade: Upgrade, options: ChannelOptions, codec: WebSocketCodec? = nil) {
        self.upgrade = upgrade
        self.options = options
        switch upgrade {
        case .client: self.codec = codec ?? WebSocketCodec(role: .client, limits: options.limits)
        case .server: self.codec = codec ?? WebSocketCodec(role: .server, limits: options.limits)
        }
    }

    private mutating func updateNextDeadline() {
        func earlier(_ first: UInt64?, _ second: UInt64) -> UInt64 { first.map { min($0, second) } ?? second }
        var earliest = startDeadline
        if let closeDeadline { earliest = earlier(earliest, closeDeadline) }
        for deadline in pingDeadlines.values { earliest = earlier(earliest, deadline) }
        nextDeadline = earliest
    }

    /// `true` once a read revealed the end and the machine waits for ``finishEnding(after:into:)``.
    /// Stored for the same reason as ``nextDeadline``.
    private(set) var isEnding = false

    private mutating func updateIsEnding() { isEnding = ending != nil && phase != .finished }

    var isFinished: Bool { phase == .finished }

    // MARK: Opening

    /// Arms the connect (client) or upgrade (server) timeout.
    mutating func start(now: UInt64, timeout: Duration) {
        startDeadline = now &+ UInt64(clamping: max(0, timeout.nanoseconds))
    }

    /// The byte stream is up (TCP connected, TLS done): a client writes its upgrade request.
    mutating func streamReady(into output: inout Output) {
        guard phase == .connecting else { return }
        phase = .upgrading
        if case .client(let handshake) = upgrade { output.bytes += handshake.requestBytes() }
    }

    // MARK: Reading

    /// Bytes from the peer: the upgrade while upgrading, frames once open. Messages are kept for
    /// ``readFinished(into:)``; pongs and the server's upgrade response go to `output.bytes` at once.
    mutating func receive(_ bytes: UnsafeRawBufferPointer, now: UInt64, into output: inout Output) {
        guard ending == nil else { return }
        switch phase {
        case .upgrading: receiveUpgrade(bytes, now: now, into: &output)
        case .open: decode(bytes, now: now, into: &output)
        case .connecting, .finished: break
        }
    }

    /// The read is over: its messages go to the app in one batch. When the read also revealed the end,
    /// ``isEnding`` is true and the driver follows with ``finishEnding(after:into:)``.
    mutating func readFinished(into output: inout Output) {
        guard !received.isEmpty, phase != .finished else { return }
        output.actions.append(.deliver(received))
        received = []
    }

    /// After the delivery of the last messages before the peer's close or a protocol error: writes
    /// `replies` (what the app sent in answer), then our close frame, then finishes.
    mutating func finishEnding(after replies: [QueuedFrame], into output: inout Output) {
        guard let ending, phase != .finished else { return }
        for reply in replies { codec.encode(reply.frame, compress: reply.compress, into: &output.bytes) }
        codec.writeOwedClose(into: &output.bytes)
        finish(ending, into: &output)
    }

    /// The peer closed its end of the stream; `midTLSRecord` when it stopped inside a TLS record.
    mutating func streamEnded(midTLSRecord: Bool = false, into output: inout Output) {
        switch phase {
        case .connecting, .finished:
            return
        case .upgrading:
            switch upgrade {
            case .client(let handshake):
                fail(handshake.errorForClosedConnection(), into: &output)
            case .server:
                fail(RealtimeError(.transportFailed, "the client closed the connection during the upgrade"), into: &output)
            }
        case .open:
            if let localClose {
                // We asked to close and the peer dropped the stream instead of answering: still our close.
                finish(TransportClosure(.closedLocally(code: localClose.code, reason: localClose.reason)), into: &output)
            } else {
                fail(RealtimeError(.transportFailed, "the connection closed without a close frame"
                                   + (midTLSRecord ? ", in the middle of a TLS record" : ""),
                                   context: .init(closeCode: 1006, detail: midTLSRecord ? "TLS record cut short" : nil)),
                     into: &output)
            }
        }
    }

    private mutating func receiveUpgrade(_ bytes: UnsafeRawBufferPointer, now: UInt64, into output: inout Output) {
        switch upgrade {
        case .client(var handshake):
            let result: (info: TransportOpenInfo, leftover: [UInt8])?
            do throws(RealtimeError) {
                result = try handshake.receive(bytes)
                upgrade = .client(handshake)
            } catch {
                fail(error, into: &output)
                return
            }
            guard let (info, leftover) = result else { return }
            open(info, leftover: leftover, now: now, into: &output)
        case .server(let upgrader):
            switch upgrader(bytes) {
            case .needMoreBytes:
                return
            case .reject(let response, let error):
                output.bytes += response
                finish(TransportClosure(.closedLocally(code: 1002, reason: error.message)), into: &output)
            case .accept(let response, let info, let leftover):
                output.bytes += response
                open(info, leftover: leftover, now: now, into: &output)
            }
        }
    }

    private mutating func open(_ info: TransportOpenInfo, leftover: [UInt8], now: UInt64, into output: inout Output) {
        phase = .open
        startDeadline = nil
        if case .client(let handshake) = upgrade, let negotiated = handshake.negotiatedDeflate,
           let options = handshake.deflate {
            codec.enableDeflate(negotiated, minimumMessageSize: options.minimumMessageSize,
                                compressionLevel: options.compressionLevel)
        }
        output.actions.append(.opened(info))
        let frames = framesBeforeOpen
        let pings = pingsBeforeOpen
        framesBeforeOpen = []
        pingsBeforeOpen = []
        bytesQueuedBeforeOpen = 0
        send(frames, into: &output)
        for id in pings { ping(id: id, now: now, into: &output) }
        if !leftover.isEmpty {
            leftover.withUnsafeBytes { decode($0, now: now, into: &output) }
        }
    }

    private mutating func decode(_ bytes: UnsafeRawBufferPointer, now: UInt64, into output: inout Output) {
        events.removeAll(keepingCapacity: true)
        codec.receiveDeferringClose(bytes, events: &events, output: &output.bytes)
        for event in events {
            switch event {
            case .message(let frame):
                received.append(frame)
            case .ping:
                break  // the codec already wrote the pong
            case .pong(let payload):
                // Ours carry an 8-byte id; unsolicited pongs are allowed and ignored.
                guard payload.count == 8 else { continue }
                let id = payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                if pingDeadlines.removeValue(forKey: id) != nil { output.actions.append(.pongReceived(pingID: id)) }
            case .closed(let code, let reason):
                if let localClose {
                    ending = TransportClosure(.closedLocally(code: localClose.code, reason: localClose.reason))
                } else {
                    ending = TransportClosure(.closedByPeer(code: code, reason: reason))
                }
            case .failed(let error, _):
                ending = TransportClosure(.failed(error))
            }
        }
    }

    // MARK: Requests from the app

    /// Like ``finishEnding(after:into:)`` with frames that may all be compressed.
    mutating func finishEnding(after replies: [TransportFrame], into output: inout Output) {
        finishEnding(after: replies.map { QueuedFrame(frame: $0) }, into: &output)
    }

    /// Encodes `frames`, or keeps them until the upgrade completes. Frames after our close are dropped.
    mutating func send(_ frames: [QueuedFrame], into output: inout Output) {
        guard !frames.isEmpty, phase != .finished, localClose == nil else { return }
        guard phase == .open else {
            framesBeforeOpen += frames
            for queued in frames { bytesQueuedBeforeOpen += queued.frame.payloadCount }
            return
        }
        for queued in frames { codec.encode(queued.frame, compress: queued.compress, into: &output.bytes) }
    }

    /// Like ``send(_:into:)``, every frame compressed or not by `compress`.
    mutating func send(_ frames: [TransportFrame], compress: Bool = true, into output: inout Output) {
        send(frames.map { QueuedFrame(frame: $0, compress: compress) }, into: &output)
    }

    /// Sends ping `id` (its 8 bytes are the payload) and arms its timeout; before the upgrade it waits.
    mutating func ping(id: UInt64, now: UInt64, into output: inout Output) {
        switch phase {
        case .connecting, .upgrading:
            pingsBeforeOpen.append(id)
        case .open:
            // After our close frame no ping may go out; the ping fails when the connection finishes.
            guard !codec.hasSentClose, !codec.owesClose else { return }
            codec.encodePing(withUnsafeBytes(of: id.bigEndian) { Array($0) }, into: &output.bytes)
            pingDeadlines[id] = now &+ UInt64(clamping: max(0, options.pingTimeout.nanoseconds))
        case .finished:
            return
        }
    }

    /// Starts the close handshake (only the first request counts). Before the upgrade there is nothing
    /// to hand-shake with: the connection ends at once.
    mutating func close(code: Int, reason: String, now: UInt64, into output: inout Output) {
        guard phase != .finished, localClose == nil else { return }
        let request = CloseRequest(code: code, reason: reason)
        localClose = request
        guard phase == .open else {
            finish(TransportClosure(.closedLocally(code: code, reason: reason)), into: &output)
            return
        }
        if readingPaused {
            // The peer's close reply (or its hang-up) must be read, or every close paused by back-pressure
            // would hold its stream for the whole close timeout.
            readingPaused = false
            output.actions.append(.pauseReading(false))
        }
        codec.encodeClose(code: code, reason: reason, into: &output.bytes)
        closeDeadline = now &+ UInt64(clamping: max(0, options.closeTimeout.nanoseconds))
    }

    /// The app paused or resumed reading (back-pressure).
    mutating func setReadingPaused(_ paused: Bool, into output: inout Output) {
        guard paused != readingPaused, phase != .finished else { return }
        readingPaused = paused
        output.actions.append(.pauseReading(paused))
    }

    /// Drops the connection without a close handshake.
    mutating func abort(into output: inout Output) {
        finish(TransportClosure(.closedLocally(code: 1006, reason: "aborted")), into: &output)
    }

    /// More than `limit` bytes waited to be sent.
    mutating func sendLimitExceeded(limit: Int, into output: inout Output) {
        fail(RealtimeError(.limitExceeded, "more than \(limit) bytes were queued for sending",
                           context: .init(closeCode: 1008)), into: &output)
    }

    // MARK: Time and failures

    /// Acts on every deadline at or before `now`.
    mutating func timerFired(now: UInt64, into output: inout Output) {
        guard phase != .finished else { return }
        if let deadline = startDeadline, deadline <= now {
            startDeadline = nil
            output.actions.append(.startTimedOut)
        }
        for (id, deadline) in pingDeadlines.sorted(by: { $0.key < $1.key }) where deadline <= now {
            pingDeadlines[id] = nil
            output.actions.append(.pingTimedOut(pingID: id))
        }
        if let deadline = closeDeadline, deadline <= now, let localClose {
            closeDeadline = nil
            finish(TransportClosure(.closedLocally(code: localClose.code, reason: localClose.reason)), into: &output)
        }
    }

    /// The stream broke, or the driver gave up (I/O, TLS, timeouts it words itself).
    mutating func fail(_ error: RealtimeError, into output: inout Output) {
        finish(TransportClosure(.failed(error)), into: &output)
    }

    private mutating func finish(_ closure: TransportClosure, into output: inout Output) {
        guard phase != .finished else { return }
        var closure = closure
        if phase != .open { closure.duringOpen = true }
        phase = .finished
        ending = nil
        received = []
        framesBeforeOpen = []
        bytesQueuedBeforeOpen = 0
        pingsBeforeOpen = []
        startDeadline = nil
        closeDeadline = nil
        pingDeadlines = [:]
        output.actions.append(.finish(closure))
    }
}
