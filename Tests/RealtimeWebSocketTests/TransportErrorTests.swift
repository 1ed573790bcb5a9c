import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// Each way opening or running a connection can fail gives its own typed error.
@Suite("WebSocketTransport errors")
struct TransportErrorTests {
    func openAndWaitForClose(_ request: ConnectionRequest, transport: WebSocketTransport = WebSocketTransport())
        async -> TransportClosure? {
        let events = EventQueue<TransportEvent>()
        let connection = transport.open(request) { events.push($0) }
        let (_, closure) = await drainUntilClosed(events)
        withExtendedLifetime(connection) {}
        return closure
    }

    @Test("HTTP 401, 403 and 404 on upgrade are handshake rejections with the status", arguments: [401, 403, 404])
    func rejected(status: Int) async throws {
        let server = try makeEchoServer(shouldUpgrade: { _ in .reject(status: status, reason: "No") })
        defer { server.stop() }
        let closure = await openAndWaitForClose(ConnectionRequest(url: server.url))
        #expect(closure?.error?.code == .handshakeRejected)
        #expect(closure?.error?.context.httpStatus == status)
        #expect(closure?.duringOpen == true)
        if status == 404 { #expect(closure?.error?.message.contains("wrong path") == true) }
    }

    @Test("a server that closes during the handshake")
    func closedMidHandshake() async throws {
        let server = try RawServer { peer in _ = peer.readHead() }
        defer { server.stop() }
        let closure = await openAndWaitForClose(ConnectionRequest(url: server.url))
        let error = try #require(closure?.error)
        #expect(error.code != .handshakeRejected)
        #expect(error.code != .connectTimedOut)
        #expect(error.message.contains("closed") == true)
        #expect(closure?.duringOpen == true)
    }

    @Test("a server that never answers the upgrade hits the connect timeout")
    func connectTimeout() async throws {
        let server = try RawServer { peer in
            _ = peer.readHead()
            peer.waitForRelease()
        }
        defer { server.stop() }
        let closure = await openAndWaitForClose(ConnectionRequest(url: server.url, connectTimeout: .milliseconds(200)))
        #expect(closure?.error?.code == .connectTimedOut)
        #expect(closure?.duringOpen == true)
    }

    @Test("nothing listening: connection refused")
    func refused() async throws {
        let probe = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 1)
        let port = probe.address.port
        SocketIO.closeFD(probe.fd)
        let closure = await openAndWaitForClose(ConnectionRequest(url: URL(string: "ws://127.0.0.1:\(port)/")!))
        #expect(closure?.error?.code == .transportFailed)
        #expect(closure?.error?.context.detail == "connect: ECONNREFUSED")
    }

    @Test("a name that cannot resolve (checked locally, no DNS traffic)")
    func dnsFailure() async throws {
        let request = ConnectionRequest(url: URL(string: "ws://a..b:80/")!, allowsInsecureTransportToRemoteHosts: true)
        let closure = await openAndWaitForClose(request)
        #expect(closure?.error?.code == .transportFailed)
        #expect(closure?.error?.context.detail?.hasPrefix("dns:") == true)
    }

    @Test("ws:// to a remote host is refused unless explicitly allowed", arguments: [
        "ws://example.com/socket", "http://10.1.2.3/", "ws://[2001:db8::1]:80/",
    ])
    func insecureRemote(url: String) async throws {
        let closure = await openAndWaitForClose(ConnectionRequest(url: URL(string: url)!))
        #expect(closure?.error?.code == .invalidArgument)
        #expect(closure?.error?.message.contains("wss://") == true)
    }

