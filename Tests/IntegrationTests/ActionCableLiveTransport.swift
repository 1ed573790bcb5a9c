import RealtimeCore

// The one place that names the WebSocket transport for the Action Cable live tests.
//
// `WebSocketTransport` (module RealtimeWebSocket) is written on the ws-codec/ws-driver branches. Until it is
// merged into main this returns nil and the live tests report why they did not run. Once it is on main,
// replace the body with:
//
//     import RealtimeWebSocket   (at the top of this file)
//     return .success(WebSocketTransport())

enum ActionCableLiveTransport {
    static func make() -> Result<any RealtimeTransport, LiveUnavailable> {
        .failure(LiveUnavailable("WebSocketTransport is not on main yet (branches ws-codec/ws-driver): "
                                 + "the Action Cable live tests did not run"))
    }
}

struct LiveUnavailable: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
