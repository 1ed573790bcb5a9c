@_exported import RealtimeActionCable
@_exported import RealtimeCore
@_exported import RealtimePusher
@_exported import RealtimeSocketIO
@_exported import RealtimeWebSocket

extension RealtimeSession {
    /// A session over the package's own WebSocket client: ``WebSocketTransport`` (a private one-thread
    /// event loop) on Linux, `NetworkWebSocketTransport` on Apple platforms (see
    /// ``WebSocketTransport/platformDefault(configuration:)``).
    ///
    /// To hold many sessions on a few threads, make one `WebSocketTransport` with a shared
    /// `EventLoopGroup` and pass it to ``RealtimeSession/init(dialect:transport:options:)``.
    public convenience init(dialect: any RealtimeDialect, options: SessionOptions = .init()) {
        self.init(dialect: dialect, transport: WebSocketTransport.platformDefault(), options: options)
    }
}
