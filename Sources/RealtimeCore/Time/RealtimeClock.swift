import Dispatch
import Foundation

/// A cancellable scheduled callback.
public protocol ScheduledTimer: Sendable {
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
    public init() {}

    public func now() -> Duration {
        let nanoseconds = DispatchTime.now().uptimeNanoseconds
        return .nanoseconds(Int64(nanoseconds))
    }

    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> any ScheduledTimer {
        let timer = DispatchTimerHandle(action)
        let nanoseconds = max(0, delay.nanoseconds)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds))) {
            timer.fire()
        }
        return timer
    }
}

private final class DispatchTimerHandle: ScheduledTimer {
    private let action: Locked<(@Sendable () -> Void)?>
    init(_ action: @escaping @Sendable () -> Void) { self.action = Locked(action) }
    func fire() {
        let action = self.action.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }
    func cancel() { action.withLock { $0 = nil } }
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
}
