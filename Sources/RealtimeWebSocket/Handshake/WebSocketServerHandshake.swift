import RealtimeCore

/// The server side of the HTTP/1.1 upgrade, without I/O, as ``WebSocketServer`` runs it. Apps meet its
/// ``Request``: in ``WebSocketServer/UpgradeDecider`` and as ``WebSocketServerConnection/request``.
public struct WebSocketServerHandshake: Sendable {
    /// A parsed, valid upgrade request.
    public struct Request: Sendable, Hashable {
        /// The request target: path and query as sent.
        public var target: String
        /// Header fields in order, names lower-cased.
        public var headers: [HTTPHeader]
        /// The `Sec-WebSocket-Key` value.
        public var key: String
        /// Subprotocols the client offered, in its order of preference.
        public var subprotocols: [String]
        /// The `Origin` header, or `nil` when absent.
        public var origin: String?
        /// The `Host` header, or `nil` when absent.
        public var host: String?

        /// All values of the header `name` (any case) joined by ", ", or `nil` when absent.
        public func value(forHeader name: String) -> String? {
            HTTPHead(startLine: "", headers: headers).value(name.lowercased())
        }
    }

    /// Bytes the request head may take (a longer one is answered with 431).
    package let maximumRequestSize: Int
    private var buffer: [UInt8] = []
    private var isFinished = false

    /// A handshake waiting for the first bytes of a request.
    package init(maximumRequestSize: Int = 16_384) {
        self.maximumRequestSize = maximumRequestSize
    }

    /// The `Sec-WebSocket-Accept` value for a `Sec-WebSocket-Key` (RFC 6455 §4.2.2).
    package static func acceptValue(forKey key: String) -> String {
        Base64.encode(SHA1.hash(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
    }

    /// nil = need more bytes. On success: the request and the bytes that followed it (frames a client
    /// sent right away). Throws `.handshakeInvalid` with `context.httpStatus` set to the status to
    /// answer: 400 (malformed), 405 (not GET), 426 (version other than 13), 431 (head too large).
    package mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(RealtimeError) -> (request: Request, leftover: [UInt8])? {
        guard !isFinished else { throw RealtimeError(.invalidArgument, "the handshake already finished") }
        let searchFrom = buffer.count
        buffer.append(contentsOf: bytes)
        guard let headEnd = HTTPHead.endIndex(in: buffer, searchingFrom: searchFrom), headEnd <= maximumRequestSize else {
            if buffer.count > maximumRequestSize {
                isFinished = true
                throw RealtimeError(.handshakeInvalid, "the upgrade request head exceeds \(maximumRequestSize) bytes",
                                    context: .init(httpStatus: 431))
            }
            return nil
        }
        isFinished = true
        let leftover = Array(buffer[headEnd...])
        let headBytes = buffer[..<(headEnd - 2)]
        buffer = []
        return (try Self.parseRequest(headBytes), leftover)
    }

    static func parseRequest(_ bytes: ArraySlice<UInt8>) throws(RealtimeError) -> Request {
        func invalid(_ message: String, status: Int = 400, detail: String? = nil) -> RealtimeError {
            RealtimeError(.handshakeInvalid, message, context: .init(httpStatus: status, detail: detail))
        }
        let head: HTTPHead
        do {
            head = try HTTPHead.parse(bytes, failure: .handshakeInvalid)
        } catch {
            var error = error
            error.context.httpStatus = 400
            throw error
        }
        let parts = head.startLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2] == "HTTP/1.1", parts[1].hasPrefix("/") || parts[1].hasPrefix("http") else {
            throw invalid("malformed request line", detail: HTTPHead.printable(head.startLine.utf8, limit: 120))
        }
        guard parts[0] == "GET" else { throw invalid("the upgrade must be a GET request", status: 405) }
        guard head.tokens("upgrade").contains("websocket") else { throw invalid("missing Upgrade: websocket") }
        guard head.tokens("connection").contains("upgrade") else { throw invalid("missing Connection: Upgrade") }
        guard head.value("sec-websocket-version") == "13" else {
            throw invalid("unsupported Sec-WebSocket-Version", status: 426, detail: head.value("sec-websocket-version"))
        }
        let keys = head.values("sec-websocket-key")
        guard keys.count == 1, let decoded = Base64.decode(keys[0]), decoded.count == 16 else {
            throw invalid("Sec-WebSocket-Key must be base64 of 16 bytes", detail: keys.joined(separator: ", "))
        }
        let offered = head.tokens("sec-websocket-protocol")
        // Tokens were lower-cased by `tokens`; subprotocol names are case-sensitive, so split again.
        let subprotocols = head.values("sec-websocket-protocol").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingHTTPWhitespace() }.filter { !$0.isEmpty }
        guard offered.count == subprotocols.count, subprotocols.allSatisfy(HTTPHead.isToken) else {
            throw invalid("malformed Sec-WebSocket-Protocol")
        }
        return Request(target: String(parts[1]), headers: head.headers, key: keys[0], subprotocols: subprotocols,
                       origin: head.value("origin"), host: head.value("host"))
    }

    /// The 101 response accepting `request`, choosing `subprotocol` (which should be one it offered).
    package static func acceptResponse(for request: Request, subprotocol: String? = nil,
                                      headers: [HTTPHeader] = []) -> [UInt8] {
        var lines = [
            "HTTP/1.1 101 Switching Protocols",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Accept: \(acceptValue(forKey: request.key))",
        ]
        if let subprotocol { lines.append("Sec-WebSocket-Protocol: \(subprotocol)") }
        for header in headers where HTTPHead.isToken(header.name) && HTTPHead.isSafeFieldValue(header.value) {
            lines.append("\(header.name): \(header.value)")
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// A complete error response with a plain-text body and `Connection: close`.
    package static func rejectionResponse(status: Int, reason: String, headers: [HTTPHeader] = [],
                                         body: String = "") -> [UInt8] {
        var lines = ["HTTP/1.1 \(status) \(reason)", "Connection: close", "Content-Type: text/plain; charset=utf-8",
                     "Content-Length: \(body.utf8.count)"]
        if status == 426 { lines.append("Sec-WebSocket-Version: 13") }
        for header in headers where HTTPHead.isToken(header.name) && HTTPHead.isSafeFieldValue(header.value) {
            lines.append("\(header.name): \(header.value)")
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }

    /// The response for an error `receive(_:)` threw: its `httpStatus` (400 when missing) and message.
    package static func rejectionResponse(for error: RealtimeError) -> [UInt8] {
        let status = error.context.httpStatus ?? 400
        let reason: String = switch status {
        case 405: "Method Not Allowed"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        default: "Bad Request"
        }
        return rejectionResponse(status: status, reason: reason, body: error.message + "\n")
    }
}
