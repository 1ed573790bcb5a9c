/// Received events as an async sequence, back-pressured like handlers: events waiting here count
/// against the session's delivery limits, so a slow consumer pauses reading from the socket instead of
/// growing a buffer. See ``RealtimeSession/events(_:)``.
///
/// The stream ends (its iterator returns `nil`) when the task awaiting it is cancelled, and its handler is
/// removed once the stream and its iterators are gone; events still waiting then leave the budget.
public struct RealtimeEventStream: AsyncSequence, Sendable {
    public typealias Element = RealtimeEvent

    let buffer: EventStreamBuffer
    /// Ends the stream when the last copy of the stream and its iterators goes away.
    let lifetime: EventStreamLifetime

    init(buffer: EventStreamBuffer) {
        self.buffer = buffer
        lifetime = EventStreamLifetime(buffer)
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer, lifetime: lifetime)
    }

    /// How many consumers wait for the next event (for tests).
    package var waitingConsumerCount: Int { buffer.waitingConsumerCount }

    /// Takes events one at a time, releasing each from the session's delivery budget as it is taken.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: EventStreamBuffer
        let lifetime: EventStreamLifetime

        public mutating func next() async -> RealtimeEvent? {
            // Events already waiting are taken without suspending.
            if case .event(let event) = buffer.take() { return event }
            let buffer = self.buffer
            return await withTaskCancellationHandler {
                await withUnsafeContinuation { continuation in buffer.takeOrWait(continuation) }
            } onCancel: {
                buffer.finish()
            }
        }
    }
}

/// Ends its stream when the last copy of the stream and its iterators is gone.
final class EventStreamLifetime: Sendable {
    let buffer: EventStreamBuffer
    init(_ buffer: EventStreamBuffer) { self.buffer = buffer }
    deinit { buffer.finish() }
}

/// What sits between an event stream's handler (on the delivery target) and its consumer (a task): the
/// waiting events, the consumer when it waits, and their cost to the session's delivery budget.
///
/// Not `AsyncStream`: its generic code, out of this module, looked up type metadata on every element, a
/// fifth of a stream consumer's CPU in a profile.
final class EventStreamBuffer: Sendable {
    private struct State {
        var events: [RealtimeEvent] = []
        /// Index of the oldest waiting event in `events`; the taken ones before it are compacted away.
        var head = 0
        var waiters: [UnsafeContinuation<RealtimeEvent?, Never>] = []
        var backlog = DeliveryBacklog()
        var finished = false
        var onFinish: (@Sendable (DeliveryBacklog) -> Void)?
        /// Events the consumer took, kept until it waits or has taken ``EventStreamBuffer/retireBatch``,
        /// then handed to `retire` (see ``EventStreamBuffer/init(buffered:consumed:retire:)``).
        var taken: [RealtimeEvent] = []
        var takenBytes = 0

        /// Keeps a copy of `event`, which the consumer takes; returns the taken events to retire once
        /// there are enough of them.
        mutating func noteTaken(_ event: RealtimeEvent) -> Retired? {
            keepTaken(event)
            guard taken.count >= EventStreamBuffer.retireBatch else { return nil }
            return takeTaken()
        }

        /// Keeps a copy of `event` until the taken events are retired.
        mutating func keepTaken(_ event: RealtimeEvent) {
            taken.append(event)
            takenBytes += event.rawByteCount
        }

        mutating func takeTaken() -> Retired {
            defer {
                taken = []
                takenBytes = 0
            }
            return Retired(events: taken, bytes: takenBytes)
        }

        /// The oldest waiting event, its cost taken off the backlog.
        mutating func takeOldest() -> RealtimeEvent? {
            guard let event = popFirst() else { return nil }
            let cost = EventStreamBuffer.cost(of: event)
            backlog.events -= cost.events
            backlog.bytes -= cost.bytes
            return event
        }

        private mutating func popFirst() -> RealtimeEvent? {
            guard head < events.count else { return nil }
            let event = events[head]
            head += 1
            if head == events.count {
                events.removeAll(keepingCapacity: events.capacity <= 1_024)
                head = 0
            } else if head >= 256, head * 2 >= events.count {
                events.removeFirst(head)
                head = 0
            }
            return event
        }
    }

    /// Taken events on their way out of the buffer, with their payloads' bytes.
    private struct Retired {
        var events: [RealtimeEvent]
        var bytes: Int
    }

    enum Taken {
        case event(RealtimeEvent)
        case none
        case finished
    }

    private let state = Locked(State())
    private let buffered: @Sendable (DeliveryBacklog) -> Void
    private let consumed: @Sendable (DeliveryBacklog) -> Void
    private let retire: @Sendable (_ events: [RealtimeEvent], _ bytes: Int) -> Void

