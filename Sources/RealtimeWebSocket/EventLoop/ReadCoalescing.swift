/// When a loop may poll its sockets again, for loops that trade a bounded delay for fewer wake-ups.
///
/// Each wake-up of a sleeping thread costs several microseconds of CPU, more than handling one small
/// message. While traffic is sparse the loop polls at once, as without coalescing. Once two polls that
/// found socket work fall within one window, traffic counts as dense: the loop then leaves its sockets
/// alone until a window has passed since the last such poll, so that one wake-up reads everything that
/// arrived meanwhile. A poll that finds nothing ends the dense spell. Work posted to the loop (sends,
/// closes) and timers are not held. Fed monotonic nanoseconds; no clock of its own.
struct ReadCoalescing {
    /// The window in nanoseconds; 0 turns coalescing off.
    let window: UInt64
    private var lastWorkPoll: UInt64?
    private(set) var isDense = false

    init(window: UInt64) {
        self.window = window
    }

    /// The loop polled its sockets at `now`; `foundWork` tells whether any socket was ready.
    mutating func polled(at now: UInt64, foundWork: Bool) {
        guard window > 0 else { return }
        guard foundWork else {
            isDense = false
            return
        }
        if let last = lastWorkPoll, now &- last < window { isDense = true }
        lastWorkPoll = now
    }

    /// The time until which the sockets wait unpolled, or nil when the loop may poll them at `now`.
    func socketsHeld(at now: UInt64) -> UInt64? {
        guard isDense, let last = lastWorkPoll else { return nil }
        let end = last &+ window
        return end > now ? end : nil
    }
}
