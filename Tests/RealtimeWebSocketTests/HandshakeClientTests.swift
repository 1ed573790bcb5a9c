import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Client handshake")
struct HandshakeClientTests {
    /// RFC 6455 §1.3: "the sample nonce".
    static let sampleKey = Base64.decode("dGhlIHNhbXBsZSBub25jZQ==")!

    private func handshake(_ url: String = "ws://example.com/chat", subprotocols: [String] = [],
                           headers: [HTTPHeader] = [], origin: String? = nil) -> WebSocketClientHandshake {
        WebSocketClientHandshake(url: URL(string: url)!, headers: headers, subprotocols: subprotocols,
                                 origin: origin, key: Self.sampleKey)
    }

    private func requestLines(_ handshake: WebSocketClientHandshake) -> [String] {
        let text = String(decoding: handshake.requestBytes(), as: UTF8.self)
        #expect(text.hasSuffix("\r\n\r\n"))
        return text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
    }

    private func response(_ lines: [String], body: String = "") -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
    }

    private let goodResponse = [
        "HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
    ]

    private func receive(_ handshake: inout WebSocketClientHandshake, _ bytes: [UInt8]) throws(RealtimeError)
        -> (info: TransportOpenInfo, leftover: [UInt8])? {
        var result: (info: TransportOpenInfo, leftover: [UInt8])?
        var failure: RealtimeError?
        bytes.withUnsafeBytes { buffer in
            do throws(RealtimeError) { result = try handshake.receive(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
        return result
    }

    private func expectError(_ lines: [String], body: String = "", subprotocols: [String] = [],
                             sourceLocation: SourceLocation = #_sourceLocation) -> RealtimeError? {
        var client = handshake(subprotocols: subprotocols)
        do {
            let result = try receive(&client, response(lines, body: body))
            Issue.record("expected an error, got \(String(describing: result))", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    @Test("request line, Host, key, version, subprotocols, origin and extra headers")
    func requestBytes() {
        let lines = requestLines(handshake("ws://example.com:8080/chat/room%201?token=a%20b&x=1",
                                           subprotocols: ["superchat", "chat"],
                                           headers: [HTTPHeader("Cookie", "session=abc"), HTTPHeader("Authorization", "Bearer t")],
                                           origin: "http://example.com"))
        #expect(lines.first == "GET /chat/room%201?token=a%20b&x=1 HTTP/1.1")
        #expect(lines.contains("Host: example.com:8080"))
        #expect(lines.contains("Upgrade: websocket"))
        #expect(lines.contains("Connection: Upgrade"))
        #expect(lines.contains("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="))
        #expect(lines.contains("Sec-WebSocket-Version: 13"))
        #expect(lines.contains("Sec-WebSocket-Protocol: superchat, chat"))
        #expect(lines.contains("Origin: http://example.com"))
        #expect(lines.contains("Cookie: session=abc"))
        #expect(lines.contains("Authorization: Bearer t"))
    }

    @Test("default ports are left out of Host, others kept; IPv6 in brackets; empty path is /", arguments: [
        ("ws://example.com", "example.com", "/"),
        ("ws://example.com:80/a", "example.com", "/a"),
        ("wss://example.com:443/a", "example.com", "/a"),
        ("https://example.com/a?b", "example.com", "/a?b"),
        ("wss://example.com:80/", "example.com:80", "/"),
        ("ws://127.0.0.1:9001/runCase?case=1&agent=x", "127.0.0.1:9001", "/runCase?case=1&agent=x"),
        ("ws://[::1]:9001/", "[::1]:9001", "/"),
    ])
    func hostAndTarget(url: String, host: String, target: String) {
        let lines = requestLines(handshake(url))
        #expect(lines.first == "GET \(target) HTTP/1.1")
        #expect(lines.contains("Host: \(host)"))
    }

    @Test("no Origin or Sec-WebSocket-Protocol unless asked")
    func optionalHeaders() {
        let lines = requestLines(handshake())
        #expect(!lines.contains { $0.hasPrefix("Origin:") || $0.hasPrefix("Sec-WebSocket-Protocol:") })
    }

    @Test("RFC 6455 example response is accepted, whole and byte by byte")
    func acceptsGoodResponse() throws {
        var client = handshake()
        #expect(client.expectedAccept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let result = try receive(&client, response(goodResponse + ["X-Extra: 1"]))
        #expect(result?.info.subprotocol == nil)
        #expect(result?.info.headers.contains(HTTPHeader("x-extra", "1")) == true)
        #expect(result?.leftover == [])

        var slow = handshake()
        let bytes = response(goodResponse)
        for (index, byte) in bytes.enumerated() {
            let step = try receive(&slow, [byte])
            #expect((step != nil) == (index == bytes.count - 1))
        }
    }

    @Test("header names and tokens are case-insensitive")
    func caseInsensitive() throws {
        var client = handshake()
        let lines = ["HTTP/1.1 101 Switching Protocols", "upgrade: WebSocket", "CONNECTION: keep-alive, upgrade",
                     "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]
        #expect(try receive(&client, response(lines)) != nil)
    }

    @Test("frames sent right after the 101 are handed back")
    func leftoverBytes() throws {
        var client = handshake()
        let frame: [UInt8] = [0x81, 0x02, 0x68, 0x69]
        let result = try receive(&client, response(goodResponse) + frame)
        #expect(result?.leftover == frame)
    }

    @Test("the server's subprotocol choice is reported and checked")
    func subprotocols() throws {
        var client = handshake(subprotocols: ["superchat", "chat"])
        let result = try receive(&client, response(goodResponse + ["Sec-WebSocket-Protocol: chat"]))
        #expect(result?.info.subprotocol == "chat")

        let notOffered = expectError(goodResponse + ["Sec-WebSocket-Protocol: other"], subprotocols: ["chat"])
        #expect(notOffered?.code == .handshakeInvalid)
        #expect(notOffered?.context.detail?.contains("other") == true)
        let noneOffered = expectError(goodResponse + ["Sec-WebSocket-Protocol: chat"])
        #expect(noneOffered?.code == .handshakeInvalid)
    }

    @Test("bad accept, missing Upgrade or Connection, unoffered extension, malformed → handshakeInvalid")
    func invalidResponses() {
        let wrongAccept = expectError(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                                       "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA="])
        #expect(wrongAccept?.code == .handshakeInvalid)
        #expect(wrongAccept?.message.contains("Sec-WebSocket-Accept") == true)
        let missingAccept = expectError(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade"])
        #expect(missingAccept?.code == .handshakeInvalid)
        let missingUpgrade = expectError(["HTTP/1.1 101 Switching Protocols", "Connection: Upgrade",
                                          "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="])
        #expect(missingUpgrade?.code == .handshakeInvalid)
        #expect(missingUpgrade?.message.contains("Upgrade") == true)
        let missingConnection = expectError(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket",
                                             "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="])
        #expect(missingConnection?.code == .handshakeInvalid)
        let withExtension = expectError(goodResponse + ["Sec-WebSocket-Extensions: permessage-deflate"])
        #expect(withExtension?.code == .handshakeInvalid)
        #expect(expectError(["HTTP/1.0 101 Switching Protocols"] + goodResponse.dropFirst())?.code == .handshakeInvalid)
        #expect(expectError(["SIP/2.0 200 OK"])?.code == .handshakeInvalid)
        #expect(expectError(["HTTP/1.1 abc Nope"])?.code == .handshakeInvalid)
        #expect(expectError(goodResponse + ["no colon here"])?.code == .handshakeInvalid)
        #expect(expectError(goodResponse + [" folded: line"])?.code == .handshakeInvalid)
    }

    @Test("401, 403 and 404 get distinct messages with status and body start; 404 names the path", arguments: [
        (401, "authentication"), (403, "refused"), (404, "wrong path (or origin refused): HTTP 404 Not Found for /chat"),
        (500, "HTTP 500"),
    ])
    func rejections(status: Int, phrase: String) {
        let body = "No entry\nfor you"
        let error = expectError(["HTTP/1.1 \(status) Whatever", "Content-Length: \(body.utf8.count)"], body: body)
        #expect(error?.code == .handshakeRejected)
        #expect(error?.context.httpStatus == status)
        #expect(error?.message.contains(phrase) == true)
        #expect(error?.context.detail?.contains("No entry for you") == true)
    }

    @Test("a 404 names the request path but not its query, which may carry tokens")
    func notFoundNamesThePathOnly() {
        var client = handshake("ws://example.com/socket.io/?EIO=4&token=secret")
        do {
            _ = try receive(&client, response(["HTTP/1.1 404 Not Found", "Content-Length: 0"]))
            Issue.record("expected a rejection")
        } catch {
            #expect(error.message == "wrong path (or origin refused): HTTP 404 Not Found for /socket.io/")
            #expect(!error.description.contains("secret"))
        }
    }

    @Test("3xx reports the Location")
    func redirect() {
        let error = expectError(["HTTP/1.1 302 Found", "Location: wss://other.example/socket", "Content-Length: 0"])
        #expect(error?.code == .handshakeRejected)
        #expect(error?.context.httpStatus == 302)
        #expect(error?.context.detail?.contains("Location: wss://other.example/socket") == true)
    }

    @Test("a rejection waits for the start of its body")
    func rejectionWaitsForBody() throws {
        var client = handshake()
        #expect(try receive(&client, response(["HTTP/1.1 403 Forbidden", "Content-Length: 11"])) == nil)
        do {
            _ = try receive(&client, Array("banned user".utf8))
            Issue.record("expected the rejection once the body arrived")
        } catch {
            #expect(error.code == .handshakeRejected)
            #expect(error.context.detail == "body: banned user")
        }
    }

    @Test("chunked error bodies are de-chunked in the detail")
    func chunkedBody() {
        let error = expectError(["HTTP/1.1 404 Not Found", "Transfer-Encoding: chunked"],
                                body: "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" + String(repeating: " ", count: 500))
        #expect(error?.context.detail == "body: hello world")
    }

    @Test("a server closing mid-handshake gets a clear error")
    func closedMidHandshake() throws {
        #expect(handshake().errorForClosedConnection().code == .transportFailed)
        var partial = handshake()
        #expect(try receive(&partial, Array("HTTP/1.1 101 Swi".utf8)) == nil)
        #expect(partial.errorForClosedConnection().code == .handshakeInvalid)
        var rejected = handshake()
        #expect(try receive(&rejected, response(["HTTP/1.1 404 Not Found"], body: "gone")) == nil)
        let error = rejected.errorForClosedConnection()
        #expect(error.code == .handshakeRejected)
        #expect(error.context.httpStatus == 404)
        #expect(error.context.detail == "body: gone")
    }

    @Test("oversized responses are refused")
    func oversized() {
        var client = WebSocketClientHandshake(url: URL(string: "ws://example.com/")!, key: Self.sampleKey,
                                              maximumResponseSize: 256)
        let huge = Array(("HTTP/1.1 101 Switching Protocols\r\nX-Filler: " + String(repeating: "a", count: 300)).utf8)
        #expect(throws: RealtimeError.self) { try receive(&client, huge) }
    }

    @Test("validate() rejects arguments that would make a broken request")
    func validation() {
        func code(_ client: WebSocketClientHandshake) -> RealtimeError.Code? {
            do { try client.validate(); return nil } catch { return error.code }
        }
        #expect(code(handshake()) == nil)
        #expect(code(handshake("ftp://example.com/")) == .invalidArgument)
        #expect(code(handshake("ws:///path")) == .invalidArgument)
        #expect(code(WebSocketClientHandshake(url: URL(string: "ws://a/")!, key: [1, 2, 3])) == .invalidArgument)
        #expect(code(handshake(subprotocols: ["bad protocol"])) == .invalidArgument)
        #expect(code(handshake(subprotocols: ["a", "a"])) == .invalidArgument)
        #expect(code(handshake(headers: [HTTPHeader("X-Evil", "a\r\nInjected: yes")])) == .invalidArgument)
        #expect(code(handshake(headers: [HTTPHeader("Sec-WebSocket-Key", "x")])) == .invalidArgument)
        let lines = requestLines(handshake(headers: [HTTPHeader("X-Evil", "a\r\nInjected: yes")]))
        #expect(!lines.contains { $0.hasPrefix("Injected") }, "unsafe headers are never sent")
    }

    @Test("makeKey gives 16 fresh bytes")
    func makeKey() {
        let first = WebSocketClientHandshake.makeKey()
        let second = WebSocketClientHandshake.makeKey()
        #expect(first.count == 16)
        #expect(first != second)
    }
}
