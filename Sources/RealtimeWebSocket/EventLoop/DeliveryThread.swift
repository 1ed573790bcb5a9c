#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import RealtimeCore
#if canImport(CRealtimeLinux)
import CRealtimeLinux  // the watchdog's timerfd (see its shim.h)
#endif

/// The handler calls of the sessions handed to one loop's delivery, run in the order they were handed over:
/// the default delivery of sessions on ``WebSocketTransport``.
///
/// Two threads serve a loop and its delivery: one drives the loop, the other (the follower, started when a
/// session first asks for the delivery) runs handler calls. Calls handed over by the thread driving the
/// loop, which is where a connection's events come from, are run by that thread itself before it waits on
/// its sockets again, when nothing else is running calls and its last wait slept: waking a second thread
/// for each read costs more than the read (about 12 µs of CPU on the VM of the README's figures). When the
/// loop is behind (its wait found data ready), the follower runs them while the loop reads on.
///
/// A watchdog bounds what running calls on the loop costs its sockets: while the loop runs calls, the
/// follower wakes every ``watchdogPeriod``, and once a run has lasted ``defaultTakeoverDelay`` it drives the
/// loop from then on; the thread in the slow handler becomes the follower once it returns. A handler that
/// blocks thus holds the sockets for about ``watchdogPeriod`` at most. The timer is not set per run: setting
/// and clearing it for each one cost about 3 µs of CPU per event at 10,000 events/s on that VM. Calls
/// handed over from other threads wake the follower. Where the watchdog is missing (it is a Linux
/// timerfd), the loop never runs calls itself.
///
/// Not Dispatch's global pool: that pool is sized to the cores and shared with the app's Dispatch work and
/// Swift tasks. When the app's work occupies it (CPU-bound tasks on every core, or a thread blocked in a
/// wait), handlers waited for Dispatch on Linux to add a thread, about one second later (see the README's
/// latency section).
///
/// Once ``finish()`` is called, the follower runs what it holds and ends; work handed over after that
/// runs on a serial queue, in order, so nothing handed over is ever dropped.
final class DeliveryThread: Sendable {
    /// A handed-over call. Wrapped, the closure is stored as it came: an array of bare closures stores
    /// each through a reabstraction thunk, one allocation per call.
    private struct Call {
        let run: @Sendable () -> Void
    }

    /// Who runs the calls held now; at most one at a time, which keeps them in order.
    private enum Runner { case none, follower, loop }

    private struct State {
        var work: [Call] = []
        /// Room for the loop's next batch, kept between runs so a steady stream allocates nothing.
        var loopBatch: [Call] = []
        var runner = Runner.none
        /// The follower waits on ``wake`` (or is about to): a hand-over from another thread signals it.
        var followerSleeping = false
        var started = false
        var finishing = false
        var ended = false
        /// The thread driving the loop; nil before it starts and after it stops.
        var loopThread: pthread_t?
        /// When the batch the loop is running started (``EventLoop/now()``).
        var loopBatchStart: UInt64?
        /// The watchdog will fire: whoever arms it sets this first, so only one thread ever does.
        var watchdogArmed = false
        /// The loop has run calls since the watchdog's last check.
        var loopRanSinceCheck = false
        /// Batches the follower has run (for tests).
        var followerBatches = 0

        /// Clears ``followerSleeping``; true when the follower slept, and the caller must signal it.
        mutating func wakeSleepingFollower() -> Bool {
            guard followerSleeping else { return false }
            followerSleeping = false
            return true
        }

        /// The follower runs the calls held from now on; true when the caller must signal it.
        mutating func handToFollower() -> Bool {
            runner = .follower
            return wakeSleepingFollower()
        }
    }

    /// The most calls an emptied batch keeps room for.
    static let keptCapacity = 64
    /// How long the loop's thread may run handler calls before the follower takes the loop over, by default.
    static let defaultTakeoverDelay: UInt64 = 1_000_000
    /// Batches the loop's thread runs in a row, the later ones handed over while it ran the first.
    static let loopRounds = 4
    /// How often the follower looks at the loop while the loop runs calls.
    static let watchdogPeriod: UInt64 = 5_000_000

    private let state = Locked(State())
    private let wake: Waker
    /// Wakes the follower to look at the loop while the loop runs calls; nil where the loop never runs them.
    private let watchdog: Watchdog?
    /// How long the loop's thread may run handler calls before the follower takes the loop over.
    let takeoverDelay: UInt64
    /// Runs what is handed over once the follower has ended.
    private let afterEnd: DispatchQueue
    /// The follower's name (the loop's thread has its own).
    let name: String

