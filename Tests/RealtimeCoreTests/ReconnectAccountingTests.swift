@testable import RealtimeCore
import Testing

@Suite("ReconnectAccounting")
struct ReconnectAccountingTests {
    private let steady = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(8),
                                         jitter: .none)

    @Test("each retry counts one attempt and draws the policy's delay for it")
    func countsAndDelays() {
        var accounting = ReconnectAccounting(policy: steady, random: .seeded(1))
        let decisions = (0..<4).map { _ in
            accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
        }
        #expect(decisions == [.retry(attempt: 1, delay: .seconds(1)), .retry(attempt: 2, delay: .seconds(2)),
                              .retry(attempt: 3, delay: .seconds(4)), .retry(attempt: 4, delay: .seconds(8))])
        #expect(accounting.attempt == 4)
    }

    @Test("a delay is never below the minimum the dialect asks for")
    func minimum() {
        var accounting = ReconnectAccounting(policy: steady, random: .seeded(1))
        let decision = accounting.next(at: .zero, minimum: .seconds(5), skipDelayWhenFresh: false,
                                       networkAvailable: true)
        #expect(decision == .retry(attempt: 1, delay: .seconds(5)))
    }

    @Test("an immediate reconnect skips the delay only while no attempt has failed")
    func immediateOnlyWhenFresh() {
        var accounting = ReconnectAccounting(policy: steady, random: .seeded(1))
        #expect(accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: true, networkAvailable: true)
            == .retry(attempt: 1, delay: .zero))
        #expect(accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: true, networkAvailable: true)
            == .retry(attempt: 2, delay: .seconds(2)))
    }

    @Test("starting over resets the count and the failure clock")
    func startOver() {
        let policy = ReconnectPolicy(jitter: .none, maximumAttempts: 1)
        var accounting = ReconnectAccounting(policy: policy, random: .seeded(1))
        _ = accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
        accounting.startOver()
        #expect(accounting.attempt == 0)
        #expect(accounting.next(at: .seconds(100), minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
            == .retry(attempt: 1, delay: .seconds(1)))
    }

    @Test("maximumAttempts gives up once that many attempts were made")
    func maximumAttempts() {
        let policy = ReconnectPolicy(jitter: .none, maximumAttempts: 2)
        var accounting = ReconnectAccounting(policy: policy, random: .seeded(1))
        for _ in 0..<2 {
            _ = accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
        }
        #expect(accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
            == .giveUp(reason: "gave up after 2 reconnect attempts"))
    }

    @Test("maximumElapsed counts from the first failure, not from each attempt")
    func maximumElapsed() {
        let policy = ReconnectPolicy(jitter: .none, maximumElapsed: .seconds(10))
        var accounting = ReconnectAccounting(policy: policy, random: .seeded(1))
        #expect(accounting.next(at: .seconds(50), minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
            == .retry(attempt: 1, delay: .seconds(1)))
        #expect(accounting.next(at: .seconds(60), minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
            == .retry(attempt: 2, delay: .seconds(2)))
        #expect(accounting.next(at: .seconds(61), minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
            == .giveUp(reason: "gave up after 2 reconnect attempts"))
    }

    @Test("a disabled policy gives up at the first end")
    func disabled() {
        var accounting = ReconnectAccounting(policy: .never, random: .seeded(1))
        #expect(accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: true, networkAvailable: true)
            == .giveUp(reason: "the connection ended and reconnection is disabled"))
    }

    @Test("without a network it waits and spends no attempt, but the limits still apply")
    func waitsForNetwork() {
        let policy = ReconnectPolicy(jitter: .none, maximumElapsed: .seconds(10))
        var accounting = ReconnectAccounting(policy: policy, random: .seeded(1))
        #expect(accounting.next(at: .zero, minimum: .zero, skipDelayWhenFresh: false, networkAvailable: false)
            == .waitForNetwork)
        #expect(accounting.attempt == 0)
        #expect(accounting.next(at: .seconds(11), minimum: .zero, skipDelayWhenFresh: false, networkAvailable: false)
            == .giveUp(reason: "gave up after 0 reconnect attempts"))
    }

    @Test("the stability window is nil when a handshake counts as stable at once")
    func stabilityWindow() {
        #expect(ReconnectAccounting(policy: steady, random: .system).stabilityWindow == .seconds(10))
        let instant = ReconnectPolicy(stabilityWindow: .zero)
        #expect(ReconnectAccounting(policy: instant, random: .system).stabilityWindow == nil)
    }

    @Test("the same seed draws the same jittered delays")
    func seededJitter() {
        let policy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(30))
        var first = ReconnectAccounting(policy: policy, random: .seeded(9))
        var second = ReconnectAccounting(policy: policy, random: .seeded(9))
        for _ in 0..<5 {
            #expect(first.next(at: .zero, minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true)
                == second.next(at: .zero, minimum: .zero, skipDelayWhenFresh: false, networkAvailable: true))
        }
    }
}
