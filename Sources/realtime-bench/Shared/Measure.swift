import CBenchAllocationCounter
import Foundation
import RealtimeCore
#if canImport(Glibc)
import Glibc
#endif

/// Clocks, CPU, memory and thread counts of this process and its children, for the dialects, latency and
/// scale suites (Linux: /proc and glibc).
enum Measure {
    /// CLOCK_MONOTONIC in nanoseconds: the same clock in every process of the machine, so a stamp written
    /// by the blaster can be subtracted in the client.
    static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Sleeps until `deadline` (CLOCK_MONOTONIC nanoseconds); returns at once when it has passed.
    static func sleep(until deadline: UInt64) {
        var due = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nil) == EINTR {}
    }

    /// User plus system CPU of this process, every thread, children excluded.
    static func cpuSeconds() -> Double { TransportBenchmark.cpuSeconds() }

    /// Starts or stops counting this process's heap allocations, every thread (`CBenchAllocationCounter`);
    /// false where nothing can be counted (off glibc, or under a sanitizer). Off by default, so that no
    /// timed round pays for the count.
    @discardableResult
    static func countAllocations(_ on: Bool) -> Bool { realtime_bench_count_allocations(on ? 1 : 0) != 0 }

    /// Heap allocations counted so far; nil while counting is off, or where nothing is counted.
    static func allocations() -> Int? {
        let count = realtime_bench_allocations()
        return count < 0 ? nil : count
    }

    /// User plus system CPU of a running child, every thread, from /proc (10 ms ticks); nil once it is gone.
    static func cpuSeconds(ofProcess pid: pid_t) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name start at field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Resident set size of this process in bytes (/proc/self/statm).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * sysconf(Int32(_SC_PAGESIZE)) : 0
    }

    static func threads() -> Int { TransportBenchmark.processStatus("Threads") }

    /// Bytes malloc has handed out and not taken back, every arena and mmapped chunk included: glibc's own
    /// count ("in use bytes" of `malloc_stats`, what `mallinfo2` sums). Swift's Glibc module exports neither
    /// function and `mallinfo2` returns a struct by value, so `malloc_stats` is looked up and its report to
    /// stderr is read back from a temporary file. nil where glibc's malloc is not there.
    static func heapBytesInUse() -> Int? {
        typealias MallocStats = @convention(c) () -> Void
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_stats"), let file = tmpfile() else {
            return nil
        }
        defer { fclose(file) }
        fflush(nil)
        let saved = dup(2)
        guard saved >= 0, dup2(fileno(file), 2) >= 0 else { return nil }
        unsafeBitCast(symbol, to: MallocStats.self)()
        fflush(nil)
        dup2(saved, 2)
        Glibc.close(saved)
        lseek(fileno(file), 0, SEEK_SET)
        var report: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fileno(file), &chunk, chunk.count)
            if count <= 0 { break }
            report += chunk[..<count]
        }
        // "Total (incl. mmap):\nsystem bytes     = N\nin use bytes     = M\n" closes the report.
        let text = String(decoding: report, as: UTF8.self)
        guard let total = text.range(of: "Total (incl. mmap):") else { return nil }
        for line in text[total.upperBound...].split(separator: "\n") where line.hasPrefix("in use bytes") {
            return line.split(separator: "=").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        }
        return nil
    }

    /// Restricts every thread this process has now, and the threads they start later, to `core`.
    @discardableResult
    static func pinProcess(toCore core: Int) -> Bool { pinProcess(toCores: [core]) }

    /// Lets every thread run on any core again (a suite that measures unpinned, after one that pinned in
    /// the same `all` run).
    @discardableResult
    static func unpinProcess() -> Bool {
        pinProcess(toCores: Array(0..<min(1024, max(1, sysconf(Int32(_SC_NPROCESSORS_CONF))))))
    }

    private static func pinProcess(toCores cores: [Int]) -> Bool {
        typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity"),
              let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return false }
        var mask = [UInt64](repeating: 0, count: 16)  // 1024 CPUs, glibc's cpu_set_t
        for core in cores { mask[core / 64] |= 1 << UInt64(core % 64) }
        var pinned = true
        for task in tasks.compactMap({ pid_t($0) }) {
            let result = mask.withUnsafeBytes { unsafeBitCast(symbol, to: SetAffinity.self)(task, $0.count, $0.baseAddress!) }
            pinned = pinned && result == 0
        }
        return pinned
    }

    /// Raises the soft limit on open files to the hard limit; returns the limit now in force.
    static func raiseFileLimit() -> Int {
        TransportBenchmark.raiseFileLimit()
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        return Int(clamping: limit.rlim_cur)
    }

    static func median(_ values: [Double]) -> Double { TransportBenchmark.median(values) }

    /// The value at `fraction` (0...1) of `sorted`, nearest rank.
    static func percentile(_ sorted: [UInt64], _ fraction: Double) -> UInt64 {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}

/// A count that wakes a waiter when it reaches its target; handlers and observers tick it from any thread.
final class Countdown: Sendable {
    private let state: Locked<Int>
    private let target: Int
    private let reached = DispatchSemaphore(value: 0)

    init(_ target: Int) {
        self.target = target
        state = Locked(0)
    }

    /// Adds one; the tick that reaches the target wakes the waiter.
    @discardableResult
    func tick() -> Int {
        let count = state.withLock { value -> Int in
            value += 1
            return value
        }
        if count == target { reached.signal() }
        return count
    }

    /// Adds `amount`; the call that crosses the target wakes the waiter.
    func add(_ amount: Int) {
        let (before, after) = state.withLock { value -> (Int, Int) in
            value += amount
            return (value - amount, value)
        }
        if before < target && after >= target { reached.signal() }
    }

    var count: Int { state.withLock { $0 } }

    /// True once the target was reached, false after `seconds`.
    func wait(seconds: Double) -> Bool {
        reached.wait(timeout: .now() + seconds) == .success
    }
}
