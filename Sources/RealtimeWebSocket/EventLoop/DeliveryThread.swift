import Dispatch
import RealtimeCore

/// A thread of an event-loop group that runs the handler calls of the sessions handed to it, in the order
/// they were handed over: the default delivery of sessions on ``WebSocketTransport``.
///
/// A thread of its own rather than Dispatch's global pool: that pool is sized to the cores and shared with
/// the app's Dispatch work and Swift tasks. When the app's work occupies it (CPU-bound tasks on every
/// core, or a thread blocked in a wait), handlers waited for Dispatch on Linux to add a thread, about one
/// second later (see the README's latency section). Handing over wakes the thread only when it sleeps.
///
/// Once ``finish()`` is called, the thread runs what it holds and ends; work handed over after that runs
/// on a serial queue, in order, so nothing handed over is ever dropped.
final class DeliveryThread: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        /// The thread waits on ``wake`` (or is about to): the next hand-over signals it.
        var sleeping = false
        var finishing = false
        var ended = false
    }

    /// The most calls an emptied batch keeps room for.
    static let keptCapacity = 64

    private let state = Locked(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Runs what is handed over once the thread has ended.
    private let afterEnd: DispatchQueue
    let name: String

    init(name: String) {
        self.name = name
        afterEnd = DispatchQueue(label: name)
    }

    /// Starts the thread.
    func start() {
        startNamedThread(name) { [self] in run() }
    }

    /// Runs `work` on the thread after everything handed over before it.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        enum Route { case queued, queuedWaking, afterEnd }
        let route = state.withLock { state -> Route in
            if state.ended { return .afterEnd }
            state.work.append(work)
            guard state.sleeping else { return .queued }
            state.sleeping = false
            return .queuedWaking
        }
        switch route {
        case .queued: break
        case .queuedWaking: wake.signal()
        case .afterEnd: afterEnd.async(execute: work)
        }
    }

    /// Lets the thread end once it has run what it holds.
    func finish() {
        let wakes = state.withLock { state -> Bool in
            state.finishing = true
            guard state.sleeping else { return false }
            state.sleeping = false
            return true
        }
        if wakes { wake.signal() }
    }

    /// Whether the thread has ended (for tests).
    var hasEnded: Bool { state.withLock { $0.ended } }

    /// Whether the thread waits for work (for tests).
    var isSleeping: Bool { state.withLock { $0.sleeping } }

    private func run() {
        // The two arrays trade places, so a steady stream allocates nothing here.
        var batch: [@Sendable () -> Void] = []
        while true {
            enum Next { case run, sleep, end }
            let next = state.withLock { state -> Next in
                swap(&state.work, &batch)
                if !batch.isEmpty { return .run }
                if state.finishing {
                    state.ended = true
                    return .end
                }
                state.sleeping = true
                return .sleep
            }
            switch next {
            case .run:
                for work in batch { work() }
                batch.removeAll(keepingRoomUpTo: Self.keptCapacity)
            case .sleep:
                wake.wait()
            case .end:
                return
            }
        }
    }
}
