import Foundation

/// Names a channel: a Pusher channel, a Socket.IO namespace or an Action Cable subscription.
///
/// Action Cable identifies subscriptions by a channel class plus parameters; the other dialects
/// use the name alone. A string literal makes a channel without parameters.
public struct ChannelID: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The Pusher channel, the Socket.IO namespace (`/chat`) or the Action Cable channel class (`ChatChannel`).
    public var name: String
    /// Extra identifier parameters (Action Cable). Empty for the other dialects.
    public var params: [String: JSONValue] {
        get { Dictionary(uniqueKeysWithValues: sortedParams.lazy.map { ($0.key, $0.value) }) }
        set { sortedParams = Self.sorted(newValue) }
    }

    /// `params` sorted by key: one small array per channel instead of a hash table (a channel is kept in
    /// several tables for its life, and an Action Cable app may hold thousands), and equal params compare
    /// and hash as equal whatever order they were given in.
    private var sortedParams: [Param]

    private struct Param: Hashable, Sendable {
        var key: String
        var value: JSONValue
    }

    /// A channel named `name`, with the Action Cable identifier `params` when it has any.
    public init(_ name: String, params: [String: JSONValue] = [:]) {
        self.name = name
        sortedParams = Self.sorted(params)
    }

    private static func sorted(_ params: [String: JSONValue]) -> [Param] {
        if params.isEmpty { return [] }
        var sorted = params.map { Param(key: $0.key, value: $0.value) }  // exactly as many as there are
        sorted.sort { $0.key < $1.key }
        return sorted
    }

    /// Whether two channels have the same name and parameters, in whatever order the parameters were given.
    // Written out so that a channel without parameters (every Pusher and Socket.IO one) is compared by name
    // alone: the synthesized one goes through the generic array code, with retains and releases, on every
    // handler lookup.
    public static func == (lhs: ChannelID, rhs: ChannelID) -> Bool {
        guard lhs.name == rhs.name else { return false }
        if lhs.sortedParams.isEmpty { return rhs.sortedParams.isEmpty }
        return lhs.sortedParams == rhs.sortedParams
    }

    /// Hashes the name and the parameters, consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(sortedParams.count)
        for param in sortedParams { hasher.combine(param) }
    }

    /// Whether the channel has Action Cable parameters, without building the dictionary.
    package var hasParams: Bool { !sortedParams.isEmpty }

    /// Calls `body` with each parameter in key order, without building the dictionary.
    package func forEachParam<Failure: Error>(_ body: (String, JSONValue) throws(Failure) -> Void) throws(Failure) {
        for param in sortedParams { try body(param.key, param.value) }
    }

    /// A channel named `value`, without parameters (`let room: ChannelID = "presence-room"`).
    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String {
        sortedParams.isEmpty ? name : "\(name)\(JSONValue.object(params))"
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

