import RealtimeCore

/// The `CONNECT` exchange that opens a tunnel through an HTTP proxy (RFC 9110 §9.3.6), as a value with no
/// I/O: ``requestBytes`` go to the proxy, its answer comes back through ``receive(_:)`` in pieces of any
/// size. A 2xx answer opens the tunnel, and the bytes after its head already belong to the server; RFC 9110
/// has the client ignore `Content-Length` and `Transfer-Encoding` on it, so nothing after the head is
/// skipped. Any other answer, one that is not HTTP, or a head over ``maximumAnswerSize`` fails with
/// `.proxyFailed`.
package struct ProxyTunnelHandshake: Sendable {
    /// Where the exchange stands after some bytes of the answer.
    package enum Progress: Sendable, Hashable {
        /// The answer's head is not complete yet.
        case needsMore
        /// The tunnel is up; `leftover` came after the head and is the server's.
        case established(leftover: [UInt8])
        /// The proxy refused the tunnel or did not speak HTTP; the exchange is over.
        case failed(RealtimeError)
    }

    /// The proxy asked.
    package let proxy: ProxyConfiguration
    /// The server the tunnel leads to.
    package let targetHost: String
    package let targetPort: Int
    /// The largest answer head accepted (interim 1xx heads included).
    package let maximumAnswerSize: Int
    private var buffer: [UInt8] = []
    /// The head's end is not before this index: a dribbled answer is scanned once.
    private var scannedUpTo = 0
    private var isFinished = false

    package init(proxy: ProxyConfiguration, targetHost: String, targetPort: Int, maximumAnswerSize: Int = 16_384) {
        self.proxy = proxy
        self.targetHost = targetHost
        self.targetPort = targetPort
        self.maximumAnswerSize = maximumAnswerSize
    }

    /// `host:port` of the server, IPv6 in brackets: the request target and `Host` of the `CONNECT`.
    package var target: String { ProxyConfiguration.authority(host: targetHost, port: targetPort) }

    /// `CONNECT host:port HTTP/1.1`, `Host`, and `Proxy-Authorization` when the proxy has credentials.
    /// (They hold the credentials: never log them.)
    package var requestBytes: [UInt8] {
        var text = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let authorization = proxy.authorizationHeaderValue { text += "Proxy-Authorization: \(authorization)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// Takes the next bytes of the proxy's answer.
    package mutating func receive(_ bytes: UnsafeRawBufferPointer) -> Progress {
        guard !isFinished else {
            return .failed(RealtimeError(.invalidArgument, "the CONNECT exchange already finished"))
        }
        buffer.append(contentsOf: bytes)
        while true {
            // Every answer starts with its version: anything else is refused at once, not after 16 KiB.
            let version = Array("HTTP/1.".utf8)
            let checked = min(buffer.count, version.count)
            guard buffer[0..<checked].elementsEqual(version[0..<checked]) else {
                return finish(badAnswer("the proxy answered CONNECT with something that is not HTTP",
                                        detail: HTTPHead.printable(buffer, limit: 80)))
            }
            guard let headEnd = Self.headEnd(in: buffer, from: scannedUpTo) else {
                if buffer.count > maximumAnswerSize { return finish(oversized) }
                scannedUpTo = max(0, buffer.count - 3)
                return .needsMore
            }
            guard headEnd <= maximumAnswerSize else { return finish(oversized) }
            let head: HTTPHead
            do {
                head = try HTTPHead.parse(buffer[..<headEnd], failure: .proxyFailed)
            } catch {
                return finish(badAnswer("the proxy's answer to CONNECT is malformed: \(error.message)",
                                        detail: error.context.detail))
            }
            guard let (status, reason) = Self.statusLine(head.startLine) else {
                return finish(badAnswer("the proxy's answer to CONNECT has a malformed status line",
                                        detail: HTTPHead.printable(head.startLine.utf8, limit: 80)))
            }
            switch status {
            case 200..<300:
                let leftover = Array(buffer[headEnd...])
                isFinished = true
                buffer = []
                return .established(leftover: leftover)
            case 100..<200 where status != 101:
                // An interim answer (100 Continue, 103 Early Hints): the final one follows.
                buffer.removeFirst(headEnd)
                scannedUpTo = 0
                continue
            default:
                return finish(refusal(status: status, reason: reason, head: head))
            }
        }
    }

    /// ``receive(_:)`` for an array.
    package mutating func receive(_ bytes: [UInt8]) -> Progress {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// Why the exchange failed when the proxy ends the connection before the tunnel is up.
    package func errorForEndOfStream() -> RealtimeError {
        if buffer.isEmpty {
            return badAnswer("the proxy closed the connection without answering CONNECT", detail: nil)
        }
        return badAnswer("the proxy closed the connection in the middle of its answer to CONNECT",
                         detail: "\(buffer.count) bytes received: \(HTTPHead.printable(buffer, limit: 80))")
    }

    // MARK: Reading the answer

    /// The index just past the head's empty line: CR LF CR LF, or bare LF LF from a lax proxy.
    private static func headEnd(in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while let newline = bytes[index...].firstIndex(of: 10) {
            var next = newline + 1
            if next < bytes.count, bytes[next] == 13 { next += 1 }
            guard next < bytes.count else { return nil }
            if bytes[next] == 10 { return next + 1 }
            index = newline + 1
        }
        return nil
    }

    /// `HTTP/1.x NNN reason`: the status and the reason phrase (possibly empty).
    private static func statusLine(_ line: String) -> (Int, String)? {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0",
              parts[1].count == 3, parts[1].allSatisfy(\.isASCII), let status = Int(parts[1]), status >= 100 else {
            return nil
        }
        return (status, parts.count > 2 ? HTTPHead.printable(parts[2].utf8, limit: 120) : "")
    }

    // MARK: Errors

    private mutating func finish(_ error: RealtimeError) -> Progress {
        isFinished = true
        buffer = []
        return .failed(error)
    }

    private var oversized: RealtimeError {
        badAnswer("the proxy's answer to CONNECT is longer than \(maximumAnswerSize) bytes", detail: nil)
    }

    private func badAnswer(_ message: String, detail: String?) -> RealtimeError {
        RealtimeError(.proxyFailed, "\(message) (\(proxy.authority))",
                      context: .init(detail: ["bad answer", detail].compactMap { $0 }.joined(separator: ": ")))
    }

    /// The status goes in `context.httpStatus` and the message; `context.detail` holds the reason phrase, or
    /// for 407 the proxy's challenge. A 401 to `CONNECT` can only be the proxy's too (tinyproxy answers
    /// refused credentials with it), so 401 and 407 both say whether credentials were sent.
    private func refusal(status: Int, reason: String, head: HTTPHead) -> RealtimeError {
        let phrase = reason.isEmpty ? "HTTP \(status)" : "HTTP \(status) \(reason)"
        guard status == 407 || status == 401 else {
            return RealtimeError(.proxyFailed, "the proxy \(proxy.authority) refused the tunnel to \(target): \(phrase)",
                                 context: .init(httpStatus: status, detail: reason.isEmpty ? nil : reason))
        }
        let sent = proxy.credentials == nil
            ? "no credentials were sent (set ProxyConfiguration.credentials)"
            : "the credentials sent were refused"
        let challenge = head.headers.filter { $0.name == "proxy-authenticate" || $0.name == "www-authenticate" }
            .map { "\($0.name == "www-authenticate" ? "WWW" : "Proxy")-Authenticate: \($0.value)" }
        return RealtimeError(.proxyFailed,
                             "the proxy \(proxy.authority) requires authentication (\(phrase)): \(sent)",
                             context: .init(httpStatus: status,
                                            detail: challenge.isEmpty ? nil : challenge.joined(separator: "; ")))
    }
}
