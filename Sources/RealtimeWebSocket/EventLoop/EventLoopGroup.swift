import Dispatch
import RealtimeCore

/// A fixed set of event-loop threads shared by any number of connections and servers.
///
/// The thread count never grows with the number of connections: each connection is pinned to one loop
/// (round-robin, or its session's) for its whole life. Name resolution runs on one extra serial queue so
/// that a slow DNS server never stalls a loop.
///
/// Sessions that leave ``SessionOptions/delivery`` to its default run their handlers through the group's
/// deliveries: one per loop, whose thread starts when the first session asks, each session on one of them
/// (round-robin) with every connection it opens on that loop. A loop's thread runs the calls its connections
/// hand over itself when the delivery's thread is idle (on Linux), and the delivery's thread takes the loop
/// over if a handler runs for a millisecond, so a handler that blocks holds the loop's sockets for about
/// 5 ms at most. Sessions that share a group share those threads, so a handler that blocks holds back the
/// handlers of the sessions beside it.
///
/// A group is stopped by ``shutdown()`` or when the last reference to it goes away; connections still
/// open then are closed with a `.transportFailed` error.
public final class EventLoopGroup: Sendable {
    let loops: [EventLoop]
    private let cursor = Locked(0)
    /// The next loop whose delivery ``nextDelivery()`` hands out.
    private let deliveryCursor = Locked(0)
    private let isShutDown = Locked(false)
    /// getaddrinfo blocks, so it runs here (one thread at most), never on a loop.
    let resolverQueue = DispatchQueue(label: "realtime.websocket.resolver")

    /// The number of loop threads.
    public var threadCount: Int { loops.count }

    /// The longest ``init(threadCount:readCoalescing:)`` accepts.
    public static let maximumReadCoalescing = Duration.milliseconds(100)

    /// Starts `threadCount` loop threads (1...64).
    ///
    /// - Parameter readCoalescing: off (`nil`) by default. With a window, a loop whose sockets had data
    ///   twice within the window reads them at most once per window until a read finds nothing: each
    ///   message may wait up to the window longer, and the loop wakes up less often. Sends, closes and
    ///   timers are never held. Up to ``maximumReadCoalescing``; see the README for measured figures.
    public convenience init(threadCount: Int = 1, readCoalescing: Duration? = nil) throws(RealtimeError) {
        var window: UInt64 = 0
        if let readCoalescing {
            guard readCoalescing > .zero, readCoalescing <= Self.maximumReadCoalescing else {
                throw RealtimeError(.invalidArgument,
                                    "read coalescing takes a window above zero and up to 100 ms, not \(readCoalescing)")
            }
            window = UInt64(readCoalescing.nanoseconds)
        }
        try self.init(threadCount: threadCount, readiness: .platformDefault, readCoalescingWindow: window)
    }

    /// `readiness` picks the readiness API (tests run the Apple platforms' `poll` path on Linux too);
    /// `readCoalescingWindow` is in nanoseconds, unchecked; `takeoverDelay` is how long a loop's thread may
    /// run handler calls before its delivery's thread takes the loop over, nil to keep every call on the
    /// delivery threads (the Apple platforms' path, which tests take on Linux too); `sleptWait` is how long
    /// a loop's wait lasts when it slept (tests pass 0 so that every wait counts).
    init(threadCount: Int, readiness: ReadinessAPI, readCoalescingWindow: UInt64 = 0,
         takeoverDelay: UInt64? = DeliveryThread.defaultTakeoverDelay,
         sleptWait: UInt64 = EventLoop.defaultSleptWait) throws(RealtimeError) {
        guard (1...64).contains(threadCount) else {
            throw RealtimeError(.invalidArgument, "an event-loop group needs 1 to 64 threads, not \(threadCount)")
        }
        var loops: [EventLoop] = []
        for index in 0..<threadCount {
            loops.append(try EventLoop(index: index, readiness: readiness, readCoalescingWindow: readCoalescingWindow,
                                       takeoverDelay: takeoverDelay, sleptWait: sleptWait))
        }
        self.loops = loops
        for loop in loops { loop.start() }
    }

    deinit { shutdown() }

    /// The loop for the next connection, round-robin.
    package func next() -> EventLoop {
        loops[advance(cursor)]
    }

    /// The index `cursor` holds, which moves on to the next loop.
    private func advance(_ cursor: Locked<Int>) -> Int {
        cursor.withLock { value -> Int in
            defer { value = (value + 1) % loops.count }
            return value
        }
    }

    /// The loop at `index` (modulo the count): where a session's connections open, beside its delivery.
    package func loop(at index: Int) -> EventLoop {
        loops[abs(index % loops.count)]
    }

    /// The delivery for the next session and the index of its loop, round-robin over the loops; its thread
    /// starts on first use. After ``shutdown()`` the threads end once they have run what they hold, and calls
    /// handed to an ended delivery run on its serial fallback queue.
    func nextDelivery() -> (delivery: DeliveryThread, loopIndex: Int) {
        let index = advance(deliveryCursor)
        let loop = loops[index]
        if loop.startDelivery(), isShutDown.withLock({ $0 }) { loop.delivery.finish() }
        return (loop.delivery, index)
    }

    /// Closes every connection and listener of the group and ends its threads (delivery threads once they
    /// have run what they hold). Does not wait; safe to call from a loop thread and more than once.
    public func shutdown() {
        let first = isShutDown.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        for loop in loops { loop.stop() }
        for loop in loops { loop.delivery.finish() }
    }
}
