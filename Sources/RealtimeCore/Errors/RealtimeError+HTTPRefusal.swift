extension RealtimeError {
    /// Whether the server refused the WebSocket upgrade (or the first polling request) with an HTTP status a
    /// retry would meet again: a 4xx (wrong path, refused origin, bad request, unauthorized, forbidden)
    /// other than 408 Request Timeout and 429 Too Many Requests. Every dialect ends the session on it
    /// instead of reconnecting; 408, 429 and 5xx stay transient.
    package var isLastingHTTPRefusal: Bool {
        guard code == .handshakeRejected, let status = context.httpStatus else { return false }
        return (400..<500).contains(status) && status != 408 && status != 429
    }
}
