import Realtime
import RealtimeTesting

/// The WebSocket transport the Socket.IO scenarios run on.
enum SocketIOBaseTransport {
    // Until WebSocketTransport lands on main, only polling scenarios run; the in-memory transport is never opened.
    static let webSocketAvailable = false

    static func make() -> any RealtimeTransport { InMemoryTransport(autoAccept: false) }
}
