/// When to try again after a connection ends: exponential backoff with jitter, bounded attempts and time.
///
/// A value type with no clock and no randomness of its own: ``delay(forAttempt:minimum:using:)`` takes a
/// random number generator, so tests can pin every draw.
public struct ReconnectPolicy: Sendable, Hashable {
    /// How a delay is drawn from the envelope `min(maximumDelay, initialDelay × multiplier^attempt)`.
    public enum Jitter: Sendable, Hashable {
        /// Exactly the envelope.
        case none
        /// Uniform in `[0, envelope]` (AWS "full jitter").
        case full
        /// Uniform in `[envelope × (1 − factor), envelope × (1 + factor)]`, then capped: the Socket.IO
        /// JS client's `randomizationFactor`.
        case proportional(Double)
    }

    /// The envelope before the first attempt; 1 s by default.
    public var initialDelay: Duration
    /// How much the envelope grows per attempt; 2 (doubling) by default.
    public var multiplier: Double
    /// The cap on the envelope and on every jittered delay (a larger `minimum` still wins); 30 s by default.
    public var maximumDelay: Duration
    /// How each delay is drawn from the envelope; `.full` by default.
    public var jitter: Jitter
    /// Attempts allowed after a connection ends before the session fails; `nil` for no limit.
    public var maximumAttempts: Int?
    /// Time allowed from the first failed attempt before the session fails; `nil` for no limit.
    public var maximumElapsed: Duration?
    /// `false` disables reconnection: every unexpected end fails the session.
    public var isEnabled: Bool
    /// How long a connection must stay up after its handshake before it counts as healthy. Only then do
    /// the attempt count and the elapsed time start over; a connection the server ends sooner counts as
    /// one more failed attempt, so a server that welcomes and then breaks the link still runs into
    /// `maximumAttempts` and `maximumElapsed`, and its delays keep growing. `.zero` trusts every handshake.
    public var stabilityWindow: Duration

    /// Each parameter sets the property of the same name. The defaults: 1 s doubling up to 30 s with full
    /// jitter, no limit on attempts or time, and a 10 s stability window.
    public init(initialDelay: Duration = .seconds(1), multiplier: Double = 2, maximumDelay: Duration = .seconds(30),
                jitter: Jitter = .full, maximumAttempts: Int? = nil, maximumElapsed: Duration? = nil,
                isEnabled: Bool = true, stabilityWindow: Duration = .seconds(10)) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.jitter = jitter
        self.maximumAttempts = maximumAttempts
        self.maximumElapsed = maximumElapsed
        self.isEnabled = isEnabled
        self.stabilityWindow = stabilityWindow
    }

    /// Never reconnect.
    public static let never = ReconnectPolicy(isEnabled: false)

    /// The upper bound of the delay before attempt `attempt` (0-based), before jitter.
    public func envelope(forAttempt attempt: Int) -> Duration {
        let cap = maximumDelay.seconds
        let grown = initialDelay.seconds * pow(multiplier, Double(max(0, attempt)))
        return .seconds(grown.isFinite ? min(cap, grown) : cap)
    }

    /// The delay before attempt `attempt` (0-based): jittered, never below `minimum`, never above
    /// `max(minimum, maximumDelay)`.
    public func delay(forAttempt attempt: Int, minimum: Duration = .zero,
                      using generator: inout some RandomNumberGenerator) -> Duration {
        let envelope = envelope(forAttempt: attempt).seconds
        let drawn: Double
        switch jitter {
        case .none:
            drawn = envelope
        case .full:
            drawn = Double.random(in: 0...1, using: &generator) * envelope
        case .proportional(let factor):
            let spread = envelope * min(max(factor, 0), 1)
            drawn = min(maximumDelay.seconds, envelope + Double.random(in: -1...1, using: &generator) * spread)
        }
        return .seconds(max(minimum.seconds, max(0, drawn)))
    }

    /// Whether another attempt is allowed after `attempts` failed ones and `elapsed` since the first.
    public func allowsAttempt(_ attempts: Int, elapsed: Duration) -> Bool {
        guard isEnabled else { return false }
        if let maximumAttempts, attempts >= maximumAttempts { return false }
        if let maximumElapsed, elapsed > maximumElapsed { return false }
        return true
    }
}

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
