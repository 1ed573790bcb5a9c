import Foundation

/// A server dialect: Pusher/Bird, Socket.IO or Action Cable.
///
/// An app only picks one (`.socketIO(…)`, `.pusher(…)`, `.actionCable(…)`) and hands it to
/// ``RealtimeSession``. The requirements that build machines and requests belong to the dialect-authoring
/// contract, visible with `@_spi(DialectAuthoring) import RealtimeCore`.
///
/// The dialect value is configuration. It builds the connection request and a fresh `DialectMachine`,
/// the pure state machine that turns frames and commands into `DialectAction`s. The session engine owns
/// every side effect: sockets, timers, the reconnect loop, buffering and delivery. A dialect never sleeps,
/// spawns tasks or opens sockets; asynchronous steps (auth requests) are described as `.perform` actions.
///
/// ## One vocabulary
///
/// The dialects' constructors (`.pusher`, `.bird`, `.socketIO`, `.actionCable`) spell the same idea the
/// same way, and each exposes every option of its dialect's full initializer:
///
/// | idea | option | Pusher / Bird | Socket.IO | Action Cable |
/// | --- | --- | --- | --- | --- |
/// | who the client is | `auth:` | `PusherAuth`: signs private, presence and encrypted channels and sign-in | `SocketIOAuth`: the CONNECT payload of every namespace | `ActionCableAuth`: headers and query items of the upgrade |
/// | credentials computed on demand | `auth: .provider { … }` | before each signature | before each namespace CONNECT | before each connection attempt |
/// | the app | `key:`, `cluster:` | app key; Pusher cluster or Bird region | — | — |
/// | plain text to a remote host | `allowsInsecureTransportToRemoteHosts:` | yes (with `useTLS:`) | yes | yes |
/// | dead-link detection | `liveness:` (``Liveness``: `pingInterval`, `pingTimeout`, `.disabled`) | client pings | server pings | server pings |
/// | connect timeout | `SessionOptions.connectTimeout` | — | — | — |
/// | reconnect policy | `SessionOptions.reconnectPolicy` (`nil`: ``reconnectPolicy``) | — | — | — |
///
/// A call that belongs to one dialect throws `RealtimeError` `.unsupported` at once on a session of another,
/// before anything is queued or waited for: `perform` (Action Cable), `request` (Socket.IO), `signIn()`,
/// `presence(_:)`, `session.user`, `onSubscriptionCount` and `subscriptionCounts` (Pusher and Bird).
public protocol RealtimeDialect: Sendable {
    /// A short name for logs ("socket.io", "pusher", "actioncable").
    var name: String { get }

    /// The reconnect policy the dialect recommends, used when `SessionOptions.reconnectPolicy` is `nil`.
    var reconnectPolicy: ReconnectPolicy { get }

    /// Channels joined as soon as the session connects, before the app asks for any (Socket.IO's `/`).
    var defaultChannels: [ChannelID] { get }

    /// A fresh state machine for a new session. (An existential rather than an associated type, so that
    /// the machine protocol stays out of the public API: an associated type cannot be SPI.)
    @_spi(DialectAuthoring) func makeMachine() -> any DialectMachine

    /// The request for connection attempt `attempt` (0 for the first 'connect', counting reconnects after).
    /// Asked again before every attempt, so credentials can be refreshed: return `.ready` when no
    /// asynchronous step is needed, `.deferred` to run one (a token provider) first. A deferred step that
    /// throws fails the attempt; a `RealtimeError` whose code no retry can cure (`.connectionRefused`,
    /// `.authorizationFailed`, `.invalidArgument`, `.unsupported`) fails the session.
    @_spi(DialectAuthoring) func connectionRequest(attempt: Int) -> ConnectionRequestPlan

    /// The transport to use, given the session's WebSocket transport. Dialects that carry their own
    /// framing over another medium (Engine.IO long-polling) wrap it; the default returns `base`.
    @_spi(DialectAuthoring) func transport(wrapping base: any RealtimeTransport) -> any RealtimeTransport

    /// Checks an outgoing message before it is queued, so the app gets a typed error at the call site
    /// (reserved event names, `client-` prefix rules, requests on a dialect without acks).
    /// `expectsReply` is `true` for `request`. Returns `nil` when the message is acceptable.
    @_spi(DialectAuthoring) func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError?

    /// A frame as a trace line shows it, with its secrets masked. The default runs ``Redaction`` over
    /// the text; a dialect overrides it to mask payloads that are secret as a whole (auth objects).
    @_spi(DialectAuthoring) func logDescription(of frame: TransportFrame) -> String

    /// The one spelling of `channel` this dialect uses, so that two spellings of the same channel
    /// (Socket.IO's `""` and `"/"`, `"chat"` and `"/chat"`) share one subscription, one state and one set of
    /// handlers. The default returns `channel` unchanged.
    @_spi(DialectAuthoring) func canonicalChannel(_ channel: ChannelID) -> ChannelID
}

