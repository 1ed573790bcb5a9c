import Foundation
import Realtime

/// `realtime-bench scale`: what many channels, handlers and sessions cost, and how fast a dropped session is
/// whole again. Against `scale server` (a child: every dialect's server on the library's `WebSocketServer`).
///
/// - Memory per channel (`--channels`, 10,000; read `--channel-settle` seconds after the last confirmation)
///   and per handler (`--handlers`, 100,000; on one event, then on as many distinct events): the heap
///   (glibc's bytes in use) and RSS deltas of a fresh `scale probe` process, divided by the count.
/// - `--sessions` (10,000) concurrent sessions, one channel each, on one transport with a one-thread loop:
///   RSS and heap per session and the process's threads, beside as many bare connections of the same
///   transport (the baseline). The probe and the server raise RLIMIT_NOFILE to its hard limit; the count is
///   cut to fit (and said so) when that is still too low.
/// - Reconnect + re-subscribe `--reconnect-channels` (100) channels after the server aborts the connection,
///   `--drops` (10) times: from the moment the transport reports the new connection open (TCP and the
///   upgrade done, so the backoff and the connect are excluded) to the last `.subscribed` lifecycle event
///   with `isResubscription`, as the app's observer sees it on the default delivery queue; and the same
///   from the moment the session asks the transport to open (the backoff excluded, the TCP connect and the
///   upgrade included). The stamps come from a transport wrapper and `onChannelEvent`, both public API.
///
/// Options: the counts above, `--settle S` (idle seconds before the sessions' threads are counted again: 5),
/// `--channel-settle S` (seconds between the last channel's confirmation and reading the heap: 0.5, so that
/// the delivery batch and cancelled timers still in flight are not counted as resting cost),
/// `--only DIALECT`, `--quick` (small counts), `--json`.
enum ScaleBenchmark {
    static func run(arguments: [String]) async throws {
        switch arguments.first {
        case "server":
            try ScaleServer.run(arguments: Array(arguments.dropFirst()))
            return
        case "probe":
            try await ScaleProbe.run(arguments: Array(arguments.dropFirst()))
            return
        default:
            break
        }
        let options = try BenchOptions(arguments)
        let out = options.output
        out.machine("scale")
        Measure.unpinProcess()  // the probes and the server inherit it
        let channels = options.int("--channels", full: 10_000, quick: 200)
        let handlers = options.int("--handlers", full: 100_000, quick: 2_000)
        var sessions = options.int("--sessions", full: 10_000, quick: 50)
        let reconnectChannels = options.int("--reconnect-channels", full: 100, quick: 100)
        let drops = options.int("--drops", full: 10, quick: 2)
        let settle = options.double("--settle", full: 5, quick: 0.2)
        let channelSettle = options.double("--channel-settle", full: 0.5, quick: 0.1)

        let files = Measure.raiseFileLimit()
        if sessions + 256 > files {
            out.say("  the open-file limit is \(files) even raised: \(sessions) sessions cut to \(files - 256)")
            sessions = max(1, files - 256)
        }
        let server = try ChildProcess(arguments: ["scale", "server"], core: nil)
        defer { server.stop(grace: 2) }
        let port = try server.readPort()
        let serverFiles = try server.expectLine("FILES ").dropFirst(6)
        out.say("scale: against `scale server` (a child process: every dialect's server on the library's WebSocketServer); "
                + "each memory figure from a fresh child process (heap = glibc's bytes in use, RSS = /proc/self/statm)")
        out.say("  RLIMIT_NOFILE raised to its hard limit: \(files) in the probes, \(serverFiles) in the server "
                + "(\(sessions) sessions need a descriptor each on both sides)")

        let bare = try probe("connections", .socketIO, count: sessions, port: port)
        let (bareHeap, bareRSS) = perItem(bare)
        out.say("  bare connections (the sessions' baseline): \(Format.whole(bare["count"])) open; RSS \(Format.bytes(bareRSS)) each, "
                + "heap \(Format.bytes(bareHeap)) each; threads \(Format.whole(bare["threads"])) "
                + "(\(Format.whole(bare["threadsBefore"])) before)")
        out.figure("scale", "transport", "rss_bytes_per_connection", bareRSS)
        out.figure("scale", "transport", "heap_bytes_per_connection", bareHeap)
        out.figure("scale", "transport", "threads", bare["threads"])

        for dialect in options.dialects {
            let name = dialect.rawValue
            out.say("  \(name):")
            let channel = try probe("channels", dialect, count: channels, port: port,
                                    extra: ["--settle", String(channelSettle)])
            let perChannel = perItem(channel)
            out.say("    per channel (\(channels) confirmed on one session, read \(channelSettle) s after the last): "
                    + "heap \(Format.bytes(perChannel.heap)), RSS \(Format.bytes(perChannel.rss))")
            out.figure("scale", name, "heap_bytes_per_channel", perChannel.heap)
            out.figure("scale", name, "rss_bytes_per_channel", perChannel.rss)

            let handler = try probe("handlers", dialect, count: handlers, port: port)
            let perHandler = perItem(handler)
            let perDistinct = perItem(handler, suffix: "2")
            out.say("    per handler (\(handlers) on one event): heap \(Format.bytes(perHandler.heap)), RSS "
                    + "\(Format.bytes(perHandler.rss)); on \(handlers) distinct events: heap "
                    + "\(Format.bytes(perDistinct.heap)), RSS \(Format.bytes(perDistinct.rss))")
            out.figure("scale", name, "heap_bytes_per_handler", perHandler.heap)
            out.figure("scale", name, "rss_bytes_per_handler", perHandler.rss)
            out.figure("scale", name, "heap_bytes_per_handler_distinct_events", perDistinct.heap)
            out.figure("scale", name, "rss_bytes_per_handler_distinct_events", perDistinct.rss)

            let many = try probe("sessions", dialect, count: sessions, port: port, extra: ["--settle", String(settle)])
            let perSession = perItem(many)
            out.say(String(format: "    %@ sessions open in %.1f s: RSS %@ each (%@ a bare connection), heap %@ each (%@); "
                           + "threads %@ once all are up, %@ after %.1f s idle (%@ before)",
                           Format.whole(many["count"]), many["connectSeconds"] ?? .nan, Format.bytes(perSession.rss),
                           Format.ratio(perSession.rss / bareRSS), Format.bytes(perSession.heap),
                           Format.ratio(perSession.heap / bareHeap), Format.whole(many["threads"]),
                           Format.whole(many["threadsIdle"]), settle, Format.whole(many["threadsBefore"])))
            out.figure("scale", name, "rss_bytes_per_session", perSession.rss, baseline: "transport", baselineValue: bareRSS)
            out.figure("scale", name, "heap_bytes_per_session", perSession.heap, baseline: "transport", baselineValue: bareHeap)
            out.figure("scale", name, "threads", many["threads"], baseline: "transport", baselineValue: bare["threads"])
            out.figure("scale", name, "threads_idle", many["threadsIdle"], baseline: "transport", baselineValue: bare["threads"])
            out.figure("scale", name, "sessions_open", many["count"])

            let times = try await reconnect(dialect, channels: reconnectChannels, drops: drops, server: server, port: port)
            let fromOpen = times.map(\.fromOpen)
            let fromAttempt = times.map(\.fromAttempt)
            out.say(String(format: "    reconnect + re-subscribe %d channels after a drop (%d drops): open → last confirmed "
                           + "best %.2f ms, median %.2f ms; open asked → last confirmed best %.2f ms, median %.2f ms",
                           reconnectChannels, drops, fromOpen.min() ?? .nan, Measure.median(fromOpen),
                           fromAttempt.min() ?? .nan, Measure.median(fromAttempt)))
            out.figure("scale", name, "reconnect_resubscribe_ms", fromOpen.min())
            out.figure("scale", name, "reconnect_resubscribe_ms_median", Measure.median(fromOpen))
            out.figure("scale", name, "reconnect_resubscribe_from_attempt_ms", fromAttempt.min())
            out.figure("scale", name, "reconnect_resubscribe_from_attempt_ms_median", Measure.median(fromAttempt))
        }
    }

