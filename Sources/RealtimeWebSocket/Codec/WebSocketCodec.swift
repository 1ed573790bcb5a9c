import Foundation
import RealtimeCore

/// The RFC 6455 framing layer without I/O: feed it the bytes a read returned, write the bytes it
/// appends to `output`, act on the events.
///
/// Frames are parsed in place in the caller's read buffer, which serves as the one contiguous receive
/// buffer: the codec keeps only a cut-off frame head (at most 14 bytes) or control frame (at most 139)
/// between calls, so nothing is ever moved but that tail. A frame that arrives whole becomes its
/// `String` or `Data` straight from the read buffer (one copy). A message split across reads or
/// fragments is copied once into a reassembly buffer; binary is handed out as that `Data`, text needs
/// a second copy into its `String` (Swift cannot adopt a byte buffer as a String's storage).
/// Text is validated as it arrives, so invalid UTF-8 fails the connection at the first bad byte, even
/// in the middle of a frame.
///
/// With permessage-deflate negotiated (the connection turns it on after the upgrade), a
/// message whose first frame has RSV1 set is inflated as its payload arrives, within the message size
/// limit; RSV1 anywhere else fails the connection with 1002. Messages from `encode` are compressed from
/// the options' minimum size on.
///
/// Not thread-safe: a value owned by one connection's event loop.
public struct WebSocketCodec: Sendable {
    /// Clients mask what they send and expect unmasked frames; servers the reverse.
    public let role: WebSocketRole
    /// Bounds on incoming frames and messages.
    public let limits: WebSocketLimits
    private var maskKeys: MaskKeySource

    /// Bytes of a frame head (and, for control frames, payload) cut off by the end of a read.
    private var pending: [UInt8] = []
    /// The data frame whose payload is being copied into the message, when it spans reads.
    private var frame: FrameProgress?
    /// Opcode of the message being reassembled (text or binary), if any.
    private var messageOpcode: UInt8?
    /// Text being reassembled. Binary goes to `messageData` instead, which is handed out without a copy.
    private var messageBytes: [UInt8] = []
    private var messageData = Data()
    private var messageFragments = 0
    private var utf8 = UTF8StreamValidator()

    /// permessage-deflate, once the handshake negotiated it.
    private var deflate: PerMessageDeflate?
    /// The message being received came with RSV1: its payload is inflated into the message buffers.
    private var messageCompressed = false
    /// Payload bytes of the compressed message on the wire (its inflated size is checked as it comes out).
    private var messageWireBytes = 0
    /// The 00 00 ff ff that ends a compressed message went in with its last piece (one inflate call, not two).
    private var messageTailFed = false
    /// Compressed payloads on their way out, and masked compressed input being unmasked (server role).
    private var deflateScratch: [UInt8] = []

    private var hasReceivedClose = false
    private var hasFailed = false
    /// `true` once this side has written a close frame (its own, a reply, or after a protocol error).
    package private(set) var hasSentClose = false

    /// The close frame the latest `receive` decided to send (the reply to the peer's close, or ours after a
    /// protocol error), held back by ``receiveDeferringClose(_:events:output:)`` so that the caller can
    /// first send its replies to the messages decoded before it. Written by ``writeOwedClose(into:)``.
    private var owedClose: [UInt8]?

    /// `true` while a close frame is owed: data frames may still be encoded ahead of it.
    package var owesClose: Bool { owedClose != nil }

    /// Writes the owed close frame, if any; from then on nothing but pongs is sent.
    package mutating func writeOwedClose(into output: inout [UInt8]) {
        guard let frame = owedClose else { return }
        owedClose = nil
        output += frame
        hasSentClose = true
    }

    /// `true` when the close handshake finished in both directions or the peer broke the protocol.
    public var isClosed: Bool { hasFailed || (hasReceivedClose && hasSentClose) }

    /// Messages larger than this are not kept as the reassembly buffer's capacity after delivery.
    private static let retainedMessageCapacity = 64 << 10
    /// Compressed pieces up to this size are copied to go in with the tail.
    private static let tailMergeLimit = 16 << 10

