import Dispatch
@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Delivery threads")
struct DeliveryThreadTests {
    /// Yields until `condition` holds, at most `tries` times; the thread under test gets there on its own.
    private func eventually(tries: Int = 100_000, _ condition: () -> Bool) async -> Bool {
        for _ in 0..<tries {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }

    @Test("calls handed over from many threads run on the delivery thread, each thread's in its order")
    func orderFromManyThreads() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let thread = group.nextDelivery()
        let seen = EventQueue<(producer: Int, index: Int, thread: String)>()
        DispatchQueue.concurrentPerform(iterations: 4) { producer in
            for index in 0..<500 {
                thread.enqueue { seen.push((producer, index, currentThreadName())) }
            }
        }
        var next = [0, 0, 0, 0]
        var names: Set<String> = []
        for _ in 0..<2_000 {
            let call = try #require(await seen.next())
            #expect(call.index == next[call.producer])
            next[call.producer] = call.index + 1
            names.insert(call.thread)
        }
        #expect(next == [500, 500, 500, 500])
        #expect(names == ["realtime-dlv-0"])
    }

    @Test("a sleeping delivery thread wakes for the next call")
    func wakesWhenSleeping() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let thread = group.nextDelivery()
        let seen = EventQueue<Int>()
        for round in 0..<20 {
            #expect(await eventually { thread.isSleeping })
            thread.enqueue { seen.push(round) }
            #expect(await seen.next() == round)
        }
    }

    @Test("a group starts one delivery thread per loop on first use, then hands them out in turn")
    func oneThreadPerLoop() async throws {
        let group = try EventLoopGroup(threadCount: 2)
        defer { group.shutdown() }
        let handed = (0..<4).map { _ in group.nextDelivery() }
        #expect(handed.map(\.name) == ["realtime-dlv-0", "realtime-dlv-1", "realtime-dlv-0",
                                       "realtime-dlv-1"])
        #expect(handed[0] === handed[2] && handed[1] === handed[3] && handed[0] !== handed[1])
        let names = EventQueue<String>()
        for thread in handed.prefix(2) {
            thread.enqueue { names.push(currentThreadName()) }
            #expect(await names.next() == thread.name)
        }
    }

    @Test("after the group shuts down, a delivery thread runs what it holds and ends; later calls still run, in order")
    func finishKeepsEveryCall() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        let thread = group.nextDelivery()
        let release = DispatchSemaphore(value: 0)
        let seen = EventQueue<Int>()
        thread.enqueue { release.wait() }  // the next calls queue up behind this one
        for index in 0..<100 { thread.enqueue { seen.push(index) } }
        group.shutdown()
        release.signal()
        for index in 0..<100 { #expect(await seen.next() == index) }
        #expect(await eventually { thread.hasEnded })

        for index in 100..<200 { thread.enqueue { seen.push(index) } }
        for index in 100..<200 { #expect(await seen.next() == index) }
        #expect(group.nextDelivery() === thread)  // a group shut down hands out its ended threads
    }

    @Test("a WebSocket transport gives sessions its group's delivery threads")
    func transportOffersItsGroupsThreads() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let transport = WebSocketTransport(group: group)
        let target = try #require(transport.makeDefaultDelivery())
        #expect(!target.isInline)
        let name = EventQueue<String>()
        target.enqueue { name.push(currentThreadName()) }
        #expect(await name.next() == "realtime-dlv-0")
    }
}
