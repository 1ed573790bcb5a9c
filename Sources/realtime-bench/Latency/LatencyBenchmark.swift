import Foundation
import Realtime

/// `realtime-bench latency`: paced traffic, as a live app sees it. The blaster (`dialects blaster --rate`)
/// writes one event per write at a fixed rate, each stamped with CLOCK_MONOTONIC just before it is built
/// and written; the handler subtracts the stamp from the same clock when it runs. Reported per dialect and
/// delivery target: p50 / p99 / p99.9 / max of that delay over every event of the run, and the client's CPU
/// per event (getrusage of this process over the run, idle wake-ups included, divided by the events), and,
/// on glibc, the process's heap allocations per event over the run (the handler reads each event's stamp,
/// so each payload is parsed).
/// Beside each, in the same run at the same rate, the transport alone (a `WebSocketTransport` reading the
/// stamp in its receive callback) and the machine's floor (`KernelFloor`: a bare `epoll_wait` + `recv`
/// loop, alone and handing each read to a second thread). Nothing is pinned: the client's threads go where the scheduler puts
/// them, as an app's would.
///
/// Delivery targets: `default` (the transport's delivery thread), `inline` (the event loop's thread),
/// `main` (the main queue; this program's main thread is parked in Dispatch's main loop while suites run),
/// `coalesced`: the default delivery on a transport whose loop coalesces reads within a window, 250 µs
/// unless `--window` says otherwise (`WebSocketTransport.Configuration.readCoalescing`), and `busy`: the
/// default delivery while the app keeps every core busy with Swift tasks (one CPU-bound detached task per
/// core, spinning for the whole row; their CPU is left out of the row's).
///
/// Options: `--rates 1000,10000`, `--seconds S` (5; 0.3 with `--quick`), `--delivery default,inline,main,coalesced,busy`,
/// `--window MICROSECONDS` (the coalesced rows' window), `--group-threads N` (the transport-alone row and every
/// session row but the coalesced ones share one `EventLoopGroup` of N loops, as an app that shares a group
/// among its connections; by default each row has a transport of its own), `--only DIALECT`, `--quick`, `--json`.
enum LatencyBenchmark {
    enum Target: String, CaseIterable {
        case standard = "default"
        case inline
        case main
        case coalesced
        case busy

        var delivery: DeliveryTarget? {
            switch self {
            case .standard, .coalesced, .busy: nil
            case .inline: .inline
            case .main: .main
            }
        }

        static let defaultCoalescingWindowMicroseconds = 250

        /// A transport of the row's own, or one on the shared `group` (a group fixes its coalescing window, so
        /// the coalesced rows keep their own).
        func transport(coalescingWindow: Duration, group: EventLoopGroup?) -> WebSocketTransport {
            if let group, self != .coalesced { return WebSocketTransport(group: group) }
            return WebSocketTransport(configuration: .init(readCoalescing: self == .coalesced ? coalescingWindow : nil))
        }
    }

    struct Run {
        /// Write-to-handler delays in nanoseconds, sorted.
        var delays: [UInt64]
        var cpuSecondsPerEvent: Double
        /// Heap allocations of the process per event over the row; nil where nothing is counted.
        var allocationsPerEvent: Double?

        /// A row of `events` that cost `cost` (``LatencyBenchmark/paced(blaster:seconds:label:wait:)``), less
        /// `excludedCPU` seconds that were not the client's.
        init(delays: [UInt64], cost: (seconds: Double, allocations: Int?), events: Int, excludedCPU: Double = 0) {
            self.delays = delays.sorted()
            cpuSecondsPerEvent = max(0, cost.seconds - excludedCPU) / Double(events)
            allocationsPerEvent = cost.allocations.map { Double($0) / Double(events) }
        }

        func figure(_ metric: String) -> Double {
            switch metric {
            case "allocations_per_event": allocationsPerEvent ?? .nan  // printed as null
            case "p50_us": Double(Measure.percentile(delays, 0.5)) / 1e3
            case "p99_us": Double(Measure.percentile(delays, 0.99)) / 1e3
            case "p999_us": Double(Measure.percentile(delays, 0.999)) / 1e3
            case "max_us": Double(delays.last ?? 0) / 1e3
            default: cpuSecondsPerEvent * 1e6
            }
        }

        var summary: String {
            String(format: "p50 %.0f µs, p99 %.0f µs, p99.9 %.0f µs, max %.0f µs; CPU %.1f µs/event",
                   figure("p50_us"), figure("p99_us"), figure("p999_us"), figure("max_us"), figure("cpu"))
                + (allocationsPerEvent.map { String(format: "; %.1f allocations/event", $0) } ?? "")
        }

        /// The metrics this run has figures for.
        var metrics: [String] {
            LatencyBenchmark.metrics + (allocationsPerEvent == nil ? [] : ["allocations_per_event"])
        }
    }

    static let metrics = ["p50_us", "p99_us", "p999_us", "max_us", "cpu_us_per_event"]

