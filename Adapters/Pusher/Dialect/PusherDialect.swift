import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The Pusher Channels protocol (v7), and Bird Realtime which speaks it with other names (``PusherVendor``).
///
/// Channel names choose the kind: `private-…` and `presence-…` are authorized through ``PusherAuth``
/// before the subscribe is sent (again after every reconnect); other names are public. Events arrive under
/// their own names; internal events (`pusher_internal:member_added`) arrive under the public prefix
/// (`pusher:member_added`). `send` carries client events (`client-…`) on private and presence channels.
///
/// ```swift
/// let session = RealtimeSession(dialect: .pusher(key: "app-key", cluster: "eu",
///                                                auth: .endpoint(URL(string: "https://example.com/pusher/auth")!)))
/// let room = session.channel("presence-room")
/// room.on("pusher:member_added") { event in print(event.data) }
/// try await room.send("client-typing", ["on": true])
/// ```
public struct PusherDialect: RealtimeDialect {
    /// Protocol version sent in the URL.
    public static let protocolVersion = 7
    /// Version sent as the `version` query item.
    public static let libraryVersion = "0.1.0"
    /// Exponential backoff with full jitter: 1 s, ×2 per attempt, at most 30 s, unlimited attempts.
    public static let defaultReconnectPolicy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2,
                                                               maximumDelay: .seconds(30), jitter: .full)
    /// Idle time before the client pings when ``liveness`` sets none (the server's `activity_timeout` then
    /// lowers it (Pusher) or replaces it (Bird)).
    public static let defaultPingInterval = Duration.seconds(120)
    /// How long a ping may go unanswered when ``liveness`` sets no `pingTimeout`.
    public static let defaultPingTimeout = Duration.seconds(30)

    /// Pusher or Bird: event prefixes, identity keys and close-code rules.
    public var vendor: PusherVendor
    /// The app key.
    public var key: String
    /// The WebSocket host (`ws-<cluster>.pusher.com`, or your own server).
    public var host: String
    /// `nil` uses 443 with TLS and 80 without.
    public var port: Int?
    /// `wss` when `true`, `ws` when `false`. By default `true` for every host but loopback ones
    /// (`localhost`, `127.x.x.x`, `::1`), which use `ws`. `wss` to loopback is allowed; `ws` to any other
    /// host also needs ``allowsInsecureTransportToRemoteHosts``, as in the other dialects.
    public var usesTLS: Bool
    /// Permits `ws` (``usesTLS`` `false`) to a host that is not loopback (a server on the LAN). Off by
    /// default: the transport refuses the plain connection and the session fails with `.invalidArgument`.
    public var allowsInsecureTransportToRemoteHosts: Bool
    /// Signs private, presence and encrypted channels and user sign-in; `nil` allows public channels only.
    public var auth: PusherAuth?
    /// The client pings after `pingInterval` without traffic (``defaultPingInterval``; the server's
    /// `activity_timeout` lowers it (Pusher) or replaces it (Bird)) and counts the link dead when nothing
    /// answers within `pingTimeout` (``defaultPingTimeout``).
    public var liveness: Liveness

    /// ``defaultReconnectPolicy``, used unless `SessionOptions.reconnectPolicy` sets another.
    public var reconnectPolicy: ReconnectPolicy { Self.defaultReconnectPolicy }

    /// The vendor's short name ("pusher", "bird").
    public var name: String { vendor.name }

    /// - Parameters:
    ///   - vendor: ``PusherVendor/pusher`` or ``PusherVendor/bird``: the event prefixes and field names.
    ///   - key: the app key.
    ///   - host: the WebSocket host.
    ///   - port: replaces 443 / 80.
    ///   - useTLS: `wss` or `ws`; `nil` picks `ws` for loopback hosts (``Loopback``) and `wss` for every other.
    ///   - allowsInsecureTransportToRemoteHosts: permits `ws` to a host that is not loopback.
    ///   - auth: signs private, presence and encrypted channels and sign-in.
    ///   - liveness: when the client pings and how long it waits for the pong.
    public init(vendor: PusherVendor, key: String, host: String, port: Int? = nil, useTLS: Bool? = nil,
                allowsInsecureTransportToRemoteHosts: Bool = false, auth: PusherAuth? = nil,
                liveness: Liveness = .automatic) {
        self.vendor = vendor
        self.key = key
        self.host = host
        self.port = port
        self.usesTLS = useTLS ?? !Loopback.contains(host: host)
        self.allowsInsecureTransportToRemoteHosts = allowsInsecureTransportToRemoteHosts
        self.auth = auth
        self.liveness = liveness
    }

    /// A fresh machine for one session.
    @_spi(DialectAuthoring) public func makeMachine() -> any DialectMachine {
        PusherMachine(vendor: vendor, key: key, authorizer: auth, liveness: liveness)
    }

    /// `ws(s)://host[:port]/app/<key>?protocol=7&client=…&version=…`.
    public var url: URL {
        var components = URLComponents()
        components.scheme = usesTLS ? "wss" : "ws"
        // An IPv6 literal needs brackets in a URL; without them there is no URL at all.
        components.host = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        components.port = port
        components.percentEncodedPath = "/app/" + (key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed
            .subtracting(CharacterSet(charactersIn: "/?#"))) ?? key)
        components.queryItems = [URLQueryItem(name: "protocol", value: String(Self.protocolVersion)),
                                 URLQueryItem(name: "client", value: vendor.clientName),
                                 URLQueryItem(name: "version", value: Self.libraryVersion)]
        // Every part above is valid, so `url` cannot be nil; the fallback keeps the API non-optional.
        return components.url ?? URL(fileURLWithPath: "/")
    }

    /// The same request every attempt: auth happens per channel, after the handshake.
    @_spi(DialectAuthoring) public func connectionRequest(attempt: Int) -> ConnectionRequestPlan {
        .ready(ConnectionRequest(url: url, allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts))
    }

    /// Client events only: `client-` names, on private or presence channels, never encrypted ones, no acks.
    @_spi(DialectAuthoring) public func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError? {
        if expectsReply {
            return .unsupported("request", dialect: vendor.name, needs: "Socket.IO (acknowledgements)",
                                channel: message.channel)
        }
        let channel = message.channel.name
        let context = RealtimeError.Context(channel: message.channel, detail: message.event)
        guard message.event.hasPrefix("client-") else {
            return RealtimeError(.invalidArgument, "\(vendor.displayName) clients can only send events named 'client-…'",
                                 context: context)
        }
        if channel.hasPrefix("private-encrypted-") {
            return RealtimeError(.invalidArgument, "client events are not allowed on encrypted channels",
                                 context: context)
        }
        guard channel.hasPrefix("private-") || channel.hasPrefix("presence-") else {
            return RealtimeError(.invalidArgument, "client events need a private or presence channel",
                                 context: context)
        }
        guard message.arguments.count <= 1 else {
            return RealtimeError(.invalidArgument, "a \(vendor.displayName) event carries one data value, not \(message.arguments.count)",
                                 context: context)
        }
        return nil
    }

}