    /// - Parameter takeoverDelay: how long the loop's thread may run calls (nanoseconds); nil keeps every
    ///   call on the follower (the Apple platforms' path, which has no timerfd; tests take it on Linux too).
    init(name: String, takeoverDelay: UInt64? = DeliveryThread.defaultTakeoverDelay) throws(RealtimeError) {
        self.name = name
        self.takeoverDelay = takeoverDelay ?? 0
        wake = try Waker()
        watchdog = takeoverDelay == nil ? nil : Watchdog.make()
        afterEnd = DispatchQueue(label: name)
    }

    deinit {
        wake.close()
        watchdog?.close()
    }

    /// Marks the follower started; true the first time, when the caller must start its thread.
    func markStarted() -> Bool {
        state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
    }

    /// Runs `work` after everything handed over before it.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        enum Route { case queued, queuedWaking, afterEnd }
        let route = state.withLock { state -> Route in
            if state.ended { return .afterEnd }
            state.work.append(Call(run: work))
            if state.runner != .none { return .queued }  // the runner takes it before it stops
            if watchdog != nil, let loop = state.loopThread, pthread_equal(loop, pthread_self()) != 0 {
                return .queued  // the loop's thread runs it before it waits again (``runOnLoop()``)
            }
            guard state.followerSleeping else { return .queued }  // awake: it looks before it sleeps
            return state.handToFollower() ? .queuedWaking : .queued
        }
        switch route {
        case .queued: break
        case .queuedWaking: wake.wake()
        case .afterEnd: afterEnd.async(execute: work)
        }
    }

    /// Lets the follower end once it has run what it holds.
    func finish() {
        let wakes = state.withLock { state -> Bool in
            state.finishing = true
            return state.wakeSleepingFollower()
        }
        if wakes { wake.wake() }
    }

    /// Whether the follower has ended (for tests).
    var hasEnded: Bool { state.withLock { $0.ended } }

    /// Whether the follower waits for work (for tests).
    var isSleeping: Bool { state.withLock { $0.followerSleeping } }

    /// Batches of calls the follower has run, rather than the loop's thread (for tests).
    var followerBatches: Int { state.withLock { $0.followerBatches } }

    // MARK: The loop's side

    /// The calling thread drives the loop from now on.
    func loopStarted() {
        state.withLock { $0.loopThread = pthread_self() }
    }

    /// The loop has stopped: what its thread handed over goes to the follower.
    func loopEnded() {
        let wakes = state.withLock { state -> Bool in
            state.loopThread = nil
            guard state.runner == .none, !state.work.isEmpty, state.followerSleeping else { return false }
            return state.handToFollower()
        }
        if wakes { wake.wake() }
    }

    /// Called by the thread driving the loop before it waits on its sockets: runs the calls held, unless
    /// the follower is running calls or the loop is behind. Returns false when the follower took the loop
    /// over while a handler ran: the caller must stop driving the loop and follow.
    ///
    /// - Parameter caughtUp: the loop's last wait slept. When it did not, data was waiting: the follower
    ///   runs the calls while the loop reads on, as a pipeline. (Running them here then made an `events()`
    ///   consumer on the same core preempt the loop about four times as often, costing that bulk row a
    ///   quarter of its throughput.)
    func runOnLoop(caughtUp: Bool) -> Bool {
        guard let watchdog else { return true }
        guard caughtUp else {
            let wakes = state.withLock { state -> Bool in
                guard state.runner == .none, !state.work.isEmpty else { return false }
                return state.handToFollower()
            }
            if wakes { wake.wake() }
            return true
        }
        var batch: [Call] = []
        let start = state.withLock { state -> (arms: Bool, at: UInt64)? in
            guard state.runner == .none, !state.work.isEmpty else { return nil }
            let now = EventLoop.now()
            state.runner = .loop
            state.loopBatchStart = now
            state.loopRanSinceCheck = true
            swap(&batch, &state.loopBatch)
            swap(&batch, &state.work)
            defer { state.watchdogArmed = true }
            return (!state.watchdogArmed, now)
        }
        guard let start else { return true }
        if start.arms { watchdog.arm(at: start.at &+ Self.watchdogPeriod) }
        let me = pthread_self()
        var rounds = 1
        while true {
            for call in batch { call.run() }
            batch.removeAll(keepingRoomUpTo: Self.keptCapacity)
            enum After { case again, takenOver, finished(wakes: Bool) }
            let after = state.withLock { state -> After in
                let drivesLoop = state.loopThread.map { pthread_equal($0, me) != 0 } ?? false
                // Calls handed over while the batch ran (by its handlers, or other threads): a few more rounds
                // here, the same run for the watchdog, then the follower's, so that the sockets come next.
                if drivesLoop, !state.work.isEmpty, rounds < Self.loopRounds {
                    swap(&batch, &state.work)
                    return .again
                }
                state.loopBatchStart = nil
                swap(&batch, &state.loopBatch)
                guard drivesLoop else { return .takenOver }  // the runner is now the follower role this thread has
                guard state.work.isEmpty else { return .finished(wakes: state.handToFollower()) }
                state.runner = .none
                // A finishing follower waited for this run to end.
                return .finished(wakes: state.finishing && state.wakeSleepingFollower())
            }
            switch after {
            case .again:
                rounds += 1
            case .takenOver:
                return false
            case .finished(let wakes):
                if wakes { wake.wake() }
                return true
            }
        }
    }

    // MARK: The follower's side

    enum FollowEnd { case ended, drivesLoop }

    /// Runs handed-over calls on the calling thread until the follower ends, or until the loop's thread is
    /// slow in a handler and the calling thread must drive the loop in its place.
    func follow() -> FollowEnd {
        // The two arrays trade places, so a steady stream allocates nothing here.
        var batch: [Call] = []
        while true {
            enum Next { case run, sleep, end }
            let next = state.withLock { state -> Next in
                if state.runner != .loop {
                    if !state.work.isEmpty {
                        state.runner = .follower
                        state.followerBatches += 1
                        swap(&state.work, &batch)
                        return .run
                    }
                    state.runner = .none
                    if state.finishing {
                        state.ended = true
                        return .end
                    }
                }
                state.followerSleeping = true
                return .sleep
            }
            switch next {
            case .run:
                for call in batch { call.run() }
                batch.removeAll(keepingRoomUpTo: Self.keptCapacity)
            case .end:
                return .ended
            case .sleep:
                if sleepUntilWoken() { return .drivesLoop }
            }
        }
    }

    /// Waits for a wake or the watchdog; true when the loop's thread has run calls for the takeover delay,
    /// and the calling thread now drives the loop. Otherwise the watchdog is armed again while the loop
    /// keeps running calls, and left alone once it stopped.
    private func sleepUntilWoken() -> Bool {
        let woken = withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { entries -> (wake: Bool, watchdog: Bool) in
            entries[0] = pollfd(fd: wake.readFD, events: Int16(POLLIN), revents: 0)
            entries[1] = pollfd(fd: watchdog?.fd ?? -1, events: Int16(POLLIN), revents: 0)  // -1: ignored
            guard poll(entries.baseAddress, 2, -1) > 0 else { return (false, false) }  // EINTR: look again
            return (entries[0].revents != 0, entries[1].revents != 0)
        }
        if woken.wake { wake.drain() }
        guard let watchdog, woken.watchdog else { return false }
        watchdog.clear()
        let now = EventLoop.now()
        enum Check { case takeOver, arm(UInt64), rest }
        let check = state.withLock { state -> Check in
            let active = state.loopRanSinceCheck
            state.loopRanSinceCheck = false
            if state.runner == .loop, let start = state.loopBatchStart, state.loopThread != nil, !state.ended {
                guard now &- start >= takeoverDelay else { return .arm(start &+ takeoverDelay) }
                state.runner = .follower  // the batch in flight finishes on the thread that becomes the follower
                state.loopThread = pthread_self()
                state.followerSleeping = false
                state.watchdogArmed = false
                return .takeOver
            }
            guard active else {
                state.watchdogArmed = false
                return .rest
            }
            return .arm(now &+ Self.watchdogPeriod)
        }
        switch check {
        case .takeOver: return true
        case .arm(let deadline): watchdog.arm(at: deadline)
        case .rest: break
        }
        return false
    }
}

/// A one-shot CLOCK_MONOTONIC timer whose file descriptor turns readable when it expires.
private struct Watchdog: Sendable {
    let fd: Int32

    /// A timerfd on Linux; nil elsewhere, or when the system has none left.
    static func make() -> Watchdog? {
        #if os(Linux) || os(Android)
        let fd = realtime_timer_create()
        return fd >= 0 ? Watchdog(fd: fd) : nil
        #else
        return nil
        #endif
    }

    /// Expires once at `deadline` (``EventLoop/now()`` nanoseconds), replacing an earlier deadline.
    func arm(at deadline: UInt64) {
        #if os(Linux) || os(Android)
        _ = realtime_timer_set(fd, max(deadline, 1))
        #endif
    }

    /// Reads the expiry count, so the descriptor is no longer readable.
    func clear() {
        var count: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &count) { read(fd, $0.baseAddress, $0.count) }
    }

    func close() {
        _ = SocketIO.closeFD(fd)
    }
}
