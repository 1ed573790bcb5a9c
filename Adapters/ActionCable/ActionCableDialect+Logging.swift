@_spi(DialectAuthoring) import RealtimeCore

extension ActionCableDialect {
    /// Masks every parameter of a channel identifier except the channel class: apps put credentials in
    /// identifiers under names of their own (`{"channel":"RoomChannel","room_key":…}`).
    @_spi(DialectAuthoring) public func logDescription(of frame: TransportFrame) -> String {
        guard case .text(let text) = frame, text.utf8.count <= 65_536,
              case .object(var members)? = try? JSONValue.parse(text),
              case .string(let identifierText)? = members["identifier"],
              let identifier = try? JSONValue.parse(identifierText)
        else { return frame.redactedDescription }
        members["identifier"] = .string(Redaction.redactingEveryString(in: identifier, keeping: ["channel"]).serialized())
        return TransportFrame.text(JSONValue.object(members).serialized()).redactedDescription
    }
}
