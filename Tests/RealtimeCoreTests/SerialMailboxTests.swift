import Foundation
import RealtimeCore
import Testing

@Suite("Serial mailbox")
struct SerialMailboxTests {
    @Test("inputs from one thread are handled in submission order, each before its submit returns")
    func order() {
        let mailbox = SerialMailbox<Int>()
        let handled = Locked<[Int]>([])
        for value in 0..<100 {
            mailbox.submit(value) { batch in handled.withLock { $0 += batch } }
            #expect(handled.withLock { $0.last } == value)
        }
        #expect(handled.withLock { $0 } == Array(0..<100))
    }

    @Test("an input submitted while draining only queues; the draining call handles it next, in order")
    func reentrantSubmitRunsAfter() {
        let mailbox = SerialMailbox<String>()
        let log = Locked<[String]>([])
        let depth = Locked(0)
        func drain(_ batch: [String]) {
            let entered = depth.withLock { depth in
                depth += 1
                return depth
            }
            #expect(entered == 1)
            for input in batch {
                log.withLock { $0.append("handle \(input)") }
                if input == "first" {
                    mailbox.submit("second", drain: drain)
                    mailbox.submit("third", drain: drain)
                    log.withLock { $0.append("inner submits returned") }
                }
            }
            depth.withLock { $0 -= 1 }
        }
        mailbox.submit("first", drain: drain)
        log.withLock { $0.append("outer submit returned") }
        #expect(log.withLock { $0 } == ["handle first", "inner submits returned", "handle second", "handle third",
                                         "outer submit returned"])
    }

    @Test("an input submitted from another thread while draining runs on the draining thread, after the batch")
    func otherThreadSubmitRunsOnDrainer() {
        let mailbox = SerialMailbox<String>()
        let log = Locked<[String]>([])
        let submitted = DispatchSemaphore(value: 0)
        mailbox.submit("first") { batch in
            for input in batch {
                log.withLock { $0.append("handle \(input)") }
                guard input == "first" else { continue }
                Thread.detachNewThread {
                    mailbox.submit("from other thread") { _ in
                        log.withLock { $0.append("other thread drained") }  // must not happen
                    }
                    log.withLock { $0.append("other submit returned") }
                    submitted.signal()
                }
                submitted.wait()
            }
        }
        log.withLock { $0.append("first submit returned") }
        // The other thread's input was handled inside the first submit call, so on its thread.
        #expect(log.withLock { $0 } == ["handle first", "other submit returned", "handle from other thread",
                                         "first submit returned"])
    }

    @Test("concurrent submitters: every input is handled exactly once, each submitter's in order, one drain at a time")
    func concurrentSubmitters() {
        let submitters = 8
        let perSubmitter = 2_000
        let mailbox = SerialMailbox<(submitter: Int, sequence: Int)>()
        let handled = Locked<[[Int]]>(Array(repeating: [], count: submitters))
        let draining = Locked(false)
        let overlaps = Locked(0)
        DispatchQueue.concurrentPerform(iterations: submitters) { submitter in
            for sequence in 0..<perSubmitter {
                mailbox.submit((submitter, sequence)) { batch in
                    let alreadyDraining = draining.withLock { flag in
                        defer { flag = true }
                        return flag
                    }
                    if alreadyDraining { overlaps.withLock { $0 += 1 } }
                    for input in batch { handled.withLock { $0[input.submitter].append(input.sequence) } }
                    draining.withLock { $0 = false }
                }
            }
        }
        // concurrentPerform returns after every submit returned; a submit that queued behind a drainer
        // returned only after queueing, and that drainer returns only once the queue is empty.
        #expect(overlaps.withLock { $0 } == 0)
        for submitter in 0..<submitters {
            #expect(handled.withLock { $0[submitter] } == Array(0..<perSubmitter))
        }
    }

    @Test("a burst of inputs queued while draining is handled in order, and its room is let go afterwards")
    func burstCapacityIsReleased() {
        let mailbox = SerialMailbox<Int>()
        let handled = Locked<[Int]>([])
        func drain(_ batch: [Int]) {
            handled.withLock { $0 += batch }
            if batch == [0] {
                for value in 1...1_000 { mailbox.submit(value, drain: drain) }
            }
        }
        mailbox.submit(0, drain: drain)
        #expect(handled.withLock { $0 } == Array(0...1_000))
        #expect(mailbox.queueCapacity <= SerialMailbox<Int>.keptCapacity)
    }
}
