import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The Socket.IO v5 dialect over Engine.IO v4: namespaces are channels, `request` uses acks, binary
/// values (`JSONValue.binary`) travel as attachments. The server's Engine.IO pings keep the link checked
/// (``liveness``).
///
/// ```swift
/// let session = RealtimeSession(dialect: .socketIO(url: URL(string: "https://api.example.com")!,
///                                                  auth: ["token": "…"]))
/// let chat = session.channel("/chat")
/// ```
public struct SocketIODialect: RealtimeDialect {
    /// How the Engine.IO connection is carried.
    public enum Transport: Sendable, Hashable {
        /// One Engine.IO packet per WebSocket message.
        case websocket
        /// HTTP long-polling: a pending GET receives, a POST sends.
        case polling
    }

    /// Bounds that protect the session from a misbehaving server.
    public struct Limits: Sendable, Hashable {
        /// Attachments allowed in one packet, both ways (the JS parser's `maxAttachments`).
        public var maximumAttachments: Int
        /// Total attachment bytes allowed in one received packet.
        public var maximumAttachmentBytes: Int
        /// Events kept per namespace while its CONNECT ack is still on its way.
        public var maximumEventsBeforeConnect: Int
        /// Server ack requests per namespace that the app has not answered yet.
        public var maximumUnansweredServerAcks: Int

        /// Defaults: 10 attachments and 100 MB of attachment bytes per packet, 1,000 early events and 10,000
        /// unanswered acks per namespace.
        public init(maximumAttachments: Int = 10, maximumAttachmentBytes: Int = 100_000_000,
                    maximumEventsBeforeConnect: Int = 1_000, maximumUnansweredServerAcks: Int = 10_000) {
            self.maximumAttachments = maximumAttachments
            self.maximumAttachmentBytes = maximumAttachmentBytes
            self.maximumEventsBeforeConnect = maximumEventsBeforeConnect
            self.maximumUnansweredServerAcks = maximumUnansweredServerAcks
        }
    }

    /// The server's base URL (`http`, `https`, `ws` or `wss`). A path other than `/` names the default
    /// namespace, as in the JS client (`https://host/admin` joins `/admin`).
    public var url: URL
    /// The Engine.IO path on the server.
    public var path: String
    /// The CONNECT payload for every namespace; `nil` sends none.
    public var auth: SocketIOAuth?
    /// Extra headers on the WebSocket upgrade and on every polling request.
    public var headers: [HTTPHeader]
    /// Extra query items on the connection URL.
    public var queryItems: [URLQueryItem]
    /// `[.websocket]`, `[.polling]`, or `[.polling, .websocket]` to start on polling and upgrade.
    public var transports: [Transport]
    /// Namespaces joined as soon as the session connects.
    public var defaultNamespaces: [ChannelID]
    /// Attachment and buffering bounds.
    public var limits: Limits
    /// Permits `ws://`/`http://` to a host that is not loopback.
    public var allowsInsecureTransportToRemoteHosts: Bool
    /// The server pings every `pingInterval` and the link is dead after `pingInterval + pingTimeout` without
    /// a frame; `nil` values take those of the Engine.IO handshake, set ones replace them. `.disabled`
    /// stops checking (pings are still answered).
    public var liveness: Liveness

    /// ``defaultReconnectPolicy``, used unless `SessionOptions.reconnectPolicy` sets another.
    public var reconnectPolicy: ReconnectPolicy { Self.defaultReconnectPolicy }