    /// A codec for a connection whose opening handshake has completed.
    public init(role: WebSocketRole, limits: WebSocketLimits = .init()) {
        self.init(role: role, limits: limits, maskKeys: MaskKeySource())
    }

    /// For tests that need exact wire bytes from a fixed masking key.
    init(role: WebSocketRole, limits: WebSocketLimits = .init(), maskKeys: MaskKeySource) {
        self.role = role
        self.limits = limits
        self.maskKeys = maskKeys
    }

    /// Turns permessage-deflate on with what the handshake settled. Call it before the first frame.
    package mutating func enableDeflate(_ parameters: PerMessageDeflateParameters, minimumMessageSize: Int,
                                        compressionLevel: Int) {
        deflate = PerMessageDeflate(parameters, role: role, minimumMessageSize: minimumMessageSize,
                                    compressionLevel: compressionLevel)
    }

    /// True once permessage-deflate is on.
    package var isDeflateEnabled: Bool { deflate != nil }

    // MARK: - Receiving

    /// Decodes everything in `bytes`, appending events in wire order and any bytes the protocol
    /// requires us to send (pongs, the close reply, the close frame after a protocol error) to `output`.
    /// After a `.closed` or `.failed` event further input is ignored.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer, events: inout [WebSocketEvent],
                                 output: inout [UInt8]) {
        _ = receive(bytes, maximumMessages: .max, events: &events, output: &output)
    }

    /// Like `receive(_:events:output:)`, but a close frame the input calls for is not written: it stays
    /// owed (``owesClose``) until ``writeOwedClose(into:)``, so that replies to the messages before it can
    /// be encoded first (Autobahn 3.x, 4.x, 5.15: echo, then fail).
    package mutating func receiveDeferringClose(_ bytes: UnsafeRawBufferPointer, events: inout [WebSocketEvent],
                                                output: inout [UInt8]) {
        _ = decode(bytes, maximumMessages: .max, events: &events, output: &output)
    }

    /// Like `receive(_:events:output:)`, but stops right after the `maximumMessages`-th message and
    /// returns how many bytes of `bytes` it used; pass the rest in the next call.
    ///
    /// For callers that must answer a message before later frames are decoded, such as an echo peer
    /// that has to send its echo before the close frame a later protocol error would write.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer, maximumMessages: Int,
                                 events: inout [WebSocketEvent], output: inout [UInt8]) -> Int {
        let used = decode(bytes, maximumMessages: maximumMessages, events: &events, output: &output)
        writeOwedClose(into: &output)
        return used
    }

    private mutating func decode(_ bytes: UnsafeRawBufferPointer, maximumMessages: Int,
                                 events: inout [WebSocketEvent], output: inout [UInt8]) -> Int {
        guard let base = bytes.baseAddress, !isInputFinished else { return bytes.count }
        let count = bytes.count
        var offset = 0
        var messagesLeft = maximumMessages
        if !pending.isEmpty {
            var deliveredMessage = false
            offset = completePending(from: bytes, deliveredMessage: &deliveredMessage, events: &events, output: &output)
            guard pending.isEmpty else { return count }
            if deliveredMessage { messagesLeft -= 1 }
        }
        while offset < count, !isInputFinished, messagesLeft > 0 {
            if var progress = frame {
                let taken = min(progress.remaining, count - offset)
                let chunk = UnsafeRawBufferPointer(start: base + offset, count: taken)
                offset += taken
                guard appendPayload(chunk, of: &progress, events: &events, output: &output) else { return count }
                if progress.remaining == 0 {
                    frame = nil
                    if progress.isFinal {
                        deliverMessage(events: &events, output: &output)
                        messagesLeft -= 1
                    }
                } else {
                    frame = progress
                }
                continue
            }

            let available = count - offset
            let head: FrameHead
            switch Self.scanHead(base + offset, available: available) {
            case .incomplete:
                pending.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: available))
                return count
            case .lengthOverflow:
                fail(.protocolViolation, closeCode: 1002, "64-bit payload length with the top bit set",
                     events: &events, output: &output)
                return count
            case .complete(let scanned):
                head = scanned
            }
            guard accept(head, events: &events, output: &output) else { return count }

            if head.isControl {
                let total = head.headLength + head.payloadLength
                guard available >= total else {
                    pending.append(contentsOf: UnsafeRawBufferPointer(start: base + offset, count: available))
                    return count
                }
                let payload = UnsafeRawBufferPointer(start: base + offset + head.headLength, count: head.payloadLength)
                offset += total
                handleControl(head, payload: payload, events: &events, output: &output)
                continue
            }

            offset += head.headLength
            if head.isFinal, messageOpcode == nil, !head.isMasked, head.reservedBits == 0,
               count - offset >= head.payloadLength {
                // The common case: a whole unfragmented frame in this read becomes a message straight
                // from the caller's buffer.
                let payload = UnsafeRawBufferPointer(start: base + offset, count: head.payloadLength)
                offset += head.payloadLength
                if head.opcode == Opcode.text {
                    guard let text = Self.makeString(payload) else {
                        var validator = UTF8StreamValidator()
                        let message = validator.validate(payload)
                            ? "text message ends inside a UTF-8 sequence" : "text message is not valid UTF-8"
                        fail(.invalidUTF8, closeCode: 1007, message, events: &events, output: &output)
                        return count
                    }
                    events.append(.message(.text(text)))
                } else {
                    events.append(.message(.binary(Data(payload))))
                }
                messagesLeft -= 1
                continue
            }
            if beginDataFrame(head, events: &events, output: &output) { messagesLeft -= 1 }
        }
        return isInputFinished ? count : offset
    }

    private var isInputFinished: Bool { hasFailed || hasReceivedClose }

    /// Moves bytes from `bytes` into `pending` until the frame head (and a control frame's payload) is
    /// complete, then handles it. Returns how many bytes of `bytes` it used.
    private mutating func completePending(from bytes: UnsafeRawBufferPointer, deliveredMessage: inout Bool,
                                          events: inout [WebSocketEvent], output: inout [UInt8]) -> Int {
        var used = 0
        while true {
            let scan = pending.withUnsafeBytes { Self.scanHead($0.baseAddress!, available: $0.count) }
            var needed: Int
            switch scan {
            case .incomplete(let headLength):
                needed = headLength
            case .lengthOverflow:
                fail(.protocolViolation, closeCode: 1002, "64-bit payload length with the top bit set",
                     events: &events, output: &output)
                return bytes.count
            case .complete(let head):
                guard accept(head, events: &events, output: &output) else { return bytes.count }
                needed = head.isControl ? head.headLength + head.payloadLength : head.headLength
                if pending.count >= needed {
                    if head.isControl {
                        let payloadBytes = Array(pending[head.headLength...])
                        pending.removeAll(keepingCapacity: true)
                        payloadBytes.withUnsafeBytes {
                            handleControl(head, payload: $0, events: &events, output: &output)
                        }
                    } else {
                        pending.removeAll(keepingCapacity: true)
                        deliveredMessage = beginDataFrame(head, events: &events, output: &output)
                    }
                    return used
                }
            }
            let taken = min(needed - pending.count, bytes.count - used)
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used..<used + taken]))
            used += taken
            if pending.count < needed { return used }
        }
    }

    /// Checks a frame head against the protocol and the limits before its payload is awaited, so a
    /// bad or oversized frame fails at once. Returns `false` after failing the connection.
    private mutating func accept(_ head: FrameHead, events: inout [WebSocketEvent], output: inout [UInt8]) -> Bool {
        let problem: (RealtimeError.Code, Int, String)?
        if let reason = reservedBitsProblem(head) {
            problem = (.protocolViolation, 1002, reason)
        } else if head.isMasked != (role == .server) {
            problem = role == .client
                ? (.protocolViolation, 1002, "the server sent a masked frame")
                : (.protocolViolation, 1002, "the client sent an unmasked frame")
        } else {
            switch head.opcode {
            case Opcode.continuation where messageOpcode == nil:
                problem = (.protocolViolation, 1002, "continuation frame without a message to continue")
            case Opcode.text where messageOpcode != nil, Opcode.binary where messageOpcode != nil:
                problem = (.protocolViolation, 1002, "new message started before the previous one ended")
            case Opcode.continuation, Opcode.text, Opcode.binary:
                // A compressed message counts its wire bytes here; its inflated size is checked as it comes out.
                let soFar = messageOpcode == nil ? 0
                    : messageCompressed ? messageWireBytes : messageBytes.count + messageData.count
                if head.payloadLength > limits.maximumFrameSize {
                    problem = (.limitExceeded, 1009,
                               "frame of \(head.payloadLength) bytes exceeds the \(limits.maximumFrameSize)-byte limit")
                } else if head.payloadLength > limits.maximumMessageSize - soFar {
                    problem = (.limitExceeded, 1009,
                               "message exceeds the \(limits.maximumMessageSize)-byte limit")
                } else if (messageOpcode == nil ? 0 : messageFragments) >= limits.maximumFragmentCount {
                    problem = (.limitExceeded, 1009,
                               "message has more than \(limits.maximumFragmentCount) fragments")
                } else {
                    problem = nil
                }
            case Opcode.close, Opcode.ping, Opcode.pong:
                if !head.isFinal {
                    problem = (.protocolViolation, 1002, "fragmented control frame")
                } else if head.payloadLength > 125 {
                    problem = (.protocolViolation, 1002, "control frame payload longer than 125 bytes")
                } else {
                    problem = nil
                }
            default:
                problem = (.protocolViolation, 1002, "reserved opcode \(head.opcode)")
            }
        }
        guard let (code, closeCode, message) = problem else { return true }
        fail(code, closeCode: closeCode, message, events: &events, output: &output)
        return false
    }

    /// Why the reserved bits of `head` break the protocol, if they do: RSV1 marks the first frame of a
    /// compressed message once permessage-deflate is on (RFC 7692 §6); nothing uses RSV2 and RSV3.
    private func reservedBitsProblem(_ head: FrameHead) -> String? {
        guard head.reservedBits != 0 else { return nil }
        guard deflate != nil else { return "reserved bits set without a negotiated extension" }
        guard head.reservedBits == 0x40 else { return "RSV2 or RSV3 set: no negotiated extension uses them" }
        if head.isControl { return "RSV1 set on a control frame" }
        if head.opcode == Opcode.continuation { return "RSV1 set on a continuation frame" }
        return nil
    }

    /// Starts receiving a data frame's payload. Returns `true` when the frame was an empty final one
    /// that completed (and delivered) its message.
    @discardableResult
    private mutating func beginDataFrame(_ head: FrameHead, events: inout [WebSocketEvent],
                                         output: inout [UInt8]) -> Bool {
        if head.opcode != Opcode.continuation {
            messageOpcode = head.opcode
            messageFragments = 0
            messageCompressed = head.reservedBits != 0
            messageWireBytes = 0
            messageTailFed = false
            utf8.reset()
            // The length is known, so reserve it once; capped, so a 10-byte head announcing a huge frame
            // that never comes cannot make us allocate the whole limit up front.
            if head.isFinal, !messageCompressed {
                let reservation = min(head.payloadLength, Self.retainedMessageCapacity * 16)
                if head.opcode == Opcode.text {
                    messageBytes.reserveCapacity(reservation)
                } else {
                    messageData.reserveCapacity(reservation)
                }
            }
        }
        messageFragments += 1
        if messageCompressed { messageWireBytes += head.payloadLength }
        guard head.payloadLength > 0 else {
            guard head.isFinal else { return false }
            deliverMessage(events: &events, output: &output)
            return true
        }
        frame = FrameProgress(remaining: head.payloadLength, consumed: 0, isFinal: head.isFinal,
                              maskKey: head.isMasked ? head.maskKey : nil)
        return false
    }

    /// Copies (and unmasks, and for text validates) one piece of a data frame's payload into the message.
    private mutating func appendPayload(_ chunk: UnsafeRawBufferPointer, of progress: inout FrameProgress,
                                        events: inout [WebSocketEvent], output: inout [UInt8]) -> Bool {
        if messageCompressed {
            defer {
                progress.consumed += chunk.count
                progress.remaining -= chunk.count
            }
            // The last piece of a message goes in with the tail appended, when copying it is cheap next to
            // inflating it; masked pieces are copied anyway, to be unmasked.
            let endsMessage = progress.isFinal && chunk.count == progress.remaining
            guard progress.maskKey != nil || (endsMessage && chunk.count <= Self.tailMergeLimit) else {
                return inflateIntoMessage(chunk, events: &events, output: &output)
            }
            deflateScratch.removeAll(keepingCapacity: true)
            deflateScratch.append(contentsOf: chunk)
            if let key = progress.maskKey {
                deflateScratch.withUnsafeMutableBytes { applyMask($0, key: key, offset: progress.consumed) }
            }
            if endsMessage {
                deflateScratch += PerMessageDeflate.tail
                messageTailFed = true
            }
            let scratch = deflateScratch
            return scratch.withUnsafeBytes { inflateIntoMessage($0, events: &events, output: &output) }
        }
        var valid = true
        if messageOpcode == Opcode.text {
            let start = messageBytes.count
            messageBytes.append(contentsOf: chunk)
            valid = messageBytes.withUnsafeMutableBytes { all -> Bool in
                let piece = UnsafeMutableRawBufferPointer(rebasing: all[start...])
                if let key = progress.maskKey { applyMask(piece, key: key, offset: progress.consumed) }
                return utf8.validate(UnsafeRawBufferPointer(piece))
            }
        } else {
            let start = messageData.count
            messageData.append(chunk.assumingMemoryBound(to: UInt8.self))
            if let key = progress.maskKey {
                messageData.withUnsafeMutableBytes { all in
                    applyMask(UnsafeMutableRawBufferPointer(rebasing: all[start...]), key: key, offset: progress.consumed)
                }
            }
        }
        progress.consumed += chunk.count
        progress.remaining -= chunk.count
        guard valid else {
            fail(.invalidUTF8, closeCode: 1007, "text message is not valid UTF-8", events: &events, output: &output)
            return false
        }
        return true
    }

    /// Inflates a piece of a compressed message (or, with `input` nil, the end of it) into the message
    /// buffers, validating text as it comes out. Returns `false` after failing the connection.
    private mutating func inflateIntoMessage(_ input: UnsafeRawBufferPointer?, events: inout [WebSocketEvent],
                                             output: inout [UInt8]) -> Bool {
        // Taken out for the call, so the sink may append to the message buffers.
        guard var deflate = deflate.take() else { return false }
        let limit = limits.maximumMessageSize - messageBytes.count - messageData.count
        let isText = messageOpcode == Opcode.text
        let outcome = if let input {
            deflate.inflate(input, limit: limit) { takeInflated($0, isText: isText) }
        } else {
            deflate.finishMessage(tailFed: messageTailFed, limit: limit) { takeInflated($0, isText: isText) }
        }
        self.deflate = deflate
        switch outcome {
        case .consumed, .streamEnded:
            return true
        case .limitExceeded:
            fail(.limitExceeded, closeCode: 1009, "compressed message inflates past the \(limits.maximumMessageSize)-byte limit",
                 events: &events, output: &output)
        case .stopped:
            fail(.invalidUTF8, closeCode: 1007, "text message is not valid UTF-8", events: &events, output: &output)
        case .failed(let reason):
            fail(.protocolViolation, closeCode: 1007, "compressed message cannot be inflated: \(reason)",
                 events: &events, output: &output)
        }
        return false
    }

    /// Appends inflated bytes to the message; for text, false at the first invalid UTF-8.
    private mutating func takeInflated(_ piece: UnsafeRawBufferPointer, isText: Bool) -> Bool {
        guard isText else {
            messageData.append(piece.assumingMemoryBound(to: UInt8.self))
            return true
        }
        messageBytes.append(contentsOf: piece)
        return utf8.validate(piece)
    }

    private mutating func deliverMessage(events: inout [WebSocketEvent], output: inout [UInt8]) {
        if messageCompressed {
            // An empty payload is no DEFLATE data at all (compressors write 0x00 for an empty message):
            // taken as the empty message, without feeding the tail to the inflater, whose state it would break.
            guard messageWireBytes == 0 || inflateIntoMessage(nil, events: &events, output: &output) else { return }
            messageCompressed = false
        }
        if messageOpcode == Opcode.text {
            guard utf8.isComplete else {
                fail(.invalidUTF8, closeCode: 1007, "text message ends inside a UTF-8 sequence",
                     events: &events, output: &output)
                return
            }
            events.append(.message(.text(String(decoding: messageBytes, as: UTF8.self))))
        } else {
            events.append(.message(.binary(messageData)))
            messageData = Data()
        }
        messageOpcode = nil
        messageFragments = 0
        messageBytes.removeAll(keepingRoomUpTo: Self.retainedMessageCapacity)
    }

    private mutating func handleControl(_ head: FrameHead, payload raw: UnsafeRawBufferPointer,
                                        events: inout [WebSocketEvent], output: inout [UInt8]) {
        var payload = [UInt8](raw)
        if head.isMasked {
            payload.withUnsafeMutableBytes { applyMask($0, key: head.maskKey, offset: 0) }
        }
        switch head.opcode {
        case Opcode.ping:
            writeFrame(opcode: Opcode.pong, payload: payload, into: &output)
            events.append(.ping(payload))
        case Opcode.pong:
            events.append(.pong(payload))
        default:
            handleClose(payload, events: &events, output: &output)
        }
    }

    private mutating func handleClose(_ payload: [UInt8], events: inout [WebSocketEvent], output: inout [UInt8]) {
        var code: Int?
        var reason = ""
        if payload.count == 1 {
            fail(.protocolViolation, closeCode: 1002, "close frame with a 1-byte payload", events: &events, output: &output)
            return
        }
        if payload.count >= 2 {
            let received = Int(payload[0]) << 8 | Int(payload[1])
            guard Self.isValidReceivedCloseCode(received) else {
                fail(.protocolViolation, closeCode: 1002, "invalid close code \(received)", events: &events, output: &output)
                return
            }
            let reasonBytes = payload[2...]
            guard let text = reasonBytes.withUnsafeBytes({ Self.makeString($0) }) else {
                fail(.invalidUTF8, closeCode: 1007, "close reason is not valid UTF-8", events: &events, output: &output)
                return
            }
            code = received
            reason = text
        }
        hasReceivedClose = true
        if !hasSentClose {
            // Echo the peer's code, as RFC 6455 §5.5.1 suggests; an empty close gets an empty reply.
            var body: [UInt8] = []
            if let code { body = [UInt8(truncatingIfNeeded: code >> 8), UInt8(truncatingIfNeeded: code)] }
            var frame: [UInt8] = []
            writeFrame(opcode: Opcode.close, payload: body, into: &frame)
            owedClose = frame
        }
        events.append(.closed(code: code, reason: reason))
        releaseBuffers()
    }

    /// Close codes a peer may send: the defined ones and the registered/private ranges. Reserved,
    /// "never on the wire" (1005, 1006, 1015) and unassigned codes fail the connection with 1002.
    static func isValidReceivedCloseCode(_ code: Int) -> Bool {
        switch code {
        // 1012–1014 are registered (service restart, try again later, bad gateway): servers send them
        // during deploys, so they are closes, not protocol errors.
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    private mutating func fail(_ code: RealtimeError.Code, closeCode: Int, _ message: String,
                               events: inout [WebSocketEvent], output: inout [UInt8]) {
        if !hasSentClose {
            var frame: [UInt8] = []
            writeClose(code: closeCode, reason: message, into: &frame)
            owedClose = frame
        }
        hasFailed = true
        releaseBuffers()
        events.append(.failed(RealtimeError(code, message, context: .init(closeCode: closeCode)), closeCode: closeCode))
    }

    private mutating func releaseBuffers() {
        pending = []
        messageBytes = []
        messageData = Data()
        frame = nil
        messageOpcode = nil
        messageCompressed = false
        messageTailFed = false
        deflateScratch = []
    }

    /// A validated `String` made straight from `bytes`, or `nil` when they are not UTF-8. Our validator and
    /// then `String(decoding:)`, not `String(validating:as:)`: that one is generic over the encoding and looks
    /// its metadata up on every call, which cost more than validating twice (2–4 % of a dialect's event).
    @inline(__always)
    static func makeString(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard UTF8StreamValidator.isValid(bytes) else { return nil }
        return String(decoding: bytes.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }

    // MARK: - Sending

    /// Appends `frame` as one unfragmented message (masked when this is a client), compressed when
    /// permessage-deflate is on and the message is large enough. Does nothing once a close frame has been
    /// sent: RFC 6455 forbids data after it.
    public mutating func encode(_ frame: TransportFrame, into output: inout [UInt8]) {
        encode(frame, compress: true, into: &output)
    }

    /// Like ``encode(_:into:)``; `compress: false` sends the message uncompressed even when
    /// permessage-deflate is on (for data that is already compressed, or secrets: see BREACH).
    package mutating func encode(_ frame: TransportFrame, compress: Bool, into output: inout [UInt8]) {
        guard !hasSentClose else { return }
        switch frame {
        case .text(var text):
            text.withUTF8 { writeMessage(opcode: Opcode.text, payload: UnsafeRawBufferPointer($0), compress: compress, into: &output) }
        case .binary(let data):
            data.withUnsafeBytes { writeMessage(opcode: Opcode.binary, payload: $0, compress: compress, into: &output) }
        }
    }

    /// One data message: compressed with RSV1 set when asked and deflate allows it, else as it is.
    private mutating func writeMessage(opcode: UInt8, payload: UnsafeRawBufferPointer, compress: Bool,
                                       into output: inout [UInt8]) {
        guard compress, deflate?.compresses(payload.count) == true else {
            writeFrame(opcode: opcode, payload: payload, into: &output)
            return
        }
        deflateScratch.removeAll(keepingCapacity: true)
        guard deflate?.compress(payload, into: &deflateScratch) == true else {
            writeFrame(opcode: opcode, payload: payload, into: &output)
            return
        }
        let compressed = deflateScratch
        compressed.withUnsafeBytes { writeFrame(opcode: opcode, compressed: true, payload: $0, into: &output) }
        if deflateScratch.capacity > Self.retainedMessageCapacity { deflateScratch = [] }
    }

    /// Appends a ping. Payloads over 125 bytes are cut to 125 (control frames cannot carry more).
    public mutating func encodePing(_ payload: [UInt8], into output: inout [UInt8]) {
        guard !isClosed else { return }
        writeFrame(opcode: Opcode.ping, payload: Array(payload.prefix(125)), into: &output)
    }

    /// Appends an unsolicited pong (replies to pings are written by `receive`). Cut to 125 bytes.
    public mutating func encodePong(_ payload: [UInt8], into output: inout [UInt8]) {
        guard !isClosed else { return }
        writeFrame(opcode: Opcode.pong, payload: Array(payload.prefix(125)), into: &output)
    }

    /// Starts the close handshake: appends a close frame and remembers that it was sent; the peer's
    /// reply then arrives as `.closed`. Only the first call writes anything.
    ///
    /// Codes that may not appear on the wire are replaced: 1005 ("no status") sends an empty close,
    /// any other invalid code sends 1000. The reason is cut to 123 bytes at a character boundary.
    public mutating func encodeClose(code: Int, reason: String, into output: inout [UInt8]) {
        guard !hasSentClose, owedClose == nil else { return }
        hasSentClose = true
        if code == 1005 {
            writeFrame(opcode: Opcode.close, payload: [], into: &output)
        } else {
            writeClose(code: Self.isValidReceivedCloseCode(code) ? code : 1000, reason: reason, into: &output)
        }
    }

    private mutating func writeClose(code: Int, reason: String, into output: inout [UInt8]) {
        var body: [UInt8] = [UInt8(truncatingIfNeeded: code >> 8), UInt8(truncatingIfNeeded: code)]
        var budget = 123
        for scalar in reason.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            guard encoded.count <= budget else { break }
            body.append(contentsOf: encoded)
            budget -= encoded.count
        }
        writeFrame(opcode: Opcode.close, payload: body, into: &output)
    }

    private mutating func writeFrame(opcode: UInt8, payload: [UInt8], into output: inout [UInt8]) {
        payload.withUnsafeBytes { writeFrame(opcode: opcode, payload: $0, into: &output) }
    }

    /// Appends one final frame: head (RSV1 set when `compressed`), masking key (client) and payload,
    /// masked in place.
    private mutating func writeFrame(opcode: UInt8, compressed: Bool = false, payload: UnsafeRawBufferPointer,
                                     into output: inout [UInt8]) {
        let length = payload.count
        let masked = role == .client
        output.reserveCapacity(output.count + length + 14)
        output.append(0x80 | (compressed ? 0x40 : 0) | opcode)
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length < 126 {
            output.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            output.append(maskBit | 126)
            output.append(UInt8(truncatingIfNeeded: length >> 8))
            output.append(UInt8(truncatingIfNeeded: length))
        } else {
            output.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                output.append(UInt8(truncatingIfNeeded: UInt64(length) >> UInt64(shift)))
            }
        }
        guard masked else {
            output.append(contentsOf: payload)
            return
        }
        var key = maskKeys.next()
        withUnsafeBytes(of: &key) { output.append(contentsOf: $0) }
        let start = output.count
        output.append(contentsOf: payload)
        output.withUnsafeMutableBytes { applyMask(UnsafeMutableRawBufferPointer(rebasing: $0[start...]), key: key, offset: 0) }
    }
}

