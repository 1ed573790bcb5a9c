import Foundation
import Realtime

/// `realtime-bench scale probe --what channels|handlers|sessions|connections --dialect D --count N --port P`:
/// one memory measurement in a fresh process of its own, so that nothing freed by an earlier measurement is
/// reused by this one (RSS would hide it). It warms up (one connected session and channel, or one
/// connection), reads the heap (glibc's bytes in use) and RSS, does the thing `count` times, reads them
/// again and prints one line: `RESULT heap=… rss=… [heap2=… rss2=…] threads=… threadsBefore=… count=… seconds=…`
/// (`heap` is left out where glibc's count is not available).
enum ScaleProbe {
    struct Snapshot {
        var heap = Measure.heapBytesInUse()
        var rss = Measure.residentBytes()
        var threads = Measure.threads()
    }

    static func run(arguments: [String]) async throws {
        let settle = Double(BenchOptions.string("--settle", in: arguments) ?? "") ?? 0
        guard let what = BenchOptions.string("--what", in: arguments),
              let dialect = BenchOptions.string("--dialect", in: arguments).flatMap(BenchDialect.init(rawValue:)),
              let count = TransportBenchmark.option("--count", in: arguments),
              let port = TransportBenchmark.option("--port", in: arguments) else {
            throw BenchmarkFailure("probe: --what W --dialect D --count N --port P")
        }
        let start = Measure.nanoseconds()
        var fields: [String]
        switch what {
        case "channels": fields = try await channels(dialect, count: count, port: port, settle: settle)
        case "handlers": fields = try await handlers(dialect, count: count, port: port)
        case "sessions": fields = try await sessions(dialect, count: count, port: port, settle: settle)
        case "connections": fields = try connections(dialect, count: count, port: port)
        default: throw BenchmarkFailure("probe: unknown --what \(what)")
        }
        fields.append(String(format: "seconds=%.2f", Double(Measure.nanoseconds() - start) / 1e9))
        print("RESULT " + fields.joined(separator: " "))
        fflush(nil)
    }

    static func delta(_ before: Snapshot, _ after: Snapshot, suffix: String = "") -> [String] {
        var fields = ["rss\(suffix)=\(after.rss - before.rss)"]
        if let start = before.heap, let end = after.heap { fields.append("heap\(suffix)=\(end - start)") }
        return fields
    }

    /// A connected session with its first channel confirmed, and a countdown of the confirmations to come.
    static func connectedSession(_ dialect: BenchDialect, port: Int) async throws -> (RealtimeSession, Locked<Countdown>) {
        let session = RealtimeSession(dialect: dialect.dialect(port: port))
        let confirmations = Locked(Countdown(1))
        session.onChannelEvent { event in
            if case .subscribed = event.kind { _ = confirmations.withLock { $0 }.tick() }
        }
        try await session.connect()
        session.channel(dialect.channel(0))
        guard confirmations.withLock({ $0 }).wait(seconds: 30) else { throw BenchmarkFailure("probe: the first channel was not confirmed") }
        return (session, confirmations)
    }

    /// `count` more channels on one session, each confirmed by the server; the heap is read `settle` seconds
    /// after the last confirmation, so that what only passes through (the delivery batch still holding the
    /// confirmations, cancelled subscribe timers Dispatch releases on its own queue) is not counted as the
    /// channels' resting cost.
    static func channels(_ dialect: BenchDialect, count: Int, port: Int, settle: Double) async throws -> [String] {
        let (session, confirmations) = try await connectedSession(dialect, port: port)
        defer { session.disconnect() }
        let before = Snapshot()
        let countdown = Countdown(count)
        confirmations.withLock { $0 = countdown }
        for index in 1...count { session.channel(dialect.channel(index)) }
        guard countdown.wait(seconds: 120) else { throw BenchmarkFailure("probe: \(countdown.count) of \(count) channels confirmed") }
        if settle > 0 { try await Task.sleep(for: .seconds(settle)) }
        return delta(before, Snapshot()) + ["count=\(count)"]
    }

