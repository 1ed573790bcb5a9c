import Foundation
import Realtime

/// `realtime-bench dialects`: each dialect's whole receive path, from a loopback socket to one counting
/// handler, in events per client CPU-second and per wall second, beside (in the same run, interleaved) the
/// Python client of the protocol and the transport alone on the same frames.
///
/// A blaster child (`dialects blaster`, on core 1) speaks the dialect's handshake and confirms one
/// subscription, then writes `--events` pre-encoded ~150-byte events in big writes. The blaster is a child
/// rather than a thread so that getrusage(RUSAGE_SELF) of this process, between `GO` and the last handler
/// call, is the client's CPU alone, every thread of it (event loop, delivery queue); the client is pinned
/// to core 0. A Python client runs as a child on core 0, as its library ships, with the same one counting
/// handler; its CPU over the same span comes from /proc/<pid>/stat (interpreter start-up excluded, all its
/// threads included). The transport alone is a `WebSocketTransport` counting the same frames (`--raw`
/// blaster: no dialect handshake). Nothing is pinned on a one-core machine. `--unpinned` leaves the clients
/// free to run on every core, as an app's threads are: its loop and delivery threads then hand events across
/// cores, and share core 1 with the blaster at times. The session runs three times per
/// round: with a handler that only counts (payloads that nobody reads are never parsed), with one that reads
/// `data`, which parses every payload as the Python clients do, and with a `for await` loop over
/// `channel.events(_:)` that reads `data`. After the rounds, one more pass of each (100,000 events at most)
/// counts the process's heap allocations per event (`CBenchAllocationCounter`, glibc only), with the count
/// off in the timed rounds.
///
/// Options: `--events N` (1,000,000), `--rounds N` (5), `--python-events N` (as `--events`), `--python-rounds N`
/// (3), `--skip-python`, `--unpinned`, `--only DIALECT`, `--python PATH`, `--fixtures DIR`, `--quick`, `--json`.
enum DialectsBenchmark {
    struct Series {
        var session: [TransportBenchmark.Throughput] = []
        /// The same session whose handler reads each event's `data`, so that it is parsed, as the Python
        /// clients parse theirs.
        var reading: [TransportBenchmark.Throughput] = []
        /// The same reading done in a task iterating `channel.events(_:)`.
        var streaming: [TransportBenchmark.Throughput] = []
        var transport: [TransportBenchmark.Throughput] = []
        var python: [TransportBenchmark.Throughput] = []
        /// Heap allocations per event from the counting pass: handler counting, handler reading, an
        /// `events()` loop reading, the transport alone.
        var allocations: (counting: Double?, reading: Double?, streaming: Double?, transport: Double?)
    }

    /// The blaster's core; nil (not pinned) on a one-core machine.
    static let blasterCore: Int? = sysconf(Int32(_SC_NPROCESSORS_ONLN)) >= 2 ? 1 : nil