    @Test("through a proxy: plain ws:// only through a loopback proxy (or when allowed), and a malformed proxy is refused before any socket")
    func proxyPolicy() async throws {
        let remote = WebSocketTransport(configuration: .init(proxy: ProxyConfiguration(host: "proxy.corp.example", port: 3128)))
        let plain = await openAndWaitForClose(ConnectionRequest(url: URL(string: "ws://127.0.0.1:9/")!), transport: remote)
        #expect(plain?.error?.code == .invalidArgument)
        #expect(plain?.error?.message.contains("through the proxy proxy.corp.example:3128, which is not on this machine") == true,
                "\(String(describing: plain))")
        for proxy in [ProxyConfiguration(host: "", port: 3128), ProxyConfiguration(host: "p", port: 70_000),
                      ProxyConfiguration(host: "p", port: 1, credentials: .init(username: "a:b", password: ""))] {
            let transport = WebSocketTransport(configuration: .init(proxy: proxy))
            let closure = await openAndWaitForClose(ConnectionRequest(url: URL(string: "wss://example.com/")!), transport: transport)
            #expect(closure?.error?.code == .invalidArgument, "\(proxy): \(String(describing: closure))")
        }
    }

    @Test("unsupported schemes are invalid arguments")
    func badScheme() async {
        let closure = await openAndWaitForClose(ConnectionRequest(url: URL(string: "ftp://127.0.0.1/")!))
        #expect(closure?.error?.code == .invalidArgument)
    }

    @Test("an oversized frame fails with 1009")
    func oversizedFrame() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let transport = WebSocketTransport(configuration: .init(limits: WebSocketLimits(maximumFrameSize: 1024,
                                                                                         maximumMessageSize: 1024)))
        let events = EventQueue<TransportEvent>()
        let connection = transport.open(ConnectionRequest(url: server.url)) { events.push($0) }
        connection.send([.text("small"), .text(String(repeating: "x", count: 2000))])
        let (frames, closure) = await drainUntilClosed(events)
        #expect(frames == [.text("small")])
        #expect(closure?.error?.code == .limitExceeded)
        #expect(closure?.error?.context.closeCode == 1009)
    }

    @Test("invalid UTF-8 in a text frame fails with 1007")
    func invalidUTF8() async throws {
        let server = try RawServer { peer in
            peer.acceptUpgrade()
            peer.write([0x81, 0x02, 0xC3, 0x28])  // FIN text, 2 bytes: a broken two-byte sequence
            peer.drain()
        }
        defer { server.stop() }
        let closure = await openAndWaitForClose(ConnectionRequest(url: server.url))
        #expect(closure?.error?.code == .invalidUTF8)
        #expect(closure?.error?.context.closeCode == 1007)
        #expect(closure?.duringOpen == false)
    }

    @Test("the peer dropping the socket without a close frame is a transport failure (1006), on epoll and poll",
          arguments: [ReadinessAPI.epoll, .poll])
    func droppedWithoutClose(_ readiness: ReadinessAPI) async throws {
        let server = try RawServer { peer in
            peer.acceptUpgrade()
            peer.write([0x81, 0x02, 0x68, 0x69])  // "hi"
        }
        defer { server.stop() }
        let group = try EventLoopGroup(threadCount: 1, readiness: readiness)
        defer { group.shutdown() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport(group: group).open(ConnectionRequest(url: server.url)) { events.push($0) }
        let (frames, closure) = await drainUntilClosed(events)
        withExtendedLifetime(connection) {}
        #expect(frames == [.text("hi")])
        #expect(closure?.error?.code == .transportFailed)
        #expect(closure?.error?.context.closeCode == 1006)
    }

    @Test("exceeding the write queue limit fails with limitExceeded, and the queue is visible")
    func writeQueueLimit() async throws {
        let server = try RawServer { peer in
            _ = peer.readHead()
            peer.waitForRelease()
        }
        defer { server.stop() }
        let transport = WebSocketTransport(configuration: .init(maximumBufferedBytes: 10_000))
        let events = EventQueue<TransportEvent>()
        let connection = transport.openConnection(ConnectionRequest(url: server.url)) { events.push($0) }
        connection.send([.text(String(repeating: "a", count: 6000))])
        #expect(connection.bufferedAmount == 6000)
        connection.send([.binary(Data(count: 6000))])
        let (_, closure) = await drainUntilClosed(events)
        #expect(closure?.error?.code == .limitExceeded)
        #expect(connection.bufferedAmount == 0)
    }
}

@Suite("WebSocketTransport protocol duties")
struct TransportProtocolDutyTests {
    @Test("a ping from the server is answered with a masked pong carrying the same payload")
    func answersPings() async throws {
        let pong = EventQueue<[UInt8]>()
        let server = try RawServer { peer in
            peer.acceptUpgrade()
            peer.write([0x89, 0x03] + Array("abc".utf8))
            var header = [UInt8](repeating: 0, count: 2)
            guard read(peer.fd, &header, 2) == 2 else { return pong.push([]) }
            let length = Int(header[1] & 0x7F)
            var rest = [UInt8](repeating: 0, count: 4 + length)
            var got = 0
            while got < rest.count {
                let count = rest[got...].withUnsafeMutableBytes { read(peer.fd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                got += count
            }
            let key = Array(rest[0..<4])
            let payload = rest[4...].enumerated().map { $0.element ^ key[$0.offset % 4] }
            pong.push([header[0], header[1] & 0x80] + payload)
            peer.waitForRelease()
        }
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport().open(ConnectionRequest(url: server.url)) { events.push($0) }
        let answer = await pong.next()
        #expect(answer == [0x8A, 0x80] + Array("abc".utf8))  // FIN+pong, masked, same payload
        connection.abort()
        _ = await drainUntilClosed(events)
    }

    @Test("sends after close are ignored and the handler hears exactly one closed")
    func nothingAfterClose() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport().open(ConnectionRequest(url: server.url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        connection.close(code: 1000, reason: "")
        connection.send([.text("too late")])
        connection.close(code: 1001, reason: "again")  // the first close wins
        let (frames, closure) = await drainUntilClosed(events)
        #expect(frames.isEmpty)
        #expect(closure?.kind == .closedLocally(code: 1000, reason: ""))
        #expect(await events.next(timeout: 0.3) == nil)
    }
}

@Suite("WebSocketTransport ordering at the end of a connection")
struct TransportEndingOrderTests {
    @Test("a reply to the last message before a protocol error is written before our close frame")
    func replyBeforeFailureClose() async throws {
        let written = EventQueue<[UInt8]>()
        let server = try RawServer { peer in
            peer.acceptUpgrade()
            // "a", then a frame with RSV1 set (no extension negotiated): one write, so one read.
            peer.write([0x81, 0x01, 0x61, 0xC1, 0x01, 0x62])
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let count = read(peer.fd, &buffer, buffer.count)
                if count <= 0 { break }
                received += buffer[0..<count]
            }
            written.push(received)
        }
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let connection = Locked<(any TransportConnection)?>(nil)
        let opened = WebSocketTransport().open(ConnectionRequest(url: server.url)) { event in
            if case .received(let frames) = event { connection.withLock { $0 }?.send(frames) }  // echo
            events.push(event)
        }
        connection.withLock { $0 = opened }
        let (frames, closure) = await drainUntilClosed(events)
        #expect(frames == [.text("a")])
        #expect(closure?.error?.code == .protocolViolation)
        let bytes = try #require(await written.next())
        // First frame: masked text "a" (2 header bytes, 4 mask bytes, 1 payload); then the close frame.
        #expect(bytes.count >= 7 + 2)
        #expect(bytes.first == 0x81)
        #expect(bytes.count > 7 && bytes[7] == 0x88)
    }
}
