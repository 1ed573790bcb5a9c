@_spi(DialectAuthoring) import RealtimeCore

/// Builds Action Cable subscription identifiers.
///
/// Rails keys a subscription by the identifier string exactly as the client sent it and echoes it back
/// unchanged, so two key orders of the same object are two different subscriptions. The identifier is built
/// once per channel, with sorted keys and compact JSON, and incoming frames are routed by that exact string.
package enum ActionCableIdentifier {
    /// The identifier for `channel`: `{"channel":<name>, …params}` as compact JSON with sorted keys.
    ///
    /// Throws `.invalidArgument` when the name is empty, when `params` has its own `channel` key (it would
    /// clash with the class name), or when a parameter holds binary data (not expressible in JSON).
    package static func make(for channel: ChannelID) throws(RealtimeError) -> String {
        guard !channel.name.isEmpty else {
            throw RealtimeError(.invalidArgument, "an Action Cable channel needs a class name",
                                context: .init(channel: channel))
        }
        guard channel.params["channel"] == nil else {
            throw RealtimeError(.invalidArgument,
                                "Action Cable channel params must not contain a 'channel' key; the name is the class",
                                context: .init(channel: channel))
        }
        for (key, value) in channel.params where value.containsBinary {
            throw RealtimeError(.invalidArgument, "Action Cable channel param '\(key)' holds binary data",
                                context: .init(channel: channel))
        }
        var members = channel.params
        members["channel"] = .string(channel.name)
        return JSONValue.object(members).serialized()
    }

    /// `identifier` as the JSON string literal the commands carry, quotes and escapes included: the text
    /// Rails echoes back in every frame about the subscription. Its own storage, not a slice of another
    /// string, since it is kept for the subscription's life.
    package static func literal(_ identifier: String) -> Substring {
        JSONValue.string(identifier).serialized()[...]
    }

    /// The identifier a ``literal(_:)`` holds, for messages.
    package static func decoded(_ literal: Substring) -> String {
        (try? JSONValue.parse(literal.utf8))?.stringValue ?? String(literal)
    }
}

extension JSONValue {
    var containsBinary: Bool {
        switch self {
        case .binary: return true
        case .array(let elements): return elements.contains { $0.containsBinary }
        case .object(let members): return members.values.contains { $0.containsBinary }
        case .null, .bool, .integer, .double, .string: return false
        }
    }
}
