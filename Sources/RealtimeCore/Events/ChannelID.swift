import Foundation

/// Names a channel: a Pusher channel, a Socket.IO namespace or an Action Cable subscription.
///
/// Action Cable identifies subscriptions by a channel class plus parameters; the other dialects
/// use the name alone. A string literal makes a channel without parameters.
public struct ChannelID: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var name: String
    /// Extra identifier parameters (Action Cable). Empty for the other dialects.
    public var params: [String: JSONValue]

    public init(_ name: String, params: [String: JSONValue] = [:]) {
        self.name = name
        self.params = params
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String {
        params.isEmpty ? name : "\(name)\(JSONValue.object(params))"
    }
}

/// Identifies a registered handler or observer; pass it to `off(id:)` to remove it.
public struct HandlerID: Hashable, Sendable, CustomStringConvertible {
    public let uuid: UUID
    public init(uuid: UUID = UUID()) { self.uuid = uuid }
    public var description: String { uuid.uuidString }
}

