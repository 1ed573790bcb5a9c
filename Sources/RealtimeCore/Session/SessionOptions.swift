import Dispatch

/// Where handlers run. Handlers of one session always run one at a time, in wire order.
public struct DeliveryTarget: Sendable {
    let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    let isInline: Bool

    /// Runs handlers on `queue`, which must be serial for wire order to hold.
    public static func queue(_ queue: DispatchQueue) -> DeliveryTarget {
        DeliveryTarget(enqueue: { work in queue.async(execute: work) }, isInline: false)
    }

    /// Runs handlers on the main queue.
    public static var main: DeliveryTarget { .queue(.main) }

    /// Runs handlers on whatever thread processed the input, before the session handles its next input.
    /// Deterministic, so tests use it; handlers must return quickly.
    public static var inline: DeliveryTarget {
        DeliveryTarget(enqueue: { work in work() }, isInline: true)
    }

    /// Hands each batch of handler calls to `enqueue`, which must run them in order, one at a time.
    public static func custom(_ enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) -> DeliveryTarget {
        DeliveryTarget(enqueue: enqueue, isInline: false)
    }
}

/// Handler calls received but not yet run, and the bytes of the frames behind them.
public struct DeliveryBacklog: Sendable, Hashable {
    /// Events waiting for their handlers.
    public var events = 0
    /// Bytes of the received frames those events came from.
    public var bytes = 0
}

/// Where the reconnect policy's random draws come from.
public enum RandomSource: Sendable, Hashable {
    /// The system CSPRNG.
    case system
    /// A deterministic generator, for tests.
    case seeded(UInt64)
}

/// Session settings shared by every dialect.
public struct SessionOptions: Sendable {
    /// Where handlers run. By default, a delivery thread of the transport's when it has them
    /// (`WebSocketTransport`: one per loop thread of its group), else a private serial queue per session.
    public var delivery: DeliveryTarget?
    /// How the session waits between connection attempts; `nil` uses the dialect's recommendation
    /// (``RealtimeDialect/reconnectPolicy``, its `defaultReconnectPolicy`). The only place to set it: dialects
    /// take no reconnect policy of their own.
    public var reconnectPolicy: ReconnectPolicy?
    /// Time from the start of one attempt until the dialect reports `connected` (credentials, DNS, TCP, TLS,
    /// the upgrade and the dialect's own handshake); a slower attempt fails with `.connectTimedOut` and the
    /// reconnect policy decides what comes next. It also bounds the transport's opening. The only place to
    /// set it: dialects take no connect timeout of their own.
    public var connectTimeout: Duration
    /// How long ``RealtimeSession/connect(timeout:)`` waits, over all its attempts, before it throws
    /// `.connectTimedOut` naming the last failure (a wrong accept key, an untrusted certificate, a refused
    /// port). The session itself keeps trying by its reconnect policy; call `disconnect()` to stop it.
    /// `nil` waits until the session connects or fails.
    public var connectCallTimeout: Duration?
    /// Most sends and requests held while the session cannot send; more fail with `.bufferFull`.
    public var sendBufferLimit: Int
    /// How long a buffered send may wait before it fails with `.timedOut`.
    public var sendTimeout: Duration
    /// Default time a `request` waits for its answer.
    public var requestTimeout: Duration
    /// Handler calls waiting to run before the session stops reading from the socket (back-pressure).
    public var deliveryHighWatermark: Int
    /// Bytes of received frames behind the handler calls waiting to run before the session stops reading
    /// from the socket. Reading resumes once both the calls and the bytes are down to half their limits.
    /// With the transport's message size limit, this bounds the memory a server can make the session
    /// hold, however fast it sends and however slow the handlers are.
    public var deliveryByteBudget: Int
    /// Time source; tests pass a manual clock.
    public var clock: any RealtimeClock
    /// Randomness for reconnect jitter.
    public var randomSource: RandomSource
    /// Receives log records at `logLevel` and above, with secrets redacted.
    public var logHandler: LogHandler?
    /// The least severe level passed to ``logHandler``; `.info` by default. `.trace` adds a line for every
    /// frame sent and received.
    public var logLevel: LogLevel
    /// How long the session stays connected after ``RealtimeSession/applicationDidEnterBackground()``.
    /// When it passes with the app still in the background, the connection is closed (code 1001, "going
    /// away") and the session waits in ``ConnectionState/suspended`` without attempts until
    /// ``RealtimeSession/applicationWillEnterForeground()``. `nil` (the default) never closes for the
    /// background: the system decides, and the foreground call checks the link. `.zero` closes at once.
    public var backgroundGrace: Duration?

