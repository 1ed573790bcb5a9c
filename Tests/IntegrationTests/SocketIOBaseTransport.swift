import Realtime

/// The WebSocket transport the Socket.IO scenarios run on (and upgrade to).
enum SocketIOBaseTransport {
    static let webSocketAvailable = true

    static func make() -> any RealtimeTransport { WebSocketTransport() }
}
