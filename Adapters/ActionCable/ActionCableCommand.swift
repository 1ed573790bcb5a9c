@_spi(DialectAuthoring) import RealtimeCore

/// Client → server commands. `identifier` and `data` are JSON *strings* on the wire: Rails answers an
/// object in `data` with a server-side TypeError and no reply. Each takes the identifier as the JSON string
/// literal ``ActionCableIdentifier/literal(_:)`` wrote, and writes it as it is.
enum ActionCableCommand {
    static func subscribe(_ identifierLiteral: Substring) -> TransportFrame {
        .text(#"{"command":"subscribe","identifier":"# + identifierLiteral + "}")
    }

    static func unsubscribe(_ identifierLiteral: Substring) -> TransportFrame {
        .text(#"{"command":"unsubscribe","identifier":"# + identifierLiteral + "}")
    }

    static func message(_ identifierLiteral: Substring, data: [String: JSONValue]) -> TransportFrame {
        let dataLiteral = JSONValue.string(JSONValue.object(data).serialized()).serialized()
        return .text(#"{"command":"message","data":"# + dataLiteral + #","identifier":"# + identifierLiteral + "}")
    }

    /// The `data` object of a `message` command: `action` (the event name) merged with the members of the
    /// single object argument.
    ///
    /// - An empty event name sends no `action`, so Rails calls the channel's `receive(data)`.
    /// - No argument (or `null`) sends `{"action": event}` alone.
    /// - Anything but one object (a string, an array, two arguments) throws `.invalidArgument`, as does an
    ///   object with its own `action` member when the event name already gives one.
    static func actionData(for message: OutgoingMessage) throws(RealtimeError) -> [String: JSONValue] {
        var data: [String: JSONValue]
        switch message.arguments.count {
        case 0:
            data = [:]
        case 1:
            switch message.arguments[0] {
            case .null: data = [:]
            case .object(let members): data = members
            default:
                throw RealtimeError(.invalidArgument,
                                    "Action Cable sends a JSON object as an action's data, not \(message.arguments[0].kindDescription)",
                                    context: .init(channel: message.channel, detail: message.event))
            }
        default:
            throw RealtimeError(.invalidArgument,
                                "Action Cable sends one data object per action, not \(message.arguments.count) arguments",
                                context: .init(channel: message.channel, detail: message.event))
        }
        if data.values.contains(where: \.containsBinary) {
            throw RealtimeError(.invalidArgument, "Action Cable data cannot carry binary values",
                                context: .init(channel: message.channel, detail: message.event))
        }
        if !message.event.isEmpty {
            guard data["action"] == nil else {
                throw RealtimeError(.invalidArgument,
                                    "the data has its own 'action'; the event name '\(message.event)' is the action",
                                    context: .init(channel: message.channel, detail: message.event))
            }
            data["action"] = .string(message.event)
        }
        return data
    }
}