@_spi(DialectAuthoring) extension DialectMachine {
    /// Leaves the request as the dialect built it.
    public mutating func willOpen(_ request: inout ConnectionRequest) {}
    /// Ignores the hint: this machine does not defer payloads.
    public mutating func payloadsAreRead(_ read: Bool) {}
}

extension RealtimeDialect {
    /// None: the session joins only the channels the app asks for.
    public var defaultChannels: [ChannelID] { [] }
    /// Returns `base` unchanged.
    @_spi(DialectAuthoring) public func transport(wrapping base: any RealtimeTransport) -> any RealtimeTransport { base }
    /// Accepts every message.
    @_spi(DialectAuthoring) public func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError? { nil }
    /// ``TransportFrame/redactedDescription``: text redacted by ``Redaction`` and cut to 512 characters.
    @_spi(DialectAuthoring) public func logDescription(of frame: TransportFrame) -> String { frame.redactedDescription }
    /// Returns `channel` unchanged.
    @_spi(DialectAuthoring) public func canonicalChannel(_ channel: ChannelID) -> ChannelID { channel }
}

/// How the engine obtains the request for one connection attempt.
@_spi(DialectAuthoring) public enum ConnectionRequestPlan: Sendable {
    /// The request is known now; the attempt starts synchronously.
    case ready(ConnectionRequest)
    /// An asynchronous step (credentials) runs first.
    case deferred(@Sendable () async throws -> ConnectionRequest)
}

/// Identifies an app request (`request`, or a dialect extension call) while it waits for its answer.
@_spi(DialectAuthoring) public struct RequestID: Hashable, Sendable, CustomStringConvertible {
    /// The number of the app operation that made the request, unique within the session.
    public let rawValue: UInt64
    /// The id numbered `rawValue`. The engine numbers requests; a machine only keeps and returns ids.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "#\(rawValue)" }
}

/// Names something a machine started and will hear about later: a kind, optionally a channel, and a
/// serial to tell repeats apart.
@_spi(DialectAuthoring) public struct DialectKey: Hashable, Sendable {
    /// What a key names (a handshake timer, an auth request). A dialect declares its kinds once, as
    /// constants named after the dialect ("pusher.auth") so that two dialects never share one, and matches
    /// keys against those constants:
    ///
    ///     extension DialectKey.Kind {
    ///         static let pusherAuth = DialectKey.Kind("pusher.auth")
    ///     }
    ///
    ///     switch id.kind {
    ///     case .pusherAuth: …
    ///     default: return
    ///     }
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as logs and wrapped errors show it.
        public var rawValue: String
        /// A kind named `rawValue`, as ``init(_:)``.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A kind named `name` ("pusher.auth").
        public init(_ name: String) { rawValue = name }
        public var description: String { rawValue }
    }

    /// What the key names.
    public var kind: Kind
    /// The channel it concerns; `nil` for connection-wide work and timers.
    public var channel: ChannelID?
    /// Tells apart keys of the same kind and channel, so that the answer to an earlier request is known
    /// as stale; 0 by default.
    public var serial: UInt64
    /// A key of `kind`, for `channel` when it concerns one, with `serial` to tell repeats apart.
    public init(kind: Kind, channel: ChannelID? = nil, serial: UInt64 = 0) {
        self.kind = kind
        self.channel = channel
        self.serial = serial
    }
}

/// Identifies one piece of asynchronous work a machine asked the engine to run.
@_spi(DialectAuthoring) public typealias WorkID = DialectKey

/// Names a dialect timer. Starting a timer with a key that is already running restarts it.
@_spi(DialectAuthoring) public typealias TimerKey = DialectKey

/// A message the app sends on a channel.
@_spi(DialectAuthoring) public struct OutgoingMessage: Sendable, Hashable {
    /// The channel it is sent on.
    public var channel: ChannelID
    /// The event name.
    public var event: String
    /// The values sent with it (Pusher and Action Cable send the first as `data`).
    public var arguments: [JSONValue]
    /// Drop rather than buffer when the channel cannot send right now.
    public var volatile: Bool
    /// `false` asks the transport to send the frames uncompressed (``DialectAction/sendUncompressed(_:)``).
    public var compress: Bool

    /// A message of `event` with `arguments` on `channel`; by default buffered while it cannot be sent, and
    /// compressed where the connection compresses.
    public init(channel: ChannelID, event: String, arguments: [JSONValue], volatile: Bool = false,
                compress: Bool = true) {
        self.channel = channel
        self.event = event
        self.arguments = arguments
        self.volatile = volatile
        self.compress = compress
    }
}

