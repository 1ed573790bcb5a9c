/// The life of a session's connection. Every transition is reported once, in order.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// Built, `connect()` not called yet.
    case initialized
    /// Opening a connection (first attempt, or a retry whose delay has elapsed).
    case connecting
    /// The dialect's handshake completed.
    case connected
    /// Waiting `delay` before attempt number `attempt` (1-based) after the connection ended.
    case reconnecting(attempt: Int, delay: Duration)
    /// The app reported that the device has no network path
    /// (``RealtimeSession/networkPathChanged(isAvailable:)``): no attempts are made, sends stay buffered,
    /// and the session connects as soon as the path is reported back.
    case waitingForNetwork
    /// The app called `disconnect()`. Nothing reconnects until it calls `connect()` again.
    case disconnected
    /// The session gave up: a terminal close, or the reconnect policy was exhausted.
    case failed(RealtimeError)

    public var description: String {
        switch self {
        case .initialized: "initialized"
        case .connecting: "connecting"
        case .connected: "connected"
        case .reconnecting(let attempt, let delay):
            "reconnecting(attempt: \(attempt), in \((delay.seconds * 1000).rounded() / 1000) s)"
        case .waitingForNetwork: "waitingForNetwork"
        case .disconnected: "disconnected"
        case .failed(let error): "failed(\(error))"
        }
    }

    /// `true` for `.connected`.
    public var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }
}
