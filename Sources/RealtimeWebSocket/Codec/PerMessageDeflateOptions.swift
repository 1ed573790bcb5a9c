import RealtimeCore

/// permessage-deflate (RFC 7692) as the client offers it: what it asks of the server and how it
/// compresses what it sends. Set ``WebSocketTransport/Configuration/compression`` to `nil` to offer nothing.
///
/// The server decides: one that declines (or knows no compression) leaves the connection uncompressed, and
/// everything works as before. Incoming compressed messages are inflated under
/// ``WebSocketLimits/maximumMessageSize``, so a small message that inflates past it (a decompression
/// bomb) fails the connection with `.limitExceeded` (close code 1009) instead of growing memory.
public struct PerMessageDeflateOptions: Sendable, Hashable {
    /// Messages whose payload is shorter than this many bytes are sent uncompressed. The default, 128,
    /// keeps pings, acknowledgements and heartbeats out of zlib: below about a hundred bytes the saving is
    /// a few dozen bytes, less than the TCP/IP and TLS overhead every message pays anyway, for a deflate call
    /// each. 0 compresses every message.
    public var minimumMessageSize: Int
    /// zlib's compression level, 1 (fastest) to 9 (smallest); 6 is zlib's default.
    public var compressionLevel: Int
    /// The largest LZ77 window this client compresses with, as a power of two (9…15): offered as
    /// `client_max_window_bits`, so the server may ask for less. A server answering 8 (which zlib cannot
    /// compress with) gets every message uncompressed, which RFC 7692 allows.
    public var clientMaxWindowBits: Int
    /// Asks the server to compress with a window of at most 2^n bytes (8…15, `server_max_window_bits`),
    /// which saves the server memory; nil leaves the server its 32 KiB. This side inflates with a 32 KiB
    /// window whatever the answer, so a message reads the same however the network cuts it, even from a
    /// server that refers further back than it promised.
    public var serverMaxWindowBits: Int?
    /// Compress each message on its own (`client_no_context_takeover`): no memory of earlier messages,
    /// so worse ratios on small, similar messages.
    public var clientNoContextTakeover: Bool
    /// Asks the server to compress each message on its own (`server_no_context_takeover`).
    public var serverNoContextTakeover: Bool

    /// Defaults: messages of 128 bytes and more compressed at level 6 with a 32 KiB window, context kept
    /// across messages in both directions.
    public init(minimumMessageSize: Int = 128, compressionLevel: Int = 6, clientMaxWindowBits: Int = 15,
                serverMaxWindowBits: Int? = nil, clientNoContextTakeover: Bool = false,
                serverNoContextTakeover: Bool = false) {
        self.minimumMessageSize = minimumMessageSize
        self.compressionLevel = compressionLevel
        self.clientMaxWindowBits = clientMaxWindowBits
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverNoContextTakeover = serverNoContextTakeover
    }

    /// Throws `.invalidArgument` for a value outside its range.
    func validate() throws(RealtimeError) {
        guard (9...15).contains(clientMaxWindowBits) else {
            throw RealtimeError(.invalidArgument, "compression.clientMaxWindowBits must be 9…15, not \(clientMaxWindowBits)")
        }
        if let serverMaxWindowBits, !(8...15).contains(serverMaxWindowBits) {
            throw RealtimeError(.invalidArgument, "compression.serverMaxWindowBits must be 8…15, not \(serverMaxWindowBits)")
        }
        guard (1...9).contains(compressionLevel) else {
            throw RealtimeError(.invalidArgument, "compression.compressionLevel must be 1…9, not \(compressionLevel)")
        }
        guard minimumMessageSize >= 0 else {
            throw RealtimeError(.invalidArgument, "compression.minimumMessageSize must not be negative")
        }
    }
}