extension RealtimeDialect where Self == PusherDialect {
    /// Pusher Channels on `ws-<cluster>.pusher.com` over TLS (PusherSwift's `PusherClientOptions`).
    ///
    /// - Parameters:
    ///   - key: the app key.
    ///   - cluster: the cluster whose host is used (`mt1`, `eu`, …).
    ///   - auth: signs private, presence and encrypted channels and sign-in: an endpoint, your own
    ///     `.provider { request in … }`, or an inline signer for development.
    ///   - host: replaces the cluster host (a self-hosted server, or `127.0.0.1` in tests).
    ///   - port: replaces 443 / 80.
    ///   - useTLS: `wss` or `ws`; `nil` picks `ws` for loopback hosts and `wss` for every other. A server
    ///     that closes a `ws` connection with 4000 ("use TLS") is retried once over `wss`.
    ///   - allowsInsecureTransportToRemoteHosts: permits `ws` to a host that is not loopback.
    ///   - liveness: idle time before a ping (120 s; the server's `activity_timeout` lowers it) and the wait
    ///     for the pong (30 s).
    ///
    /// The connect timeout and the reconnect policy are `SessionOptions`' `connectTimeout` and
    /// `reconnectPolicy` (`nil`: ``PusherDialect/defaultReconnectPolicy``).
    public static func pusher(key: String, cluster: String = "mt1", auth: PusherAuth? = nil,
                              host: String? = nil, port: Int? = nil, useTLS: Bool? = nil,
                              allowsInsecureTransportToRemoteHosts: Bool = false,
                              liveness: Liveness = .automatic) -> PusherDialect {
        let vendor = PusherVendor.pusher
        return PusherDialect(vendor: vendor, key: key,
                             host: host ?? vendor.hostTemplate.replacingOccurrences(of: "%@", with: cluster),
                             port: port, useTLS: useTLS,
                             allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts,
                             auth: auth, liveness: liveness)
    }

