import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// Wraps the in-memory transport and notes which `send` each connection got, with its frames.
final class SendRecordingTransport: RealtimeTransport {
    let inner: InMemoryTransport
    let calls = Locked<[(compress: Bool?, frames: [TransportFrame])]>([])

    init(_ inner: InMemoryTransport) { self.inner = inner }

    func open(_ request: ConnectionRequest, handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        Connection(inner.open(request, handler: handler), calls: calls)
    }

    final class Connection: TransportConnection {
        let inner: any TransportConnection
        let calls: Locked<[(compress: Bool?, frames: [TransportFrame])]>

        init(_ inner: any TransportConnection, calls: Locked<[(compress: Bool?, frames: [TransportFrame])]>) {
            self.inner = inner
            self.calls = calls
        }

        func send(_ frames: [TransportFrame]) {
            calls.withLock { $0.append((nil, frames)) }
            inner.send(frames)
        }

        func send(_ frames: [TransportFrame], compress: Bool) {
            calls.withLock { $0.append((compress, frames)) }
            inner.send(frames)
        }

        func close(code: Int, reason: String) { inner.close(code: code, reason: reason) }
        func abort() { inner.abort() }
        func setReadingPaused(_ paused: Bool) { inner.setReadingPaused(paused) }
    }
}

@Suite("Sending with compress: false")
struct SendCompressionTests {
    @Test("compress: false reaches the transport as send(_:compress: false); other sends stay send(_:)")
    func flagReachesTransport() async throws {
        let inner = InMemoryTransport(autoAccept: false)
        inner.onOpen { peer in
            ScriptedPeer(EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])]).attach(to: peer)
        }
        let transport = SendRecordingTransport(inner)
        let clock = ManualClock()
        let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                      options: SessionOptions(delivery: .inline, clock: clock, randomSource: .seeded(1)))
        defer { session.disconnect() }
        let room = session.channel("room")
        try await session.connect()
        try await room.subscribed()
        try await room.send("secret", arguments: ["token"], compress: false)
        try await room.send("plain", arguments: [1])
        // A request too; the test dialect's server never answers, so its deadline ends it.
        let asking = Task { try await room.request("ask", arguments: ["token"], timeout: .seconds(1), compress: false) }
        await eventually("the request written") { transport.calls.withLock { $0.count } == 4 }
        clock.advance(by: .seconds(1))
        await #expect(throws: RealtimeError.self) { try await asking.value }
        let calls = transport.calls.withLock { $0 }
        #expect(calls.map(\.compress) == [nil, false, nil, false])
        #expect(calls.map(\.frames.count) == [1, 1, 1, 1])
        #expect(calls[1].frames.first?.textValue?.contains("secret") == true)
        #expect(calls[3].frames.first?.textValue?.contains(#""t":"req""#) == true)
    }
}

extension TransportFrame {
    fileprivate var textValue: String? { if case .text(let text) = self { text } else { nil } }
}
