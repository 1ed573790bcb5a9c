import Foundation
import RealtimeCore

/// The client side of the HTTP/1.1 upgrade (RFC 6455 §4.1), without I/O: write `requestBytes()`, feed
/// what the server answers to `receive(_:)` until it returns the negotiated connection or throws.
package struct WebSocketClientHandshake: Sendable {
    /// Where to connect: scheme, host, port, path and query.
    package let url: URL
    /// Extra request headers (cookies, authorization, …), sent as given after the upgrade headers.
    package let headers: [HTTPHeader]
    /// Subprotocols offered, in preference order.
    package let subprotocols: [String]
    /// Sent as `Origin` when set.
    package let origin: String?
    /// The 16 random bytes behind `Sec-WebSocket-Key`.
    package let key: [UInt8]
    /// Bytes the response head (and the start of an error body) may take before we give up.
    package let maximumResponseSize: Int
    /// permessage-deflate to offer, if any.
    package let deflate: PerMessageDeflateOptions?
    /// What the server's answer settled for permessage-deflate, once ``receive(_:)`` returned the open
    /// connection; nil when it was not offered or the server declined.
    package private(set) var negotiatedDeflate: PerMessageDeflateParameters?

    /// `key` as sent in `Sec-WebSocket-Key`.
    package var encodedKey: String { Base64.encode(key) }

    /// Headers the handshake writes itself; passing them in `headers` is an error.
    static let managedHeaderNames: Set<String> = [
        "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-protocol",
        "sec-websocket-extensions", "sec-websocket-accept", "content-length", "transfer-encoding",
    ]
    /// How much of an error body is kept for `context.detail`.
    static let bodyPreviewLimit = 512

    private var buffer: [UInt8] = []
    private var rejection: Rejection?
    private var isFinished = false

    /// A non-101 head waiting for the start of its body.
    private struct Rejection: Sendable {
        var status: Int
        var head: HTTPHead
        var bodyStart: Int
        var wantedBodyBytes: Int
    }

    /// `url` is ws/wss/http/https; path+query go on the request line; Host includes a non-default port.
    /// Call `validate()` first to turn bad arguments into an error instead of a request the server refuses.
    package init(url: URL, headers: [HTTPHeader] = [], subprotocols: [String] = [], origin: String? = nil,
                key: [UInt8], maximumResponseSize: Int = 16_384, deflate: PerMessageDeflateOptions? = nil) {
        self.url = url
        self.headers = headers
        self.subprotocols = subprotocols
        self.origin = origin
        self.key = key
        self.maximumResponseSize = maximumResponseSize
        self.deflate = deflate
    }

    /// 16 bytes from the system CSPRNG, for `key`.
    package static func makeKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var key: [UInt8] = []
        for _ in 0..<2 {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) { key.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return key
    }

    /// Throws `.invalidArgument` for a URL without host or with another scheme, a key that is not 16
    /// bytes, a subprotocol that is not an HTTP token, a header that is malformed or one the
    /// handshake manages itself, or deflate options out of range.
    package func validate() throws(RealtimeError) {
        try deflate?.validate()
        guard let scheme = url.scheme?.lowercased(), ["ws", "wss", "http", "https"].contains(scheme) else {
            throw RealtimeError(.invalidArgument, "WebSocket URL must use ws, wss, http or https",
                                context: .init(detail: url.absoluteString))
        }
        guard let host = url.host, !host.isEmpty else {
            throw RealtimeError(.invalidArgument, "the URL \(url.absoluteString) has no host")
        }
        guard key.count == 16 else {
            throw RealtimeError(.invalidArgument, "Sec-WebSocket-Key must be made from 16 bytes, not \(key.count)")
        }
        for subprotocol in subprotocols where !HTTPHead.isToken(subprotocol) {
            throw RealtimeError(.invalidArgument, "subprotocol is not an HTTP token", context: .init(detail: subprotocol))
        }
        if Set(subprotocols).count != subprotocols.count {
            throw RealtimeError(.invalidArgument, "a subprotocol is offered twice")
        }
        for header in headers {
            guard HTTPHead.isToken(header.name), HTTPHead.isSafeFieldValue(header.value) else {
                throw RealtimeError(.invalidArgument, "malformed request header", context: .init(detail: header.name))
            }
            guard !Self.managedHeaderNames.contains(header.name.lowercased()) else {
                throw RealtimeError(.invalidArgument, "the handshake sets \(header.name) itself; pass subprotocols separately",
                                    context: .init(detail: header.name))
            }
        }
        if let origin, !HTTPHead.isSafeFieldValue(origin) {
            throw RealtimeError(.invalidArgument, "malformed Origin", context: .init(detail: origin))
        }
    }

    /// The `Host` header value: the host (IPv6 in brackets) plus the port when it is not the default.
    package var hostHeader: String {
        var host = url.host ?? ""
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        let secure = ["wss", "https"].contains(url.scheme?.lowercased() ?? "")
        if let port = url.port, port != (secure ? 443 : 80) { host += ":\(port)" }
        return host
    }

    /// The request target: percent-encoded path (or `/`) and query.
    package var requestTarget: String {
        guard let query = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedQuery else {
            return requestPath
        }
        return requestPath + "?" + query
    }

    /// The request's percent-encoded path (or `/`), without the query.
    var requestPath: String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? ""
        return path.isEmpty ? "/" : path
    }

    /// The upgrade request. Headers that fail `validate()` are left out rather than sent broken.
    package func requestBytes() -> [UInt8] {
        let hasCustomHost = headers.contains { $0.name.lowercased() == "host" }
        var lines = ["GET \(requestTarget) HTTP/1.1"]
        if !hasCustomHost { lines.append("Host: \(hostHeader)") }
        lines.append("Upgrade: websocket")
        lines.append("Connection: Upgrade")
        lines.append("Sec-WebSocket-Key: \(encodedKey)")
        lines.append("Sec-WebSocket-Version: 13")
        if !subprotocols.isEmpty { lines.append("Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))") }
        if let deflate { lines.append("Sec-WebSocket-Extensions: \(PerMessageDeflateNegotiation.offer(deflate))") }
        if let origin, HTTPHead.isSafeFieldValue(origin) { lines.append("Origin: \(origin)") }
        for header in headers where HTTPHead.isToken(header.name) && HTTPHead.isSafeFieldValue(header.value)
            && !Self.managedHeaderNames.contains(header.name.lowercased()) {
            lines.append("\(header.name): \(header.value)")
        }
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// The `Sec-WebSocket-Accept` value a server must answer for `key`.
    package var expectedAccept: String { WebSocketServerHandshake.acceptValue(forKey: encodedKey) }

    /// nil = need more bytes. On success: what was negotiated and the bytes that followed the response
    /// (frames the server sent right after the 101 must not be lost).
    ///
    /// Throws `.handshakeRejected` for a status other than 101 (`context.httpStatus`, and in
    /// `context.detail` the redirect target and the start of the body), `.handshakeInvalid` for a
    /// malformed or oversized response, a wrong accept value, missing upgrade headers, a subprotocol
    /// or extension we did not offer, or a permessage-deflate answer RFC 7692 does not allow.
    package mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(RealtimeError) -> (info: TransportOpenInfo, leftover: [UInt8])? {
        guard !isFinished else {
            throw RealtimeError(.invalidArgument, "the handshake already finished")
        }
        let searchFrom = buffer.count
        buffer.append(contentsOf: bytes)

        if let rejection {
            if buffer.count - rejection.bodyStart >= rejection.wantedBodyBytes {
                throw finish(rejectionError(rejection))
            }
            return nil
        }
        guard let headEnd = HTTPHead.endIndex(in: buffer, searchingFrom: searchFrom) else {
            if buffer.count > maximumResponseSize {
                throw finish(RealtimeError(.handshakeInvalid, "the upgrade response head exceeds \(maximumResponseSize) bytes"))
            }
            return nil
        }
        guard headEnd <= maximumResponseSize else {
            throw finish(RealtimeError(.handshakeInvalid, "the upgrade response head exceeds \(maximumResponseSize) bytes"))
        }
        let head: HTTPHead
        let status: Int
        do {
            head = try HTTPHead.parse(buffer[..<(headEnd - 2)], failure: .handshakeInvalid)
            status = try Self.status(of: head.startLine)
        } catch {
            throw finish(error)
        }
        if status == 101 {
            let info: TransportOpenInfo
            do {
                info = try checkUpgrade(head)
                negotiatedDeflate = try PerMessageDeflateNegotiation.accept(head.values("sec-websocket-extensions"),
                                                                           offered: deflate)
            } catch {
                throw finish(error)
            }
            let leftover = Array(buffer[headEnd...])
            isFinished = true
            buffer = []
            return (info, leftover)
        }

        let pending = Rejection(status: status, head: head, bodyStart: headEnd,
                                wantedBodyBytes: Self.wantedBodyBytes(head))
        if buffer.count - headEnd >= pending.wantedBodyBytes { throw finish(rejectionError(pending)) }
        rejection = pending
        return nil
    }

    /// The error to report when the server closes the connection before the handshake finished: the
    /// rejection with whatever body arrived when a non-101 head was read, otherwise `.handshakeInvalid`
    /// for a cut-off response or `.transportFailed` when the server sent nothing.
    package func errorForClosedConnection() -> RealtimeError {
        if let rejection { return rejectionError(rejection) }
        if buffer.isEmpty {
            return RealtimeError(.transportFailed, "the server closed the connection without answering the WebSocket upgrade")
        }
        return RealtimeError(.handshakeInvalid,
                             "the server closed the connection in the middle of the upgrade response",
                             context: .init(detail: "\(buffer.count) bytes received: \(HTTPHead.printable(buffer, limit: 120))"))
    }

    private mutating func finish(_ error: RealtimeError) -> RealtimeError {
        isFinished = true
        buffer = []
        return error
    }

    static func status(of startLine: String) throws(RealtimeError) -> Int {
        let parts = startLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0",
              parts[1].count == 3, let status = Int(parts[1]), status >= 100 else {
            throw RealtimeError(.handshakeInvalid, "the upgrade response has a malformed status line",
                                context: .init(detail: HTTPHead.printable(startLine.utf8, limit: 120)))
        }
        if status == 101, parts[0] != "HTTP/1.1" {
            throw RealtimeError(.handshakeInvalid, "101 Switching Protocols must come over HTTP/1.1",
                                context: .init(httpStatus: status))
        }
        return status
    }

    private func checkUpgrade(_ head: HTTPHead) throws(RealtimeError) -> TransportOpenInfo {
        guard head.tokens("upgrade").contains("websocket") else {
            throw RealtimeError(.handshakeInvalid, "the 101 response lacks Upgrade: websocket",
                                context: .init(httpStatus: 101, detail: head.value("upgrade").map { "Upgrade: \($0)" }))
        }
        guard head.tokens("connection").contains("upgrade") else {
            throw RealtimeError(.handshakeInvalid, "the 101 response lacks Connection: Upgrade",
                                context: .init(httpStatus: 101, detail: head.value("connection").map { "Connection: \($0)" }))
        }
        let accepts = head.values("sec-websocket-accept")
        guard accepts.count == 1, accepts[0] == expectedAccept else {
            throw RealtimeError(.handshakeInvalid, "Sec-WebSocket-Accept does not match our key",
                                context: .init(httpStatus: 101,
                                               detail: "expected \(expectedAccept), got \(accepts.isEmpty ? "none" : accepts.joined(separator: ", "))"))
        }
        var chosen: String?
        if let selected = head.value("sec-websocket-protocol") {
            guard subprotocols.contains(selected) else {
                throw RealtimeError(.handshakeInvalid, "the server chose a subprotocol we did not offer",
                                    context: .init(httpStatus: 101,
                                                   detail: "chose \(selected); offered \(subprotocols.isEmpty ? "none" : subprotocols.joined(separator: ", "))"))
            }
            chosen = selected
        }
        return TransportOpenInfo(subprotocol: chosen, headers: head.headers)
    }

    /// How many body bytes to wait for before reporting a rejection (the rest may never come).
    static func wantedBodyBytes(_ head: HTTPHead) -> Int {
        if let length = head.value("content-length").flatMap({ Int($0) }), length >= 0 {
            return min(length, bodyPreviewLimit)
        }
        return bodyPreviewLimit
    }

    private func rejectionError(_ rejection: Rejection) -> RealtimeError {
        let status = rejection.status
        let rawBody = buffer[min(rejection.bodyStart, buffer.count)...].prefix(Self.bodyPreviewLimit)
        let isChunked = rejection.head.tokens("transfer-encoding").contains("chunked")
        let body = HTTPHead.printable(isChunked ? Self.dechunkedPrefix(rawBody) : Array(rawBody), limit: 200)
        var details: [String] = []
        let message: String
        switch status {
        case 300..<400:
            message = "the server redirected the WebSocket upgrade (HTTP \(status)); upgrades do not follow redirects"
            details.append("Location: \(rejection.head.value("location") ?? "(none)")")
        case 401:
            message = "the server requires authentication (HTTP 401 Unauthorized)"
        case 403:
            message = "the server refused the connection (HTTP 403 Forbidden)"
        case 404:
            // Most servers answer 404 for a path they do not serve; some (Action Cable) also for an Origin
            // they refuse. The path is named, the query is not: it may carry tokens.
            message = "wrong path (or origin refused): HTTP 404 Not Found for \(requestPath)"
        case 426:
            message = "the server wants another WebSocket version (HTTP 426 Upgrade Required)"
            if let versions = rejection.head.value("sec-websocket-version") { details.append("Sec-WebSocket-Version: \(versions)") }
        default:
            message = "the server answered HTTP \(status) instead of 101 Switching Protocols"
        }
        if !body.isEmpty { details.append("body: \(body)") }
        return RealtimeError(.handshakeRejected, message,
                             context: .init(httpStatus: status, detail: details.isEmpty ? nil : details.joined(separator: "; ")))
    }

    /// The data of the leading chunks of a chunked body, as far as they arrived.
    static func dechunkedPrefix(_ raw: ArraySlice<UInt8>) -> [UInt8] {
        var data: [UInt8] = []
        var index = raw.startIndex
        while index < raw.endIndex {
            guard let lineEnd = raw[index...].firstIndex(of: 10) else { break }
            let sizeLine = raw[index..<lineEnd]
            let sizeText = String(decoding: sizeLine.last == 13 ? sizeLine.dropLast() : sizeLine, as: UTF8.self)
                .split(separator: ";").first.map { $0.trimmingHTTPWhitespace() } ?? ""
            guard let size = Int(sizeText, radix: 16), size > 0 else { break }
            let start = lineEnd + 1
            let end = min(start + size, raw.endIndex)
            data.append(contentsOf: raw[start..<end])
            index = min(end + 2, raw.endIndex)
        }
        return data
    }
}