    /// Bird Realtime on `ws-<cluster>.realtime.platform.bird.com` over TLS (BirdRealtime's options, where
    /// the key is `appKey` and the cluster `region`). Its auth endpoints take JSON; the server's
    /// `activity_timeout` replaces `liveness.pingInterval` (which applies until the handshake). A close
    /// 4000 is final, as with every 40xx.
    ///
    /// - Parameters:
    ///   - key: the app key (BirdRealtime's `appKey`).
    ///   - cluster: the region whose host is used (BirdRealtime's `region`: `us1`, `eu1`, …).
    ///   - auth: signs private and presence channels and sign-in.
    ///   - host: replaces the region host (BirdRealtime's `wsHost`).
    ///   - port: replaces 443 / 80.
    ///   - useTLS: `wss` or `ws`; `nil` picks `ws` for loopback hosts and `wss` for every other.
    ///   - allowsInsecureTransportToRemoteHosts: permits `ws` to a host that is not loopback (BirdRealtime's
    ///     `allowInsecure` never does; it upgrades to `wss` without saying so).
    ///   - liveness: idle time before a ping until the server's `activity_timeout` replaces it, and the
    ///     wait for the pong (30 s).
    public static func bird(key: String, cluster: String = "us1", auth: PusherAuth? = nil,
                            host: String? = nil, port: Int? = nil, useTLS: Bool? = nil,
                            allowsInsecureTransportToRemoteHosts: Bool = false,
                            liveness: Liveness = .automatic) -> PusherDialect {
        let vendor = PusherVendor.bird
        return PusherDialect(vendor: vendor, key: key,
                             host: host ?? vendor.hostTemplate.replacingOccurrences(of: "%@", with: cluster),
                             port: port, useTLS: useTLS,
                             allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts,
                             auth: auth, liveness: liveness)
    }
}

// MARK: - Old spellings

extension PusherDialect {
    /// The old name of ``auth``.
    @available(*, deprecated, renamed: "auth")
    public var authorizer: PusherAuth? {
        get { auth }
        set { auth = newValue }
    }

    /// The old name of `liveness.pingInterval` (120 s when unset).
    @available(*, deprecated, message: "use liveness.pingInterval")
    public var activityTimeout: Duration {
        get { liveness.pingInterval ?? Self.defaultPingInterval }
        set { liveness.pingInterval = newValue }
    }

    /// The old name of `liveness.pingTimeout` (30 s when unset).
    @available(*, deprecated, message: "use liveness.pingTimeout")
    public var pongTimeout: Duration {
        get { liveness.pingTimeout ?? Self.defaultPingTimeout }
        set { liveness.pingTimeout = newValue }
    }

    /// Moved to `SessionOptions.connectTimeout`, which now bounds every dialect's connection attempt.
    @available(*, unavailable, message: "set SessionOptions.connectTimeout")
    public var connectTimeout: Duration { .seconds(20) }
}

extension RealtimeDialect where Self == PusherDialect {
    /// The old spelling of ``pusher(key:cluster:auth:host:port:useTLS:allowsInsecureTransportToRemoteHosts:liveness:)``:
    /// `authorizer` is `auth`, `activityTimeout` and `pongTimeout` are `liveness`; the connect timeout and the
    /// reconnect policy moved to `SessionOptions`.
    @available(*, deprecated,
               message: "authorizer is now auth; activityTimeout and pongTimeout are liveness: Liveness(pingInterval:pingTimeout:)")
    public static func pusher(key: String, cluster: String = "mt1", authorizer: PusherAuth?,
                              host: String? = nil, port: Int? = nil, useTLS: Bool? = nil,
                              allowsInsecureTransportToRemoteHosts: Bool = false,
                              activityTimeout: Duration = PusherDialect.defaultPingInterval,
                              pongTimeout: Duration = PusherDialect.defaultPingTimeout) -> PusherDialect {
        .pusher(key: key, cluster: cluster, auth: authorizer, host: host, port: port, useTLS: useTLS,
                allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts,
                liveness: Liveness(pingInterval: activityTimeout, pingTimeout: pongTimeout))
    }

    /// The old spelling of ``bird(key:cluster:auth:host:port:useTLS:allowsInsecureTransportToRemoteHosts:liveness:)``:
    /// `appKey` is `key`, `region` is `cluster`, `authorizer` is `auth`, `activityTimeout` and `pongTimeout`
    /// are `liveness`; the connect timeout and the reconnect policy moved to `SessionOptions`.
    @available(*, deprecated, message: """
        appKey is now key, region cluster, authorizer auth; activityTimeout and pongTimeout are \
        liveness: Liveness(pingInterval:pingTimeout:)
        """)
    public static func bird(appKey: String, region: String = "us1", authorizer: PusherAuth? = nil,
                            host: String? = nil, port: Int? = nil, useTLS: Bool? = nil,
                            allowsInsecureTransportToRemoteHosts: Bool = false,
                            activityTimeout: Duration = PusherDialect.defaultPingInterval,
                            pongTimeout: Duration = PusherDialect.defaultPingTimeout) -> PusherDialect {
        .bird(key: appKey, cluster: region, auth: authorizer, host: host, port: port, useTLS: useTLS,
              allowsInsecureTransportToRemoteHosts: allowsInsecureTransportToRemoteHosts,
              liveness: Liveness(pingInterval: activityTimeout, pingTimeout: pongTimeout))
    }
}
