/// How a session notices a link that went silent: the same two words on every dialect.
///
/// A quiet link gets a ping every ``pingInterval``; when nothing at all arrives for ``pingTimeout`` after a
/// ping was due, the link counts as dead: the session reports `.livenessTimeout` to `onError`, closes the
/// connection and reconnects by its policy. Who pings is the protocol's business:
///
/// | dialect | who pings | `pingInterval` when `nil` | `pingTimeout` when `nil` |
/// | --- | --- | --- | --- |
/// | Pusher / Bird | the client, after `pingInterval` without traffic | 120 s, lowered by the server's `activity_timeout` (Pusher) or replaced by it (Bird) | 30 s (the wait for the pong) |
/// | Socket.IO | the server | the `pingInterval` of the Engine.IO handshake | the `pingTimeout` of the handshake |
/// | Action Cable | the server (Rails beats every 3 s) | 3 s | 3 s |
///
/// A value set here replaces the default in the table (for Socket.IO, the server's announced value). Use
/// ``disabled`` to turn the check off (the server may still drop a client that does not answer its pings;
/// the session answers them whatever this says).
///
/// Neither duration is ever shorter than ``minimumDuration`` (100 ms): a shorter one, zero and negative
/// durations included, is raised to it when set, so a typo cannot make the session ping without pause or
/// give up on a link at once.
///
/// ```swift
/// .actionCable(url: url, liveness: Liveness(pingTimeout: .seconds(10)))   // a slow mobile link
/// .pusher(key: "app-key", liveness: Liveness(pingInterval: .seconds(30)))  // ping sooner
/// .socketIO(url: url, liveness: .disabled)
/// ```
public struct Liveness: Sendable, Hashable {
    /// The shortest ``pingInterval`` and ``pingTimeout`` a value holds; shorter ones are raised to it.
    public static let minimumDuration: Duration = .milliseconds(100)

    /// The quiet time after which a ping is due; `nil` uses the dialect's default or the server's value.
    /// Never below ``minimumDuration``.
    public var pingInterval: Duration? {
        get { interval }
        set { interval = newValue.map(Self.raisedToMinimum) }
    }
    /// How long past a due ping the link may stay silent before it counts as dead; `nil` uses the
    /// dialect's default or the server's value. Never below ``minimumDuration``.
    public var pingTimeout: Duration? {
        get { timeout }
        set { timeout = newValue.map(Self.raisedToMinimum) }
    }
    /// `false` turns liveness checking off: a silent link then stays up until the transport notices.
    public var isEnabled: Bool

    private var interval: Duration?
    private var timeout: Duration?

    /// Liveness checking with the given values; `nil` keeps the dialect's default or the server's value.
    /// A duration below ``minimumDuration`` (zero or negative included) is raised to it.
    public init(pingInterval: Duration? = nil, pingTimeout: Duration? = nil) {
        interval = pingInterval.map(Self.raisedToMinimum)
        timeout = pingTimeout.map(Self.raisedToMinimum)
        isEnabled = true
    }

    private static func raisedToMinimum(_ duration: Duration) -> Duration { max(duration, minimumDuration) }

    /// The dialect's defaults and the server's values: the default of every dialect.
    public static var automatic: Liveness { Liveness() }

    /// No liveness checking.
    public static var disabled: Liveness {
        var liveness = Liveness()
        liveness.isEnabled = false
        return liveness
    }

    /// The rule for a dialect whose server pings: `.none` when disabled, otherwise the given defaults with
    /// this value's overrides applied.
    package func serverPings(defaultInterval: Duration, defaultTimeout: Duration) -> LivenessRule {
        guard isEnabled else { return .none }
        return .serverPings(interval: pingInterval ?? defaultInterval, grace: pingTimeout ?? defaultTimeout)
    }
}
