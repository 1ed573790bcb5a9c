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

    public init(isResubscription: Bool, recovered: Bool?, serverPayload: JSONValue? = nil) {
        self.isResubscription = isResubscription
        self.recovered = recovered
        self.serverPayload = serverPayload
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
    public var kind: Kind

    public init(channel: ChannelID, kind: Kind) {
        self.channel = channel
        self.kind = kind
    }
}