    static func run(arguments: [String]) async throws {
        if arguments.first == "blaster" {
            try DialectBlaster.run(arguments: Array(arguments.dropFirst()))
            return
        }
        let options = try BenchOptions(arguments)
        let out = options.output
        out.machine("dialects")
        let events = options.int("--events", full: 1_000_000, quick: 20_000)
        let rounds = options.int("--rounds", full: 5, quick: 2)
        let pythonEvents = options.int("--python-events", full: events, quick: 5_000)
        let pythonRounds = min(rounds, options.int("--python-rounds", full: 3, quick: 1))
        // The clients' core: nil when nothing is pinned or with `--unpinned`.
        let clientCore: Int? = blasterCore == nil || arguments.contains("--unpinned") ? nil : 0
        let pinned = clientCore.map { Measure.pinProcess(toCore: $0) } ?? false

        var plans: [BenchDialect: PythonBaseline.Plan] = [:]
        var python: PythonBaseline?
        if arguments.contains("--skip-python") {
            for dialect in options.dialects { plans[dialect] = .skipped(name: "python", reason: "--skip-python") }
        } else {
            switch PythonBaseline.locate(arguments: arguments) {
            case .success(let found):
                python = found
                for dialect in options.dialects { plans[dialect] = found.plan(dialect) }
            case .failure(let failure):
                for dialect in options.dialects { plans[dialect] = .skipped(name: "python", reason: failure.description) }
            }
        }

        out.say("dialects: \(events) events of ~150 B per round over loopback to one session with one channel and one "
                + "counting handler; \(rounds) interleaved rounds (Python: \(pythonEvents) events, \(pythonRounds) rounds)")
        out.say("  blaster: a child " + (blasterCore == nil ? "" : "on core 1 ") + "writing pre-encoded frames 1,000 per write; "
                + (pinned ? "clients pinned to core 0" : "clients not pinned") + "; client CPU = getrusage of this process "
                + "(the blaster is not in it), Python CPU = /proc/<pid>/stat of its process")
        out.figure("dialects", "clients", "pinned", pinned ? 1 : 0)
        if let python { out.say("  python: \(python.python) (\(python.versions))") }
        for dialect in options.dialects {
            switch plans[dialect]! {
            case .run(let name, _, _, let note?): out.say("  \(dialect.rawValue): \(note) (baseline: \(name))")
            case .skipped(let name, let reason): out.say("  \(dialect.rawValue): Python baseline (\(name)) skipped: \(reason)")
            case .run: break
            }
        }

        var series: [BenchDialect: Series] = [:]
        for round in 0..<rounds {
            for dialect in options.dialects {
                if let clientCore { Measure.pinProcess(toCore: clientCore) }  // threads started since the last round
                series[dialect, default: Series()].session.append(try await sessionRound(dialect, events: events))
                series[dialect]!.reading.append(try await sessionRound(dialect, events: events, consumer: .readingHandler))
                series[dialect]!.streaming.append(try await sessionRound(dialect, events: events, consumer: .readingStream))
                series[dialect]!.transport.append(try transportRound(dialect, events: events))
                var progress = "  round \(round + 1)/\(rounds) \(dialect.rawValue): session "
                    + Format.rate(series[dialect]!.session.last!.perCPUSecond) + "/CPU-s, reading payloads "
                    + Format.rate(series[dialect]!.reading.last!.perCPUSecond) + "/CPU-s, in an events() loop "
                    + Format.rate(series[dialect]!.streaming.last!.perCPUSecond) + "/CPU-s, transport "
                    + Format.rate(series[dialect]!.transport.last!.perCPUSecond) + "/CPU-s"
                if round < pythonRounds, case .run(let name, let script, let extra, _) = plans[dialect]!, let python {
                    do {
                        let result = try pythonRound(dialect, python: python.python, script: script, core: clientCore,
                                                     arguments: extra, events: pythonEvents)
                        series[dialect]!.python.append(result)
                        progress += ", \(name) " + Format.rate(result.perCPUSecond) + "/CPU-s"
                    } catch {
                        plans[dialect] = .skipped(name: name, reason: "failed: \(error)")
                        out.say("  \(dialect.rawValue): \(name) failed, no Python baseline from here on: \(error)")
                    }
                }
                out.say(progress)
            }
        }
        // Allocations are counted in one more, shorter pass of each, so that no timed round pays for the count.
        if Measure.countAllocations(true) {
            let counted = min(events, 100_000)
            for dialect in options.dialects {
                series[dialect, default: Series()].allocations = (
                    try await sessionRound(dialect, events: counted).allocationsPerMessage,
                    try await sessionRound(dialect, events: counted, consumer: .readingHandler).allocationsPerMessage,
                    try await sessionRound(dialect, events: counted, consumer: .readingStream).allocationsPerMessage,
                    try transportRound(dialect, events: counted).allocationsPerMessage)
            }
            Measure.countAllocations(false)
        }
        for dialect in options.dialects {
            report(dialect, series[dialect] ?? Series(), plan: plans[dialect]!, out: out)
        }
    }

