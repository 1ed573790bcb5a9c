import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The Rails Action Cable dialect (protocol `actioncable-v1-json`, Rails 6.0 through 8.x).
///
/// A ``ChannelID`` names a subscription: `name` is the channel class (`"ChatChannel"`), `params` the other
/// identifier keys (`["room_id": 42]`). `send(action, object)` and ``RealtimeChannel/perform(_:_:)`` call a
/// public method of the channel class. Requests (acknowledgements) are not part of the protocol.
///
/// ## Event names
///
/// Action Cable broadcasts carry no event name, so the dialect reads one from the broadcast itself: when the
/// message is a JSON object, the first of ``eventNameKeys`` (by default `"event"`, then `"type"`, then
/// `"action"`) whose member is a non-empty string names the event; any other broadcast (a string, a number,
/// an object without those members) arrives as ``fallbackEventName``, `"message"`. A server that sends
/// `{"event":"order-updated",…}` therefore fires `on("order-updated")` here as on Socket.IO and Pusher. The
/// event's `data` is always the whole broadcast value, name member included, and `rawData` its text as the
/// server sent it. `eventNameKeys: []` delivers every broadcast as `"message"`.
///
/// ```swift
/// let session = RealtimeSession(dialect: .actionCable(url: URL(string: "wss://example.com/cable")!))
/// let room = session.channel(ChannelID("ChatChannel", params: ["room_id": 42]))
/// room.on("speak") { event in print(event.data["text"] ?? "") }   // {"action":"speak","text":…}
/// room.on("message") { event in print(event.data) }               // "hello", 42, {"text":…}
/// try await room.perform("speak", ["text": "hi"])
/// ```
public struct ActionCableDialect: RealtimeDialect {
    /// The subprotocol this dialect speaks.
    public static let protocolName = "actioncable-v1-json"
    /// Offered second, as the JS client does: a server that selects it no longer speaks v1-json.
    public static let unsupportedProtocolName = "actioncable-unsupported"

    /// Headers and query items that tell the server who the client is (a token, a cookie): the value of
    /// ``ActionCableAuth``.
    public struct Credentials: Sendable, Hashable {
        /// Headers added to the upgrade request (`Authorization: Bearer …`, `Cookie: …`).
        public var headers: [HTTPHeader]
        /// Query items appended to the URL (`?token=…`).
        public var queryItems: [URLQueryItem]

        /// Credentials made of `headers` and `queryItems`, either of which may be empty.
        public init(headers: [HTTPHeader] = [], queryItems: [URLQueryItem] = []) {
            self.headers = headers
            self.queryItems = queryItems
        }
    }

    /// Resends `subscribe` until the server answers, because Rails runs each command on a worker pool:
    /// a `subscribe` can lose its race with an `unsubscribe` and get no answer at all, and an unknown
    /// channel is never answered either.
    public struct SubscriptionGuarantor: Sendable, Hashable {
        /// Time between two ticks of the guarantor's one timer, which runs while any `subscribe` is
        /// unanswered. A tick resends each `subscribe` that has waited at least this long: the first resend
        /// comes one to two intervals after the first send, the later ones one interval apart.
        public var interval: Duration
        /// `subscribe` frames sent in all (the first included) before the channel fails with `.timedOut`.
        public var maximumAttempts: Int

        /// - Parameters:
        ///   - interval: clamped to at least 50 ms.
        ///   - maximumAttempts: clamped to at least 1.
        public init(interval: Duration = .milliseconds(500), maximumAttempts: Int = 20) {
            self.interval = max(interval, .milliseconds(50))
            self.maximumAttempts = max(1, maximumAttempts)
        }
    }

    /// Fetches credentials before every connection attempt (``ActionCableAuth/provider(_:)``).
    public typealias CredentialsProvider = @Sendable () async throws -> Credentials

