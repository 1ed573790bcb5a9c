@_spi(DialectAuthoring) @testable import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Engine timer queue")
struct EngineTimerQueueTests {
    @Test("the clock timer is armed only for an earlier deadline, and disarmed when no timer is left")
    func armsForTheEarliest() {
        var queue = EngineTimerQueue()
        #expect(queue.schedule(.liveness, serial: 1, at: .seconds(30)) == .seconds(30))
        #expect(queue.schedule(.stability, serial: 2, at: .seconds(40)) == nil)  // the armed one comes first
        #expect(queue.schedule(.handshake, serial: 3, at: .seconds(10)) == .seconds(10))
        #expect(queue.cancel(.handshake) == false)  // two left; the clock timer stays armed for 10 s
        #expect(queue.armedDeadline == .seconds(10))
        #expect(queue.cancel(.handshake) == false)  // not scheduled any more: nothing changes
        #expect(queue.cancel(.stability) == false)
        #expect(queue.cancel(.liveness) == true)
        #expect(queue.armedDeadline == nil)
        #expect(queue.heapCount == 0)
    }

    @Test("firing gives the due timers in deadline order, then scheduling order; cancelled and replaced ones are skipped")
    func firesInOrder() {
        var queue = EngineTimerQueue()
        _ = queue.schedule(.dialect(TimerKey(kind: .init("test.a"))), serial: 1, at: .seconds(5))
        _ = queue.schedule(.dialect(TimerKey(kind: .init("test.b"))), serial: 2, at: .seconds(3))
        _ = queue.schedule(.dialect(TimerKey(kind: .init("test.c"))), serial: 3, at: .seconds(5))
        _ = queue.schedule(.dialect(TimerKey(kind: .init("test.d"))), serial: 4, at: .seconds(1))
        _ = queue.schedule(.dialect(TimerKey(kind: .init("test.b"))), serial: 5, at: .seconds(4))  // replaces b at 3 s
        _ = queue.schedule(.reconnect, serial: 6, at: .seconds(9))
        _ = queue.cancel(.dialect(TimerKey(kind: .init("test.d"))))
        #expect(queue.armedDeadline == .seconds(1))

        let early = queue.fire(at: .seconds(1))  // d was cancelled: nothing due, armed again for b
        #expect(early.due.isEmpty)
        #expect(early.next == .seconds(4))
        let fired = queue.fire(at: .seconds(5))
        #expect(fired.due.map(\.serial) == [5, 1, 3])
        #expect(fired.next == .seconds(9))
        #expect(queue.count == 1)
        let last = queue.fire(at: .seconds(10))
        #expect(last.due.map(\.serial) == [6])
        #expect(last.next == nil)
        #expect(queue.armedDeadline == nil)
    }

    @Test("cancelled timers do not pile up in the heap until their deadlines")
    func compactsStaleEntries() {
        var queue = EngineTimerQueue()
        _ = queue.schedule(.liveness, serial: 0, at: .seconds(60))
        for index in 0..<10_000 {
            let timer = EngineTimer.dialect(TimerKey(kind: .init("test.guarantor"), serial: UInt64(index)))
            _ = queue.schedule(timer, serial: UInt64(index + 1), at: .seconds(5) + .milliseconds(index))
            _ = queue.cancel(timer)
        }
        #expect(queue.count == 1)
        #expect(queue.heapCount <= 2 * queue.count + 17)
        let fired = queue.fire(at: .seconds(60))
        #expect(fired.due.map(\.serial) == [0])
    }

    @Test("a session's timers share one clock timer: fifty requests in flight arm it at most once, and each times out at its own deadline")
    func sessionTimersShareOneClockTimer() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        let armedBefore = harness.clock.pendingCount
        let timedOut = Locked(0)
        for index in 1...50 {
            Task {
                do {
                    _ = try await room.request("q\(index)", timeout: .seconds(index))
                } catch let error as RealtimeError where error.code == .timedOut {
                    timedOut.withLock { $0 += 1 }
                }
            }
        }
        await eventually("fifty requests sent") {
            texts(harness.peers[0]).filter { $0.contains(#""t":"req""#) }.count == 50
        }
        #expect(harness.clock.pendingCount <= armedBefore + 1)  // one clock timer per deadline before
        harness.clock.advance(by: .seconds(10))
        await eventually("ten timed out") { timedOut.withLock { $0 } == 10 }
        harness.clock.advance(by: .milliseconds(999))
        #expect(timedOut.withLock { $0 } == 10)
        harness.clock.advance(by: .seconds(40))
        await eventually("all timed out") { timedOut.withLock { $0 } == 50 }
        #expect(harness.session.state == .connected)
    }
}
