#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import RealtimeCore

/// Something registered with a loop: a listening socket or a connection. Lives on its loop thread only.
package protocol LoopHandler: AnyObject {
    /// The file descriptor is ready.
    func handle(_ event: SelectorEvent, in context: LoopContext)
    /// The loop is stopping: release the socket and report the end.
    func loopStopping(in context: LoopContext)
}

/// One thread multiplexing many sockets with epoll (Linux) or poll, woken by an eventfd (or a pipe) for
/// work posted from other threads. All socket state lives in its ``LoopContext``, touched only by the thread
/// driving the loop. That is the loop's own thread unless its ``delivery`` took the loop over from it while
/// a handler ran long (see ``DeliveryThread``); the two threads then trade roles, never both driving.
package final class EventLoop: Sendable {
    private struct Inbox {
        var tasks: [@Sendable (LoopContext) -> Void] = []
        var wakePending = false
        var stopped = false
    }

    /// What a thread needs to go on driving the loop where another left off.
    private final class Driver {
        let context: LoopContext
        var events: [SelectorEvent] = []
        var coalescing: ReadCoalescing
        var holdEnded = false
        /// The last wait slept: the loop had caught up with its sockets.
        var caughtUp = true

        init(context: LoopContext, coalescingWindow: UInt64) {
            self.context = context
            coalescing = ReadCoalescing(window: coalescingWindow)
            events.reserveCapacity(256)
        }
    }

    let index: Int
    let readiness: ReadinessAPI
    /// Nanoseconds the sockets may wait while traffic is dense (``ReadCoalescing``); 0 for never.
    let readCoalescingWindow: UInt64
    /// Runs the handler calls of the sessions that use this loop's delivery; its thread starts on first use.
    let delivery: DeliveryThread
    private let waker: Waker
    private let inbox = Locked(Inbox())
    private let tokens = Locked(UInt64(1))
    /// Set once the loop's thread has made its context.
    private let driver = Locked<Driver?>(nil)
    /// A wait at least this long (nanoseconds) slept: the loop has caught up with its sockets.
    private let sleptWait: UInt64

    /// - Parameters:
    ///   - takeoverDelay: how long the loop's thread may run handler calls itself, nil for never
    ///     (``DeliveryThread``);
    ///   - sleptWait: how long a wait lasts when it slept (tests pass 0 to count every wait).
    init(index: Int, readiness: ReadinessAPI = .platformDefault, readCoalescingWindow: UInt64 = 0,
         takeoverDelay: UInt64? = DeliveryThread.defaultTakeoverDelay,
         sleptWait: UInt64 = EventLoop.defaultSleptWait) throws(RealtimeError) {
        self.index = index
        self.sleptWait = sleptWait
        self.readiness = readiness
        self.readCoalescingWindow = readCoalescingWindow
        waker = try Waker(usePipe: readiness == .poll)
        // At most 15 bytes, as Linux keeps of a thread's name.
        delivery = try DeliveryThread(name: "realtime-dlv-\(index)", takeoverDelay: takeoverDelay)
    }

    private var loopThreadName: String { "realtime-loop-\(index)" }

    /// Nanoseconds a wait takes when it slept rather than finding its events ready, by default. A wait
    /// that slept less (its event came at once) is taken for one that did not: the follower runs the calls
    /// then, which costs a wake-up and nothing else.
    static let defaultSleptWait: UInt64 = 5_000

    /// Starts the loop's thread. Both of the loop's threads keep the platform's default stack: either may
    /// run handlers.
    func start() {
        startNamedThread(loopThreadName) { [self] in run() }
    }

    /// Starts the delivery's thread the first time it is asked for; true then.
    func startDelivery() -> Bool {
        guard delivery.markStarted() else { return false }
        startNamedThread(delivery.name) { [self] in serve(drivingLoop: false) }
        return true
    }

    /// A new id for a handler of this loop (0 is the waker's).
    package func makeToken() -> UInt64 {
        tokens.withLock { next in
            defer { next += 1 }
            return next
        }
    }

    /// Runs `task` on the loop thread. Returns false (and drops the task) when the loop has stopped.
    @discardableResult
    package func execute(_ task: @escaping @Sendable (LoopContext) -> Void) -> Bool {
        let shouldWake: Bool? = inbox.withLock { inbox in
            guard !inbox.stopped else { return nil }
            inbox.tasks.append(task)
            if inbox.wakePending { return false }
            inbox.wakePending = true
            return true
        }
        guard let shouldWake else { return false }
        if shouldWake { waker.wake() }
        return true
    }

    /// Asks the loop to close every registration and end its thread.
    func stop() {
        execute { $0.stopRequested = true }
    }

    /// Monotonic time in nanoseconds.
    package static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    private func run() {
        let context: LoopContext
        do {
            context = try LoopContext(loop: self, wakeFD: waker.readFD)
        } catch {
            inbox.withLock { $0.stopped = true }
            return
        }
        driver.withLock { $0 = Driver(context: context, coalescingWindow: readCoalescingWindow) }
        delivery.loopStarted()
        serve(drivingLoop: true)
    }

    /// Drives the loop or follows the delivery, trading roles with the other thread when the delivery takes
    /// the loop over, until the role this thread has ends.
    private func serve(drivingLoop: Bool) {
        var drivesLoop = drivingLoop
        while true {
            if drivesLoop {
                guard let current = driver.withLock({ $0 }), !drive(current) else { return }
                setCurrentThreadName(delivery.name)
            } else {
                guard delivery.follow() == .drivesLoop else { return }
                setCurrentThreadName(loopThreadName)
            }
            drivesLoop.toggle()
        }
    }

    /// Runs the loop until it stops (true) or until the delivery took it over while this thread ran a slow
    /// handler (false).
    private func drive(_ driver: Driver) -> Bool {
        let context = driver.context
        while true {
            // Handler calls this thread handed over, run before it waits again.
            guard delivery.runOnLoop(caughtUp: driver.caughtUp) else { return false }
            if driver.coalescing.isDense {
                driver.caughtUp = false
                if holdSockets(driver.coalescing, context) { continue }
                driver.holdEnded = true
            }
            var timeout: Int32 = driver.holdEnded ? 0 : -1  // after a hold, a poll that finds nothing ends the spell
            if !driver.holdEnded, let deadline = context.timers.nextDeadline() {
                let now = Self.now()
                timeout = deadline <= now ? 0 : Int32(clamping: (deadline - now + 999_999) / 1_000_000)
            }
            driver.holdEnded = false
            driver.events.removeAll(keepingCapacity: true)
            let waitStart = Self.now()
            context.selector.wait(timeoutMilliseconds: timeout, into: &driver.events)
            // A wait that found its events at once took about a microsecond; one that slept, ten or more.
            driver.caughtUp = timeout != 0 && Self.now() &- waitStart >= sleptWait
            var foundSocketWork = false
            for event in driver.events {
                if event.id == LoopContext.wakeID {
                    waker.drain()
                } else if let handler = context.handlers[event.id] {
                    foundSocketWork = true
                    handler.handle(event, in: context)
                }
            }
            if driver.coalescing.window > 0 { driver.coalescing.polled(at: Self.now(), foundWork: foundSocketWork) }
            runTasks(context)
            if !context.timers.isEmpty {
                for action in context.timers.popDue(now: Self.now()) { action() }
            }
            if context.stopRequested { break }
        }
        inbox.withLock { $0.stopped = true }
        runTasks(context)  // tasks that raced with the stop still see the context
        for handler in Array(context.handlers.values) { handler.loopStopping(in: context) }
        context.handlers.removeAll()
        waker.close()
        delivery.loopEnded()
        return true
    }

    /// While traffic is dense, waits for posted work, a timer or the end of the hold, whichever comes
    /// first, and runs what is due, leaving the sockets unpolled. Returns whether they are still held.
    private func holdSockets(_ coalescing: ReadCoalescing, _ context: LoopContext) -> Bool {
        let now = Self.now()
        guard let end = coalescing.socketsHeld(at: now) else { return false }
        var until = end
        if let deadline = context.timers.nextDeadline() { until = min(until, deadline) }
        if until > now, waker.wait(nanoseconds: until - now) { waker.drain() }
        runTasks(context)
        if !context.timers.isEmpty {
            for action in context.timers.popDue(now: Self.now()) { action() }
        }
        if context.stopRequested { return false }
        return coalescing.socketsHeld(at: Self.now()) != nil
    }

    private func runTasks(_ context: LoopContext) {
        // Bounded rounds so a task that posts tasks cannot starve the sockets.
        for _ in 0..<4 {
            let tasks = inbox.withLock { inbox in
                inbox.wakePending = false
                let tasks = inbox.tasks
                inbox.tasks = []
                return tasks
            }
            if tasks.isEmpty { return }
            for task in tasks { task(context) }
        }
    }
}

