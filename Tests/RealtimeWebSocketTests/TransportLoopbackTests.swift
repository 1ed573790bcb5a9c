import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("WebSocketTransport over loopback")
struct TransportLoopbackTests {
    @Test("open, echo in order, close with a handshake")
    func openEchoClose() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let transport = WebSocketTransport()
        let events = EventQueue<TransportEvent>()
        let connection = transport.open(ConnectionRequest(url: server.url, subprotocols: [])) { events.push($0) }
        let first = await events.next()
        #expect(first?.isOpened == true)
        let sent: [TransportFrame] = (0..<100).map { .text("message \($0)") } + [.binary(Data([0, 1, 2, 255]))]
        connection.send(sent)
        var received: [TransportFrame] = []
        while received.count < sent.count, let event = await events.next() {
            received += event.frames ?? []
        }
        #expect(received == sent)
        connection.close(code: 1000, reason: "bye")
        let (_, closure) = await drainUntilClosed(events)
        #expect(closure?.kind == .closedLocally(code: 1000, reason: "bye"))
        #expect(closure?.duringOpen == false)
    }
}

@Suite("WebSocketTransport behaviour")
struct TransportBehaviourTests {
    @Test("a close started by the server is reported as closedByPeer with its code and reason")
    func peerClose() async throws {
        let server = try makeEchoServer(react: { connection, frame in
            guard frame == .text("please close") else { return false }
            connection.close(code: 4001, reason: "as you wish")
            return true
        })
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport().open(ConnectionRequest(url: server.url)) { events.push($0) }
        connection.send([.text("echo me"), .text("please close")])
        let (frames, closure) = await drainUntilClosed(events)
        #expect(frames == [.text("echo me")])
        #expect(closure?.kind == .closedByPeer(code: 4001, reason: "as you wish"))
        #expect(closure?.closeCode == 4001)
    }

