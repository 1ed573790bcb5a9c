@_spi(DialectAuthoring) import RealtimeCore

/// A clock that moves only when a test says so. Scheduled callbacks run synchronously inside
/// ``advance(by:)``, in deadline order (ties in scheduling order), including callbacks scheduled while
/// advancing that fall due within the same window.
public final class ManualClock: RealtimeClock {
    private struct Pending {
        let id: UInt64
        let deadline: Duration
        let action: @Sendable () -> Void
    }

    private struct State {
        var now: Duration = .zero
        var pending: [Pending] = []
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    /// A clock at time zero with nothing scheduled.
    public init() {}

    /// The clock's time: zero at creation, moved only by ``advance(by:)``.
    public func now() -> Duration { state.withLock { $0.now } }

    /// Queues `action` for `delay` from now (now when `delay` is negative). It runs inside the ``advance(by:)``
    /// or ``runDue()`` call that reaches its deadline, never on its own; cancelling it lowers ``pendingCount``.
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.pending.append(Pending(id: state.nextID, deadline: state.now + max(.zero, delay), action: action))
            return state.nextID
        }
        return ManualTimer(id: id, clock: self)
    }

    fileprivate func cancel(_ id: UInt64) {
        state.withLock { $0.pending.removeAll { $0.id == id } }
    }

    /// Moves time forward by `duration`, running every callback that falls due.
    public func advance(by duration: Duration) {
        let target = state.withLock { $0.now + duration }
        while true {
            let next = state.withLock { state -> Pending? in
                guard let index = state.pending.indices.min(by: {
                    (state.pending[$0].deadline, state.pending[$0].id) < (state.pending[$1].deadline, state.pending[$1].id)
                }), state.pending[index].deadline <= target else {
                    state.now = target
                    return nil
                }
                let item = state.pending.remove(at: index)
                state.now = max(state.now, item.deadline)
                return item
            }
            guard let next else { return }
            next.action()
        }
    }

    /// Runs callbacks that are due now without moving time.
    public func runDue() { advance(by: .zero) }

    /// How many callbacks are scheduled.
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Time until the earliest scheduled callback, if any.
    public var nextDeadline: Duration? {
        state.withLock { state in state.pending.map(\.deadline).min().map { $0 - state.now } }
    }
}

private struct ManualTimer: ScheduledTimer {
    let id: UInt64
    let clock: ManualClock
    func cancel() { clock.cancel(id) }
}