    /// Exponential backoff with full jitter: 1 s, ×2 per attempt, at most 30 s, unlimited attempts.
    public static let defaultReconnectPolicy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2,
                                                               maximumDelay: .seconds(30), jitter: .full)
    /// Rails beats every 3 s: the ping interval assumed when ``liveness`` sets none.
    public static let defaultPingInterval = Duration.seconds(3)
    /// How late a beat may be before the link counts as dead when ``liveness`` sets no `pingTimeout` (the
    /// JS client's stale threshold is two beats: 6 s in all).
    public static let defaultPingTimeout = Duration.seconds(3)

    /// The members a broadcast's event name is read from, in order: `"event"`, `"type"`, `"action"`.
    public static let defaultEventNameKeys = ["event", "type", "action"]
    /// The name of a broadcast that none of ``eventNameKeys`` names.
    public static let fallbackEventName = "message"

    /// `"actioncable"`.
    public var name: String { "actioncable" }
    /// The cable endpoint (`wss://host/cable`).
    public var url: URL
    /// Headers sent with every upgrade request, before those of ``auth``.
    public var headers: [HTTPHeader]
    /// The `Origin` header. Rails answers HTTP 404 when it is missing or not allowed.
    public var origin: String?
    /// Who the client is: headers and query items added to every upgrade request, fixed or asked for
    /// before each attempt.
    public var auth: ActionCableAuth?
    /// How often and how many times `subscribe` is resent while unanswered.
    public var guarantor: SubscriptionGuarantor
    /// The least wait before reconnecting after a `server_restart` disconnect, so a restarting server is not
    /// hit at once.
    public var restartDelay: Duration
    /// The members of an object broadcast that name its event, tried in order; the first that is a
    /// non-empty string wins, and a broadcast none of them names is ``fallbackEventName``. Empty: every
    /// broadcast is `"message"`. See "Event names" above.
    public var eventNameKeys: [String]
    /// Permits `ws://` to a host that is not loopback.
    public var allowsInsecureTransportToRemoteHosts: Bool
    /// The server beats every `pingInterval` (``defaultPingInterval``); with nothing received for
    /// `pingInterval + pingTimeout` (``defaultPingTimeout``) the link is dead. `.disabled` turns the
    /// connection monitor off.
    public var liveness: Liveness

    /// ``defaultReconnectPolicy``, used unless `SessionOptions.reconnectPolicy` sets another.
    public var reconnectPolicy: ReconnectPolicy { Self.defaultReconnectPolicy }

    /// - Parameters:
    ///   - url: the cable endpoint (`wss://example.com/cable`).
    ///   - headers: sent with every upgrade request.
    ///   - origin: the `Origin` header; `nil` derives it from `url` (`wss://host:port/cable` →
    ///     `https://host:port`).
    ///   - auth: headers and query items that identify the client, fixed or asked for before every attempt.
    ///   - guarantor: how often and how many times `subscribe` is resent while unanswered.
    ///   - restartDelay: the least wait before reconnecting after a `server_restart`.
    ///   - eventNameKeys: the members a broadcast's event name is read from (``defaultEventNameKeys``);
    ///     `[]` names every broadcast `"message"`.
    ///   - allowsInsecureTransportToRemoteHosts: permits `ws://` to a host that is not loopback.
    ///   - liveness: the connection monitor: Rails' beat interval and how late a beat may be, or `.disabled`.
    public init(url: URL, headers: [HTTPHeader] = [], origin: String? = nil, auth: ActionCableAuth? = nil,
                guarantor: SubscriptionGuarantor = SubscriptionGuarantor(), restartDelay: Duration = .milliseconds(500),
                eventNameKeys: [String] = ActionCableDialect.defaultEventNameKeys,
                allowsInsecureTransportToRemoteHosts: Bool = false, liveness: Liveness = .automatic) {
        self.url = url
        self.headers = headers
        self.origin = origin ?? Self.defaultOrigin(for: url)
        self.auth = auth
        self.guarantor = guarantor
        self.restartDelay = restartDelay
        self.eventNameKeys = eventNameKeys
        self.allowsInsecureTransportToRemoteHosts = allowsInsecureTransportToRemoteHosts
        self.liveness = liveness
    }

    /// A fresh ``ActionCableMachine``.
    @_spi(DialectAuthoring) public func makeMachine() -> any DialectMachine {
        makeMachine(identifierHashing: .standard)
    }

    /// A fresh ``ActionCableMachine`` that hashes identifiers as told (tests reach collisions with `.fixed`).
    func makeMachine(identifierHashing: ActionCableSubscriptionTable.Hashing) -> ActionCableMachine {
        ActionCableMachine(guarantor: guarantor,
                           liveness: liveness.serverPings(defaultInterval: Self.defaultPingInterval,
                                                          defaultTimeout: Self.defaultPingTimeout),
                           restartDelay: restartDelay, eventNameKeys: eventNameKeys,
                           mountPath: url.path.isEmpty ? "/" : url.path, origin: origin,
                           identifierHashing: identifierHashing)
    }

    /// ``url`` with ``headers``, ``origin`` and the credentials of ``auth``, offering both subprotocols. A
    /// provider runs before each attempt; an error it throws that is not a `RealtimeError` becomes `.operationFailed`.
    @_spi(DialectAuthoring) public func connectionRequest(attempt: Int) -> ConnectionRequestPlan {
        switch auth {
        case nil:
            return .ready(request(with: Credentials()))
        case .value(let credentials)?:
            return .ready(request(with: credentials))
        case .provider(let provider)?:
            return .deferred { [self] in
                request(with: try await RealtimeError.runningAppClosure("the Action Cable auth provider", provider))
            }
        }
    }

    /// The upgrade request for one attempt with `credentials` applied.
    package func request(with credentials: Credentials) -> ConnectionRequest {
        var target = url
        if !credentials.queryItems.isEmpty,
           var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.queryItems = (components.queryItems ?? []) + credentials.queryItems
            target = components.url ?? url
        }
        return ConnectionRequest(url: target, headers: headers + credentials.headers,
                                 subprotocols: [Self.protocolName, Self.unsupportedProtocolName], origin: origin,
                                 allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts)
    }

    /// Action Cable has no acknowledgements; a send carries at most one JSON object whose members join
    /// `action` (the event name) in the `data` Rails hands to the action method.
    @_spi(DialectAuthoring) public func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError? {
        if expectsReply {
            return .unsupported("request", dialect: name, needs: "Socket.IO (acknowledgements)",
                                channel: message.channel)
        }
        do {
            _ = try ActionCableCommand.actionData(for: message)
            return nil
        } catch {
            return error
        }
    }

    /// `http(s)` origin of a `ws(s)`/`http(s)` URL, with its port when one is given.
    static func defaultOrigin(for url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else { return nil }
        let originScheme: String
        switch scheme {
        case "ws", "http": originScheme = "http"
        case "wss", "https": originScheme = "https"
        default: return nil
        }
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return url.port.map { "\(originScheme)://\(hostPart):\($0)" } ?? "\(originScheme)://\(hostPart)"
    }
}