    static func run(arguments: [String]) async throws {
        let options = try BenchOptions(arguments)
        let out = options.output
        out.machine("latency")
        Measure.unpinProcess()
        let rates = (BenchOptions.string("--rates", in: arguments) ?? "1000,10000").split(separator: ",").compactMap { Double($0) }
        let seconds = options.double("--seconds", full: 5, quick: 0.3)
        let targets = try (BenchOptions.string("--delivery", in: arguments)?.split(separator: ",").map { name in
            guard let target = Target(rawValue: String(name)) else {
                throw BenchmarkFailure("--delivery takes default, inline, main, coalesced, busy, not \(name)")
            }
            return target
        }) ?? Target.allCases
        var windowMicroseconds = Target.defaultCoalescingWindowMicroseconds
        if let text = BenchOptions.string("--window", in: arguments) {
            guard let value = Int(text), value > 0 else {
                throw BenchmarkFailure("--window takes a positive number of microseconds, not \(text)")
            }
            windowMicroseconds = value
        }
        let window = Duration.microseconds(windowMicroseconds)
        var group: EventLoopGroup?
        if let text = BenchOptions.string("--group-threads", in: arguments) {
            guard let count = Int(text), (1...64).contains(count) else {
                throw BenchmarkFailure("--group-threads takes 1 to 64, not \(text)")
            }
            group = try EventLoopGroup(threadCount: count)
            out.say("latency: the transport-alone and session rows (but the coalesced ones) share one group of \(count) loops")
        }
        defer { group?.shutdown() }
        out.figure("latency", "coalesced", "window_us", Double(windowMicroseconds))
        out.say("latency: paced events of ~150 B, one per write, \(seconds) s per row; delay = CLOCK_MONOTONIC at the "
                + "handler minus the stamp the blaster took before writing; CPU = this process's getrusage over the "
                + "row / events; nothing pinned")
        for rate in rates {
            let events = max(1, Int(rate * seconds))
            let floor = try KernelFloor.run(rate: rate, seconds: seconds, events: events, handoff: false)
            let handoff = try KernelFloor.run(rate: rate, seconds: seconds, events: events, handoff: true)
            let transport = try transportRun(rate: rate, seconds: seconds, events: events, group: group)
            out.say(String(format: "  %.0f events/s (%d events per row)", rate, events))
            out.say("    floor: bare loop     " + floor.summary)
            out.say("    floor + handoff      " + handoff.summary)
            out.say("    transport alone      " + transport.summary)
            for metric in floor.metrics {
                out.figure("latency", "floor@\(Int(rate))", metric, floor.figure(metric))
                out.figure("latency", "floor-handoff@\(Int(rate))", metric, handoff.figure(metric),
                           baseline: "floor", baselineValue: floor.figure(metric))
                out.figure("latency", "transport@\(Int(rate))", metric, transport.figure(metric),
                           baseline: "floor", baselineValue: floor.figure(metric))
            }
            for dialect in options.dialects {
                for target in targets {
                    let run = try await sessionRun(dialect, target: target, window: window, group: group, rate: rate,
                                                   seconds: seconds, events: events)
                    out.say("    \((dialect.rawValue + " " + target.rawValue).padding(toLength: 22, withPad: " ", startingAt: 0))"
                            + run.summary)
                    for metric in run.metrics {
                        out.figure("latency", "\(dialect.rawValue)/\(target.rawValue)@\(Int(rate))", metric, run.figure(metric),
                                   baseline: "transport", baselineValue: transport.figure(metric))
                    }
                }
            }
        }
    }

    static func blaster(_ dialect: BenchDialect, rate: Double, seconds: Double, raw: Bool) throws -> ChildProcess {
        try ChildProcess(arguments: ["dialects", "blaster", "--dialect", dialect.rawValue, "--rate", String(rate),
                                     "--seconds", String(seconds)] + (raw ? ["--raw"] : []), core: nil)
    }

    static func sessionRun(_ dialect: BenchDialect, target: Target, window: Duration, group: EventLoopGroup?,
                           rate: Double, seconds: Double, events: Int) async throws -> Run {
        let blaster = try blaster(dialect, rate: rate, seconds: seconds, raw: false)
        defer { blaster.stop(grace: 2) }
        let port = try blaster.readPort()
        let session = RealtimeSession(dialect: dialect.dialect(port: port),
                                      transport: target.transport(coalescingWindow: window, group: group),
                                      options: SessionOptions(delivery: target.delivery))
        defer { session.disconnect() }
        let delays = Locked<[UInt64]>([])
        delays.withLock { $0.reserveCapacity(events) }
        let handled = Countdown(events)
        let channel = session.channel(dialect.channel)
        channel.on(dialect.eventName) { event in
            let now = Measure.nanoseconds()
            if let stamp = event.data["t"]?.integerValue {
                delays.withLock { $0.append(now &- UInt64(stamp)) }
            }
            _ = handled.tick()
        }
        try await session.connect()
        _ = try await channel.subscribed()
        _ = try blaster.expectLine("READY")
        let busy = target == .busy ? BusyTasks(count: ProcessInfo.processInfo.activeProcessorCount) : nil
        let cpu: (seconds: Double, allocations: Int?)
        do {
            cpu = try paced(blaster: blaster, seconds: seconds, label: "\(dialect.rawValue) \(target.rawValue)") {
                handled.wait(seconds: $0) ? nil : "\(handled.count) of \(events) events handled"
            }
        } catch {
            _ = busy?.stop()
            throw error
        }
        let busyCPU = busy?.stop() ?? 0
        return Run(delays: delays.withLock { $0 }, cost: cpu, events: events, excludedCPU: busyCPU)
    }

