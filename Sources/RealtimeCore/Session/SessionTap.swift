/// What an adapter's tap sees (``RealtimeSession/addTap(channel:_:)``): an event about to be delivered, or a
/// connection state transition, in the order the session reports them.
@_spi(DialectAuthoring) public enum SessionTapInput: Sendable {
    /// An event of the tap's channel (of every channel when it has none).
    case event(RealtimeEvent)
    /// A connection state transition, `(old, new)`; every tap sees every one.
    case state(ConnectionState, ConnectionState)
}

extension RealtimeSession {
    /// For adapters whose state must be current by the time a waiter resumes: `tap` sees each event of
    /// `channel` (every channel when `nil`) and each state transition as soon as the session handles the
    /// input behind it — before the `connect()` and `subscribed()` callers answered by the same input resume,
    /// and before any handler or lifecycle observer runs for it. A presence roster folds its subscription
    /// snapshot in this way, so that it is full once `subscribed()` returns.
    ///
    /// `tap` runs on whatever thread handles the session's inputs, one input at a time and in order, outside
    /// every lock; it must be quick and must not wait for the session. What it returns runs on the delivery
    /// target in the place of what it saw, just before that event's (or transition's) handlers: the place
    /// to call the app. Kept through ``removeAllHandlers()``; remove it with `off(id:)`.
    @discardableResult
    @_spi(DialectAuthoring) public func addTap(
        channel: ChannelID?, _ tap: @escaping @Sendable (SessionTapInput) -> (@Sendable () -> Void)?
    ) -> HandlerID {
        engine.registry.addTap(channel: channel, tap)
    }
}
