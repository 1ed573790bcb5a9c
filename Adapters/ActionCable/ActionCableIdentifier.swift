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
        var text: [UInt8] = []
        text.reserveCapacity(64)
        try write(channel, into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Replaces the contents of `literal` with the identifier literal of `channel` (``literal(_:)`` of
    /// ``make(for:)``), written through `scratch` without making a string: to check a subscription's
    /// literal against a frame's text without keeping the literal.
    package static func writeLiteral(of channel: ChannelID, into literal: inout [UInt8],
                                     scratch: inout [UInt8]) throws(RealtimeError) {
        scratch.removeAll(keepingCapacity: true)
        try write(channel, into: &scratch)
        literal.removeAll(keepingCapacity: true)
        scratch.withUnsafeBufferPointer { JSONValue.writeString(utf8: $0, into: &literal) }
    }

    /// Writes the identifier of `channel` into the empty `text`.
    private static func write(_ channel: ChannelID, into text: inout [UInt8]) throws(RealtimeError) {
        guard !channel.name.isEmpty else {
            throw RealtimeError(.invalidArgument, "an Action Cable channel needs a class name",
                                context: .init(channel: channel))
        }
        // The object `params` + `channel` would serialize to, written from the params in key order, with
        // `channel` in its place among them (each reconnect builds every held channel's identifier again).
        text.append(UInt8(ascii: "{"))
        var channelWritten = false
        func member(_ key: String, _ value: JSONValue) {
            if text.count > 1 { text.append(UInt8(ascii: ",")) }
            JSONValue.string(key).write(into: &text)
            text.append(UInt8(ascii: ":"))
            value.write(into: &text)
        }
        try channel.forEachParam { (key, value) throws(RealtimeError) in
            guard key != "channel" else {
                throw RealtimeError(.invalidArgument,
                                    "Action Cable channel params must not contain a 'channel' key; the name is the class",
                                    context: .init(channel: channel))
            }
            guard !value.containsBinary else {
                throw RealtimeError(.invalidArgument, "Action Cable channel param '\(key)' holds binary data",
                                    context: .init(channel: channel))
            }
            if !channelWritten, "channel" < key {
                member("channel", .string(channel.name))
                channelWritten = true
            }
            member(key, value)
        }
        if !channelWritten { member("channel", .string(channel.name)) }
        text.append(UInt8(ascii: "}"))
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
