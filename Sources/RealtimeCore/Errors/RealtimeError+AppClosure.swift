extension RealtimeError {
    /// Runs a closure the app gave (an auth provider, a fetcher) the same way on every dialect: a
    /// `RealtimeError` it throws passes through, since the app chose that code; anything else becomes
    /// `.operationFailed`, "`closure` threw: …", with what was thrown in `context.detail`.
    package static func runningAppClosure<Value>(
        _ closure: String, channel: ChannelID? = nil, _ body: () async throws -> Value
    ) async throws(RealtimeError) -> Value {
        do {
            return try await body()
        } catch let error as RealtimeError {
            throw error
        } catch {
            throw RealtimeError(.operationFailed, "\(closure) threw: \(error)",
                                context: .init(channel: channel, detail: String(describing: error)))
        }
    }
}
