import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// The `poll(2)` loop and pipe waker that Apple platforms use, run here on Linux: clients and servers on
/// `poll` groups. Paused reading and abrupt peers run on both APIs in TransportLoopbackTests and
/// TransportErrorTests.
@Suite("Event loops on poll(2)")
struct PollReadinessTests {
    func pollGroup() throws -> EventLoopGroup {
        let group = try EventLoopGroup(threadCount: 1, readiness: .poll)
        #expect(group.loops.allSatisfy { $0.readiness == .poll })
        return group
    }

    /// An echo server and a client transport, each on its own poll loop, stopped after `body`.
    func withPollEcho(server configuration: WebSocketServer.Configuration = .init(),
                      client: WebSocketTransport.Configuration = .init(),
                      _ body: (WebSocketServer, WebSocketTransport) async throws -> Void) async throws {
        let serverGroup = try pollGroup()
        defer { serverGroup.shutdown() }
        let server = try makeEchoServer(group: serverGroup, configuration: configuration)
        defer { server.stop() }
        let clientGroup = try pollGroup()
        defer { clientGroup.shutdown() }
        try await body(server, WebSocketTransport(configuration: client, group: clientGroup))
    }

    /// Sends `sent`, expects it echoed in order, then closes with a handshake.
    func echo(_ sent: [TransportFrame], over transport: WebSocketTransport, to url: URL) async throws {
        let events = EventQueue<TransportEvent>()
        let connection = transport.openConnection(ConnectionRequest(url: url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        connection.send(sent)
        var received: [TransportFrame] = []
        while received.count < sent.count, let event = await events.next() { received += event.frames ?? [] }
        #expect(received == sent)
        #expect(try await connection.ping() > .zero)
        connection.close(code: 1000, reason: "done")
        let (_, closure) = await drainUntilClosed(events)
        #expect(closure?.kind == .closedLocally(code: 1000, reason: "done"))
    }

    @Test("ws echo in order, a ping, then a clean close handshake, with both ends on poll")
    func echoAndClose() async throws {
        try await withPollEcho { server, transport in
            let sent: [TransportFrame] = (0..<500).map { .text("message \($0)") } + [.binary(Data(count: 1 << 20))]
            try await echo(sent, over: transport, to: server.url)
        }
    }

    @Test("wss echo with both ends on poll, records read directly and by OpenSSL",
          arguments: [TLSRecordReading.directDecryptionOptimization, .openSSL])
    func echoOverTLS(reading: TLSRecordReading) async throws {
        let certificates = try TLSTestCertificates.shared.get()
        let server = WebSocketServer.Configuration(
            tls: TLSServerConfiguration(certificateChain: .file(certificates.leafCertificate),
                                        privateKey: .file(certificates.leafKey), recordReading: reading))
        let client = WebSocketTransport.Configuration(
            tls: TLSConfiguration(additionalTrustRoots: [.file(certificates.caCertificate)], recordReading: reading))
        try await withPollEcho(server: server, client: client) { server, transport in
            let sent: [TransportFrame] = (0..<1_000).map { .text("secret \($0)") } + [.binary(Data(count: 300_000))]
            try await echo(sent, over: transport, to: URL(string: "wss://localhost:\(server.port)/")!)
        }
    }

    @Test("200 connections share one poll loop; each gets its own echoes back")
    func manyConnectionsOneLoop() async throws {
        try await withPollEcho { server, transport in
            let count = 200
            let queues = (0..<count).map { _ in EventQueue<TransportEvent>() }
            let connections = (0..<count).map { index in
                transport.open(ConnectionRequest(url: server.url)) { queues[index].push($0) }
            }
            for (index, connection) in connections.enumerated() {
                connection.send([.text("to \(index)"), .text("again \(index)")])
            }
            for (index, queue) in queues.enumerated() {
                #expect(await queue.next()?.isOpened == true)
                var frames: [TransportFrame] = []
                while frames.count < 2, let event = await queue.next() { frames += event.frames ?? [] }
                #expect(frames == [.text("to \(index)"), .text("again \(index)")])
            }
            for connection in connections { connection.close(code: 1000, reason: "") }
            for queue in queues {
                let (_, closure) = await drainUntilClosed(queue)
                #expect(closure?.kind == .closedLocally(code: 1000, reason: ""))
            }
        }
    }

    @Test("loop timers and cross-thread tasks run on a poll loop woken through its pipe")
    func timersAndWakeups() async throws {
        let group = try pollGroup()
        defer { group.shutdown() }
        let loop = group.next()
        let fired = EventQueue<String>()
        loop.execute { context in fired.push("\(type(of: context.selector))") }
        #expect(await fired.next() == "PollSelector")
        loop.execute { context in
            _ = context.schedule(after: .milliseconds(30)) { fired.push("timer") }
            let cancelled = context.schedule(after: .milliseconds(10)) { fired.push("cancelled") }
            context.cancelTimer(cancelled)
        }
        #expect(await fired.next() == "timer")
        for index in 0..<100 { loop.execute { _ in fired.push("task \(index)") } }
        for index in 0..<100 { #expect(await fired.next() == "task \(index)") }
        #expect(await fired.next(timeout: 0.1) == nil)
    }
}
