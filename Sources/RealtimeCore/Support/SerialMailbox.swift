/// Handles inputs that arrive from any thread one batch at a time, in submission order, without a thread
/// of its own: the thread whose ``submit(_:drain:)`` finds the mailbox idle drains it, and keeps draining
/// until it is empty. An input submitted meanwhile — from another thread, or from inside `drain` itself —
/// only queues, and the draining thread handles it after the batch in hand. So `drain` is never entered
/// twice at once and never re-entered, and no lock is held while it runs.
///
/// Shared by its owner's callbacks, so a reference type; the queue itself sits behind ``Locked``.
package final class SerialMailbox<Input: Sendable>: Sendable {
    private struct State {
        var inputs: [Input] = []
        var draining = false
    }

    private let state = Locked(State())
    /// The most inputs an emptied queue keeps room for.
    package static var keptCapacity: Int { 64 }

    package init() {}

    /// Queues `input`. When no other call is draining, this one drains: it calls `drain` with every queued
    /// input, oldest first, in batches, until none is left, and returns after that. Otherwise it returns at
    /// once and the draining call handles `input` with its own `drain`, so every caller passes the same
    /// handling.
    package func submit(_ input: Input, drain: ([Input]) -> Void) {
        let drains = state.withLock { state -> Bool in
            state.inputs.append(input)
            if state.draining { return false }
            state.draining = true
            return true
        }
        guard drains else { return }
        // Take the whole queue at once: one lock round per batch, not per input. The two arrays trade
        // places, so each keeps its capacity and a steady stream of inputs allocates nothing here; a burst's
        // capacity is let go, so that a session does not hold it for good.
        var batch: [Input] = []
        while true {
            batch.removeAll(keepingRoomUpTo: Self.keptCapacity)
            state.withLock { state in
                swap(&state.inputs, &batch)
                if batch.isEmpty { state.draining = false }
            }
            if batch.isEmpty { return }
            drain(batch)
        }
    }

    /// How many inputs the idle queue has room for: at most ``keptCapacity`` once a burst is drained.
    package var queueCapacity: Int { state.withLock { $0.inputs.capacity } }
}