/// A loop thread's state: the selector, registrations, timers and a shared read buffer.
/// Only ever touched on its loop thread (reached through ``EventLoop/execute(_:)``).
package final class LoopContext {
    static let wakeID: UInt64 = 0
    /// One read buffer per loop, not per connection, so idle connections cost no buffer memory.
    static let readBufferSize = 256 * 1024

    package unowned let loop: EventLoop
    let selector: any Selector
    fileprivate(set) var handlers: [UInt64: any LoopHandler] = [:]
    var timers = TimerHeap()
    var stopRequested = false
    package let readBuffer: UnsafeMutableRawBufferPointer
    /// Scratch space for TLS plaintext, reused by every connection of the loop.
    let plaintextBuffer: UnsafeMutableRawBufferPointer

    fileprivate init(loop: EventLoop, wakeFD: Int32) throws(RealtimeError) {
        self.loop = loop
        selector = try makeSelector(loop.readiness)
        try selector.add(fd: wakeFD, id: Self.wakeID, interest: SelectorInterest(read: true, write: false))
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        plaintextBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
        plaintextBuffer.deallocate()
    }

    /// Makes `handler` reachable by `token` for tasks and selector events.
    package func attach(_ handler: any LoopHandler, token: UInt64) {
        handlers[token] = handler
    }

    package func detach(_ token: UInt64) {
        handlers[token] = nil
    }

    /// The handler attached under `token`, if it is still there.
    package func handler(_ token: UInt64) -> (any LoopHandler)? {
        handlers[token]
    }

    /// Adds `fd` to the selector; its events go to the handler attached under `token`.
    package func watch(fd: Int32, token: UInt64, interest: SelectorInterest) throws(RealtimeError) {
        try selector.add(fd: fd, id: token, interest: interest)
    }

    package func setInterest(fd: Int32, token: UInt64, _ interest: SelectorInterest) {
        selector.modify(fd: fd, id: token, interest: interest)
    }

    /// Removes `fd` from the selector (the caller closes it).
    package func unwatch(fd: Int32) {
        selector.remove(fd: fd)
    }

    /// Runs `action` on this loop after `delay`.
    package func schedule(after delay: Duration, _ action: @escaping () -> Void) -> UInt64 {
        let nanoseconds = UInt64(clamping: max(0, delay.nanoseconds))
        return timers.schedule(at: EventLoop.now() &+ nanoseconds, action)
    }

    /// Runs `action` on this loop at `deadline` (``EventLoop/now()`` nanoseconds).
    package func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> UInt64 {
        timers.schedule(at: deadline, action)
    }

    package func cancelTimer(_ id: UInt64?) {
        if let id { timers.cancel(id) }
    }
}
