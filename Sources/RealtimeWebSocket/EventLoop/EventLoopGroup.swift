import Dispatch
import RealtimeCore

/// A fixed set of event-loop threads shared by any number of connections and servers.
///
/// The thread count never grows with the number of connections: each connection is pinned to one loop
/// (round-robin) for its whole life. Name resolution runs on one extra serial queue so that a slow DNS
/// server never stalls a loop.
///
/// Sessions that leave ``SessionOptions/delivery`` to its default run their handlers on the group's
/// delivery threads: as many as loops, started when the first session asks, each session on one of them
/// (round-robin). Sessions that share a group share those threads, so a handler that blocks holds back the
/// handlers of the sessions beside it.
///
/// A group is stopped by ``shutdown()`` or when the last reference to it goes away; connections still
/// open then are closed with a `.transportFailed` error.
public final class EventLoopGroup: Sendable {
    /// Stack size of each loop thread; loops keep no deep recursion.
    static let threadStackSize = 512 * 1024

    let loops: [EventLoop]
    private let cursor = Locked(0)
    /// Delivery threads, as many as loops, started when a session first asks for one (``nextDelivery()``).
    private let deliveries = Locked<(threads: [DeliveryThread], cursor: Int)>(([], 0))
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
    /// `readCoalescingWindow` is in nanoseconds, unchecked.
    init(threadCount: Int, readiness: ReadinessAPI, readCoalescingWindow: UInt64 = 0) throws(RealtimeError) {
        guard (1...64).contains(threadCount) else {
            throw RealtimeError(.invalidArgument, "an event-loop group needs 1 to 64 threads, not \(threadCount)")
        }
        var loops: [EventLoop] = []
        for index in 0..<threadCount {
            loops.append(try EventLoop(index: index, readiness: readiness, readCoalescingWindow: readCoalescingWindow))
        }
        self.loops = loops
        for loop in loops { loop.start(stackSize: Self.threadStackSize) }
    }

    deinit { shutdown() }

    /// The loop for the next connection, round-robin.
    package func next() -> EventLoop {
        let index = cursor.withLock { value -> Int in
            defer { value = (value + 1) % loops.count }
            return value
        }
        return loops[index]
    }

    /// The delivery thread for the next session, round-robin; the threads start on first use. After
    /// ``shutdown()`` they end once they have run what they hold, and calls handed to an ended thread run
    /// on its serial fallback queue.
    func nextDelivery() -> DeliveryThread {
        let (thread, starts) = deliveries.withLock { deliveries -> (DeliveryThread, Bool) in
            if deliveries.threads.count < loops.count {
                // At most 15 bytes, as Linux keeps of a thread's name.
                let thread = DeliveryThread(name: "realtime-dlv-\(deliveries.threads.count)")
                deliveries.threads.append(thread)
                return (thread, true)
            }
            defer { deliveries.cursor = (deliveries.cursor + 1) % deliveries.threads.count }
            return (deliveries.threads[deliveries.cursor], false)
        }
        if starts {
            thread.start()
            if isShutDown.withLock({ $0 }) { thread.finish() }
        }
        return thread
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
        for thread in deliveries.withLock({ $0.threads }) { thread.finish() }
    }
}
