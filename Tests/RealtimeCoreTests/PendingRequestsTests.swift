@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing

@Suite("PendingRequests")
struct PendingRequestsTests {
    private let first = RequestID(1)
    private let second = RequestID(2)

    @Test("a request is taken out once")
    func removeOnce() {
        var pending = PendingRequests()
        pending.add(first, sentOn: 7)
        let taken = pending.remove(first), again = pending.remove(first)
        #expect(taken?.sentOn == 7)
        #expect(again == nil)
    }

    @Test("commands wait in order and are written once, on the connection that came up")
    func customQueue() {
        var pending = PendingRequests()
        pending.addCustom(first, name: "a", payload: 1)
        pending.addCustom(second, name: "b", payload: 2)
        let queued = pending.takeCustomQueue()
        #expect(queued == [first, second])
        let written = queued.compactMap { pending.writeCustom($0, on: 3)?.name }
        #expect(written == ["a", "b"])
        let rewritten = pending.writeCustom(first, on: 4), requeued = pending.takeCustomQueue()
        #expect(rewritten == nil)
        #expect(requeued.isEmpty)
    }

    @Test("a command taken out before the connection comes up is not written")
    func withdrawnCommand() {
        var pending = PendingRequests()
        pending.addCustom(first, name: "a", payload: 1)
        pending.addCustom(second, name: "b", payload: 2)
        _ = pending.remove(first)
        let queued = pending.takeCustomQueue()
        #expect(queued == [second])
    }

    @Test("a lost connection takes out only what was written on it")
    func removeWritten() {
        var pending = PendingRequests()
        pending.add(first, sentOn: 7)
        pending.add(second, sentOn: nil)
        let lost = pending.removeWritten()
        #expect(lost.map(\.id) == [first])
        let stillThere = pending.markWritten(second, on: 8)
        #expect(stillThere)
        let lostNext = pending.removeWritten()
        #expect(lostNext.map(\.id) == [second])
    }

    @Test("a request no longer pending is not marked written")
    func markWrittenGone() {
        var pending = PendingRequests()
        let marked = pending.markWritten(first, on: 1)
        #expect(!marked)
    }

    @Test("giving up takes out every request and every waiting command")
    func removeAll() {
        var pending = PendingRequests()
        pending.add(first, sentOn: 7)
        pending.addCustom(second, name: "b", payload: 2)
        let all = pending.removeAll()
        #expect(Set(all.map(\.id)) == [first, second])
        let queued = pending.takeCustomQueue(), rest = pending.removeAll()
        #expect(queued.isEmpty && rest.isEmpty)
    }

    @Test("an early cancellation is taken once, for its own operation only")
    func earlyCancellation() {
        var pending = PendingRequests()
        pending.rememberEarlyCancellation(OperationID(5))
        let other = pending.takeEarlyCancellation(OperationID(6))
        let taken = pending.takeEarlyCancellation(OperationID(5)), again = pending.takeEarlyCancellation(OperationID(5))
        #expect(taken && !again && !other)
    }

    @Test("only the newest early cancellations are kept")
    func earlyCancellationLimit() {
        var pending = PendingRequests()
        let limit = UInt64(PendingRequests.earlyCancellationLimit)
        for operation in 1...(limit + 1) { pending.rememberEarlyCancellation(OperationID(operation)) }
        let oldest = pending.takeEarlyCancellation(OperationID(1))
        let newest = pending.takeEarlyCancellation(OperationID(limit + 1))
        #expect(!oldest && newest)
    }
}
