@_spi(DialectAuthoring) import RealtimeCore

extension RealtimeChannel {
    /// Calls the public method `action` of the Action Cable channel class with `data` (the JS client's
    /// `subscription.perform(action, data)`). Waits, like `send`, until the subscription is confirmed.
    ///
    /// Throws `.invalidArgument` for an empty action, or when `data` has its own `action` member, and
    /// `.unsupported` at once on a session of another dialect (use `send` there).
    public func perform(_ action: String, _ data: [String: JSONValue] = [:]) async throws {
        try requireDialect(ActionCableDialect.self, for: "perform", needs: "Action Cable")
        guard !action.isEmpty else {
            throw RealtimeError(.invalidArgument, "perform needs an action name", context: .init(channel: id))
        }
        try await send(action, arguments: [.object(data)])
    }
}