/// What the engine tells the machine.
@_spi(DialectAuthoring) public enum DialectCommand: Sendable {
    /// Join a channel. Sent after `connected` for every channel the app holds, again after every reconnect.
    case subscribe(ChannelID)
    /// Leave a channel the app released.
    case unsubscribe(ChannelID)
    /// Send an event on a subscribed channel; the engine only sends this once the channel is subscribed.
    case send(OutgoingMessage)
    /// Send an event and expect an answer, reported by `.resolveRequest(id, …)`.
    case request(OutgoingMessage, RequestID)
    /// The app stopped waiting for `RequestID` (timeout); forget it.
    case cancelRequest(RequestID)
    /// Answer an acknowledgement the server asked for.
    case acknowledge(AckToken, [JSONValue])
    /// A dialect-specific operation (Pusher `signin`, Action Cable `perform`), answered with
    /// `.resolveRequest(id, …)`.
    case custom(name: String, payload: JSONValue, RequestID)
}

/// How the app must be told that a connection ended and what the engine does next.
@_spi(DialectAuthoring) public enum ConnectionEnd: Sendable, Hashable {
    /// Do not reconnect; the session fails with this error.
    case terminal(RealtimeError)
    /// Reconnect at once when the connection that ended had proved stable (see
    /// ``ReconnectPolicy/stabilityWindow``); otherwise after the policy's delay. The attempt count grows.
    case reconnectImmediately
    /// Reconnect after the policy's delay, but never sooner than `minimum`.
    case backoff(minimum: Duration)
}

/// How the engine decides that a silent link is dead.
@_spi(DialectAuthoring) public enum LivenessRule: Sendable, Hashable {
    /// The server pings on its own every `interval`; with nothing received for `interval + grace` the
    /// link is dead (Engine.IO, Action Cable).
    case serverPings(interval: Duration, grace: Duration)
    /// After `idle` with nothing received, send `ping`; with nothing received `timeout` later the link
    /// is dead (Pusher's activity timeout).
    case clientPings(idle: Duration, timeout: Duration, ping: TransportFrame)
    /// No liveness checking.
    case none
}

/// An asynchronous step the engine runs for a machine, such as an auth request.
@_spi(DialectAuthoring) public struct DialectWork: Sendable {
    /// Names the work: `workFinished` reports its result under this id, and an error it throws that is
    /// not a `RealtimeError` becomes `.operationFailed` named after the id's kind.
    public var id: WorkID
    /// The step; the engine passes the context of the session it runs for.
    public var run: @Sendable (DialectWorkContext) async throws -> JSONValue
    /// A step that uses what the session lends it (its transport's route for HTTP).
    public init(id: WorkID, run: @escaping @Sendable (DialectWorkContext) async throws -> JSONValue) {
        self.id = id
        self.run = run
    }
    /// A step that needs nothing from the session (a token provider).
    public init(id: WorkID, run: @escaping @Sendable () async throws -> JSONValue) {
        self.init(id: id) { _ in try await run() }
    }
}

/// What the engine lends a ``DialectWork`` while it runs, so that the machine stays free of I/O and its
/// work still goes the session's way: HTTP to the app's backend through the transport's proxy.
@_spi(DialectAuthoring) public struct DialectWorkContext: Sendable {
    private let provider: (any HTTPClientProviding)?

    /// A context without a session transport: HTTP goes directly, as for a transport that makes no HTTP
    /// clients of its own (for running a machine's work in tests).
    public init() { provider = nil }

    /// The context of a session whose transport (before any wrapping) is `transport`.
    package init(transport: any RealtimeTransport) { provider = transport as? any HTTPClientProviding }

    /// A client for the app's own backend (an auth endpoint): on the route of the session's transport (its
    /// proxy), when it makes HTTP clients, else directly; always with the platform's trust, because the
    /// transport's pins and roots describe the realtime server, not the backend. Finish it when done.
    package func makeBackendHTTPClient() -> any HTTPClient {
        provider?.makeHTTPClient(maximumConnectionsPerHost: nil, trust: .platformDefault) ?? URLSessionHTTPClient()
    }
}