extension RealtimeDialect where Self == ActionCableDialect {
    /// A Rails Action Cable server at `url` (`wss://example.com/cable`).
    ///
    /// - Parameters:
    ///   - headers: sent with every upgrade request.
    ///   - origin: the `Origin` header; by default the URL's scheme and host, because Rails answers 404
    ///     without an allowed origin.
    ///   - auth: headers and query items that identify the client: `.value(…)`, or `.provider { … }` re-run
    ///     before every connection attempt, for tokens that expire. A provider that throws a `RealtimeError`
    ///     with code `.connectionRefused` or `.authorizationFailed` fails the session; anything else backs off
    ///     and retries.
    ///   - guarantor: how often and how many times `subscribe` is resent while unanswered.
    ///   - restartDelay: the least wait before reconnecting after a `server_restart` (500 ms).
    ///   - eventNameKeys: the members a broadcast's event name is read from (`"event"`, `"type"`, `"action"`);
    ///     `[]` names every broadcast `"message"`.
    ///   - allowsInsecureTransportToRemoteHosts: permits `ws://` to a host that is not loopback.
    ///   - liveness: the connection monitor: Rails beats every 3 s and a beat may be 3 s late
    ///     (`Liveness(pingInterval:pingTimeout:)` changes both); `.disabled` turns it off.
    ///
    /// The connect timeout and the reconnect policy are `SessionOptions`' `connectTimeout` and
    /// `reconnectPolicy` (`nil`: ``ActionCableDialect/defaultReconnectPolicy``).
    public static func actionCable(url: URL, headers: [HTTPHeader] = [], origin: String? = nil,
                                   auth: ActionCableAuth? = nil,
                                   guarantor: ActionCableDialect.SubscriptionGuarantor = .init(),
                                   restartDelay: Duration = .milliseconds(500),
                                   eventNameKeys: [String] = ActionCableDialect.defaultEventNameKeys,
                                   allowsInsecureTransportToRemoteHosts: Bool = false,
                                   liveness: Liveness = .automatic) -> ActionCableDialect {
        ActionCableDialect(url: url, headers: headers, origin: origin, auth: auth, guarantor: guarantor,
                           restartDelay: restartDelay, eventNameKeys: eventNameKeys,
                           allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts,
                           liveness: liveness)
    }