    static func report(_ dialect: BenchDialect, _ series: Series, plan: PythonBaseline.Plan, out: BenchOutput) {
        typealias Rounds = [TransportBenchmark.Throughput]
        func best(_ rounds: Rounds, _ figure: (TransportBenchmark.Throughput) -> Double) -> Double {
            rounds.map(figure).max() ?? .nan
        }
        func median(_ rounds: Rounds, _ figure: (TransportBenchmark.Throughput) -> Double) -> Double {
            rounds.isEmpty ? .nan : Measure.median(rounds.map(figure))
        }
        func line(_ label: String, _ rounds: Rounds) -> String {
            "    \(label): best \(Format.rate(best(rounds, \.perCPUSecond)))/CPU-s, \(Format.rate(best(rounds, \.perSecond)))/s wall; "
                + "median \(Format.rate(median(rounds, \.perCPUSecond)))/CPU-s, \(Format.rate(median(rounds, \.perSecond)))/s wall "
                + "(rounds, k/CPU-s: " + rounds.map { String(format: "%.0f", $0.perCPUSecond / 1e3) }.joined(separator: " ") + ")"
        }
        out.say("  \(dialect.rawValue):")
        out.say(line("session  ", series.session))
        out.say(line("session, handler reads the payload", series.reading))
        out.say(line("session, an events() loop reads the payload", series.streaming))
        out.say(line("transport", series.transport))
        var note: String?
        switch plan {
        case .run(let name, _, _, let reason):
            out.say(line(name, series.python))
            note = reason
        case .skipped(let name, let reason):
            out.say("    \(name): skipped: \(reason)")
            note = "skipped: " + reason
        }
        let sessionBest = best(series.session, \.perCPUSecond)
        let sessionMedian = median(series.session, \.perCPUSecond)
        let pythonBest = best(series.python, \.perCPUSecond)
        let pythonMedian = median(series.python, \.perCPUSecond)
        out.say("    session / \(plan.name), per CPU-second: \(Format.ratio(sessionBest / pythonBest)) best, "
                + "\(Format.ratio(sessionMedian / pythonMedian)) median; reading payloads: "
                + "\(Format.ratio(best(series.reading, \.perCPUSecond) / pythonBest)) best, "
                + "\(Format.ratio(median(series.reading, \.perCPUSecond) / pythonMedian)) median; transport / session: "
                + "\(Format.ratio(best(series.transport, \.perCPUSecond) / sessionBest)) best, "
                + "\(Format.ratio(median(series.transport, \.perCPUSecond) / sessionMedian)) median "
                + String(format: "(the session adds %.2f µs per event over the transport, medians)",
                         (1 / sessionMedian - 1 / median(series.transport, \.perCPUSecond)) * 1e6))

        let allocations = series.allocations
        if let counting = allocations.counting {
            func count(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "–" }
            out.say("    heap allocations per event (one counting pass): handler counting \(count(counting)), "
                    + "handler reading \(count(allocations.reading)), an events() loop reading "
                    + "\(count(allocations.streaming)); the transport alone \(count(allocations.transport))")
            out.figure("dialects", dialect.rawValue, "allocations_per_event", counting,
                       baseline: "transport", baselineValue: allocations.transport)
            out.figure("dialects", dialect.rawValue, "allocations_per_event_reading", allocations.reading,
                       baseline: "transport", baselineValue: allocations.transport)
            out.figure("dialects", dialect.rawValue, "allocations_per_event_stream", allocations.streaming,
                       baseline: "transport", baselineValue: allocations.transport)
        }

        let metrics: [(String, (TransportBenchmark.Throughput) -> Double, Bool)] = [
            ("events_per_cpu_s", { $0.perCPUSecond }, false), ("events_per_cpu_s_median", { $0.perCPUSecond }, true),
            ("events_per_wall_s", { $0.perSecond }, false), ("events_per_wall_s_median", { $0.perSecond }, true),
        ]
        let readingMetrics = ["events_per_cpu_s_reading", "events_per_cpu_s_reading_median",
                              "events_per_wall_s_reading", "events_per_wall_s_reading_median"]
        for ((_, figure, isMedian), reading) in zip(metrics, readingMetrics) {
            let pick: (Rounds) -> Double = { isMedian ? median($0, figure) : best($0, figure) }
            out.figure("dialects", dialect.rawValue, reading.replacingOccurrences(of: "_reading", with: "_stream"),
                       pick(series.streaming), baseline: plan.name, baselineValue: pick(series.python), note: note)
        }
        for ((metric, figure, isMedian), reading) in zip(metrics, readingMetrics) {
            let pick: (Rounds) -> Double = { isMedian ? median($0, figure) : best($0, figure) }
            out.figure("dialects", dialect.rawValue, metric, pick(series.session),
                       baseline: plan.name, baselineValue: pick(series.python), note: note)
            out.figure("dialects", dialect.rawValue, metric, pick(series.session),
                       baseline: "transport", baselineValue: pick(series.transport))
            out.figure("dialects", dialect.rawValue, reading, pick(series.reading),
                       baseline: plan.name, baselineValue: pick(series.python), note: note)
        }
    }

    // MARK: Rounds

    /// A `RealtimeSession` as an app makes it (its own one-thread event loop, the default delivery queue).
    /// What takes the session's events in a round.
    enum Consumer {
        /// A handler that only counts.
        case countingHandler
        /// A handler that reads each event's `data`.
        case readingHandler
        /// A `for await` loop over `channel.events(_:)` that reads each event's `data`.
        case readingStream
    }