    /// The transport alone on Socket.IO's frames, the stamp read from the text in the receive callback.
    static func transportRun(rate: Double, seconds: Double, events: Int, group: EventLoopGroup?) throws -> Run {
        let blaster = try blaster(.socketIO, rate: rate, seconds: seconds, raw: true)
        defer { blaster.stop(grace: 2) }
        let port = try blaster.readPort()
        let delays = Locked<[UInt64]>([])
        delays.withLock { $0.reserveCapacity(events) }
        let received = Countdown(events)
        let opened = DispatchSemaphore(value: 0)
        let transport = group.map { WebSocketTransport(group: $0) } ?? WebSocketTransport()
        let connection = transport.open(BenchDialect.socketIO.rawRequest(port: port)) { event in
            switch event {
            case .opened, .closed:
                opened.signal()
            case .received(let frames):
                let now = Measure.nanoseconds()
                delays.withLock { delays in
                    for case .text(let text) in frames {
                        if let stamp = stamp(in: text) { delays.append(now &- stamp) }
                    }
                }
                received.add(frames.count)
            }
        }
        defer { connection.close(code: 1000, reason: "") }
        guard opened.wait(timeout: .now() + 30) == .success else { throw BenchmarkFailure("transport: not opened") }
        _ = try blaster.expectLine("READY")
        let cpu = try paced(blaster: blaster, seconds: seconds, label: "transport") {
            received.wait(seconds: $0) ? nil : "\(received.count) of \(events) frames received"
        }
        return Run(delays: delays.withLock { $0 }, cost: cpu, events: events)
    }

    /// This process's CPU seconds and heap allocations from `GO` until `wait` sees the last event. The count
    /// (an atomic add per allocation, every thread) runs during the row: a few nanoseconds per allocation
    /// against microseconds per event.
    static func paced(blaster: ChildProcess, seconds: Double, label: String,
                      wait: (Double) -> String?) throws -> (seconds: Double, allocations: Int?) {
        let counting = Measure.countAllocations(true)
        defer { Measure.countAllocations(false) }
        let allocations = Measure.allocations()
        let cpu = Measure.cpuSeconds()
        blaster.writeLine("GO")
        if let failure = wait(seconds + 60) { throw BenchmarkFailure("\(label): \(failure)") }
        let spent = Measure.cpuSeconds() - cpu
        guard counting, let allocations, let after = Measure.allocations() else { return (spent, nil) }
        return (spent, after - allocations)
    }

    /// The digits after `"t":` in a frame's text.
    static func stamp(in text: String) -> UInt64? {
        var utf8 = Array(text.utf8.prefix(64))[...]
        let key = Array(#""t":"#.utf8)
        while utf8.count > key.count {
            if utf8.starts(with: key) {
                var value: UInt64 = 0
                for byte in utf8.dropFirst(key.count) {
                    guard byte >= 48 && byte <= 57 else { break }
                    value = value * 10 + UInt64(byte - 48)
                }
                return value
            }
            utf8 = utf8.dropFirst()
        }
        return nil
    }
}

/// CPU-bound Swift tasks of the app, one per core, spinning until ``stop()``: the app's own work occupying
/// the cooperative pool (and, on Linux, Dispatch's default pool that shares its threads' budget).
final class BusyTasks: Sendable {
    private struct Tally {
        var started = 0
        var ended = 0
        var seconds = 0.0
    }

    private let stopped = Locked(false)
    private let tally = Locked(Tally())

    init(count: Int) {
        for _ in 0..<count {
            Task.detached { [stopped, tally] in
                tally.withLock { $0.started += 1 }
                let start = Self.threadCPUSeconds()
                var state: UInt64 = 1
                while !stopped.withLock({ $0 }) {
                    for _ in 0..<10_000 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
                }
                let seconds = Self.threadCPUSeconds() - start + (state == 0 ? 1 : 0)  // keeps the loop
                tally.withLock { $0.seconds += seconds; $0.ended += 1 }
            }
        }
    }

    /// Stops the tasks and returns the CPU seconds they spent, once those that started have ended (one that
    /// had not started yet ends as it starts; waiting for it could wait for the thread this call holds).
    func stop() -> Double {
        stopped.withLock { $0 = true }
        while tally.withLock({ $0.ended < $0.started }) { usleep(1_000) }
        return tally.withLock { $0.seconds }
    }

    /// CPU seconds of the calling thread; each task runs on one thread, never suspending, from start to end.
    private static func threadCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
