import Foundation
import Realtime
import RealtimeTesting
import Testing

/// The python-socketio server of `Tests/Fixtures/socketio/server.py`, started on a free loopback port and
/// killed when the test ends. Provision it first with `Tests/Fixtures/socketio/provision.sh` (run-all does).
final class SocketIOPeer: Sendable {
    let port: Int
    private let process: Process

    private init(port: Int, process: Process) {
        self.port = port
        self.process = process
    }

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var python: URL {
        let peers = ProcessInfo.processInfo.environment["REALTIME_PEERS"].map { URL(fileURLWithPath: $0) }
            ?? repositoryRoot.appendingPathComponent(".peers")
        return peers.appendingPathComponent("socketio-venv/bin/python")
    }

    /// Starts the server and waits for its ready line; with `tls`, it serves https and wss only, with that leaf.
    static func start(fastPing: Bool = false, tls: ChaosCertificates? = nil) async throws -> SocketIOPeer {
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw RealtimeError(.invalidArgument, "python-socketio peer missing: run Tests/Fixtures/socketio/provision.sh",
                                context: .init(detail: python.path))
        }
        let process = Process()
        process.executableURL = python
        let script = repositoryRoot.appendingPathComponent("Tests/Fixtures/socketio/server.py").path
        process.arguments = [script, "0"] + (fastPing ? ["--fast-ping"] : [])
            + (tls.map { ["--tls-cert", $0.leaf, "--tls-key", $0.key] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = Pipe()  // held open while we live: the peer exits on EOF
        process.standardError = FileHandle.nullDevice
        try process.run()
        let port = await readyPort(output.fileHandleForReading)
        guard let port else {
            Foundation.kill(process.processIdentifier, SIGKILL)
            throw RealtimeError(.connectTimedOut, "python-socketio peer did not print its ready line")
        }
        return SocketIOPeer(port: port, process: process)
    }

    /// Reads stdout until `READY <port>` (or EOF, or 20 s).
    private static func readyPort(_ handle: FileHandle) async -> Int? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int?, Never>) in
            let resumed = Locked(false)
            let finish: @Sendable (Int?) -> Void = { port in
                let first = resumed.withLock { done -> Bool in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: port) }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + 20) { finish(nil) }
            Thread.detachNewThread {
                var buffer = Data()
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { return finish(nil) }
                    buffer.append(chunk)
                    let text = String(decoding: buffer, as: UTF8.self)
                    if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("READY ") }),
                       let port = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) {
                        return finish(port)
                    }
                }
            }
        }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Kills the server at once (an abrupt end, as a crash would be) and reaps it. `waitUntilExit` is not
    /// used: it can wait forever when called from a Swift concurrency thread on Linux.
    func stop() {
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        Foundation.kill(pid, SIGKILL)
        var status: Int32 = 0
        for _ in 0..<500 {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped != 0 { return }  // reaped here, or already by Foundation (ECHILD)
            usleep(10_000)
        }
    }

    deinit {
        stop()
    }
}

/// Runs `body` with a fresh peer and always stops it.
func withSocketIOPeer<Result>(fastPing: Bool = false, _ body: (SocketIOPeer) async throws -> Result) async throws
    -> Result {
    let peer = try await SocketIOPeer.start(fastPing: fastPing)
    defer { peer.stop() }
    return try await body(peer)
}

/// Collects events and wakes a waiter once enough events of a name arrived. Counting per name keeps a
/// 10,000-event burst linear.
final class EventLog: Sendable {
    private struct Waiter {
        var name: String
        var count: Int
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var events: [RealtimeEvent] = []
        var counts: [String: Int] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Locked(State())

    var events: [RealtimeEvent] { state.withLock { $0.events } }

    func named(_ name: String) -> [RealtimeEvent] { events.filter { $0.name == name } }

    func append(_ event: RealtimeEvent) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.events.append(event)
            let count = state.counts[event.name, default: 0] + 1
            state.counts[event.name] = count
            guard !state.waiters.isEmpty else { return [] }
            let done = state.waiters.filter { $0.value.name == event.name && count >= $0.value.count }
            for key in done.keys { state.waiters[key] = nil }
            return done.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Waits for `count` events named `name`; `false` after `timeout`.
    func wait(for name: String, count: Int = 1, timeout: Duration = .seconds(10)) async -> Bool {
        await withCheckedContinuation { continuation in
            let key = state.withLock { state -> UInt64? in
                if state.counts[name, default: 0] >= count { return nil }
                state.nextWaiter += 1
                state.waiters[state.nextWaiter] = Waiter(name: name, count: count, continuation: continuation)
                return state.nextWaiter
            }
            guard let key else { return continuation.resume(returning: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { [self] in
                let expired = state.withLock { $0.waiters.removeValue(forKey: key) }
                expired?.continuation.resume(returning: false)
            }
        }
    }
}

/// Polls `condition` every 20 ms until it holds; `false` after `timeout`. For observing a live server.
func eventually(timeout: Duration = .seconds(10), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