    /// `count` handlers for one event on one channel, then `count` more for as many distinct events. Each
    /// closure captures a counter, as an app's would; the app keeps no handler ids.
    static func handlers(_ dialect: BenchDialect, count: Int, port: Int) async throws -> [String] {
        let (session, _) = try await connectedSession(dialect, port: port)
        defer { session.disconnect() }
        let channel = session.channel(dialect.channel(0))
        let calls = Locked(0)
        let before = Snapshot()
        for _ in 0..<count { channel.on("tick") { _ in calls.withLock { $0 += 1 } } }
        let middle = Snapshot()
        for index in 0..<count { channel.on("e\(index)") { _ in calls.withLock { $0 += 1 } } }
        return delta(before, middle) + delta(middle, Snapshot(), suffix: "2") + ["count=\(count)"]
    }

    /// `count` sessions, each with one confirmed channel, on one `WebSocketTransport` sharing a one-thread
    /// event loop group (as the README advises for many sessions); 256 connecting at a time. Threads are
    /// counted once all are up and again after `settle` idle seconds (Dispatch lets idle workers go).
    static func sessions(_ dialect: BenchDialect, count: Int, port: Int, settle: Double) async throws -> [String] {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let transport = WebSocketTransport(group: group)
        @Sendable func connected() async throws -> RealtimeSession {
            let session = RealtimeSession(dialect: dialect.dialect(port: port), transport: transport)
            try await session.connect()
            _ = try await session.channel(dialect.channel).subscribed()
            return session
        }
        let warm = try await connected()
        let before = Snapshot()
        let start = Measure.nanoseconds()
        var sessions: [RealtimeSession] = []
        sessions.reserveCapacity(count)
        try await withThrowingTaskGroup(of: RealtimeSession.self) { group in
            for index in 0..<count {
                if index >= 256, let session = try await group.next() { sessions.append(session) }
                group.addTask { try await connected() }
            }
            for try await session in group { sessions.append(session) }
        }
        let after = Snapshot()
        let connecting = Double(Measure.nanoseconds() - start) / 1e9
        try await Task.sleep(for: .seconds(settle))
        let idleThreads = Measure.threads()
        for session in sessions + [warm] { session.disconnect() }
        return delta(before, after) + ["threads=\(after.threads)", "threadsIdle=\(idleThreads)",
                                       "threadsBefore=\(before.threads)", "count=\(sessions.count)",
                                       String(format: "connectSeconds=%.2f", connecting)]
    }

    /// `count` bare WebSocket connections on the same kind of transport: the baseline of `sessions`.
    static func connections(_ dialect: BenchDialect, count: Int, port: Int) throws -> [String] {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let transport = WebSocketTransport(group: group)
        let window = DispatchSemaphore(value: 256)
        let opened = Locked(0)
        func open() -> any TransportConnection {
            window.wait()
            let settled = Locked(false)
            return transport.open(dialect.rawRequest(port: port)) { event in
                switch event {
                case .opened, .closed:
                    if case .opened = event { opened.withLock { $0 += 1 } }
                    if settled.withLock({ done in defer { done = true }; return !done }) { window.signal() }
                case .received:
                    break
                }
            }
        }
        let warm = open()
        for _ in 0..<256 { window.wait() }
        for _ in 0..<256 { window.signal() }
        let before = Snapshot()
        var connections: [any TransportConnection] = []
        connections.reserveCapacity(count)
        for _ in 0..<count { connections.append(open()) }
        for _ in 0..<256 { window.wait() }
        let after = Snapshot()
        for _ in 0..<256 { window.signal() }  // libdispatch traps on a semaphore freed below its start value
        for connection in connections + [warm] { connection.abort() }
        return delta(before, after) + ["threads=\(after.threads)", "threadsBefore=\(before.threads)",
                                       "count=\(opened.withLock { $0 } - 1)"]
    }
}
