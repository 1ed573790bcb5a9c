import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process that talks in lines on its standard input and output: this executable started again in
/// a child role (a blaster, a server), or another program (a Python client). Optionally pinned to one core
/// with taskset, which execs, so `pid` is the program's own.
final class ChildProcess {
    private let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private var buffered: [UInt8] = []
    let name: String

    init(arguments: [String], core: Int?, executable: String? = nil) throws {
        let program = executable ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        name = ([URL(fileURLWithPath: program).lastPathComponent] + arguments.prefix(2)).joined(separator: " ")
        if let core, FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset") {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            process.arguments = ["-c", String(core), program] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
        }
        process.standardOutput = output
        process.standardInput = input
        try process.run()
    }

    var pid: pid_t { process.processIdentifier }

    /// The next line the child prints, without its newline; throws when it exits first or after `timeout` s.
    func readLine(timeout: Double = 120) throws -> String {
        let fd = output.fileHandleForReading.fileDescriptor
        let deadline = Measure.nanoseconds() + UInt64(timeout * 1e9)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let now = Measure.nanoseconds()
            guard now < deadline else { throw BenchmarkFailure("\(name): no line within \(timeout) s") }
            var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, Int32(min(1000, (deadline - now) / 1_000_000 + 1))) > 0 else { continue }
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { throw BenchmarkFailure("\(name): exited before printing a line") }
            buffered += chunk[..<count]
        }
    }

    /// Reads lines until one starts with `prefix` and returns it; lines before it are shown on stderr.
    func expectLine(_ prefix: String, timeout: Double = 120) throws -> String {
        while true {
            let line = try readLine(timeout: timeout)
            if line.hasPrefix(prefix) { return line }
            FileHandle.standardError.write(Data("  [\(name)] \(line)\n".utf8))
        }
    }

    /// The child prints `PORT n` once it listens.
    func readPort() throws -> Int {
        let line = try expectLine("PORT ", timeout: 30)
        guard let port = Int(line.dropFirst(5)) else { throw BenchmarkFailure("\(name): unexpected output: \(line)") }
        return port
    }

    func writeLine(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Closes the child's stdin (blasters, servers and the Python clients exit on that), gives it `grace`
    /// seconds to leave, then kills it.
    func stop(grace: Double = 0) {
        try? input.fileHandleForWriting.close()
        let deadline = Measure.nanoseconds() + UInt64(grace * 1e9)
        while process.isRunning && Measure.nanoseconds() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }
}
