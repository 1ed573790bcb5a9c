@_spi(DialectAuthoring) import RealtimeCore

extension SocketIODialect {
    /// Masks a CONNECT packet's payload as a whole: it is the auth object, whose members may carry a
    /// credential under any name (`{"jwt": …}`, `{"pin": 1234}`).
    @_spi(DialectAuthoring) public func logDescription(of frame: TransportFrame) -> String {
        guard case .text(let text) = frame, text.hasPrefix("40"),
              let start = text.utf8.firstIndex(where: { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") }),
              let payload = try? JSONValue.parse(text.utf8[start...])
        else { return frame.redactedDescription }
        let masked = Redaction.redactingEveryString(in: payload).serialized()
        return String(text.utf8[..<start])! + masked
    }
}
