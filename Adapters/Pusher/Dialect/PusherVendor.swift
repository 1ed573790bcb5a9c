@_spi(DialectAuthoring) import RealtimeCore

/// What differs between Pusher Channels and Bird Realtime, which share one wire protocol (v7).
///
/// The machine reads every name and rule from here, so the two vendors run the same code.
public struct PusherVendor: Sendable, Hashable {
    /// How an auth endpoint expects its request body.
    public enum AuthEncoding: Sendable, Hashable {
        /// `application/x-www-form-urlencoded` (Pusher).
        case form
        /// `application/json` (Bird).
        case json
    }

    /// The dialect's short identifier ("pusher", "bird"), as ``PusherDialect/name``.
    public var name: String
    /// The service's name in messages and errors ("Pusher", "Bird").
    public var displayName: String
    /// Prefix of public system events (`pusher:`).
    public var systemPrefix: String
    /// Prefix of internal events that are re-emitted under ``systemPrefix`` (`pusher_internal:`).
    public var internalPrefix: String
    /// Key of the connection id in the handshake (`socket_id`, `connection_id`).
    public var connectionIDKey: String
    /// Key that carries the signed identity in `subscribe` (`channel_data`, `member_data`).
    public var subscribeIdentityKey: String
    /// Key of a presence member's id (`user_id`, `member_id`).
    public var memberIDKey: String
    /// Key of a presence member's info (`user_info`, `member_info`).
    public var memberInfoKey: String
    /// Key of the signed identity in `signin` and `signin_success` (`user_data`, `member_data`).
    public var signinDataKey: String
    /// Key of the id inside that identity (`id`, `member_id`).
    public var signinIDKey: String
    /// The word between the two colons of the sign-in HMAC string (`user`, `member`).
    public var signinSeparator: String
    /// `data` of a ping or pong; `nil` sends none.
    public var pingData: JSONValue?
    /// The internal event that carries a channel's subscriber count, without prefix.
    public var countEvent: String
    /// Whether `#server-to-user-` subscribes carry `auth: ""` (Pusher) or no `auth` key (Bird).
    public var userChannelSendsEmptyAuth: Bool
    /// How an auth endpoint's request body is encoded (`.form` for Pusher, `.json` for Bird).
    public var authEncoding: AuthEncoding
    /// The form or JSON field that carries the connection id in auth requests.
    public var authIDParameter: String
    /// The host for a cluster or region; `%@` is replaced by it.
    public var hostTemplate: String
    /// `client` query item of the connection URL.
    public var clientName: String
    /// The least wait before reconnecting after a 4100–4199 close (Pusher's rule is at least 1 s).
    public var backoffFloor41xx: Duration
    /// `private-encrypted-` channels (Pusher yes, Bird refuses them).
    public var supportsEncryptedChannels: Bool
    /// Whether the handshake's `activity_timeout` replaces the client's idle time (Bird) or only lowers it
    /// (Pusher: the smaller of the two).
    public var serverActivityTimeoutOverrides: Bool
    /// Whether a close 4000 ("use TLS") over `ws` is answered by one reconnect over `wss` (Pusher, as
    /// pusher-js does) or fails the session like the rest of 4000–4099 (Bird).
    public var retriesOverTLSOn4000: Bool

    /// Pusher Channels.
    public static let pusher = PusherVendor(
        name: "pusher", displayName: "Pusher", systemPrefix: "pusher:", internalPrefix: "pusher_internal:",
        connectionIDKey: "socket_id",
        subscribeIdentityKey: "channel_data", memberIDKey: "user_id", memberInfoKey: "user_info",
        signinDataKey: "user_data", signinIDKey: "id", signinSeparator: "user", pingData: .object([:]),
        countEvent: "subscription_count", userChannelSendsEmptyAuth: true, authEncoding: .form,
        authIDParameter: "socket_id", hostTemplate: "ws-%@.pusher.com", clientName: "realtime-swift",
        backoffFloor41xx: .seconds(1), supportsEncryptedChannels: true, serverActivityTimeoutOverrides: false,
        retriesOverTLSOn4000: true)

    /// Bird Realtime.
    public static let bird = PusherVendor(
        name: "bird", displayName: "Bird", systemPrefix: "bird:", internalPrefix: "bird_internal:",
        connectionIDKey: "connection_id",
        subscribeIdentityKey: "member_data", memberIDKey: "member_id", memberInfoKey: "member_info",
        signinDataKey: "member_data", signinIDKey: "member_id", signinSeparator: "member", pingData: nil,
        countEvent: "connection_count", userChannelSendsEmptyAuth: false, authEncoding: .json,
        authIDParameter: "connection_id", hostTemplate: "ws-%@.realtime.platform.bird.com",
        clientName: "realtime-swift", backoffFloor41xx: .seconds(1), supportsEncryptedChannels: false,
        serverActivityTimeoutOverrides: true, retriesOverTLSOn4000: false)

    /// The frame `<prefix>ping` or `<prefix>pong`.
    func control(_ name: String) -> TransportFrame {
        var members: [String: JSONValue] = ["event": .string(systemPrefix + name)]
        if let pingData { members["data"] = pingData }
        return .text(JSONValue.object(members).serialized())
    }

    /// The frame `<prefix><name>` carrying `data` (`subscribe`, `unsubscribe`, `signin`).
    func frame(_ name: String, data: JSONValue) -> TransportFrame {
        // The serializer's text for {"event", "data"} (keys sorted), written without building that object:
        // a reconnect sends one per channel.
        var text: [UInt8] = []
        text.reserveCapacity(64)
        text.append(contentsOf: #"{"data":"#.utf8)
        data.write(into: &text)
        text.append(contentsOf: #","event":"#.utf8)
        JSONValue.string(systemPrefix + name).write(into: &text)
        text.append(UInt8(ascii: "}"))
        return .text(String(decoding: text, as: UTF8.self))
    }

    /// The string an auth signature covers for `channel` (`<id>:<channel>[:<identity>]`).
    public func channelSignedString(connectionID: String, channel: String, identity: String?) -> String {
        identity.map { "\(connectionID):\(channel):\($0)" } ?? "\(connectionID):\(channel)"
    }

    /// The string a sign-in signature covers (`<id>::user::<data>`, `<id>::member::<data>`).
    public func signinSignedString(connectionID: String, identity: String) -> String {
        "\(connectionID)::\(signinSeparator)::\(identity)"
    }
}
