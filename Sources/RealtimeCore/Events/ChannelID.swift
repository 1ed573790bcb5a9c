import Foundation

/// Names a channel: a Pusher channel, a Socket.IO namespace or an Action Cable subscription.
///
/// Action Cable identifies subscriptions by a channel class plus parameters; the other dialects
/// use the name alone. A string literal makes a channel without parameters.
public struct ChannelID: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The Pusher channel, the Socket.IO namespace (`/chat`) or the Action Cable channel class (`ChatChannel`).
    public var name: String
    /// Extra identifier parameters (Action Cable). Empty for the other dialects.
    public var params: [String: JSONValue]

    /// A channel named `name`, with the Action Cable identifier `params` when it has any.
    public init(_ name: String, params: [String: JSONValue] = [:]) {
        self.name = name
        self.params = params
    }

    /// A channel named `value`, without parameters (`let room: ChannelID = "presence-room"`).
    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String {
        params.isEmpty ? name : "\(name)\(JSONValue.object(params))"
    }
}

/// Identifies a registered handler or observer; pass it to `off(id:)` to remove it.
public struct HandlerID: Hashable, Sendable, CustomStringConvertible {
    /// The value that makes the id unique.
    public let uuid: UUID
    /// An id for `uuid`, a fresh random one by default.
    public init(uuid: UUID = UUID()) { self.uuid = uuid }
    public var description: String { uuid.uuidString }
}

