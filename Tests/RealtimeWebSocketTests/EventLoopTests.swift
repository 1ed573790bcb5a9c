import Foundation
#if canImport(Glibc)
import Glibc
#endif
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Event loop")
struct EventLoopTests {
    @Test("the timer heap fires in deadline order and skips cancelled timers")
    func timerHeapOrder() {
        var heap = TimerHeap()
        let fired = Locked<[Int]>([])
        var ids: [UInt64] = []
        for (index, deadline) in [50, 10, 40, 20, 30, 10].enumerated() {
            ids.append(heap.schedule(at: UInt64(deadline)) { fired.withLock { $0.append(index) } })
        }
        heap.cancel(ids[2])  // deadline 40
        #expect(heap.nextDeadline() == 10)
        for action in heap.popDue(now: 25) { action() }
        #expect(fired.withLock { $0 }.sorted() == [1, 3, 5])
        #expect(heap.nextDeadline() == 30)
        for action in heap.popDue(now: 100) { action() }
        #expect(fired.withLock { $0 }.suffix(2) == [4, 0])
        #expect(heap.isEmpty)
        #expect(heap.nextDeadline() == nil)
    }

    @Test("many cancellations do not leave the heap growing")
    func timerHeapCompaction() {
        var heap = TimerHeap()
        for round in 0..<10_000 {
            let id = heap.schedule(at: UInt64(round)) {}
            heap.cancel(id)
        }
        #expect(heap.isEmpty)
        #expect(heap.nextDeadline() == nil)
    }

    @Test("tasks run on the loop thread in the order they were posted")
    func taskOrder() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let seen = EventQueue<Int>()
        for index in 0..<1000 {
            loop.execute { _ in seen.push(index) }
        }
        var order: [Int] = []
        for _ in 0..<1000 { if let value = await seen.next() { order.append(value) } }
        #expect(order == Array(0..<1000))
        let name = EventQueue<String>()
        loop.execute { _ in name.push(currentThreadName()) }
        let loopThread = await name.next()
        #expect(loopThread == "realtime-loop-0")
    }

    @Test("loop timers fire after their delay and not when cancelled")
    func loopTimers() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let fired = EventQueue<String>()
        group.next().execute { context in
            let cancelled = context.schedule(after: .milliseconds(20)) { fired.push("cancelled") }
            _ = context.schedule(after: .milliseconds(40)) { fired.push("late") }
            _ = context.schedule(after: .milliseconds(10)) { fired.push("early") }
            context.cancelTimer(cancelled)
        }
        #expect(await fired.next() == "early")
        #expect(await fired.next() == "late")
        #expect(await fired.next(timeout: 0.2) == nil)
    }

    @Test("a group has the number of threads it was made with, and round-robins connections over them")
    func boundedThreads() async throws {
        let group = try EventLoopGroup(threadCount: 2)
        defer { group.shutdown() }
        #expect(group.threadCount == 2)
        let server = try makeEchoServer(group: group)
        defer { server.stop() }
        let transport = WebSocketTransport(group: group)
        let threads = Locked<Set<String>>([])
        let opened = EventQueue<Bool>()
        var connections: [any TransportConnection] = []
        for _ in 0..<200 {
            connections.append(transport.open(ConnectionRequest(url: server.url)) { event in
                if case .opened = event {
                    threads.withLock { _ = $0.insert(currentThreadName()) }
                    opened.push(true)
                }
            })
        }
        var count = 0
        for _ in 0..<200 where await opened.next() == true { count += 1 }
        #expect(count == 200)
        // 200 connections were served by exactly the group's two loop threads.
        #expect(threads.withLock { $0 } == ["realtime-loop-0", "realtime-loop-1"])
        for connection in connections { connection.abort() }
    }

    @Test("a request's loop affinity opens the connection on that loop of the group, not the next in turn")
    func loopAffinity() async throws {
        let group = try EventLoopGroup(threadCount: 2)
        defer { group.shutdown() }
        let server = try makeEchoServer()
        defer { server.stop() }
        let transport = WebSocketTransport(group: group)
        let names = EventQueue<String>()
        var connections: [any TransportConnection] = []
        for _ in 0..<4 {
            var request = ConnectionRequest(url: server.url)
            request.loopAffinity = 1
            connections.append(transport.open(request) { event in
                if case .opened = event { names.push(currentThreadName()) }
            })
        }
        for _ in 0..<4 { #expect(await names.next() == "realtime-loop-1") }
        for connection in connections { connection.abort() }
    }

    @Test("thread counts outside 1...64 are rejected")
    func invalidThreadCount() {
        #expect(throws: RealtimeError.self) { try EventLoopGroup(threadCount: 0) }
        #expect(throws: RealtimeError.self) { try EventLoopGroup(threadCount: 65) }
    }

    @Test("shutting a group down closes its connections with a transport error")
    func shutdownClosesConnections() async throws {
        let serverGroup = try EventLoopGroup(threadCount: 1)
        defer { serverGroup.shutdown() }
        let server = try makeEchoServer(group: serverGroup)
        defer { server.stop() }
        let group = try EventLoopGroup(threadCount: 1)
        let events = EventQueue<TransportEvent>()
        let connection = WebSocketTransport(group: group).open(ConnectionRequest(url: server.url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        group.shutdown()
        let closure = await events.next()?.closure
        #expect(closure?.error?.code == .transportFailed)
        #expect(closure?.error?.message.contains("shut down") == true)
        withExtendedLifetime(connection) {}
    }

    @Test("a transport without a group owns a private one that goes away with it")
    func privateGroupLifetime() async throws {
        let server = try makeEchoServer()
        defer { server.stop() }
        weak var weakGroup: EventLoopGroup?
        do {
            let transport = WebSocketTransport()
            weakGroup = try? transport.groupForTesting.get()
            #expect(weakGroup != nil)
            let events = EventQueue<TransportEvent>()
            let connection = transport.open(ConnectionRequest(url: server.url)) { events.push($0) }
            #expect(await events.next()?.isOpened == true)
            connection.close(code: 1000, reason: "")
            _ = await drainUntilClosed(events)
        }
        #expect(weakGroup == nil)
    }

    @Test("on Linux the platform defaults are epoll loops and the OpenSSL-backed transport, with its settings")
    func platformDefaults() throws {
        #expect(ReadinessAPI.platformDefault == .epoll)
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        #expect(group.loops.first?.readiness == .epoll)
        let limits = WebSocketLimits(maximumMessageSize: 4096)
        let transport = WebSocketTransport.platformDefault(configuration: .init(limits: limits))
        let concrete = try #require(transport as? WebSocketTransport)
        #expect(concrete.configuration.limits.maximumMessageSize == 4096)
    }
}

/// The system name of the calling thread, from /proc.
func currentThreadName() -> String {
    let path = "/proc/thread-self/comm"
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
}
