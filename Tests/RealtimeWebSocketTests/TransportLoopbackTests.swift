import Foundation
import RealtimeCore
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
