@_spi(DialectAuthoring) import RealtimeCore

extension PusherDialect {
    /// Trace lines mask the identity a subscribe or sign-in carries (`channel_data` / `user_data`, a JSON
    /// string the app's auth endpoint wrote, which may hold tokens or personal data under any name): every
    /// value but the member or user id. The signature (`auth`) is masked by name like any secret.
    @_spi(DialectAuthoring) public func logDescription(of frame: TransportFrame) -> String {
        guard case .text(let text) = frame, text.utf8.count <= 65_536,
              case .object(var members)? = try? JSONValue.parse(text),
              let event = members["event"]?.stringValue,
              case .object(var data)? = members["data"]
        else { return frame.redactedDescription }
        let identity: (key: String, keeping: String)
        switch event {
        case vendor.systemPrefix + "subscribe": identity = (vendor.subscribeIdentityKey, vendor.memberIDKey)
        case vendor.systemPrefix + "signin": identity = (vendor.signinDataKey, vendor.signinIDKey)
        default: return frame.redactedDescription
        }
        if case .string(let identityText)? = data[identity.key] {
            let masked = (try? JSONValue.parse(identityText))
                .map { Redaction.redactingEveryString(in: $0, keeping: [identity.keeping]).serialized() }
            data[identity.key] = .string(masked ?? Redaction.placeholder)
        }
        members["data"] = .object(data)
        return TransportFrame.text(JSONValue.object(members).serialized()).redactedDescription
    }
}
