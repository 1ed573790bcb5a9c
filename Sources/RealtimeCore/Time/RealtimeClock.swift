import Dispatch
import Foundation

/// A cancellable scheduled callback.
public protocol ScheduledTimer: Sendable {
    /// Keeps the callback from running if it has not run yet; calling it again, or after the callback ran,
    /// does nothing.
    func cancel()
}

/// Time for the session engine: a monotonic reading plus scheduled callbacks.
///
/// Injected so that tests drive reconnects, heartbeats and timeouts with `ManualClock` (in `RealtimeTesting`)
/// instead of sleeping.
public protocol RealtimeClock: Sendable {
    /// Monotonic time since an arbitrary origin.
    func now() -> Duration
    /// Calls `action` once, `delay` from now, on some thread.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any ScheduledTimer
}

/// The real clock: monotonic uptime and Dispatch timers.
public struct SystemClock: RealtimeClock {
    /// The system's clock. It holds no state: every instance reads the same time.
    public init() {}

    /// The system's uptime (`DispatchTime.now()`), which only moves forward.
    public func now() -> Duration {
        let nanoseconds = DispatchTime.now().uptimeNanoseconds
        return .nanoseconds(Int64(nanoseconds))
    }

    /// Runs `action` once on a global Dispatch queue, `delay` from now (at once when `delay` is negative).
    /// Cancelling frees the timer at once.
    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        let source = DispatchSource.makeTimerSource(queue: .global())
        source.schedule(deadline: .now() + .nanoseconds(Int(clamping: max(0, delay.nanoseconds))))
        // The handler holds the source until it fires or is cancelled, and cancelling frees both at once,
        // where a cancelled `asyncAfter` kept its block and handle until the deadline (10,000 Action Cable
        // subscribes leave 10,000 cancelled guarantor timers).
        source.setEventHandler {
            source.cancel()
            action()
        }
        source.resume()
        return DispatchTimerHandle(source: Locked(source))
    }
}

private struct DispatchTimerHandle: ScheduledTimer {
    /// Dispatch sources are not `Sendable`; `cancel()` is safe from any thread, the lock makes it so for Swift.
    let source: Locked<any DispatchSourceTimer>
    func cancel() { source.withLock { $0.cancel() } }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).overflow ? .max
            : scaled + attoseconds / 1_000_000_000
    }

    /// The duration in seconds as a `Double`.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The duration for people, in seconds to the millisecond: "5 s", "0.25 s".
    package var secondsText: String {
        let milliseconds = (seconds * 1000).rounded()
        let text = milliseconds.truncatingRemainder(dividingBy: 1000) == 0
            ? String(Int64(milliseconds / 1000)) : String(milliseconds / 1000)
        return text + " s"
    }
}