    /// Each parameter sets the property of the same name; `nil` `delivery` and `reconnectPolicy` take the
    /// default target (see ``delivery``) and the dialect's policy.
    public init(delivery: DeliveryTarget? = nil, reconnectPolicy: ReconnectPolicy? = nil,
                connectTimeout: Duration = .seconds(20), connectCallTimeout: Duration? = .seconds(30),
                sendBufferLimit: Int = 1_000,
                sendTimeout: Duration = .seconds(30), requestTimeout: Duration = .seconds(30),
                deliveryHighWatermark: Int = 65_536, deliveryByteBudget: Int = 4 << 20, clock: any RealtimeClock = SystemClock(),
                randomSource: RandomSource = .system, logHandler: LogHandler? = nil, logLevel: LogLevel = .info,
                backgroundGrace: Duration? = nil) {
        self.delivery = delivery
        self.reconnectPolicy = reconnectPolicy
        self.connectTimeout = connectTimeout
        self.connectCallTimeout = connectCallTimeout
        self.sendBufferLimit = sendBufferLimit
        self.sendTimeout = sendTimeout
        self.requestTimeout = requestTimeout
        self.deliveryHighWatermark = deliveryHighWatermark
        self.deliveryByteBudget = deliveryByteBudget
        self.clock = clock
        self.randomSource = randomSource
        self.logHandler = logHandler
        self.logLevel = logLevel
        self.backgroundGrace = backgroundGrace
    }
}

/// The state of one channel as the session sees it. Each case past `pending` is named after the
/// ``ChannelLifecycleEvent/Kind`` that led to it.
public enum ChannelState: Sendable, Hashable {
    /// Waiting for the connection or for the server's confirmation.
    case pending
    /// Confirmed. `recovered` says whether missed messages were replayed (`nil`: the dialect cannot tell).
    case subscribed(recovered: Bool?)
    /// Refused by the server or its authorizer. Not retried until the app asks again.
    case rejected(RealtimeError)
    /// Ended by the server. Not re-joined until the app asks again.
    case endedByServer(RealtimeError)
    /// The app left it.
    case unsubscribed
}

// The names before they followed the lifecycle kinds. They build and compare (`state == .left`); a pattern
// that binds the error (`case .failed(let error)`) needs the new name.
extension ChannelState {
    /// The old name of ``rejected(_:)``.
    @available(*, deprecated, renamed: "rejected")
    public static func failed(_ error: RealtimeError) -> ChannelState { .rejected(error) }
    /// The old name of ``endedByServer(_:)``.
    @available(*, deprecated, renamed: "endedByServer")
    public static func ended(_ error: RealtimeError) -> ChannelState { .endedByServer(error) }
    /// The old name of ``unsubscribed``.
    @available(*, deprecated, renamed: "unsubscribed")
    public static var left: ChannelState { .unsubscribed }
}

/// SplitMix64: small, fast, deterministic; for seeded tests.
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// A generator whose draws follow from `seed`: the same seed gives the same sequence.
    public init(seed: UInt64) { state = seed }
    /// The next 64 bits of the seed's sequence. Not for cryptography: the sequence follows from the seed.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The engine's generator: seeded when asked, otherwise the system's.
struct EngineRandom: RandomNumberGenerator, Sendable {
    var seeded: SeededRandomNumberGenerator?
    init(_ source: RandomSource) {
        if case .seeded(let seed) = source { seeded = SeededRandomNumberGenerator(seed: seed) }
    }
    mutating func next() -> UInt64 {
        if seeded != nil { return seeded!.next() }
        var system = SystemRandomNumberGenerator()
        return system.next()
    }
}
