/// Received events as an async sequence, back-pressured like handlers: events waiting here count
/// against the session's delivery limits, so a slow consumer pauses reading from the socket instead of
/// growing a buffer. See ``RealtimeSession/events(_:)``.
public struct RealtimeEventStream: AsyncSequence, Sendable {
    public typealias Element = RealtimeEvent

    let base: AsyncStream<RealtimeEvent>
    let outstanding: Locked<DeliveryBacklog>
    weak var engine: SessionEngine?

    init(base: AsyncStream<RealtimeEvent>, outstanding: Locked<DeliveryBacklog>, engine: SessionEngine) {
        self.base = base
        self.outstanding = outstanding
        self.engine = engine
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: base.makeAsyncIterator(), outstanding: outstanding, engine: engine)
    }

    /// Takes events one at a time, releasing each from the session's delivery budget as it is taken.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<RealtimeEvent>.Iterator
        let outstanding: Locked<DeliveryBacklog>
        weak var engine: SessionEngine?

        public mutating func next() async -> RealtimeEvent? {
            guard let event = await base.next() else { return nil }
            let cost = DeliveryBacklog(events: 1, bytes: event.rawData?.utf8.count ?? 0)
            outstanding.withLock { $0.events -= cost.events; $0.bytes -= cost.bytes }
            engine?.noteStreamConsumed(cost)
            return event
        }
    }
}
