import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Proxy CONNECT exchange")
struct ProxyTunnelHandshakeTests {
    private let proxy = ProxyConfiguration(host: "proxy.corp", port: 3128)

    private func tunnel(_ proxy: ProxyConfiguration? = nil, host: String = "api.example.com", port: Int = 443,
                        maximumAnswerSize: Int = 16_384) -> ProxyTunnelHandshake {
        ProxyTunnelHandshake(proxy: proxy ?? self.proxy, targetHost: host, targetPort: port,
                             maximumAnswerSize: maximumAnswerSize)
    }

    /// Feeds `answer` whole, then one byte at a time, then split at every offset: each way must end the same.
    /// Bytes after the exchange ends go to the stream as the driver would send them, after the leftover.
    private func outcomes(_ answer: String, proxy: ProxyConfiguration? = nil) -> [ProxyTunnelHandshake.Progress] {
        outcomes(Array(answer.utf8), proxy: proxy)
    }

    private func outcomes(_ bytes: [UInt8], proxy: ProxyConfiguration? = nil,
                          maximumAnswerSize: Int = 16_384) -> [ProxyTunnelHandshake.Progress] {
        var results: [ProxyTunnelHandshake.Progress] = []
        var whole = tunnel(proxy, maximumAnswerSize: maximumAnswerSize)
        results.append(whole.receive(bytes))
        var dribbled = tunnel(proxy, maximumAnswerSize: maximumAnswerSize)
        var last = ProxyTunnelHandshake.Progress.needsMore
        var fed = 0
        for byte in bytes where last == .needsMore {
            last = dribbled.receive([byte])
            fed += 1
        }
        results.append(Self.streaming(last, rest: bytes[fed...]))
        for cut in 1..<max(bytes.count, 1) {
            var split = tunnel(proxy, maximumAnswerSize: maximumAnswerSize)
            let first = split.receive(Array(bytes[..<cut]))
            results.append(first == .needsMore ? split.receive(Array(bytes[cut...])) : Self.streaming(first, rest: bytes[cut...]))
        }
        return results
    }

    /// What the stream gets once the tunnel is up: the leftover, then the bytes read after it.
    private static func streaming(_ progress: ProxyTunnelHandshake.Progress, rest: ArraySlice<UInt8>) -> ProxyTunnelHandshake.Progress {
        guard case .established(let leftover) = progress else { return progress }
        return .established(leftover: leftover + rest)
    }

    private func failure(_ progress: ProxyTunnelHandshake.Progress?, sourceLocation: SourceLocation = #_sourceLocation)
        -> RealtimeError? {
        guard case .failed(let error)? = progress else {
            Issue.record("expected a failure, got \(String(describing: progress))", sourceLocation: sourceLocation)
            return nil
        }
        return error
    }

    @Test("the request: CONNECT authority-form, Host, Proxy-Authorization only with credentials; IPv6 in brackets")
    func request() {
        #expect(String(decoding: tunnel().requestBytes, as: UTF8.self)
            == "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
        let authenticated = tunnel(ProxyConfiguration(host: "p", port: 1, credentials: .init(username: "Aladdin", password: "open sesame")),
                                   host: "fd00::1", port: 8443)
        // RFC 7617 §2's example credentials.
        #expect(String(decoding: authenticated.requestBytes, as: UTF8.self)
            == "CONNECT [fd00::1]:8443 HTTP/1.1\r\nHost: [fd00::1]:8443\r\n"
            + "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n")
    }

    @Test("the request, if it were ever logged, loses its credentials to Redaction")
    func requestRedacts() {
        let proxy = ProxyConfiguration(host: "p", port: 1, credentials: .init(username: "alice", password: "s3cret"))
        let request = String(decoding: tunnel(proxy).requestBytes, as: UTF8.self)
        let redacted = Redaction.redact(request)
        #expect(!redacted.contains(proxy.authorizationHeaderValue!.dropFirst(6)))
        #expect(redacted.contains("Proxy-Authorization: <redacted>"), "\(redacted)")
    }

