/// The life of a session's connection. Every transition is reported once, in order.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// Built, `connect()` not called yet.
    case initialized
    /// Opening a connection (first attempt, or a retry whose delay has elapsed).
    case connecting
    /// The dialect's handshake completed.
    case connected
    /// Waiting `delay` before attempt number `attempt` (1-based) after the connection (or the last
    /// attempt) ended for `reason`.
    case reconnecting(attempt: Int, delay: Duration, reason: DisconnectReason)
    /// The app reported that the device has no network path
    /// (``RealtimeSession/networkPathChanged(isAvailable:)``): no attempts are made, sends stay buffered,
    /// and the session connects as soon as the path is reported back.
    case waitingForNetwork
    /// The app stayed in the background longer than ``SessionOptions/backgroundGrace``: the connection was
    /// closed and no attempts are made. Channels and handlers stay; sends stay buffered within their
    /// timeouts. ``RealtimeSession/applicationWillEnterForeground()`` (or `connect()`) connects again
    /// at once and re-joins every channel.
    case suspended
    /// The app called `disconnect()`. Nothing reconnects until it calls `connect()` again.
    case disconnected
    /// The session gave up: a terminal close, or the reconnect policy was exhausted.
    case failed(RealtimeError)

    public var description: String {
        switch self {
        case .initialized: "initialized"
        case .connecting: "connecting"
        case .connected: "connected"
        case .reconnecting(let attempt, let delay, let reason):
            "reconnecting(attempt: \(attempt), in \((delay.seconds * 1000).rounded() / 1000) s, after \(reason))"
        case .waitingForNetwork: "waitingForNetwork"
        case .suspended: "suspended"
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

/// Why a connection, or an attempt at one, ended.
public enum DisconnectReason: Sendable, Hashable, CustomStringConvertible {
    /// The server closed the WebSocket, with its close code (if it sent one) and reason.
    case closedByServer(code: Int?, reason: String)
    /// The server asked the client to go, in its own protocol (an Action Cable `disconnect` message, an
    /// Engine.IO `close` packet); `reason` is the server's word for it.
    case serverRequest(reason: String)
    /// The server said it is restarting (Action Cable `server_restart`).
    case serverRestart
    /// The connection or the attempt failed: refused, handshake, TLS, protocol violation, a limit, a
    /// timeout before the handshake. The error is also delivered to `onError`.
    case failure(RealtimeError)
    /// Nothing came from the server for longer than the dialect's liveness rule allows.
    case livenessTimeout
    /// The app reported that the device lost its network path.
    case networkPathLost
    /// The client closed the connection itself: the dialect's rule (an unsupported protocol, a bad
    /// handshake message) or the app.
    case closedByClient(code: Int, reason: String)

    public var description: String {
        switch self {
        case .closedByServer(let code, let reason):
            "closed by the server" + (code.map { " with code \($0)" } ?? "") + (reason.isEmpty ? "" : " (\(reason))")
        case .serverRequest(let reason): "the server asked to disconnect (\(reason))"
        case .serverRestart: "the server is restarting"
        case .failure(let error): error.description
        case .livenessTimeout: "the link went silent (liveness timeout)"
        case .networkPathLost: "the device lost its network path"
        case .closedByClient(let code, let reason):
            "closed by the client with code \(code)" + (reason.isEmpty ? "" : " (\(reason))")
        }
    }
}
