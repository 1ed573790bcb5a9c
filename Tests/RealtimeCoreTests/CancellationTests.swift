@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Task cancellation")
struct CancellationTests {
    @Test("a cancelled send still in the buffer is withdrawn and never written")
    func bufferedSendWithdrawn() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        let sending = Task { try await room.send("hello", "world") }
        await eventually("buffered") { harness.session.bufferedSendCount == 1 }
        sending.cancel()
        await #expect(throws: CancellationError.self) { try await sending.value }
        #expect(harness.session.bufferedSendCount == 0)
        try await harness.session.connect()
        try await room.subscribed()
        #expect(!texts(harness.peers[0]).contains { $0.contains("hello") })
    }

    @Test("a cancelled request that was written is forgotten: the dialect cancels it, a late answer is ignored")
    func writtenRequestForgotten() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        try await room.subscribed()
        let asking = Task { try await room.request("sum", arguments: [1, 2]) }
        await eventually("written") { texts(harness.peers[0]).contains { $0.contains(#""t":"req""#) } }
        asking.cancel()
        await #expect(throws: CancellationError.self) { try await asking.value }
        harness.peers[0].send(text: #"{"t":"ack","id":1,"args":["late"]}"#)
        #expect(harness.errorLog.isEmpty)
        // The slot is free: a new request gets its own answer.
        let again = Task { try await room.request("sum", arguments: [3]) }
        await eventually("second written") { texts(harness.peers[0]).filter { $0.contains(#""t":"req""#) }.count == 2 }
        harness.peers[0].send(text: #"{"t":"ack","id":2,"args":[3]}"#)
        #expect(try await again.value == [3])
    }

    @Test("a cancelled connect() stops connecting; a cancelled subscribed() wait leaves the channel joined")
    func connectAndWaitCancelled() async throws {
        let harness = EngineHarness(script: { _ in nil })   // accepts, never welcomes
        let connecting = Task { try await harness.session.connect() }
        await eventually("connecting") { harness.peers.count == 1 }
        connecting.cancel()
        await #expect(throws: CancellationError.self) { try await connecting.value }
        #expect(harness.session.state == .disconnected)
        harness.clock.advance(by: .seconds(120))
        #expect(harness.peers.count == 1)

        let room = harness.session.channel("room")
        let waiting = Task { try await room.subscribed() }
        await Task.yield()
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(room.state == .pending)
    }

    @Test("a task cancelled before the call throws at once and queues nothing")
    func alreadyCancelled() async throws {
        let harness = EngineHarness()
        let room = harness.session.channel("room")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await room.send("x", "y")
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(harness.session.bufferedSendCount == 0)
    }
}