/// What the machine asks the engine to do.
///
/// The cases that carry an error are `indirect`: a ``RealtimeError`` is 144 bytes, and unboxed it would make
/// every action that size, each `.deliver` of a busy stream among them.
@_spi(DialectAuthoring) public enum DialectAction: Sendable {
    /// Write a frame.
    case send(TransportFrame)
    /// Write a frame that the transport must not compress (an `OutgoingMessage` with `compress: false`).
    case sendUncompressed(TransportFrame)
    /// Hand an event to the app's handlers.
    case deliver(RealtimeEvent)
    /// The session is connected (handshake done); `id` is the server's id for it (socket id, sid).
    case connected(id: String?)
    /// A channel is subscribed; buffered sends for it are flushed. `recovered` is `true` when the
    /// server restored missed messages, `false` when it could not, `nil` when the dialect cannot know.
    case subscribed(ChannelID, recovered: Bool?)
    /// What the server sent with the confirmation that the next `.subscribed` for the channel reports
    /// (``SubscriptionInfo/serverPayload``).
    case subscriptionPayload(ChannelID, JSONValue)
    /// The server or an authorizer refused a channel. The engine will not retry it on its own.
    indirect case subscriptionFailed(ChannelID, RealtimeError)
    /// The server ended a subscribed channel (Socket.IO DISCONNECT). It is not re-joined on reconnect.
    indirect case channelEnded(ChannelID, RealtimeError)
    /// A channel that was subscribed is pending again (for example its namespace re-joins).
    case channelPending(ChannelID)
    /// Answer for a `.request` or `.custom` command.
    indirect case resolveRequest(RequestID, Result<[JSONValue], RealtimeError>)
    /// Sets how liveness is checked for the current connection.
    case liveness(LivenessRule)
    /// Starts (or restarts) a timer; `timerFired` follows unless it is cancelled.
    case startTimer(TimerKey, after: Duration)
    /// Stops a timer started with `.startTimer`, so its `timerFired` never comes; nothing when it is not
    /// running.
    case cancelTimer(TimerKey)
    /// Runs asynchronous work; `workFinished` follows unless the connection ended first.
    case perform(DialectWork)
    /// Closes the connection; the engine then asks `connectionEnded` how to go on.
    case close(code: Int, reason: String)
    /// Closes the connection because the server asked for it in its protocol; the app sees `reason` in
    /// ``ConnectionState/reconnecting(attempt:delay:reason:)``. The engine then asks `connectionEnded`.
    indirect case closeAsServerAsked(code: Int, reason: DisconnectReason)
    /// Ends the session for good: the engine closes the connection (code 1000), resets the machine
    /// through `connectionEnded`, and fails the session with `error` without asking how to go on.
    indirect case fail(RealtimeError)
    /// The `.send` command being handled was not written (too large, channel not joined on the
    /// server): the app's `send` call fails with `error` instead of reporting success.
    indirect case refuseSend(RealtimeError)
    /// Reports an error to the app's error observers without closing.
    indirect case reportError(RealtimeError)
    /// Writes a log line (already free of secrets).
    case log(LogLevel, String)
}

/// The pure state machine of a dialect for one session. A value type: no I/O, no clock, no tasks.
///
/// Every method appends actions to `actions`; the engine executes them in order.
///
/// Part of the dialect-authoring contract, like `DialectAction`, `DialectCommand` and `DialectKey`: a
/// dialect's author writes `@_spi(DialectAuthoring) import RealtimeCore`; an app never needs to.
@_spi(DialectAuthoring) public protocol DialectMachine: Sendable {
    /// A transport connection opened (WebSocket upgrade done). Not yet "connected": the dialect
    /// says `.connected` when its own handshake completes.
    mutating func connectionOpened(_ info: TransportOpenInfo, actions: inout [DialectAction])
    /// A frame arrived.
    mutating func received(_ frame: TransportFrame, actions: inout [DialectAction])
    /// The engine asks for something.
    mutating func handle(_ command: DialectCommand, actions: inout [DialectAction])
    /// A timer started with `.startTimer` fired.
    mutating func timerFired(_ key: TimerKey, actions: inout [DialectAction])
    /// Work started with `.perform` finished, on the same connection.
    mutating func workFinished(_ id: WorkID, result: Result<JSONValue, RealtimeError>,
                      actions: inout [DialectAction])
    /// A connection attempt is about to open `request` (built by the dialect). The machine may record it
    /// or change it (Pusher retries over `wss` after a close 4000, "use TLS"). The default does nothing.
    mutating func willOpen(_ request: inout ConnectionRequest)
    /// Whether the app's handlers read the payloads of the events the machine left as text, as the engine
    /// saw in the last delivery batch with such an event. A machine that can defer parsing a payload
    /// (check it, then parse it on first read) parses at once while payloads are read, so a reader pays for
    /// one parse and not for a check and a parse. The default does nothing.
    mutating func payloadsAreRead(_ read: Bool)
    /// The connection ended. Reset per-connection state and classify what happens next.
    /// (Whatever the dialect answers, a transport failure with code `.invalidArgument` — a bad URL, `ws://`
    /// to a remote host without the opt-in — is terminal: retrying the same request cannot help.)
    mutating func connectionEnded(_ closure: TransportClosure) -> ConnectionEnd
}

extension TransportFrame {
    /// The frame for a log line: text redacted by ``Redaction`` and cut to 512 characters, binary as its
    /// size.
    @_spi(DialectAuthoring) public var redactedDescription: String {
        switch self {
        case .text(let text): Redaction.describeForLog(text)
        case .binary(let data): "<\(data.count) bytes>"
        }
    }
}
