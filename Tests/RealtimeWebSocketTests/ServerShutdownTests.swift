import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// `WebSocketServer.shutdown`: clients get a close frame instead of a dropped socket, and the call returns
/// only when every connection has ended.
@Suite("WebSocketServer shutdown")
struct ServerShutdownTests {
    /// An echo server that counts the `.closed` events its handler saw.
    private func countingServer(_ configuration: WebSocketServer.Configuration = .init(),
                                closed: Locked<[TransportClosure]>) throws -> WebSocketServer {
        try WebSocketServer(configuration: configuration) { connection, event in
            switch event {
            case .opened: return
            case .received(let frames): connection.send(frames)
            case .closed(let closure): closed.withLock { $0.append(closure) }
            }
        }
    }

    private func openClient(_ url: URL) async -> (any TransportConnection, EventQueue<TransportEvent>) {
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport().open(ConnectionRequest(url: url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        return (connection, events)
    }

    @Test("every client gets close 1001; the call returns after every connection's .closed ran")
    func closesEveryClient() async throws {
        let closed = Locked<[TransportClosure]>([])
        let server = try countingServer(closed: closed)
        defer { server.stop() }
        var clients: [(any TransportConnection, EventQueue<TransportEvent>)] = []
        for _ in 0..<3 { clients.append(await openClient(server.url)) }
        #expect(server.connectionCount == 3)

        await server.shutdown()
        #expect(server.connectionCount == 0)
        // The server ends with our close code as closedLocally, once the client's answer came back.
        #expect(closed.withLock { $0.map(\.kind) }
                == Array(repeating: .closedLocally(code: 1001, reason: "server shutting down"), count: 3))
        for (_, events) in clients {
            let (_, closure) = await drainUntilClosed(events)
            #expect(closure?.kind == .closedByPeer(code: 1001, reason: "server shutting down"))
        }
    }

    @Test("a code and reason of the caller's; nothing is accepted afterwards")
    func customCodeThenRefuses() async throws {
        let closed = Locked<[TransportClosure]>([])
        let server = try countingServer(closed: closed)
        defer { server.stop() }
        let (client, events) = await openClient(server.url)
        await server.shutdown(code: 4200, reason: "restarting")
        #expect(await drainUntilClosed(events).closure?.kind == .closedByPeer(code: 4200, reason: "restarting"))
        withExtendedLifetime(client) {}   // a released connection would end on its own

        let late = EventQueue<TransportEvent>()
        _ = WebSocketTransport().open(ConnectionRequest(url: server.url)) { late.push($0) }
        let closure = await late.next()?.closure
        #expect(closure?.duringOpen == true, "a connection after shutdown was not refused: \(String(describing: closure))")
        #expect(closed.withLock { $0.count } == 1)
    }

    @Test("a client that never answers the close is dropped after the close timeout, and shutdown still returns")
    func unresponsiveClient() async throws {
        let closed = Locked<[TransportClosure]>([])
        let server = try countingServer(.init(closeTimeout: .milliseconds(200)), closed: closed)
        defer { server.stop() }
        let (answering, answeringEvents) = await openClient(server.url)
        let silent = try SilentClient(port: server.port)   // upgraded, then never reads again
        defer { SocketIO.closeFD(silent.fd) }
        #expect(server.connectionCount == 2)   // both upgrades were answered, so both are registered

        await server.shutdown()
        #expect(server.connectionCount == 0)
        #expect(closed.withLock { $0.count } == 2)
        #expect(await drainUntilClosed(answeringEvents).closure?.kind
                == .closedByPeer(code: 1001, reason: "server shutting down"))
        withExtendedLifetime(answering) {}
        // What the silent client was sent: the close frame (1001 and the reason), then the end of the stream.
        let reason = Array("server shutting down".utf8)
        #expect(silent.readToEnd() == [0x88, UInt8(2 + reason.count), 0x03, 0xE9] + reason)
    }

    @Test("with no connection it returns at once; stop() afterwards is harmless")
    func emptyServer() async throws {
        let server = try makeEchoServer()
        await server.shutdown()
        #expect(server.connectionCount == 0)
        server.stop()
    }
}

/// A raw TCP client that completes the upgrade and then reads nothing, so it never answers a close.
private struct SilentClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RealtimeError(.transportFailed, "connect failed") }
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // The 101 head, byte by byte so nothing after it is consumed.
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            head.append(byte)
            if head.suffix(4) == [13, 10, 13, 10] { break }
        }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            throw RealtimeError(.handshakeRejected, "no 101")
        }
    }

    /// Everything the server sent after the upgrade, up to its end of stream.
    func readToEnd() -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return bytes }
            bytes += buffer[0..<count]
        }
    }
}