    /// The old spelling of ``actionCable(url:headers:origin:auth:guarantor:restartDelay:eventNameKeys:allowsInsecureTransportToRemoteHosts:liveness:)``:
    /// `credentials` is `auth: .provider { … }`; the connect timeout and the reconnect policy moved to
    /// `SessionOptions`.
    @available(*, deprecated, message: "credentials is now auth: .provider { … }")
    public static func actionCable(url: URL, headers: [HTTPHeader] = [], origin: String? = nil,
                                   credentials: @escaping ActionCableDialect.CredentialsProvider,
                                   guarantor: ActionCableDialect.SubscriptionGuarantor = .init(),
                                   allowsInsecureTransportToRemoteHosts: Bool = false) -> ActionCableDialect {
        .actionCable(url: url, headers: headers, origin: origin, auth: .provider(credentials), guarantor: guarantor,
                     allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts)
    }
}

/// Who the client is to an Action Cable server: headers and query items added to the upgrade request
/// (`Authorization: Bearer …`, a cookie, `?token=…`), which the app's `ApplicationCable::Connection#connect`
/// reads. The `auth:` of ``RealtimeDialect/actionCable(url:headers:origin:auth:guarantor:restartDelay:eventNameKeys:allowsInsecureTransportToRemoteHosts:liveness:)``,
/// as ``SocketIOAuth`` and `PusherAuth` are for the other dialects.
public enum ActionCableAuth: Sendable {
    /// The same credentials on every connection attempt.
    case value(ActionCableDialect.Credentials)
    /// Asked before every connection attempt, on the first connection and after every reconnect, so an
    /// expiring token can be refreshed. A thrown `RealtimeError` with code `.connectionRefused` or
    /// `.authorizationFailed` fails the session; anything else backs off and retries.
    case provider(@Sendable () async throws -> ActionCableDialect.Credentials)
}

// MARK: - Old spellings

extension ActionCableDialect {
    /// The old form of ``auth``: the provider it runs, if it is one.
    @available(*, deprecated, message: "use auth: .provider { … }")
    public var credentials: CredentialsProvider? {
        get {
            if case .provider(let provider)? = auth { return provider }
            return nil
        }
        set { auth = newValue.map(ActionCableAuth.provider) }
    }

    /// The old name of `liveness.pingInterval` (3 s when unset).
    @available(*, deprecated, message: "use liveness.pingInterval")
    public var pingInterval: Duration {
        get { liveness.pingInterval ?? Self.defaultPingInterval }
        set { liveness.pingInterval = newValue }
    }

    /// The old name of `liveness.pingTimeout` (3 s when unset).
    @available(*, deprecated, message: "use liveness.pingTimeout")
    public var staleGrace: Duration {
        get { liveness.pingTimeout ?? Self.defaultPingTimeout }
        set { liveness.pingTimeout = newValue }
    }

    /// Moved to `SessionOptions.connectTimeout`, which now bounds every dialect's connection attempt.
    @available(*, unavailable, message: "set SessionOptions.connectTimeout")
    public var connectTimeout: Duration { .seconds(20) }
}