// MARK: - Frame heads

enum Opcode {
    static let continuation: UInt8 = 0x0
    static let text: UInt8 = 0x1
    static let binary: UInt8 = 0x2
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA
}

/// The fixed part of a frame: flags, opcode, length and masking key.
struct FrameHead {
    var isFinal: Bool
    var reservedBits: UInt8
    var opcode: UInt8
    var isMasked: Bool
    var maskKey: UInt32
    var payloadLength: Int
    var headLength: Int
    var isControl: Bool { opcode & 0x8 != 0 }
}

/// A data frame whose payload spans reads.
struct FrameProgress {
    var remaining: Int
    var consumed: Int
    var isFinal: Bool
    var maskKey: UInt32?
}

enum HeadScan {
    /// The head is `headLength` bytes long (as far as known) and not all of it is here.
    case incomplete(headLength: Int)
    case complete(FrameHead)
    /// A 64-bit length with its most significant bit set (RFC 6455 §5.2 forbids it).
    case lengthOverflow
}

extension WebSocketCodec {
    @inline(__always)
    static func scanHead(_ start: UnsafeRawPointer, available: Int) -> HeadScan {
        guard available >= 2 else { return .incomplete(headLength: 2) }
        let first = start.load(as: UInt8.self)
        let second = start.load(fromByteOffset: 1, as: UInt8.self)
        let isMasked = second & 0x80 != 0
        let shortLength = Int(second & 0x7F)
        let lengthBytes = shortLength == 127 ? 8 : (shortLength == 126 ? 2 : 0)
        let headLength = 2 + lengthBytes + (isMasked ? 4 : 0)
        guard available >= headLength else { return .incomplete(headLength: headLength) }
        var payloadLength = shortLength
        if lengthBytes == 2 {
            payloadLength = Int(UInt16(bigEndian: start.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
        } else if lengthBytes == 8 {
            let wide = UInt64(bigEndian: start.loadUnaligned(fromByteOffset: 2, as: UInt64.self))
            guard wide >> 63 == 0, wide <= UInt64(Int.max) else { return .lengthOverflow }
            payloadLength = Int(wide)
        }
        let maskKey = isMasked ? start.loadUnaligned(fromByteOffset: headLength - 4, as: UInt32.self) : 0
        return .complete(FrameHead(isFinal: first & 0x80 != 0, reservedBits: first & 0x70, opcode: first & 0x0F,
                                   isMasked: isMasked, maskKey: maskKey, payloadLength: payloadLength,
                                   headLength: headLength))
    }
}
