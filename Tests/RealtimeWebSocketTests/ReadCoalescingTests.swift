import Foundation
#if canImport(Glibc)
import Glibc
#endif
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Read coalescing")
struct ReadCoalescingTests {
    // MARK: The decision, fed nanoseconds

    @Test("off: never holds, whatever the traffic")
    func off() {
        var coalescing = ReadCoalescing(window: 0)
        for now in stride(from: UInt64(0), to: 1_000, by: 10) { coalescing.polled(at: now, foundWork: true) }
        #expect(!coalescing.isDense)
        #expect(coalescing.socketsHeld(at: 1_000) == nil)
    }

    @Test("sparse traffic is read at once; two reads within a window hold the sockets until it has passed")
    func denseAfterTwoReadsWithinAWindow() {
        var coalescing = ReadCoalescing(window: 250)
        coalescing.polled(at: 1_000, foundWork: true)
        #expect(coalescing.socketsHeld(at: 1_001) == nil)  // one read is not a pattern
        coalescing.polled(at: 1_300, foundWork: true)  // 300 apart: still sparse
        #expect(coalescing.socketsHeld(at: 1_301) == nil)
        coalescing.polled(at: 1_400, foundWork: true)  // 100 apart: dense
        #expect(coalescing.isDense)
        #expect(coalescing.socketsHeld(at: 1_401) == 1_650)
        #expect(coalescing.socketsHeld(at: 1_649) == 1_650)
        #expect(coalescing.socketsHeld(at: 1_650) == nil)
        // The poll after the hold found more: the next hold counts from it, however long the hold took.
        coalescing.polled(at: 1_700, foundWork: true)
        #expect(coalescing.socketsHeld(at: 1_700) == 1_950)
    }

    @Test("a poll that finds nothing ends the dense spell; posted work does not count as socket work")
    func quietPollEndsTheSpell() {
        var coalescing = ReadCoalescing(window: 250)
        coalescing.polled(at: 0, foundWork: true)
        coalescing.polled(at: 10, foundWork: true)
        #expect(coalescing.isDense)
        coalescing.polled(at: 260, foundWork: false)
        #expect(!coalescing.isDense)
        #expect(coalescing.socketsHeld(at: 261) == nil)
        coalescing.polled(at: 5_000, foundWork: true)  // long after: sparse again
        #expect(coalescing.socketsHeld(at: 5_001) == nil)
    }

    // MARK: A loop that coalesces

    /// Reads one socket of a pair on the loop and counts the reads that returned bytes.
    final class CountingReader: LoopHandler, Sendable {
        let fd: Int32
        let reads: Locked<Int>
        let readEvents: EventQueue<Int>

        init(fd: Int32, reads: Locked<Int>, readEvents: EventQueue<Int>) {
            self.fd = fd
            self.reads = reads
            self.readEvents = readEvents
        }

        func handle(_ event: SelectorEvent, in context: LoopContext) {
            guard event.readable else { return }
            var buffer = [UInt8](repeating: 0, count: 64)
            guard read(fd, &buffer, buffer.count) > 0 else { return }
            let count = reads.withLock { count -> Int in
                count += 1
                return count
            }
            readEvents.push(count)
        }

        func loopStopping(in context: LoopContext) {
            context.unwatch(fd: fd)
        }
    }

    @Test("while traffic is dense the loop leaves its sockets for the window but runs posted work at once",
          arguments: [ReadinessAPI.epoll, .poll])
    func loopHoldsSocketsNotTasks(readiness: ReadinessAPI) async throws {
        // A one-hour window: under the thread sanitizer beside hundreds of tests, this test's task was seen
        // to wait over a minute between two steps, which a shorter window would count as sparse traffic.
        // The test never waits for the window to end; the echo test below shows that held data is read then.
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let group = try EventLoopGroup(threadCount: 1, readiness: readiness, readCoalescingWindow: 3_600_000_000_000)
        defer { group.shutdown() }  // before the pair is closed
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        let readEnd = pair[0]
        let reads = Locked(0)
        let readEvents = EventQueue<Int>()
        let reader = CountingReader(fd: pair[0], reads: reads, readEvents: readEvents)
        let loop = group.next()
        let token = loop.makeToken()
        loop.execute { context in
            context.attach(reader, token: token)
            try? context.watch(fd: readEnd, token: token, interest: SelectorInterest(read: true, write: false))
        }
        func writeByte() { var byte: UInt8 = 1; _ = write(pair[1], &byte, 1) }

        writeByte()
        #expect(await readEvents.next() == 1)
        writeByte()
        #expect(await readEvents.next() == 2)  // two reads within the window: dense
        writeByte()
        // An idle loop that does not hold reads the third byte within microseconds; this one leaves it.
        #expect(await readEvents.next(timeout: 0.2) == nil)
        let seenByTask = EventQueue<Int>()
        loop.execute { _ in seenByTask.push(reads.withLock { $0 }) }
        #expect(await seenByTask.next() == 2)
        let detached = EventQueue<Bool>()
        loop.execute { context in
            context.unwatch(fd: readEnd)
            context.detach(token)
            detached.push(true)
        }
        #expect(await detached.next() == true)  // the pair is closed only once the loop no longer polls it
    }

    @Test("a coalescing client loses nothing: 500 echoes in order, a ping and a clean close")
    func echoThroughACoalescingLoop() async throws {
        let serverGroup = try EventLoopGroup(threadCount: 1)
        defer { serverGroup.shutdown() }
        let server = try makeEchoServer(group: serverGroup)
        defer { server.stop() }
        let clientGroup = try EventLoopGroup(threadCount: 1, readCoalescing: .milliseconds(2))
        defer { clientGroup.shutdown() }
        let transport = WebSocketTransport(group: clientGroup)
        let events = EventQueue<TransportEvent>()
        let connection = transport.openConnection(ConnectionRequest(url: server.url)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        var received: [TransportFrame] = []
        for round in 0..<50 {
            let sent: [TransportFrame] = (0..<10).map { .text("message \(round * 10 + $0)") }
            connection.send(sent)
            let target = received.count + sent.count
            while received.count < target, let event = await events.next() { received += event.frames ?? [] }
        }
        #expect(received == (0..<500).map { .text("message \($0)") })
        #expect(try await connection.ping() > .zero)
        connection.close(code: 1000, reason: "done")
        let (_, closure) = await drainUntilClosed(events)
        #expect(closure?.kind == .closedLocally(code: 1000, reason: "done"))
    }

    @Test("windows must be above zero and at most 100 ms; the transport's private group takes its window")
    func windowBounds() async throws {
        #expect(throws: RealtimeError.self) { try EventLoopGroup(readCoalescing: .zero) }
        #expect(throws: RealtimeError.self) { try EventLoopGroup(readCoalescing: .milliseconds(101)) }
        let group = try EventLoopGroup(readCoalescing: .microseconds(250))
        defer { group.shutdown() }
        #expect(group.loops.allSatisfy { $0.readCoalescingWindow == 250_000 })
        let off = try EventLoopGroup()
        defer { off.shutdown() }
        #expect(off.loops.allSatisfy { $0.readCoalescingWindow == 0 })
        // A transport without a group starts one with its configuration's window, and reports a bad one.
        let transport = WebSocketTransport(configuration: .init(readCoalescing: .seconds(1)))
        let events = EventQueue<TransportEvent>()
        _ = transport.open(ConnectionRequest(url: URL(string: "ws://127.0.0.1:9/")!)) { events.push($0) }
        #expect(await events.next()?.closure?.error?.code == .invalidArgument)
    }
}
