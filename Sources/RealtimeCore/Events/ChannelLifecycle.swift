/// What the session knows about a channel's subscription when the server confirms it.
public struct SubscriptionInfo: Sendable, Hashable {
    /// `true` when the channel had been subscribed before, on an earlier connection: the session joined it
    /// again after a reconnect.
    public var isResubscription: Bool
    /// Whether the server replayed what was missed (Socket.IO connection state recovery); `nil` when the
    /// dialect cannot tell.
    public var recovered: Bool?
    /// What the server sent with its confirmation, when it sends anything: the Socket.IO CONNECT payload
    /// (with the namespace's `sid`), a Pusher presence snapshot.
    public var serverPayload: JSONValue?
    /// For a resubscription, how long the channel went unsubscribed: from the moment its last subscription
    /// lapsed (the connection ended, or the server dropped it) to this confirmation. Unless `recovered` is
    /// `true`, messages sent in that window were not received: an app that must not miss any fetches them
    /// for this span. `nil` on a first subscription.
    public var gap: Duration?

    /// Each parameter sets the property of the same name.
    public init(isResubscription: Bool, recovered: Bool?, serverPayload: JSONValue? = nil, gap: Duration? = nil) {
        self.isResubscription = isResubscription
        self.recovered = recovered
        self.serverPayload = serverPayload
        self.gap = gap
    }
}

/// A change in a channel's subscription, reported to ``RealtimeChannel/onLifecycle(perform:)`` and
/// ``RealtimeSession/onChannelEvent(perform:)``.
public struct ChannelLifecycleEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The server confirmed the subscription (first time, or again after a reconnect).
        case subscribed(SubscriptionInfo)
        /// The server or the authorizer refused it. It is not retried until the app asks again.
        case rejected(RealtimeError)
        /// The app left the channel.
        case unsubscribed
        /// The server ended a subscribed channel (a Socket.IO namespace DISCONNECT). It is not re-joined.
        case endedByServer(RealtimeError)
    }

    /// The channel concerned.
    public var channel: ChannelID
    /// What happened to it.
    public var kind: Kind

    /// An event of `kind` for `channel`.
    public init(channel: ChannelID, kind: Kind) {
        self.channel = channel
        self.kind = kind
    }
}

// Short text for logs and `print`, without the module-qualified dump of the derived descriptions.
extension SubscriptionInfo: CustomStringConvertible {
    /// `subscribed`, `resubscribed, recovered`, then the server's payload when there is one.
    public var description: String {
        var parts = [isResubscription ? "resubscribed" : "subscribed"]
        if let recovered { parts.append(recovered ? "recovered" : "not recovered") }
        if let serverPayload { parts.append("payload \(serverPayload)") }
        return parts.joined(separator: ", ")
    }
}

extension ChannelLifecycleEvent.Kind: CustomStringConvertible {
    /// `subscribed, payload {…}`, `rejected: <error>`, `unsubscribed`, `ended by the server: <error>`.
    public var description: String {
        switch self {
        case .subscribed(let info): info.description
        case .rejected(let error): "rejected: \(error)"
        case .unsubscribed: "unsubscribed"
        case .endedByServer(let error): "ended by the server: \(error)"
        }
    }
}

extension ChannelLifecycleEvent: CustomStringConvertible {
    /// `<channel>: <kind>`.
    public var description: String { "\(channel): \(kind)" }
}