    /// Taken events kept before they are retired even though the consumer does not wait.
    static let retireBatch = 64

    /// - Parameters:
    ///   - buffered: an event now waits here (its cost joins the session's delivery backlog);
    ///   - consumed: the consumer took events that waited (their cost leaves it);
    ///   - retire: receives, on the consumer's thread, events it took and is done with (with their
    ///     payloads' bytes), for the socket's thread to free (``DeliveredBatches``). A lone event taken
    ///     between two waits is not retired: consumer and socket then take turns, and do not contend.
    init(buffered: @escaping @Sendable (DeliveryBacklog) -> Void,
         consumed: @escaping @Sendable (DeliveryBacklog) -> Void,
         retire: @escaping @Sendable (_ events: [RealtimeEvent], _ bytes: Int) -> Void) {
        self.buffered = buffered
        self.consumed = consumed
        self.retire = retire
    }

    var waitingConsumerCount: Int { state.withLock { $0.waiters.count } }

    /// Runs once when the stream ends, with the cost of the events still waiting.
    func onFinish(_ action: @escaping @Sendable (DeliveryBacklog) -> Void) {
        let finishedAlready = state.withLock { state -> Bool in
            if state.finished { return true }
            state.onFinish = action
            return false
        }
        if finishedAlready { action(DeliveryBacklog()) }
    }

    /// Hands `event` to a waiting consumer, or keeps it until one asks.
    func push(_ event: RealtimeEvent) {
        enum Handoff {
            case toConsumer(UnsafeContinuation<RealtimeEvent?, Never>)
            case kept
            case dropped
        }
        let cost = Self.cost(of: event)
        let handoff = state.withLock { state -> Handoff in
            if state.finished { return .dropped }
            if !state.waiters.isEmpty {
                // Kept like a taken event: the consumer retires it, if not alone, when it next waits.
                state.keepTaken(event)
                return .toConsumer(state.waiters.removeFirst())
            }
            state.events.append(event)
            state.backlog.events += cost.events
            state.backlog.bytes += cost.bytes
            return .kept
        }
        switch handoff {
        case .toConsumer(let consumer): consumer.resume(returning: event)  // taken at once: no backlog
        case .kept: buffered(cost)
        case .dropped: break  // the stream has ended
        }
    }

    /// The oldest waiting event, if any.
    func take() -> Taken {
        var retired: Retired?
        let taken = state.withLock { state -> Taken in
            if let event = state.takeOldest() {
                retired = state.noteTaken(event)
                return .event(event)
            }
            return state.finished ? .finished : .none
        }
        if case .event(let event) = taken { consumed(Self.cost(of: event)) }
        if let retired { retire(retired.events, retired.bytes) }
        return taken
    }

    /// Resumes `continuation` with the oldest waiting event, or with `nil` once the stream has ended, or
    /// keeps it until an event arrives.
    func takeOrWait(_ continuation: UnsafeContinuation<RealtimeEvent?, Never>) {
        var retired: Retired?
        let taken = state.withLock { state -> Taken in
            if let event = state.takeOldest() {
                retired = state.noteTaken(event)
                return .event(event)
            }
            if state.finished { return .finished }
            // The consumer is done with what it took: it goes before the consumer waits.
            if !state.taken.isEmpty { retired = state.takeTaken() }
            state.waiters.append(continuation)
            return .none
        }
        // A lone event is freed here: consumer and socket take turns then, and do not contend.
        if let retired, retired.events.count > 1 { retire(retired.events, retired.bytes) }
        switch taken {
        case .event(let event):
            consumed(Self.cost(of: event))
            continuation.resume(returning: event)
        case .finished:
            continuation.resume(returning: nil)
        case .none:
            break
        }
    }

    /// Ends the stream: waiting consumers get `nil`, waiting events are dropped and leave the budget.
    func finish() {
        let ended = state.withLock { state -> (waiters: [UnsafeContinuation<RealtimeEvent?, Never>],
                                                left: DeliveryBacklog, action: (@Sendable (DeliveryBacklog) -> Void)?)? in
            if state.finished { return nil }
            state.finished = true
            defer {
                state.waiters = []
                state.events = []
                state.head = 0
                state.backlog = DeliveryBacklog()
                state.onFinish = nil
                state.taken = []
                state.takenBytes = 0
            }
            return (state.waiters, state.backlog, state.onFinish)
        }
        guard let ended else { return }
        for waiter in ended.waiters { waiter.resume(returning: nil) }
        ended.action?(ended.left)
    }

    /// What an event costs the delivery budget: one event and the bytes of its payload text.
    fileprivate static func cost(of event: RealtimeEvent) -> DeliveryBacklog {
        DeliveryBacklog(events: 1, bytes: event.rawByteCount)
    }
}
