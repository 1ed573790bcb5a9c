/// permessage-deflate (RFC 7692) for one connection, without I/O: compresses the messages this side
/// sends and inflates the ones it receives, with the window and context rules the handshake settled.
///
/// The zlib streams are made on first use, so a connection that never compresses pays nothing for them
/// (with our 16 KiB output chunk, a deflater at 15 window bits takes about 280 KiB, the inflater about
/// 55 KiB). The codec owns the value and calls it per message; framing (RSV1, fragments, masks) stays in
/// the codec.
struct PerMessageDeflate: Sendable {
    /// Window (9…15) this side compresses with; nil when it cannot compress (8 was negotiated).
    let sendWindowBits: Int?
    let sendNoContextTakeover: Bool
    /// Window this side inflates with: always 15, whatever the peer promised. zlib checks a distance
    /// against its window plus what the current call has already written, so with a smaller window a
    /// peer that refers further back than it promised would be read or refused depending on where the
    /// network cut its frames. With the full window every valid DEFLATE distance is read, however the
    /// bytes arrive (and a peer promising 8 that compresses with zlib, which uses 9, is read too).
    static let receiveWindowBits = 15
    let receiveNoContextTakeover: Bool
    /// Messages shorter than this are sent uncompressed.
    let minimumMessageSize: Int
    let compressionLevel: Int

    private var deflater: ZlibStream?
    private var inflater: ZlibStream?
    /// The incoming message's DEFLATE stream ended (a block with BFINAL): the rest of its payload is ignored.
    private var messageStreamEnded = false

    /// The 4 bytes a sync flush ends with, removed by the sender and put back by the receiver.
    static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    init(_ parameters: PerMessageDeflateParameters, role: WebSocketRole, minimumMessageSize: Int,
         compressionLevel: Int) {
        let sendBits = role == .client ? parameters.clientMaxWindowBits : parameters.serverMaxWindowBits
        sendWindowBits = sendBits >= 9 ? sendBits : nil
        sendNoContextTakeover = role == .client ? parameters.clientNoContextTakeover : parameters.serverNoContextTakeover
        receiveNoContextTakeover = role == .client ? parameters.serverNoContextTakeover : parameters.clientNoContextTakeover
        self.minimumMessageSize = minimumMessageSize
        self.compressionLevel = compressionLevel
    }

    /// Whether a message of `count` bytes goes out compressed.
    func compresses(_ count: Int) -> Bool {
        sendWindowBits != nil && count >= minimumMessageSize
    }

    // MARK: Sending

    /// Appends `payload` compressed (without the sync flush's 00 00 ff ff) to `output`. False when zlib
    /// failed: the message then goes out uncompressed, and the next one starts a fresh stream, which any
    /// inflater reads.
    mutating func compress(_ payload: UnsafeRawBufferPointer, into output: inout [UInt8]) -> Bool {
        guard let stream = uniqueDeflater(), stream.deflateMessage(payload, into: &output) else {
            deflater = nil
            return false
        }
        if sendNoContextTakeover { stream.reset() }
        return true
    }

    // MARK: Receiving

    /// Inflates the next piece of a compressed message's payload, handing the output to `sink` (see
    /// ``ZlibStream/inflate(_:limit:sink:)``). The end of the DEFLATE stream counts as consumed.
    mutating func inflate(_ input: UnsafeRawBufferPointer, limit: Int,
                          sink: (UnsafeRawBufferPointer) -> Bool) -> ZlibStream.InflateOutcome {
        guard !messageStreamEnded, !input.isEmpty else { return .consumed }
        guard let stream = uniqueInflater() else { return .failed("zlib could not get memory to inflate") }
        let outcome = stream.inflate(input, limit: limit, sink: sink)
        if outcome == .streamEnded {
            messageStreamEnded = true
            return .consumed
        }
        return outcome
    }

    /// The message's last frame arrived: inflates the 00 00 ff ff the sender left off (unless the caller
    /// already appended it to the last piece, `tailFed`), then forgets the window when the peer does (no
    /// context takeover).
    mutating func finishMessage(tailFed: Bool = false, limit: Int,
                                sink: (UnsafeRawBufferPointer) -> Bool) -> ZlibStream.InflateOutcome {
        let outcome = tailFed ? .consumed : Self.tail.withUnsafeBytes { inflate($0, limit: limit, sink: sink) }
        if inflater != nil, let stream = uniqueInflater() {
            if receiveNoContextTakeover {
                stream.reset()
            } else if messageStreamEnded {
                stream.restartKeepingWindow()
            }
        }
        messageStreamEnded = false
        return outcome
    }

    // MARK: Streams, copied on write

    /// The deflater, made on first use and cloned when a copy of this value still shares it.
    private mutating func uniqueDeflater() -> ZlibStream? {
        guard let bits = sendWindowBits else { return nil }
        if deflater == nil {
            deflater = ZlibStream(.deflate, windowBits: bits, level: compressionLevel)
        } else if !isKnownUniquelyReferenced(&deflater) {
            deflater = deflater?.copy()
        }
        return deflater
    }

    private mutating func uniqueInflater() -> ZlibStream? {
        if inflater == nil {
            inflater = ZlibStream(.inflate, windowBits: Self.receiveWindowBits)
        } else if !isKnownUniquelyReferenced(&inflater) {
            inflater = inflater?.copy()
        }
        return inflater
    }
}
