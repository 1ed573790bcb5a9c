import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The Rails Action Cable dialect (protocol `actioncable-v1-json`, Rails 6.0 through 8.x).
///
/// A ``ChannelID`` names a subscription: `name` is the channel class (`"ChatChannel"`), `params` the other
/// identifier keys (`["room_id": 42]`). Broadcasts arrive as events named `"message"` whose `data` is the
/// broadcast value, whatever its JSON type. `send(action, object)` and ``RealtimeChannel/perform(_:_:)`` call a
/// public method of the channel class. Requests (acknowledgements) are not part of the protocol.
///
/// ```swift
/// let session = RealtimeSession(dialect: .actionCable(url: URL(string: "wss://example.com/cable")!))
/// let room = session.channel(ChannelID("ChatChannel", params: ["room_id": 42]))
/// room.on("message") { event in print(event.data) }
/// try await room.perform("speak", ["text": "hi"])
/// ```
public struct ActionCableDialect: RealtimeDialect {
    /// The subprotocol this dialect speaks.
    public static let protocolName = "actioncable-v1-json"
    /// Offered second, as the JS client does: a server that selects it no longer speaks v1-json.
    public static let unsupportedProtocolName = "actioncable-unsupported"

    /// Credentials computed right before each connection attempt (a fresh token, a cookie).
    public struct Credentials: Sendable, Hashable {
        /// Headers added to the upgrade request (`Authorization: Bearer …`, `Cookie: …`).
        public var headers: [HTTPHeader]
        /// Query items appended to the URL (`?token=…`).
        public var queryItems: [URLQueryItem]

        public init(headers: [HTTPHeader] = [], queryItems: [URLQueryItem] = []) {
            self.headers = headers
            self.queryItems = queryItems
        }
    }

    /// Resends `subscribe` until the server answers, because Rails runs each command on a worker pool:
    /// a `subscribe` can lose its race with an `unsubscribe` and get no answer at all, and an unknown
    /// channel is never answered either.
    public struct SubscriptionGuarantor: Sendable, Hashable {
        /// Time between two `subscribe` frames for the same identifier while no answer came.
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

    /// Fetches credentials before every connection attempt. A thrown `RealtimeError` with code
    /// `.connectionRefused` or `.authorizationFailed` fails the session; anything else backs off and retries.
    public typealias CredentialsProvider = @Sendable () async throws -> Credentials

    /// Exponential backoff with full jitter: 1 s, ×2 per attempt, at most 30 s, unlimited attempts.
    public static let defaultReconnectPolicy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2,
                                                               maximumDelay: .seconds(30), jitter: .full)

    public var name: String { "actioncable" }
    /// The cable endpoint (`wss://host/cable`).
    public var url: URL
    /// Headers sent with every upgrade request, before the provider's.
    public var headers: [HTTPHeader]
    /// The `Origin` header. Rails answers HTTP 404 when it is missing or not allowed.
    public var origin: String?
    /// Re-run before every attempt; its headers and query items are added to the static ones.
    public var credentials: CredentialsProvider?
    public var guarantor: SubscriptionGuarantor
    public var reconnectPolicy: ReconnectPolicy
    /// Rails pings every 3 s; the link counts as dead after `pingInterval + staleGrace` without any frame.
    public var pingInterval: Duration
    public var staleGrace: Duration
    /// The least wait before reconnecting after a `server_restart` disconnect, so a restarting server is not
    /// hit at once.
    public var restartDelay: Duration
    /// How long DNS, TCP, TLS and the upgrade may take together.
    public var connectTimeout: Duration
    /// Permits `ws://` to a host that is not loopback.
    public var allowsInsecureTransportToRemoteHosts: Bool

    /// - Parameters:
    ///   - origin: the `Origin` header; `nil` derives it from `url` (`wss://host:port/cable` →
    ///     `https://host:port`).
    public init(url: URL, headers: [HTTPHeader] = [], origin: String? = nil,
                credentials: CredentialsProvider? = nil, guarantor: SubscriptionGuarantor = SubscriptionGuarantor(),
                reconnectPolicy: ReconnectPolicy = ActionCableDialect.defaultReconnectPolicy,
                pingInterval: Duration = .seconds(3), staleGrace: Duration = .seconds(3),
                restartDelay: Duration = .milliseconds(500), connectTimeout: Duration = .seconds(20),
                allowsInsecureTransportToRemoteHosts: Bool = false) {
        self.url = url
        self.headers = headers
        self.origin = origin ?? Self.defaultOrigin(for: url)
        self.credentials = credentials
        self.guarantor = guarantor
        self.reconnectPolicy = reconnectPolicy
        self.pingInterval = pingInterval
        self.staleGrace = staleGrace
        self.restartDelay = restartDelay
        self.connectTimeout = connectTimeout
        self.allowsInsecureTransportToRemoteHosts = allowsInsecureTransportToRemoteHosts
    }

    @_spi(DialectAuthoring) public func makeMachine() -> ActionCableMachine {
        ActionCableMachine(guarantor: guarantor, liveness: .serverPings(interval: pingInterval, grace: staleGrace),
                           restartDelay: restartDelay)
    }

    @_spi(DialectAuthoring) public func connectionRequest(attempt: Int) -> ConnectionRequestPlan {
        guard let credentials else { return .ready(request(with: Credentials())) }
        return .deferred { [self] in
            do {
                return request(with: try await credentials())
            } catch let error as RealtimeError {
                throw error
            } catch {
                throw RealtimeError(.operationFailed, "the Action Cable credentials provider threw",
                                    context: .init(detail: String(describing: error)))
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
                                 connectTimeout: connectTimeout,
                                 allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts)
    }

    /// Action Cable has no acknowledgements; a send carries at most one JSON object whose members join
    /// `action` (the event name) in the `data` Rails hands to the action method.
    @_spi(DialectAuthoring) public func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError? {
        if expectsReply { return .unsupported("acknowledgements") }
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
    ///   - credentials: re-run before every connection attempt, for tokens that expire.
    ///   - guarantor: how often and how many times `subscribe` is resent while unanswered.
    ///   - reconnectPolicy: by default full jitter from 1 s, doubling, capped at 30 s.
    public static func actionCable(url: URL, headers: [HTTPHeader] = [], origin: String? = nil,
                                   credentials: ActionCableDialect.CredentialsProvider? = nil,
                                   guarantor: ActionCableDialect.SubscriptionGuarantor = .init(),
                                   reconnectPolicy: ReconnectPolicy = ActionCableDialect.defaultReconnectPolicy,
                                   connectTimeout: Duration = .seconds(20),
                                   allowsInsecureTransportToRemoteHosts: Bool = false) -> ActionCableDialect {
        ActionCableDialect(url: url, headers: headers, origin: origin, credentials: credentials,
                           guarantor: guarantor, reconnectPolicy: reconnectPolicy, connectTimeout: connectTimeout,
                           allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts)
    }
}