    /// The JS client's defaults: 1 s, doubling, capped at 5 s, randomization 0.5, no attempt limit.
    public static let defaultReconnectPolicy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2,
                                                               maximumDelay: .seconds(5),
                                                               jitter: .proportional(0.5))

    /// A dialect for the server at `url`; see ``RealtimeDialect/socketIO(url:path:auth:headers:queryItems:transports:defaultNamespaces:limits:allowsInsecureTransportToRemoteHosts:liveness:)``.
    public init(url: URL, path: String = "/socket.io/", auth: SocketIOAuth? = nil, headers: [HTTPHeader] = [],
                queryItems: [URLQueryItem] = [], transports: [Transport] = [.websocket],
                defaultNamespaces: [ChannelID]? = nil, limits: Limits = Limits(),
                allowsInsecureTransportToRemoteHosts: Bool = false, liveness: Liveness = .automatic) {
        self.url = url
        self.path = path
        self.auth = auth
        self.headers = headers
        self.queryItems = queryItems
        self.transports = transports.isEmpty ? [.websocket] : transports
        self.liveness = liveness
        if let defaultNamespaces {
            self.defaultNamespaces = defaultNamespaces
        } else {
            let urlPath = url.path
            self.defaultNamespaces = [ChannelID(urlPath.isEmpty || urlPath == "/" ? "/" : urlPath)]
        }
        self.limits = limits
        self.allowsInsecureTransportToRemoteHosts = allowsInsecureTransportToRemoteHosts
    }

    /// `"socket.io"`.
    public var name: String { "socket.io" }

    /// ``defaultNamespaces``: `/` unless configured otherwise.
    public var defaultChannels: [ChannelID] { defaultNamespaces.map(canonicalChannel) }

    /// A namespace always starts with `/` (`""` is `/`), and has no parameters.
    @_spi(DialectAuthoring) public func canonicalChannel(_ channel: ChannelID) -> ChannelID {
        ChannelID(channel.name.hasPrefix("/") ? channel.name : "/" + channel.name)
    }

    /// A fresh ``SocketIOMachine``.
    @_spi(DialectAuthoring) public func makeMachine() -> any DialectMachine {
        SocketIOMachine(auth: auth, limits: limits, liveness: liveness)
    }

    /// The transport the connection starts on.
    var initialTransport: Transport { transports.first ?? .websocket }

    /// `true` when the session starts on polling and upgrades to WebSocket.
    var upgrades: Bool { initialTransport == .polling && transports.contains(.websocket) }

    /// `…/socket.io/?EIO=4&transport=websocket` (or `transport=polling`) plus the extra query items and
    /// headers. Auth is not part of it: Socket.IO v5 sends it in each namespace CONNECT.
    @_spi(DialectAuthoring) public func connectionRequest(attempt: Int) -> ConnectionRequestPlan {
        do throws(RealtimeError) {
            return .ready(try makeConnectionRequest())
        } catch {
            return .deferred { throw error }
        }
    }

    /// The connection request, without the async wrapper (its inputs are all static configuration).
    func makeConnectionRequest() throws(RealtimeError) -> ConnectionRequest {
        let websocket = initialTransport == .websocket
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), components.host?.isEmpty == false else {
            throw RealtimeError(.invalidArgument, "the Socket.IO URL \(url.absoluteString) needs a scheme and a host")
        }
        let secure: Bool
        switch scheme {
        case "https", "wss": secure = true
        case "http", "ws": secure = false
        default:
            throw RealtimeError(.invalidArgument, "Socket.IO URL scheme must be http, https, ws or wss",
                                context: .init(detail: scheme))
        }
        components.scheme = websocket ? (secure ? "wss" : "ws") : (secure ? "https" : "http")
        var enginePath = path.hasPrefix("/") ? path : "/" + path
        if !enginePath.hasSuffix("/") { enginePath += "/" }
        components.path = enginePath
        var items = queryItems.filter { $0.name != "EIO" && $0.name != "transport" && $0.name != "sid" }
        items.append(URLQueryItem(name: "EIO", value: "4"))
        items.append(URLQueryItem(name: "transport", value: websocket ? "websocket" : "polling"))
        components.queryItems = items
        components.fragment = nil
        guard let requestURL = components.url else {
            throw RealtimeError(.invalidArgument, "cannot build the Socket.IO URL", context: .init(detail: url.absoluteString))
        }
        return ConnectionRequest(url: requestURL, headers: headers,
                                 allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts)
    }

    /// `base` for WebSocket sessions; for polling, an Engine.IO long-polling transport over `URLSession`
    /// that upgrades to `base` when `transports` is `[.polling, .websocket]`. When `base` has a TLS trust
    /// policy of its own (pins, extra roots), `https` polling applies it through a `URLSession` delegate
    /// where `base` can evaluate a `SecTrust` (`NetworkWebSocketTransport` on Apple platforms); elsewhere
    /// (Linux, whose `URLSession` cannot be given roots or pins) it fails with `.unsupported`: use
    /// `transports: [.websocket]` there. A transport that makes its own HTTP clients (the package's, which
    /// route polling through their proxy) is asked for them instead.
    @_spi(DialectAuthoring) public func transport(wrapping base: any RealtimeTransport) -> any RealtimeTransport {
        switch initialTransport {
        case .websocket: return base
        case .polling:
            // A close waits for the last POSTs as long as `base` waits for a close frame.
            let closeTimeout = (base as? any CloseTimeoutProviding)?.closeTimeout
                ?? EngineIOPolling.defaultCloseTimeout
            if let provider = base as? any HTTPClientProviding {
                // One long-polling GET beside one POST.
                return EngineIOPollingTransport(upgradeTransport: upgrades ? base : nil, closeTimeout: closeTimeout) {
                    provider.makeHTTPClient(maximumConnectionsPerHost: 2, trust: .transport)
                }
            }
            return EngineIOPollingTransport(upgradeTransport: upgrades ? base : nil, trust: HTTPTrustPolicy(of: base),
                                            closeTimeout: closeTimeout)
        }
    }

    /// Event names the Socket.IO client keeps for itself.
    public static let reservedEventNames: Set<String> = [
        "connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener",
    ]

    /// Whether `name` is one of ``reservedEventNames``, by comparing strings rather than hashing one per
    /// received event; a name of another length (most are) is not compared at all.
    static func isReserved(_ name: String) -> Bool {
        guard (7...14).contains(name.utf8.count) else { return false }
        return switch name {
        case "connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener": true
        default: false
        }
    }

    /// Refuses reserved event names (`.invalidArgument`) and more attachments than the limit (`.limitExceeded`).
    @_spi(DialectAuthoring) public func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError? {
        if Self.reservedEventNames.contains(message.event) {
            return RealtimeError(.invalidArgument, "\"\(message.event)\" is a reserved Socket.IO event name",
                                 context: .init(channel: message.channel))
        }
        let attachments = message.arguments.reduce(0) { $0 + BinaryAttachments.count(in: $1) }
        if attachments > limits.maximumAttachments {
            return RealtimeError(.limitExceeded,
                                 "\(attachments) binary attachments, more than the limit of \(limits.maximumAttachments)",
                                 context: .init(channel: message.channel))
        }
        return nil
    }
}

