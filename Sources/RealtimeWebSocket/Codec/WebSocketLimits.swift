/// Which end of the connection a codec speaks for. Clients mask what they send; servers must not.
public enum WebSocketRole: Sendable, Hashable {
    /// The client end: masks every frame it sends, and fails the connection (1002) on a masked frame.
    case client
    /// The server end: sends frames unmasked, and fails the connection (1002) on an unmasked frame.
    case server
}

/// Upper bounds on what a peer may make the codec hold. Exceeding one fails the connection with 1009.
public struct WebSocketLimits: Sendable, Hashable {
    /// Payload bytes of one frame.
    public var maximumFrameSize: Int
    /// Payload bytes of one reassembled message.
    public var maximumMessageSize: Int
    /// Frames in one fragmented message.
    public var maximumFragmentCount: Int

    /// Defaults: 16 MiB per frame and per message, 65,536 fragments per message.
    public init(maximumFrameSize: Int = 16 << 20, maximumMessageSize: Int = 16 << 20,
                maximumFragmentCount: Int = 65_536) {
        self.maximumFrameSize = maximumFrameSize
        self.maximumMessageSize = maximumMessageSize
        self.maximumFragmentCount = maximumFragmentCount
    }
}