    /// Runs `scale probe` and returns its `RESULT` fields.
    static func probe(_ what: String, _ dialect: BenchDialect, count: Int, port: Int,
                      extra: [String] = []) throws -> [String: Double] {
        let child = try ChildProcess(arguments: ["scale", "probe", "--what", what, "--dialect", dialect.rawValue,
                                                 "--count", String(count), "--port", String(port)] + extra, core: nil)
        defer { child.stop(grace: 5) }
        let line = try child.expectLine("RESULT ", timeout: 900)
        var fields: [String: Double] = [:]
        for pair in line.dropFirst(7).split(separator: " ") {
            let parts = pair.split(separator: "=")
            if parts.count == 2 { fields[String(parts[0])] = Double(parts[1]) }
        }
        return fields
    }

    /// Heap and RSS deltas divided by the count; NaN (JSON null) for a figure the probe could not take.
    static func perItem(_ fields: [String: Double], suffix: String = "") -> (heap: Double, rss: Double) {
        let count = max(1, fields["count"] ?? 1)
        return ((fields["heap" + suffix] ?? .nan) / count, (fields["rss" + suffix] ?? .nan) / count)
    }

    // MARK: Reconnect

    /// Stamps when the session asks for a connection and when the transport reports it open.
    final class StampingTransport: RealtimeTransport {
        struct Stamps {
            var openAsked: UInt64 = 0
            var opened: UInt64 = 0
        }

