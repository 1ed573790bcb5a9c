import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Server handshake")
struct HandshakeServerTests {
    private func parse(_ lines: [String], extra: [UInt8] = []) throws(RealtimeError) -> (request: WebSocketServerHandshake.Request, leftover: [UInt8])? {
        var server = WebSocketServerHandshake()
        let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + extra
        var result: (request: WebSocketServerHandshake.Request, leftover: [UInt8])?
        var failure: RealtimeError?
        bytes.withUnsafeBytes { buffer in
            do throws(RealtimeError) { result = try server.receive(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
        return result
    }

    private let rfcRequest = [
        "GET /chat HTTP/1.1", "Host: server.example.com", "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Origin: http://example.com",
        "Sec-WebSocket-Protocol: chat, superchat", "Sec-WebSocket-Version: 13",
    ]

    @Test("RFC 6455 §1.3 request parses and is accepted")
    func rfcExample() throws {
        let result = try #require(try parse(rfcRequest, extra: [0x81, 0x80]))
        #expect(result.request.target == "/chat")
        #expect(result.request.key == "dGhlIHNhbXBsZSBub25jZQ==")
        #expect(result.request.subprotocols == ["chat", "superchat"])
        #expect(result.request.origin == "http://example.com")
        #expect(result.request.host == "server.example.com")
        #expect(result.request.value(forHeader: "Sec-WebSocket-Version") == "13")
        #expect(result.leftover == [0x81, 0x80])
        let response = String(decoding: WebSocketServerHandshake.acceptResponse(for: result.request, subprotocol: "chat"),
                              as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(response.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        #expect(response.contains("Sec-WebSocket-Protocol: chat\r\n"))
    }

    @Test("client and server handshakes agree end to end")
    func roundTrip() throws {
        var client = WebSocketClientHandshake(url: URL(string: "ws://127.0.0.1:8080/cable?x=1")!,
                                              headers: [HTTPHeader("Cookie", "a=b")], subprotocols: ["actioncable-v1-json"],
                                              key: WebSocketClientHandshake.makeKey())
        var server = WebSocketServerHandshake()
        let parsed = try client.requestBytes().withUnsafeBytes { buffer throws(RealtimeError) in try server.receive(buffer) }
        let request = try #require(parsed).request
        #expect(request.target == "/cable?x=1")
        #expect(request.value(forHeader: "cookie") == "a=b")
        let response = WebSocketServerHandshake.acceptResponse(for: request, subprotocol: request.subprotocols.first)
        let opened = try response.withUnsafeBytes { buffer throws(RealtimeError) in try client.receive(buffer) }
        #expect(opened?.info.subprotocol == "actioncable-v1-json")
    }

    @Test("bad requests carry the status to answer", arguments: [
        ("Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 8", 426),
        ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Key: c2hvcnQ=", 400),
        ("Upgrade: websocket", "Upgrade: h2c", 400),
        ("Connection: Upgrade", "Connection: keep-alive", 400),
        ("GET /chat HTTP/1.1", "POST /chat HTTP/1.1", 405),
        ("GET /chat HTTP/1.1", "GET /chat HTTP/1.0", 400),
    ])
    func badRequests(original: String, replacement: String, status: Int) {
        let lines = rfcRequest.map { $0 == original ? replacement : $0 }
        do {
            _ = try parse(lines)
            Issue.record("expected \(status)")
        } catch {
            #expect(error.code == .handshakeInvalid)
            #expect(error.context.httpStatus == status)
            let response = String(decoding: WebSocketServerHandshake.rejectionResponse(for: error), as: UTF8.self)
            #expect(response.hasPrefix("HTTP/1.1 \(status) "))
            #expect(response.contains("Content-Length: \(error.message.utf8.count + 1)\r\n"))
        }
    }

    @Test("an oversized request head is refused with 431")
    func oversized() {
        var server = WebSocketServerHandshake(maximumRequestSize: 128)
        let bytes = Array(("GET / HTTP/1.1\r\nX-Filler: " + String(repeating: "a", count: 200)).utf8)
        do {
            _ = try bytes.withUnsafeBytes { buffer throws(RealtimeError) in try server.receive(buffer) }
            Issue.record("expected 431")
        } catch let error as RealtimeError {
            #expect(error.context.httpStatus == 431)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("incomplete requests wait for more bytes")
    func incomplete() throws {
        var server = WebSocketServerHandshake()
        let bytes = Array((rfcRequest.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        for (index, byte) in bytes.enumerated() {
            let result = try [byte].withUnsafeBytes { buffer throws(RealtimeError) in try server.receive(buffer) }
            #expect((result != nil) == (index == bytes.count - 1))
        }
    }
}
