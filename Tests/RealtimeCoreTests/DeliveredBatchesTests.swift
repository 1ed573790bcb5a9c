@_spi(DialectAuthoring) @testable import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Delivered batches")
struct DeliveredBatchesTests {
    @Test("a delivered batch waits for the socket's next input to be released, or for the idle timer, unless it is too large to hold")
    func releasedByTheSocketsThread() async throws {
        let delivery = HeldDelivery()
        let transport = InMemoryTransport()
        let clock = ManualClock()
        let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                      options: SessionOptions(delivery: delivery.target, clock: clock))
        let runDelivery = delivery.runAll
        let count = Locked(0)
        session.on("m") { _ in count.withLock { $0 += 1 } }
        session.start()
        let peer = await transport.peer(0)
        let held = session.engine.deliveredBatches
        peer.send(text: #"{"t":"welcome"}"#)
        runDelivery()
        #expect(held.count == 0)  // state changes only: nothing of the socket's to free

        peer.send([.text(#"{"t":"ev","name":"m"}"#), .text(#"{"t":"ev","name":"m"}"#)])
        runDelivery()
        #expect(count.withLock { $0 } == 2)
        #expect(held.count == 1)
        peer.send(text: #"{"t":"ev","name":"m"}"#)  // the socket's next input releases it
        #expect(held.count == 0)
        runDelivery()
        #expect(held.count == 1)
        clock.advance(by: DeliveredBatches.idleRelease - .milliseconds(1))
        #expect(held.count == 1)
        clock.advance(by: .milliseconds(1))  // no input came: the timer releases it
        #expect(held.count == 0)

        let large = String(repeating: "x", count: DeliveredBatches.byteLimit)
        peer.send(text: #"{"t":"ev","name":"m","data":""# + large + #""}"#)
        #expect(held.count == 0)
        runDelivery()
        #expect(count.withLock { $0 } == 4)
        #expect(held.count == 0)  // over the limit: released on the delivery thread
        withExtendedLifetime(session) {}
    }
}
