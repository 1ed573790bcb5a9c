@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("ReconnectPolicy")
struct ReconnectPolicyTests {
    @Test("every delay lies within [minimum, cap]")
    func bounds() {
        var generator = SeededRandomNumberGenerator(seed: 42)
        let policy = ReconnectPolicy(initialDelay: .milliseconds(500), multiplier: 2, maximumDelay: .seconds(30))
        for attempt in 0..<40 {
            for minimum in [Duration.zero, .seconds(1), .milliseconds(250)] {
                let delay = policy.delay(forAttempt: attempt, minimum: minimum, using: &generator)
                #expect(delay >= minimum)
                #expect(delay <= max(minimum, .seconds(30)))
                #expect(delay <= max(minimum, policy.envelope(forAttempt: attempt)))
            }
        }
    }

    @Test("the mean of a full-jitter step is within 5% of half its envelope over 10,000 samples")
    func fullJitterMean() {
        var generator = SeededRandomNumberGenerator(seed: 7)
        let policy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(60))
        for attempt in [0, 3, 10] {
            let envelope = policy.envelope(forAttempt: attempt).seconds
            var sum = 0.0
            for _ in 0..<10_000 { sum += policy.delay(forAttempt: attempt, using: &generator).seconds }
            let mean = sum / 10_000
            #expect(abs(mean - envelope / 2) <= 0.05 * envelope / 2, "attempt \(attempt): mean \(mean) vs \(envelope / 2)")
        }
    }

    @Test("the envelope grows by the multiplier and stops at the cap")
    func envelope() {
        let policy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(5), jitter: .none)
        var generator = SeededRandomNumberGenerator(seed: 1)
        let delays = (0..<5).map { policy.delay(forAttempt: $0, using: &generator) }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
    }

    @Test("proportional jitter (Socket.IO's randomization factor) stays within ±factor and the cap")
    func proportional() {
        let policy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(5),
                                     jitter: .proportional(0.5))
        var generator = SeededRandomNumberGenerator(seed: 3)
        var sawBelow = false
        var sawAbove = false
        for _ in 0..<2_000 {
            let delay = policy.delay(forAttempt: 1, using: &generator).seconds
            #expect(delay >= 1.0 && delay <= 3.0)
            sawBelow = sawBelow || delay < 1.9
            sawAbove = sawAbove || delay > 2.1
            #expect(policy.delay(forAttempt: 6, using: &generator).seconds <= 5.0)
        }
        #expect(sawBelow && sawAbove)
    }

    @Test("attempt and time limits, and a disabled policy")
    func limits() {
        let policy = ReconnectPolicy(maximumAttempts: 3, maximumElapsed: .seconds(60))
        #expect(policy.allowsAttempt(2, elapsed: .seconds(10)))
        #expect(!policy.allowsAttempt(3, elapsed: .seconds(10)))
        #expect(!policy.allowsAttempt(0, elapsed: .seconds(61)))
        #expect(!ReconnectPolicy.never.allowsAttempt(0, elapsed: .zero))
    }
}
