import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// Dials on its loop and reports what dialing came to, once.
private final class Dialer: LoopHandler {
    private var socket: LoopSocket
    private let results: EventQueue<String>

    init(token: UInt64, results: EventQueue<String>) {
        socket = LoopSocket(token: token)
        self.results = results
    }

    func dial(_ addresses: [SocketAddress], in context: LoopContext) {
        report(socket.dial(addresses, in: context), in: context)
    }

    func handle(_ event: SelectorEvent, in context: LoopContext) {
        report(socket.dialingEvent(event, in: context), in: context)
    }

    func loopStopping(in context: LoopContext) {
        socket.close(in: context)
    }

    private func report(_ dialing: LoopSocket.Dialing, in context: LoopContext) {
        switch dialing {
        case .inProgress: return
        case .connected: results.push("connected")
        case .failed(let error): results.push("failed: \(error.message)")
        }
        socket.close(in: context)
        context.detach(socket.token)
    }
}

@Suite("A loop socket dialing a host's addresses")
struct LoopSocketTests {
    /// A loopback port that refuses connections: bound for a moment to get a free number, never listened on.
    private static func refusingPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func dial(_ addresses: [SocketAddress], group: EventLoopGroup) async -> String? {
        let results = EventQueue<String>()
        let loop = group.next()
        let token = loop.makeToken()
        loop.execute { context in
            let dialer = Dialer(token: token, results: results)
            context.attach(dialer, token: token)
            dialer.dial(addresses, in: context)
        }
        return await results.next()
    }

    @Test("a refused address is passed over for the next one, which connects")
    func nextAddressAfterARefusal() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let refused = try SocketIO.resolve(host: "127.0.0.1", port: try Self.refusingPort())
        let listening = try SocketIO.resolve(host: "127.0.0.1", port: server.port)
        #expect(await Self.dial(refused + listening, group: group) == "connected")
    }

    @Test("when every address refuses, the last refusal is the error; no address at all is one too")
    func everyAddressRefuses() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let first = try Self.refusingPort()
        let second = try Self.refusingPort()
        let addresses = try SocketIO.resolve(host: "127.0.0.1", port: first)
            + SocketIO.resolve(host: "127.0.0.1", port: second)
        #expect(await Self.dial(addresses, group: group) == "failed: connection refused by 127.0.0.1:\(second)")
        #expect(await Self.dial([], group: group) == "failed: no address to connect to")
    }
}