    @Test("ping returns a round trip; the server answers pings automatically")
    func ping() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport().openConnection(ConnectionRequest(url: server.url)) { events.push($0) }
        // Sent before the upgrade finishes: goes out right after it.
        async let early = connection.ping()
        let first = try await early
        let second = try await connection.ping()
        #expect(first > .zero && first < .seconds(10))
        #expect(second > .zero && second < .seconds(10))
        connection.abort()
        let (_, closure) = await drainUntilClosed(events)
        #expect(closure?.kind == .closedLocally(code: 1006, reason: "aborted"))
        await #expect(throws: RealtimeError.self) { try await connection.ping() }
    }

    @Test("the platform's default transport opens connections that ping, through WebSocketPinging")
    func pingThroughProtocol() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let opened = WebSocketTransport.platformDefault().open(ConnectionRequest(url: server.url)) { events.push($0) }
        let connection = try #require(opened as? any WebSocketPinging)
        let roundTrip = try await connection.ping()
        #expect(roundTrip > .zero && roundTrip < .seconds(10))
        connection.close(code: 1000, reason: "")
        let (_, closure) = await drainUntilClosed(events)
        #expect(closure?.kind == .closedLocally(code: 1000, reason: ""))
    }

    @Test("a ping without a pong times out with .timedOut")
    func pingTimeout() async throws {
        let server = try RawServer { peer in
            peer.acceptUpgrade()
            peer.waitForRelease()  // reads nothing, answers nothing
        }
        defer { server.stop() }
        let transport = WebSocketTransport(configuration: .init(pingTimeout: .milliseconds(100)))
        let events = EventQueue<TransportEvent>()
        let connection = transport.openConnection(ConnectionRequest(url: server.url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        do {
            _ = try await connection.ping()
            Issue.record("a ping with no pong returned")
        } catch let error as RealtimeError {
            #expect(error.code == .timedOut)
        }
        connection.abort()
    }

    @Test("the close handshake gives up after the close timeout when the peer never answers")
    func closeTimeout() async throws {
        let server = try RawServer { peer in
            peer.acceptUpgrade()
            peer.waitForRelease()
        }
        defer { server.stop() }
        let transport = WebSocketTransport(configuration: .init(closeTimeout: .milliseconds(100)))
        let events = EventQueue<TransportEvent>()
        let connection = transport.open(ConnectionRequest(url: server.url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        connection.close(code: 1001, reason: "leaving")
        let closure = await events.next(timeout: 5)?.closure
        #expect(closure?.kind == .closedLocally(code: 1001, reason: "leaving"))
    }

    @Test("paused reading delivers nothing until resumed, then everything in order, on epoll and poll",
          arguments: [ReadinessAPI.epoll, .poll])
    func pausedReading(_ readiness: ReadinessAPI) async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let group = try EventLoopGroup(threadCount: 1, readiness: readiness)
        defer { group.shutdown() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport(group: group).open(ConnectionRequest(url: server.url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        connection.setReadingPaused(true)
        connection.send((0..<50).map { .text("m\($0)") })
        #expect(await events.next(timeout: 0.3) == nil)
        connection.setReadingPaused(false)
        var received: [TransportFrame] = []
        while received.count < 50, let event = await events.next() { received += event.frames ?? [] }
        #expect(received == (0..<50).map { .text("m\($0)") })
        connection.abort()
    }

    @Test("a close while reading is paused still reads the peer's reply instead of waiting out the close timeout")
    func closeWhilePaused() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let transport = WebSocketTransport(configuration: .init(closeTimeout: .seconds(60)))
        let events = EventQueue<TransportEvent>()
        let connection = transport.open(ConnectionRequest(url: server.url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        connection.setReadingPaused(true)
        connection.send([.text("unread")])
        connection.close(code: 1000, reason: "done")
        // With a 60 s close timeout, a closure within 10 s can only come from the server's close frame.
        var closure: TransportClosure?
        while closure == nil, let event = await events.next(timeout: 10) { closure = event.closure }
        #expect(closure?.kind == .closedLocally(code: 1000, reason: "done"))
    }

    @Test("IPv6 loopback and a name resolved through getaddrinfo (localhost)", arguments: ["[::1]", "localhost"])
    func addressFamilies(host: String) async throws {
        let listenHost = host == "[::1]" ? "::1" : "127.0.0.1"
        let server = try makeEchoServer(configuration: .init(host: listenHost))
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport().open(
            ConnectionRequest(url: URL(string: "ws://\(host):\(server.port)/x")!)) { events.push($0) }
        connection.send([.text("hello")])
        #expect(await events.next()?.isOpened == true)
        #expect(await events.next()?.frames == [.text("hello")])
        connection.close(code: 1000, reason: "")
        _ = await drainUntilClosed(events)
    }

    @Test("the server sees path, query and subprotocols; the client sees the chosen subprotocol")
    func upgradeDetails() async throws {
        let seen = Locked<WebSocketServerHandshake.Request?>(nil)
        let server = try makeEchoServer(shouldUpgrade: { request in
            seen.withLock { $0 = request }
            return .accept(subprotocol: request.subprotocols.last, headers: [HTTPHeader("X-Server", "loopback")])
        })
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let request = ConnectionRequest(url: URL(string: "ws://127.0.0.1:\(server.port)/cable?token=abc")!,
                                        headers: [HTTPHeader("Cookie", "a=b")], subprotocols: ["v1", "v2"],
                                        origin: "http://localhost")
        let connection = WebSocketTransport().open(request) { events.push($0) }
        guard case .opened(let info) = await events.next() else {
            Issue.record("not opened")
            return
        }
        #expect(info.subprotocol == "v2")
        #expect(info.headers.contains(HTTPHeader("x-server", "loopback")))
        let upgrade = seen.withLock { $0 }
        #expect(upgrade?.path == "/cable")
        #expect(upgrade?.query == "token=abc")
        #expect(upgrade?.subprotocols == ["v1", "v2"])
        #expect(upgrade?.origin == "http://localhost")
        #expect(upgrade?.value(forHeader: "Cookie") == "a=b")
        connection.abort()
    }

    @Test("a large binary message and many small ones arrive intact")
    func largeAndMany() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport().open(ConnectionRequest(url: server.url)) { events.push($0) }
        let big = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let sent: [TransportFrame] = [.binary(big)] + (0..<5000).map { .text(String(repeating: "é", count: $0 % 40)) }
        connection.send(sent)
        var received: [TransportFrame] = []
        var batches = 0
        // Generous: under the thread sanitizer, 3 MB of masking takes seconds.
        while received.count < sent.count, let event = await events.next(timeout: 120) {
            if let frames = event.frames {
                received += frames
                batches += 1
            }
        }
        #expect(received.count == sent.count)
        #expect(received.first == sent.first)
        #expect(received.elementsEqual(sent), "the echoed frames differ from what was sent")
        #expect(batches < sent.count)  // delivered in per-read batches, not one call per message
        connection.abort()
    }
}
