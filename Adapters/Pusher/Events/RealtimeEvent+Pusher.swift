@_spi(DialectAuthoring) import RealtimeCore

/// Pusher's and Bird's notion of who sent an event, kept out of the dialect-neutral core: the value lives
/// in the event's dialect metadata under a key of this module.
extension RealtimeEvent {
    /// The key of ``userID`` in the event's dialect metadata.
    static let pusherUserIDKey = "pusher.user_id"

    /// The sender's user id: set on client events of presence channels, where the server adds it.
    public var userID: String? {
        get { dialectMetadata[Self.pusherUserIDKey] }
        set { dialectMetadata[Self.pusherUserIDKey] = newValue }
    }

    /// An event with the sender's user id, as the Pusher dialect builds it; `arguments` defaults to `[data]`.
    public init(channel: ChannelID?, name: String, data: JSONValue, arguments: [JSONValue]? = nil,
                rawData: String? = nil, userID: String?, ackToken: AckToken? = nil) {
        self.init(channel: channel, name: name, data: data, arguments: arguments, rawData: rawData,
                  ackToken: ackToken)
        self.userID = userID
    }
}
