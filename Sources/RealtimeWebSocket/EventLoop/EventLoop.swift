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
/// work posted from other threads. All socket state lives in its ``LoopContext``, touched by the loop
/// thread only.
package final class EventLoop: Sendable {
    private struct Inbox {
        var tasks: [@Sendable (LoopContext) -> Void] = []
        var wakePending = false
        var stopped = false
    }

    let index: Int
    let readiness: ReadinessAPI
    /// Nanoseconds the sockets may wait while traffic is dense (``ReadCoalescing``); 0 for never.
    let readCoalescingWindow: UInt64
    private let waker: Waker
    private let inbox = Locked(Inbox())
    private let tokens = Locked(UInt64(1))

    init(index: Int, readiness: ReadinessAPI = .platformDefault, readCoalescingWindow: UInt64 = 0) throws(RealtimeError) {
        self.index = index
        self.readiness = readiness
        self.readCoalescingWindow = readCoalescingWindow
        waker = try Waker(usePipe: readiness == .poll)
    }

    /// Starts the loop thread with a small stack.
    func start(stackSize: Int) {
        startNamedThread("realtime-loop-\(index)", stackSize: stackSize) { [self] in run() }
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
        var events: [SelectorEvent] = []
        events.reserveCapacity(256)
        var coalescing = ReadCoalescing(window: readCoalescingWindow)
        var holdEnded = false
        while true {
            if coalescing.isDense {
                if holdSockets(coalescing, context) { continue }
                holdEnded = true
            }
            var timeout: Int32 = holdEnded ? 0 : -1  // after a hold, a poll that finds nothing ends the spell
            if !holdEnded, let deadline = context.timers.nextDeadline() {
                let now = Self.now()
                timeout = deadline <= now ? 0 : Int32(clamping: (deadline - now + 999_999) / 1_000_000)
            }
            holdEnded = false
            events.removeAll(keepingCapacity: true)
            context.selector.wait(timeoutMilliseconds: timeout, into: &events)
            var foundSocketWork = false
            for event in events {
                if event.id == LoopContext.wakeID {
                    waker.drain()
                } else if let handler = context.handlers[event.id] {
                    foundSocketWork = true
                    handler.handle(event, in: context)
                }
            }
            if coalescing.window > 0 { coalescing.polled(at: Self.now(), foundWork: foundSocketWork) }
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