        let inner = WebSocketTransport()
        let stamps = Locked(Stamps())

        func open(_ request: ConnectionRequest, handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
            stamps.withLock { $0.openAsked = Measure.nanoseconds() }
            let stamps = stamps
            return inner.open(request) { event in
                if case .opened = event { stamps.withLock { $0.opened = Measure.nanoseconds() } }
                handler(event)
            }
        }
    }

    /// What the lifecycle observer counts: every confirmation at first, then resubscriptions only.
    struct Watch {
        var countdown: Countdown
        var resubscriptionsOnly = false
        var lastConfirmed: UInt64 = 0
    }

    static func reconnect(_ dialect: BenchDialect, channels: Int, drops: Int, server: ChildProcess,
                          port: Int) async throws -> [(fromOpen: Double, fromAttempt: Double)] {
        let transport = StampingTransport()
        // A short fixed backoff keeps the run short; it is outside both measured spans anyway.
        let policy = ReconnectPolicy(initialDelay: .milliseconds(10), multiplier: 1, maximumDelay: .milliseconds(10),
                                     jitter: .none, stabilityWindow: .milliseconds(50))
        let session = RealtimeSession(dialect: dialect.dialect(port: port), transport: transport,
                                      options: SessionOptions(reconnectPolicy: policy))
        defer { session.disconnect() }
        let watch = Locked(Watch(countdown: Countdown(channels)))
        session.onChannelEvent { event in
            guard case .subscribed(let info) = event.kind else { return }
            let now = Measure.nanoseconds()
            let countdown = watch.withLock { watch -> Countdown? in
                guard info.isResubscription || !watch.resubscriptionsOnly else { return nil }
                watch.lastConfirmed = now
                return watch.countdown
            }
            _ = countdown?.tick()
        }
        try await session.connect()
        for index in 0..<channels { session.channel(dialect.channel(index)) }
        guard watch.withLock({ $0.countdown }).wait(seconds: 60) else {
            throw BenchmarkFailure("\(dialect.rawValue): the first \(channels) channels were not confirmed")
        }
        var times: [(fromOpen: Double, fromAttempt: Double)] = []
        for _ in 0..<drops {
            try await Task.sleep(for: .milliseconds(100))  // past the stability window: a healthy connection drops
            let countdown = Countdown(channels)
            watch.withLock {
                $0.countdown = countdown
                $0.resubscriptionsOnly = true
            }
            server.writeLine("drop")
            _ = try server.expectLine("DROPPED", timeout: 30)
            guard countdown.wait(seconds: 60) else {
                throw BenchmarkFailure("\(dialect.rawValue): \(countdown.count) of \(channels) channels re-confirmed after a drop")
            }
            let stamps = transport.stamps.withLock { $0 }
            let last = watch.withLock { $0.lastConfirmed }
            times.append((Double(last &- stamps.opened) / 1e6, Double(last &- stamps.openAsked) / 1e6))
        }
        return times
    }
}