    @Test("200 with headers, split at every byte: established, and the bytes after the head are kept")
    func established() {
        let answer = "HTTP/1.1 200 Connection established\r\nProxy-Agent: test\r\nVia: 1.1 p\r\n\r\n"
        for progress in outcomes(answer) { #expect(progress == .established(leftover: []), "\(progress)") }
        // The server's first bytes in the same read as the proxy's answer are not lost.
        for progress in outcomes(answer + "\u{16}\u{03}\u{03}server") {
            #expect(progress == .established(leftover: Array("\u{16}\u{03}\u{03}server".utf8)), "\(progress)")
        }
    }

    @Test("a body-less HTTP/1.0 200 (tinyproxy's), a bare-LF answer, another 2xx, and 1xx heads before it")
    func otherSuccesses() {
        for answer in ["HTTP/1.0 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\n",
                       "HTTP/1.0 200 OK\r\n\r\n", "HTTP/1.1 200\r\n\r\n", "HTTP/1.1 200 OK\n\n",
                       "HTTP/1.1 204 No Content\r\n\r\n",
                       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"] {
            for progress in outcomes(answer) { #expect(progress == .established(leftover: []), "\(answer): \(progress)") }
        }
        // Content-Length on a 2xx answer to CONNECT is ignored (RFC 9110 §9.3.6): what follows is the tunnel's.
        for progress in outcomes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") {
            #expect(progress == .established(leftover: Array("hello".utf8)), "\(progress)")
        }
    }

    @Test("407 without credentials: typed, the challenge kept, and the message says none were sent")
    func authenticationRequired() throws {
        let answer = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"corp\"\r\n"
            + "Content-Length: 12\r\n\r\nAccess denied"
        for progress in outcomes(answer) {
            let error = try #require(failure(progress))
            #expect(error.code == .proxyFailed)
            #expect(error.context.httpStatus == 407)
            #expect(error.message.contains("no credentials were sent"), "\(error)")
            #expect(error.message.contains("(HTTP 407 Proxy Authentication Required)"), "\(error)")
            #expect(error.context.detail == "Proxy-Authenticate: Basic realm=\"corp\"")
        }
        let withCredentials = ProxyConfiguration(host: "p", port: 1, credentials: .init(username: "u", password: "wrong"))
        for progress in outcomes(answer, proxy: withCredentials) {
            let error = try #require(failure(progress))
            #expect(error.message.contains("the credentials sent were refused"), "\(error)")
            #expect(!"\(error)".contains("wrong"))
        }
        // tinyproxy's answer to refused credentials.
        let tinyproxy = "HTTP/1.0 401 Unauthorized\r\nServer: tinyproxy/1.11.1\r\nWWW-Authenticate: Basic realm=\"Tinyproxy\"\r\n"
            + "Connection: close\r\n\r\n<html></html>"
        for progress in outcomes(tinyproxy, proxy: withCredentials) {
            let error = try #require(failure(progress))
            #expect(error.code == .proxyFailed)
            #expect(error.context.httpStatus == 401)
            #expect(error.message.contains("requires authentication") && error.message.contains("the credentials sent were refused"))
            #expect(error.context.detail == "WWW-Authenticate: Basic realm=\"Tinyproxy\"")
        }
    }

    @Test("403, 502 and others: the tunnel refused, with the status and reason phrase", arguments: [
        ("HTTP/1.1 403 Forbidden\r\n\r\n", 403, "Forbidden"),
        ("HTTP/1.0 502 Bad Gateway\r\nContent-Type: text/html\r\n\r\n<html>unreachable</html>", 502, "Bad Gateway"),
        ("HTTP/1.1 503 \r\n\r\n", 503, ""),
        ("HTTP/1.1 301 Moved Permanently\r\nLocation: http://elsewhere\r\n\r\n", 301, "Moved Permanently"),
        ("HTTP/1.1 101 Switching Protocols\r\n\r\n", 101, "Switching Protocols"),
    ])
    func refused(answer: String, status: Int, reason: String) throws {
        for progress in outcomes(answer) {
            let error = try #require(failure(progress))
            #expect(error.code == .proxyFailed)
            #expect(error.context.httpStatus == status)
            #expect(error.context.detail == (reason.isEmpty ? nil : reason))
            let phrase = reason.isEmpty ? "HTTP \(status)" : "HTTP \(status) \(reason)"
            #expect(error.message == "the proxy proxy.corp:3128 refused the tunnel to api.example.com:443: \(phrase)")
        }
    }

    @Test("garbage is a bad answer at once, without waiting for more", arguments: [
        "SSH-2.0-OpenSSH_9.2\r\n", "\u{16}\u{03}\u{01}\u{00}", "<html>", "HTTP/2 200\r\n\r\n", "http/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nbad header line\r\n\r\n",
    ])
    func garbage(answer: String) throws {
        for progress in outcomes(answer) {
            let error = try #require(failure(progress))
            #expect(error.code == .proxyFailed)
            #expect(error.context.httpStatus == nil)
            #expect(error.context.detail?.hasPrefix("bad answer") == true, "\(error)")
        }
        // Refused on the first byte that cannot start "HTTP/1.": a proxy speaking something else fails fast.
        var early = tunnel()
        #expect(failure(early.receive(Array("SSH".utf8))) != nil)
    }

    @Test("a head longer than the limit is a bad answer, whether its end came or not")
    func oversized() throws {
        let big = "HTTP/1.1 200 OK\r\nX-Padding: " + String(repeating: "a", count: 300)
        var endless = tunnel(maximumAnswerSize: 256)
        #expect(failure(endless.receive(Array(big.utf8)))?.message.contains("longer than 256 bytes") == true)
        var ended = tunnel(maximumAnswerSize: 256)
        #expect(failure(ended.receive(Array((big + "\r\n\r\n").utf8)))?.code == .proxyFailed)
        var fits = tunnel(maximumAnswerSize: 256)
        #expect(fits.receive(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)) == .established(leftover: []))
    }

    @Test("early end of stream: nothing answered, or half a head")
    func endOfStream() {
        let silent = tunnel()
        #expect(silent.errorForEndOfStream().code == .proxyFailed)
        #expect(silent.errorForEndOfStream().message.contains("without answering CONNECT"))
        var half = tunnel()
        #expect(half.receive(Array("HTTP/1.1 200 Conn".utf8)) == .needsMore)
        let error = half.errorForEndOfStream()
        #expect(error.code == .proxyFailed)
        #expect(error.message.contains("in the middle of its answer"))
        #expect(error.context.detail == "bad answer: 17 bytes received: HTTP/1.1 200 Conn")
    }

    @Test("nothing is taken after the exchange finished")
    func finished() {
        var done = tunnel()
        #expect(done.receive(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)) == .established(leftover: []))
        #expect(failure(done.receive([1]))?.code == .invalidArgument)
    }
}

@Suite("WebSocketTransport's HTTP clients")
struct TransportHTTPClientTests {
    @Test("through the proxy's tunnel when there is a proxy, for either trust; URLSession otherwise")
    func route() {
        let direct = WebSocketTransport()
        #expect(direct.makeHTTPClient(maximumConnectionsPerHost: nil, trust: .platformDefault) is URLSessionHTTPClient)
        #expect(direct.makeHTTPClient(maximumConnectionsPerHost: 2, trust: .transport) is URLSessionHTTPClient)
        let proxied = WebSocketTransport(configuration: .init(proxy: ProxyConfiguration(host: "127.0.0.1", port: 3128)))
        #expect(proxied.makeHTTPClient(maximumConnectionsPerHost: nil, trust: .platformDefault) is TunnelHTTPClient)
        #expect(proxied.makeHTTPClient(maximumConnectionsPerHost: 2, trust: .transport) is TunnelHTTPClient)
    }

    @Test("the platform's trust never takes the transport's pins; the transport's does")
    func trust() {
        let pinned = WebSocketTransport(configuration: .init(tls: TLSConfiguration(pinnedPublicKeys: ["c2hhMjU2"])))
        guard case .platformDefault = HTTPClientTrust.platformDefault.policy(of: pinned) else {
            Issue.record("the platform's trust took the transport's policy")
            return
        }
        guard case .refusesHTTPS = HTTPClientTrust.transport.policy(of: pinned) else {
            Issue.record("the transport's trust lost its pins")
            return
        }
    }
}
