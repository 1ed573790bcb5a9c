import Foundation
import RealtimeCore
import RealtimeTesting
import Testing

@Suite("In-memory transport")
struct InMemoryTransportTests {
    @Test("a connection and its peer are freed with the transport (no peer ↔ client-side cycle)")
    func noRetainCycle() {
        weak var peer: InMemoryPeer?
        weak var connection: AnyObject?
        do {
            let transport = InMemoryTransport()
            let opened = transport.open(ConnectionRequest(url: URL(string: "ws://127.0.0.1:9")!)) { _ in }
            opened.send([.text("hello")])
            peer = transport.lastPeer
            connection = opened
            #expect(peer?.receivedTexts == ["hello"])
        }
        #expect(peer == nil)
        #expect(connection == nil)
    }
}