extension RealtimeDialect where Self == SocketIODialect {
    /// A Socket.IO v5 server (Engine.IO v4).
    ///
    /// - Parameters:
    ///   - url: The server, e.g. `https://api.example.com`; a path names the default namespace.
    ///   - path: The Engine.IO path (`/socket.io/`).
    ///   - auth: The CONNECT payload, as a value or a provider re-run before every namespace CONNECT.
    ///   - headers: Extra headers for the upgrade and polling requests.
    ///   - queryItems: Extra query items.
    ///   - transports: `[.websocket]` (default), `[.polling]`, or `[.polling, .websocket]` to upgrade.
    ///   - defaultNamespaces: Namespaces joined on connect; `nil` means `/` (or the URL's path).
    ///   - limits: Attachment and buffering bounds.
    ///   - allowsInsecureTransportToRemoteHosts: Permits `ws://`/`http://` to a host that is not loopback.
    ///   - liveness: The server's Engine.IO pings by default; set values replace the handshake's, and
    ///     `.disabled` stops checking.
    ///
    /// The connect timeout (20 s, as in JS) and the reconnect policy are `SessionOptions`' `connectTimeout`
    /// and `reconnectPolicy` (`nil`: ``SocketIODialect/defaultReconnectPolicy``, the JS client's 1 s ×2 up to
    /// 5 s, randomization 0.5).
    public static func socketIO(url: URL, path: String = "/socket.io/", auth: SocketIOAuth? = nil,
                                headers: [HTTPHeader] = [], queryItems: [URLQueryItem] = [],
                                transports: [SocketIODialect.Transport] = [.websocket],
                                defaultNamespaces: [ChannelID]? = nil, limits: SocketIODialect.Limits = .init(),
                                allowsInsecureTransportToRemoteHosts: Bool = false,
                                liveness: Liveness = .automatic) -> SocketIODialect {
        SocketIODialect(url: url, path: path, auth: auth, headers: headers, queryItems: queryItems,
                        transports: transports, defaultNamespaces: defaultNamespaces, limits: limits,
                        allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts,
                        liveness: liveness)
    }
}

/// The payload sent with every namespace CONNECT: the `auth:` of
/// ``RealtimeDialect/socketIO(url:path:auth:headers:queryItems:transports:defaultNamespaces:limits:allowsInsecureTransportToRemoteHosts:liveness:)``,
/// as `PusherAuth` and `ActionCableAuth` are for the other dialects.
///
/// Socket.IO v5 takes only a JSON object as the CONNECT payload. Any other value (a string, an array,
/// `.null`) refuses the namespace with `.invalidArgument` before anything is sent: `subscribed()` throws
/// it and `onError` hears it.
public enum SocketIOAuth: Sendable, ExpressibleByDictionaryLiteral {
    /// The same payload every time: an object such as `["token": "…"]`.
    case value(JSONValue)
    /// Asked again before every namespace CONNECT, on the first connection and after every reconnect,
    /// so expiring tokens can be refreshed. Throwing refuses that namespace: with the thrown error's code
    /// when it is a `RealtimeError` (such as `.authorizationFailed`), else with `.operationFailed`, as on
    /// the other dialects; returning something other than an object refuses it with `.invalidArgument`.
    case provider(@Sendable (_ namespace: ChannelID) async throws -> JSONValue)

    /// `["token": "…"]` is `.value(.object(["token": "…"]))`.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .value(.object(Dictionary(elements, uniquingKeysWith: { _, last in last })))
    }
}

extension SocketIOAuth {
    /// Why `value` cannot be a CONNECT payload, or `nil` when it can: the protocol wants an object, and a
    /// server drops the whole connection (close 1002) on anything else. The message names the kind of
    /// value given, never the value, which may be a token.
    package static func payloadError(_ value: JSONValue, channel: ChannelID? = nil,
                                     fromProvider: Bool) -> RealtimeError? {
        if case .object = value { return nil }
        let given = fromProvider ? "the auth provider returned \(value.kindDescription)"
                                 : "\(value.kindDescription) was given"
        return RealtimeError(.invalidArgument,
                             "Socket.IO's auth must be a JSON object such as {\"token\": \"…\"}; \(given)",
                             context: .init(channel: channel))
    }
}

// MARK: - Old spellings

extension SocketIODialect {
    /// Moved to `SessionOptions.connectTimeout`, which now bounds every dialect's connection attempt,
    /// the Engine.IO handshake included.
    @available(*, unavailable, message: "set SessionOptions.connectTimeout")
    public var connectTimeout: Duration { .seconds(20) }
}