    static func sessionRound(_ dialect: BenchDialect, events: Int,
                             consumer kind: Consumer = .countingHandler) async throws -> TransportBenchmark.Throughput {
        let blaster = try ChildProcess(arguments: ["dialects", "blaster", "--dialect", dialect.rawValue,
                                                   "--count", String(events)], core: blasterCore)
        defer { blaster.stop(grace: 2) }
        let port = try blaster.readPort()
        let session = RealtimeSession(dialect: dialect.dialect(port: port))
        defer { session.disconnect() }
        let handled = Countdown(events)
        let channel = session.channel(dialect.channel)
        var loop: Task<Void, Never>?
        defer { loop?.cancel() }
        switch kind {
        case .countingHandler:
            channel.on(dialect.eventName) { _ in _ = handled.tick() }
        case .readingHandler:
            channel.on(dialect.eventName) { event in
                if event.data != .null { _ = handled.tick() }  // every blasted event's payload is an object
            }
        case .readingStream:
            let stream = channel.events(dialect.eventName)
            loop = Task.detached {
                for await event in stream where event.data != .null { _ = handled.tick() }
            }
        }
        try await session.connect()
        _ = try await channel.subscribed()
        _ = try blaster.expectLine("READY")
        return try timed(events: events, blaster: blaster, label: "\(dialect.rawValue) session") {
            handled.wait(seconds: $0) ? nil : "\(handled.count) of \(events) events handled"
        }
    }

    /// The transport alone: a `WebSocketTransport` counting the frames of the same blaster, without the
    /// dialect's handshake.
    static func transportRound(_ dialect: BenchDialect, events: Int) throws -> TransportBenchmark.Throughput {
        let blaster = try ChildProcess(arguments: ["dialects", "blaster", "--dialect", dialect.rawValue,
                                                   "--count", String(events), "--raw"], core: blasterCore)
        defer { blaster.stop(grace: 2) }
        let port = try blaster.readPort()
        let received = Countdown(events)
        let opened = DispatchSemaphore(value: 0)
        let connection = WebSocketTransport().open(dialect.rawRequest(port: port)) { event in
            switch event {
            case .opened: opened.signal()
            case .received(let frames): received.add(frames.count)
            case .closed: opened.signal()
            }
        }
        defer { connection.close(code: 1000, reason: "") }
        guard opened.wait(timeout: .now() + 30) == .success else { throw BenchmarkFailure("transport: not opened") }
        _ = try blaster.expectLine("READY")
        return try timed(events: events, blaster: blaster, label: "\(dialect.rawValue) transport") {
            received.wait(seconds: $0) ? nil : "\(received.count) of \(events) frames received"
        }
    }

    /// Client CPU and wall time from `GO` until `wait` sees the last event (it returns what went wrong, or nil).
    static func timed(events: Int, blaster: ChildProcess, label: String,
                      wait: (Double) -> String?) throws -> TransportBenchmark.Throughput {
        let allocationsBefore = Measure.allocations()
        let cpu = Measure.cpuSeconds()
        let start = Measure.nanoseconds()
        blaster.writeLine("GO")
        if let failure = wait(max(120, Double(events) / 5_000)) { throw BenchmarkFailure("\(label): \(failure)") }
        let seconds = Double(Measure.nanoseconds() - start) / 1e9
        let cpuSeconds = Measure.cpuSeconds() - cpu
        let allocationsAfter = Measure.allocations()
        return TransportBenchmark.Throughput(messages: events, seconds: seconds, cpuSeconds: cpuSeconds,
                                             allocations: allocationsBefore.flatMap { before in allocationsAfter.map { $0 - before } })
    }

    /// A Python client as a child on `core` (the clients' core): it prints `READY` once subscribed and `DONE n`
    /// after `n` events, then leaves when its stdin closes.
    static func pythonRound(_ dialect: BenchDialect, python: String, script: String, core: Int?, arguments: [String],
                            events: Int) throws -> TransportBenchmark.Throughput {
        let blaster = try ChildProcess(arguments: ["dialects", "blaster", "--dialect", dialect.rawValue,
                                                   "--count", String(events)], core: blasterCore)
        defer { blaster.stop(grace: 2) }
        let port = try blaster.readPort()
        let client = try ChildProcess(arguments: [script, "--port", String(port), "--count", String(events)] + arguments,
                                      core: core, executable: python)
        defer { client.stop(grace: 5) }
        _ = try client.expectLine("READY", timeout: 60)
        _ = try blaster.expectLine("READY")
        guard let cpu = Measure.cpuSeconds(ofProcess: client.pid) else { throw BenchmarkFailure("python: no /proc entry") }
        let start = Measure.nanoseconds()
        blaster.writeLine("GO")
        _ = try client.expectLine("DONE", timeout: max(300, Double(events) / 1_000))
        let seconds = Double(Measure.nanoseconds() - start) / 1e9
        guard let cpuAfter = Measure.cpuSeconds(ofProcess: client.pid) else { throw BenchmarkFailure("python: exited early") }
        return TransportBenchmark.Throughput(messages: events, seconds: seconds, cpuSeconds: cpuAfter - cpu)
    }
}
