import RealtimeCore

/// What the codec decoded. Bytes the protocol requires us to write (automatic pong, close reply,
/// the close frame after a protocol error) are appended to `output` by `WebSocketCodec.receive`.
public enum WebSocketEvent: Sendable, Hashable {
    /// A complete text or binary message.
    case message(TransportFrame)
    /// A ping arrived; the pong carrying the same payload is already in `output`.
    case ping([UInt8])
    /// A pong arrived (solicited or not).
    case pong([UInt8])
    /// A close frame arrived (and, if we had not started the close, the reply was appended to output).
    /// `code` is `nil` when the frame carried no status code.
    case closed(code: Int?, reason: String)
    /// The peer broke the protocol. A close frame with `closeCode` (1002, 1007, 1009) was appended to
    /// output unless we had already sent one; write it, then drop the connection. Nothing after this
    /// is accepted.
    case failed(RealtimeError, closeCode: Int)
}
