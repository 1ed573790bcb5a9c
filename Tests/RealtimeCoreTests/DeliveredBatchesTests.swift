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

    @Test("an events() consumer leaves what it took for the socket's thread before it waits; a lone event it frees itself")
    func takenEventsReleasedByTheSocketsThread() async throws {
        let harness = EngineHarness(recordsEvents: false)
        try await harness.session.connect()
        let held = harness.session.engine.deliveredBatches
        let events = harness.session.events("tick")
        let peer = harness.peers[0]
        for index in 0..<3 { peer.send(text: #"{"t":"ev","name":"tick","data":\#(index)}"#) }
        var iterator = events.makeAsyncIterator()
        for expected in 0..<3 { #expect(await iterator.next()?.data == .integer(Int64(expected))) }
        #expect(held.count == 0)  // taken, but the consumer has not asked past them yet

        let fourth = Task {
            var waiting = events.makeAsyncIterator()  // the same stream: its own iterator takes the same events
            return await waiting.next()
        }
        await eventually("the consumer waits") { events.waitingConsumerCount == 1 }
        #expect(held.count == 1)  // the three taken, left before waiting
        peer.send(text: #"{"t":"ev","name":"tick","data":3}"#)  // the socket's next input releases them
        #expect(held.count == 0)
        #expect(await fourth.value?.data == 3)

        let fifth = Task {
            var waiting = events.makeAsyncIterator()  // the same stream: its own iterator takes the same events
            return await waiting.next()
        }
        await eventually("the consumer waits again") { events.waitingConsumerCount == 1 }
        #expect(held.count == 0)  // one event between two waits: freed by the consumer
        peer.send(text: #"{"t":"ev","name":"tick","data":4}"#)
        #expect(await fifth.value?.data == 4)

        // A consumer that keeps finding events waiting retires them every `retireBatch`; an idle socket's
        // timer releases them.
        let count = EventStreamBuffer.retireBatch
        for index in 0..<count { peer.send(text: #"{"t":"ev","name":"tick","data":\#(index)}"#) }
        for _ in 0..<count { _ = await iterator.next() }
        #expect(held.count == 1)
        harness.clock.advance(by: DeliveredBatches.idleRelease)
        #expect(held.count == 0)
    }
}
