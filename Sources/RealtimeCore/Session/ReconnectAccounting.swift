/// The session's count of reconnect attempts against its `ReconnectPolicy`: how many attempts since the
/// last stable connection, since when the session has been failing, and what to do when a connection ends.
///
/// A value owned by `SessionCore`; times are the engine clock's readings, passed in.
struct ReconnectAccounting: Sendable {
    /// What to do after a connection, or an attempt, ended.
    enum Decision: Equatable, Sendable {
        /// The policy's limits are reached; `reason` says which, for the session's failure.
        case giveUp(reason: String)
        /// The network path is gone: wait for it without spending an attempt.
        case waitForNetwork
        /// Attempt number `attempt` (from 1) after `delay`.
        case retry(attempt: Int, delay: Duration)
    }

    private let policy: ReconnectPolicy
    private var random: EngineRandom
    /// Attempts since the session last connected stably (or the app asked to connect); the dialect sees it
    /// when building the next request.
    private(set) var attempt = 0
    /// When the current run of failures began, for the policy's `maximumElapsed`.
    private var firstFailureAt: Duration?

    init(policy: ReconnectPolicy, random: RandomSource) {
        self.policy = policy
        self.random = EngineRandom(random)
    }

    /// How long a connection must stay up before the count starts over; `nil` when at once.
    var stabilityWindow: Duration? { policy.stabilityWindow > .zero ? policy.stabilityWindow : nil }

    /// A fresh count: the app asked to connect, asked to retry now, or a connection proved stable.
    mutating func startOver() {
        attempt = 0
        firstFailureAt = nil
    }

    /// Decides the next step after a connection ended at `now`. `skipDelayWhenFresh` retries at once when
    /// no attempt has failed since the last stable connection (a server asking to reconnect again and again
    /// still gets the backoff); `minimum` bounds the drawn delay from below.
    mutating func next(at now: Duration, minimum: Duration, skipDelayWhenFresh: Bool,
                       networkAvailable: Bool) -> Decision {
        if firstFailureAt == nil { firstFailureAt = now }
        guard policy.allowsAttempt(attempt, elapsed: now - (firstFailureAt ?? now)) else {
            return .giveUp(reason: policy.isEnabled
                ? "gave up after \(attempt) reconnect attempts"
                : "the connection ended and reconnection is disabled")
        }
        // Checked after the limits, so a session that has run out of time fails even without a network.
        guard networkAvailable else { return .waitForNetwork }
        let immediately = skipDelayWhenFresh && attempt == 0
        let delay = immediately ? .zero : policy.delay(forAttempt: attempt, minimum: minimum, using: &random)
        attempt += 1
        return .retry(attempt: attempt, delay: delay)
    }
}
