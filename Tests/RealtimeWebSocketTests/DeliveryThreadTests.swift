import Dispatch
import Foundation
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
        let thread = group.nextDelivery().delivery
        #expect(await eventually { thread.isSleeping })  // until then, its loop's thread may take calls too
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
        let thread = group.nextDelivery().delivery
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
        let pairs = (0..<4).map { _ in group.nextDelivery() }
        #expect(pairs.map(\.loopIndex) == [0, 1, 0, 1])
        let handed = pairs.map(\.delivery)
        #expect(handed.map(\.name) == ["realtime-dlv-0", "realtime-dlv-1", "realtime-dlv-0",
                                       "realtime-dlv-1"])
        #expect(handed[0] === handed[2] && handed[1] === handed[3] && handed[0] !== handed[1])
        let names = EventQueue<String>()
        for thread in handed.prefix(2) {
            // Asleep, it is woken for a call from another thread (awake, its loop's thread may take the call).
            #expect(await eventually { thread.isSleeping })
            thread.enqueue { names.push(currentThreadName()) }
            #expect(await names.next() == thread.name)
        }
    }

    @Test("after the group shuts down, a delivery thread runs what it holds and ends; later calls still run, in order")
    func finishKeepsEveryCall() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        let thread = group.nextDelivery().delivery
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
        #expect(group.nextDelivery().delivery === thread)  // a group shut down hands out its ended threads
    }

    /// The calling thread's identity (the group's threads are Foundation threads).
    private static func threadID() -> ObjectIdentifier { ObjectIdentifier(Thread.current) }

    /// A one-loop group whose every wait counts as slept, its delivery started and asleep. A loop preempted
    /// within a call may be taken over on a busy machine: tests of the loop's own runs pass a long delay.
    private func idlePair(takeoverDelay: UInt64 = DeliveryThread.defaultTakeoverDelay) async throws
        -> (EventLoopGroup, DeliveryThread, EventLoop) {
        let group = try EventLoopGroup(threadCount: 1, readiness: .platformDefault, takeoverDelay: takeoverDelay,
                                       sleptWait: 0)
        let delivery = group.nextDelivery().delivery
        #expect(await eventually { delivery.isSleeping })
        return (group, delivery, group.loops[0])
    }

    @Test("calls handed over on the loop's thread run there before it waits again, without waking the delivery's thread")
    func loopRunsItsOwnCalls() async throws {
        let (group, delivery, loop) = try await idlePair(takeoverDelay: 60_000_000_000)
        defer { group.shutdown() }
        let seen = EventQueue<(index: Int, thread: String)>()
        // One at a time, and every wait counts as slept (a loop that is behind hands its calls over).
        for index in 0..<100 {
            loop.execute { _ in delivery.enqueue { seen.push((index, currentThreadName())) } }
            let call = try #require(await seen.next())
            #expect(call.index == index)
            #expect(call.thread == "realtime-loop-0")
        }
        #expect(delivery.followerBatches == 0)
        #expect(delivery.isSleeping)
    }

    @Test("a loop that found data waiting hands its calls to the delivery's thread, which runs them as it reads on")
    func loopBehindHandsCallsOver() async throws {
        let (group, delivery, loop) = try await idlePair(takeoverDelay: 60_000_000_000)
        defer { group.shutdown() }
        let seen = EventQueue<String>()
        loop.execute { _ in
            delivery.enqueue { seen.push(currentThreadName()) }
            #expect(delivery.runOnLoop(caughtUp: false))  // as after a wait that found its events at once
        }
        #expect(await seen.next() == "realtime-dlv-0")
        #expect(delivery.followerBatches == 1)
    }

    @Test("calls a handler hands over on the loop's thread run there for a few rounds, then on the delivery's thread")
    func handlersHandingOverCalls() async throws {
        let (group, delivery, loop) = try await idlePair(takeoverDelay: 60_000_000_000)
        defer { group.shutdown() }
        let seen = EventQueue<(index: Int, thread: String)>()
        @Sendable func call(_ index: Int) {
            seen.push((index, currentThreadName()))
            if index < 7 { delivery.enqueue { call(index + 1) } }
        }
        loop.execute { _ in delivery.enqueue { call(0) } }
        var threads: [String] = []
        for index in 0...7 {
            let next = try #require(await seen.next())
            #expect(next.index == index)
            threads.append(next.thread)
        }
        let rounds = DeliveryThread.loopRounds
        #expect(threads == Array(repeating: "realtime-loop-0", count: rounds)
                + Array(repeating: "realtime-dlv-0", count: 8 - rounds))
    }

    @Test("without the loop running calls (the Apple platforms' path), the loop's calls run on the delivery's thread")
    func loopHandsEveryCallOver() async throws {
        let group = try EventLoopGroup(threadCount: 1, readiness: .platformDefault, takeoverDelay: nil)
        defer { group.shutdown() }
        let delivery = group.nextDelivery().delivery
        let loop = group.loops[0]
        let seen = EventQueue<(index: Int, thread: String)>()
        for index in 0..<50 {
            loop.execute { _ in delivery.enqueue { seen.push((index, currentThreadName())) } }
        }
        for index in 0..<50 {
            let call = try #require(await seen.next())
            #expect(call.index == index)
            #expect(call.thread == "realtime-dlv-0")
        }
        #expect(delivery.followerBatches > 0)
    }

    @Test("a handler that blocks the loop's thread hands the loop to the delivery's thread, in order, roles traded")
    func takeoverWhenAHandlerBlocks() async throws {
        let (group, delivery, loop) = try await idlePair()
        defer { group.shutdown() }
        let release = DispatchSemaphore(value: 0)
        defer { release.signal() }  // never leave the handler blocked, whatever failed
        let seen = EventQueue<(label: String, thread: ObjectIdentifier, name: String)>()
        let record: @Sendable (String) -> Void = { seen.push(($0, Self.threadID(), currentThreadName())) }
        loop.execute { _ in
            delivery.enqueue {
                record("blocks")
                release.wait()
                record("returns")
            }
            delivery.enqueue { record("after it, same batch") }
        }
        let blocked = try #require(await seen.next())
        #expect(blocked.label == "blocks" && blocked.name == "realtime-loop-0")

        // The loop goes on while the handler blocks: the delivery's thread drives it now, under the loop's name.
        let driver = EventQueue<(thread: ObjectIdentifier, name: String)>()
        loop.execute { _ in driver.push((Self.threadID(), currentThreadName())) }
        let newDriver = try #require(await driver.next())
        #expect(newDriver.thread != blocked.thread)
        #expect(newDriver.name == "realtime-loop-0")

        // Calls handed over meanwhile, by the loop and by another thread, wait for the blocked one.
        loop.execute { _ in delivery.enqueue { record("from the loop") } }
        loop.execute { _ in driver.push((Self.threadID(), "")) }
        _ = await driver.next()
        delivery.enqueue { record("from elsewhere") }
        #expect(seen.pending.isEmpty)
        release.signal()
        let rest = [try #require(await seen.next()), try #require(await seen.next()),
                    try #require(await seen.next()), try #require(await seen.next())]
        #expect(rest.map(\.label) == ["returns", "after it, same batch", "from the loop", "from elsewhere"])
        // The thread that was in the handler follows now, and the new driver runs the loop's own calls.
        #expect(rest.allSatisfy { $0.thread == blocked.thread })
        #expect(rest.last?.name == "realtime-dlv-0")
        #expect(await eventually { delivery.isSleeping })
        loop.execute { _ in delivery.enqueue { record("next from the loop") } }
        let next = try #require(await seen.next())
        #expect(next.label == "next from the loop" && next.thread == newDriver.thread)
        #expect(next.name == "realtime-loop-0")
    }

    @Test("a handler on the loop's thread may wait for the loop: the delivery's thread takes the loop over")
    func handlerWaitingForTheLoop() async throws {
        let (group, delivery, loop) = try await idlePair()
        defer { group.shutdown() }
        let done = EventQueue<Bool>()
        loop.execute { _ in
            delivery.enqueue {
                let answered = DispatchSemaphore(value: 0)
                loop.execute { _ in answered.signal() }
                done.push(answered.wait(timeout: .now() + 5) == .success)
            }
        }
        #expect(await done.next() == true)
    }

    @Test("a WebSocket transport gives sessions its group's delivery threads")
    func transportOffersItsGroupsThreads() async throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let transport = WebSocketTransport(group: group)
        let provided = try #require(transport.makeDefaultDelivery())
        #expect(provided.loopAffinity == 0)
        let target = provided.target
        #expect(!target.isInline)
        let name = EventQueue<String>()
        #expect(await eventually { group.loops[0].delivery.isSleeping })
        target.enqueue { name.push(currentThreadName()) }
        #expect(await name.next() == "realtime-dlv-0")
    }
}
