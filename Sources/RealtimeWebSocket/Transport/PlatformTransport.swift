import RealtimeCore

extension WebSocketTransport {
    /// The transport a session uses when the app names none: ``WebSocketTransport`` where OpenSSL is linked
    /// (Linux, Android), `NetworkWebSocketTransport` on Apple platforms, where TLS comes from Network.framework.
    ///
    /// Both speak WebSocket through the same handshake and codec; only the byte stream underneath differs.
    public static func platformDefault(configuration: Configuration = Configuration()) -> any RealtimeTransport {
        #if !canImport(COpenSSL) && canImport(Network)
        return NetworkWebSocketTransport(configuration: configuration)
        #else
        return WebSocketTransport(configuration: configuration)  // without OpenSSL: ws:// only
        #endif
    }
}
