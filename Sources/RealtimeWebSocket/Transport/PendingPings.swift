import RealtimeCore

/// A WebSocket connection that measures its round trip with a ping (``RoundTripMeasuring/ping()``: the
/// time until the pong; a ping sent before the upgrade completes goes out right after it). What
/// ``WebSocketTransport`` and `NetworkWebSocketTransport` open conforms, so
/// `(connection as? any WebSocketPinging)?.ping()` works on every platform.
public protocol WebSocketPinging: RoundTripMeasuring {}

/// The pings a connection sent whose pong has not come: who waits for each and when it left. Both drivers
/// keep one under their lock and resume the waiters after leaving it.
struct PendingPings: Sendable {
    typealias Waiter = CheckedContinuation<Duration, any Error>

    private struct Pending: Sendable {
        var started: UInt64
        var waiter: Waiter
    }

    private var pending: [UInt64: Pending] = [:]
    private var nextID: UInt64 = 1

    /// Registers a waiter and returns the id to hand the connection machine.
    mutating func add(_ waiter: Waiter, now: UInt64) -> UInt64 {
        let id = nextID
        nextID += 1
        pending[id] = Pending(started: now, waiter: waiter)
        return id
    }

    /// The machine saw the pong of ping `id`: its waiter and the round trip.
    mutating func answered(_ id: UInt64, now: UInt64) -> (Waiter, Duration)? {
        guard let ping = pending.removeValue(forKey: id) else { return nil }
        return (ping.waiter, .nanoseconds(Int64(clamping: now &- ping.started)))
    }

    /// The machine gave up on ping `id`.
    mutating func timedOut(_ id: UInt64) -> Waiter? {
        pending.removeValue(forKey: id)?.waiter
    }

    /// Every waiter, for when the connection ends.
    mutating func removeAll() -> [Waiter] {
        defer { pending = [:] }
        return pending.keys.sorted().compactMap { pending[$0]?.waiter }
    }

    static let timeoutError = RealtimeError(.timedOut, "no pong within the ping timeout")

    static func closedError(_ closure: TransportClosure) -> RealtimeError {
        RealtimeError(.connectionClosed, "the connection closed before the pong",
                      context: .init(closeCode: closure.closeCode))
    }

    static let alreadyClosedError = RealtimeError(.connectionClosed, "the connection is closed")
}
