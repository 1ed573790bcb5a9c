/// What a session has done since it was built, for a diagnostics screen or an app's metrics: a snapshot
/// read with ``RealtimeSession/statistics``. Counters only grow; none is reset by a reconnect.
public struct SessionStatistics: Sendable, Hashable {
    /// Connection attempts started, the first one included.
    public var attempts = 0
    /// Attempts whose dialect handshake completed (each one a `.connected`); every one after the first
    /// is a reconnect.
    public var connections = 0
    /// Frames read from the transport.
    public var framesReceived = 0
    /// Payload bytes of those frames.
    public var bytesReceived = 0
    /// Events handed to the handlers (each counted once, however many handlers it reaches).
    public var eventsReceived = 0
    /// Frames the session wrote, the dialect's own (subscriptions, pings, acknowledgements) included.
    public var framesSent = 0
    /// Payload bytes of those frames.
    public var bytesSent = 0
    /// How long the current connection has been connected; `nil` unless the session is connected.
    public var connectedFor: Duration?

    /// Connections after the first.
    public var reconnections: Int { max(0, connections - 1) }

    /// All zero: a session that has done nothing yet.
    public init() {}
}
