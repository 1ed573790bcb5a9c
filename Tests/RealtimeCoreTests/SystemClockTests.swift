import Dispatch
import RealtimeCore
import Testing

@Suite("System clock")
struct SystemClockTests {
    @Test("a timer fires once after its delay, even when its handle is dropped; a cancelled one never fires")
    func firesOnceUnlessCancelled() async throws {
        let clock = SystemClock()
        let fired = Locked<[String]>([])
        let started = clock.now()
        let kept = clock.schedule(after: .milliseconds(20)) { fired.withLock { $0.append("kept") } }
        _ = clock.schedule(after: .milliseconds(20)) { fired.withLock { $0.append("dropped") } }
        let cancelled = clock.schedule(after: .milliseconds(20)) { fired.withLock { $0.append("cancelled") } }
        cancelled.cancel()
        try await Task.sleep(for: .milliseconds(300))
        #expect(fired.withLock { $0.sorted() } == ["dropped", "kept"])
        #expect(clock.now() - started >= .milliseconds(20))
        kept.cancel()  // after it fired: does nothing
        #expect(fired.withLock { $0.count } == 2)
    }

    @Test("cancelling lets go of what the action holds at once, not at its deadline")
    func cancelReleasesTheAction() async throws {
        final class Token: Sendable {}
        weak var held: Token?
        let timer: any ScheduledTimer
        do {
            let token = Token()
            held = token
            timer = SystemClock().schedule(after: .seconds(60)) { _ = token }
        }
        #expect(held != nil)
        timer.cancel()
        for _ in 0..<100 where held != nil { try await Task.sleep(for: .milliseconds(5)) }
        #expect(held == nil)
    }
}
