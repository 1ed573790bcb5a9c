import Foundation
import Realtime
import RealtimeTesting
import Testing

/// `Tests/Fixtures/hostile/server.py`: a WebSocket server that misbehaves on purpose, started on a free
/// loopback port. Its stdout says which connections it accepted.
final class HostileServer: Sendable {
    let port: Int
    private let process: Process
    private let output: PeerOutput

    private init(port: Int, process: Process, output: PeerOutput) {
        self.port = port
        self.process = process
        self.output = output
    }

    static func start(_ arguments: String...) async throws -> HostileServer {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = SocketIOPeer.repositoryRoot.appendingPathComponent("Tests/Fixtures/hostile/server.py").path
        process.arguments = ["python3", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let lines = PeerOutput()
        lines.follow(output.fileHandleForReading)
        let errorLines = PeerOutput()
        errorLines.follow(errors.fileHandleForReading)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let line = lines.lines.first, line.hasPrefix("port "), let port = Int(line.dropFirst(5)) {
                return HostileServer(port: port, process: process, output: lines)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        PusherFakeServer.killAndReap(process)
        throw RealtimeError(.connectTimedOut, "the hostile server did not print its port in 60 s",
                            context: .init(detail: "exited: \(!process.isRunning); stderr: "
                                           + errorLines.lines.suffix(5).joined(separator: " | ")))
    }

    /// Connections the server has accepted so far.
    var connections: Int { output.lines.filter { $0.hasPrefix("connection ") }.count }

    func stop() { PusherFakeServer.killAndReap(process) }

    deinit { stop() }
}

/// The most memory the process has held (VmHWM), in MiB, for the test's printout.
private func peakResidentMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kib / 1024
}

@Suite("A hostile server cannot exhaust the client")
struct HostileServerTests {
    private func session(_ server: HostileServer, policy: ReconnectPolicy? = nil,
                         configure: (inout SessionOptions) -> Void = { _ in }) -> RealtimeSession {
        var options = SessionOptions(reconnectPolicy: policy, connectTimeout: .seconds(5))
        configure(&options)
        return RealtimeSession(dialect: .pusher(key: "hostile", host: "127.0.0.1", port: server.port),
                               options: options)
    }

    @Test("a flood of 1 MiB events behind a slow handler holds at most the byte budget, and loses nothing")
    func floodBehindASlowHandler() async throws {
        let count = 40
        let size = 1 << 20
        let budget = 4 << 20
        let server = try await HostileServer.start("flood", String(count), String(size))
        defer { server.stop() }
        let session = session(server) { $0.deliveryByteBudget = budget }
        let received = Locked(0)
        let ended = Locked(false)
        let largestBacklog = Locked(0)
        session.on("big") { [session] event in
            let backlog = session.deliveryBacklog.bytes
            largestBacklog.withLock { $0 = max($0, backlog) }
            if case .string(let text) = event.data, text.utf8.count == size { received.withLock { $0 += 1 } }
            usleep(20_000)  // a slow handler: 40 events take 0.8 s to handle
        }
        session.on("end") { _ in ended.withLock { $0 = true } }
        let before = peakResidentMiB()
        try await session.connect()
        await pusherWait("every event handled", seconds: 60) { ended.withLock { $0 } }
        session.disconnect()
        let largest = largestBacklog.withLock { $0 }
        print("flood: \(count) × \(size >> 20) MiB events, largest backlog \(largest >> 10) KiB "
              + "(budget \(budget >> 10) KiB); process VmHWM \(before) → \(peakResidentMiB()) MiB")
        #expect(received.withLock { $0 } == count)
        // Reading pauses once the budget is passed; one read batch may carry a message or two beyond it.
        #expect(largest <= budget + 2 * (size + 64))
        #expect(largest > 0)
    }

    @Test("a server that welcomes and then breaks the protocol runs into maximumAttempts, each break typed",
          arguments: [("huge-length", RealtimeError.Code.protocolViolation), ("masked", .protocolViolation),
                      ("reserved-bits", .protocolViolation), ("bad-opcode", .protocolViolation),
                      ("bad-utf8", .invalidUTF8), ("close-4200", nil), ("fragmented-ping", .protocolViolation),
                      ("oversized", .limitExceeded), ("fragmented-oversized", .limitExceeded),
                      ("bad-close-code", .protocolViolation)])
    func welcomeThenViolate(kind: String, expected: RealtimeError.Code?) async throws {
        let server = try await HostileServer.start("welcome-then-violate", kind)
        defer { server.stop() }
        let policy = ReconnectPolicy(initialDelay: .milliseconds(50), multiplier: 1, maximumDelay: .milliseconds(50),
                                     jitter: .none, maximumAttempts: 3)
        let session = session(server, policy: policy)
        let reported = Locked<[RealtimeError.Code]>([])
        session.onError { error in reported.withLock { $0.append(error.code) } }
        session.start()
        await pusherWait("the session to fail", seconds: 30) {
            if case .failed = session.state { return true }
            return false
        }
        guard case .failed(let error) = session.state else { return }
        print("welcome-then-violate \(kind): \(server.connections) connections; \(error.message)")
        #expect(error.code == .sessionFailed)
        #expect(error.message.contains("3 reconnect attempts"))
        // The server's "connection" lines come through a pipe, behind what the session saw.
        await pusherWait("the server's fourth connection line") { server.connections >= 4 }
        #expect(server.connections == 4)  // the first connection and three attempts, then no more
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.connections == 4)
        // Each broken connection reached onError with its typed cause, then the session's own failure.
        // onError runs after the state changed: wait for the last report.
        await pusherWait("the session's failure reported") { reported.withLock { $0 }.last == .sessionFailed }
        let codes = reported.withLock { $0 }
        print("welcome-then-violate \(kind): errors reported \(codes.map(\.rawValue))")
        #expect(codes.last == .sessionFailed)
        #expect(Array(codes.dropLast()) == (expected.map { Array(repeating: $0, count: 4) } ?? []))
    }

    @Test("a server that writes one byte at a time is read correctly")
    func dribble() async throws {
        let server = try await HostileServer.start("dribble", "20")
        defer { server.stop() }
        let session = session(server)
        let drips = Locked<[String]>([])
        let ended = Locked(false)
        session.on("drip") { event in drips.withLock { $0.append(event.data.stringValue ?? "?") } }
        session.on("end") { _ in ended.withLock { $0 = true } }
        try await session.connect()
        await pusherWait("the dribbled events", seconds: 60) { ended.withLock { $0 } }
        session.disconnect()
        #expect(drips.withLock { $0 } == (0..<20).map { "d\($0)" })
    }

    @Test("wss:// to a server that speaks plain HTTP fails the TLS handshake, typed, and connect() says so")
    func plainTCPToTLS() async throws {
        let server = try await HostileServer.start("plain-http")
        defer { server.stop() }
        // 5 s, not 2: a python server slow to answer on a loaded machine must not turn the TLS failure into a
        // bare timeout.
        let session = RealtimeSession(dialect: .actionCable(url: URL(string: "wss://127.0.0.1:\(server.port)/cable")!),
                                      options: SessionOptions(connectTimeout: .seconds(5), connectCallTimeout: .seconds(5)))
        let reported = Locked<[RealtimeError]>([])
        session.onError { error in reported.withLock { $0.append(error) } }
        do {
            try await session.connect()
            Issue.record("connected over TLS to a plain HTTP server")
        } catch let error as RealtimeError {
            print("plain-http over wss: \(error); first reported: \(reported.withLock { $0.first.map(String.init(describing:)) ?? "none" })")
            #expect(error.code == .connectTimedOut)
            #expect(error.context.detail?.contains(RealtimeError.Code.tlsFailed.rawValue) == true)
        }
        session.disconnect()
        // connect() throws on its own timer; onError reports on the delivery queue.
        await pusherWait("the TLS failure reported") { !reported.withLock { $0 }.isEmpty }
        #expect(reported.withLock { $0 }.first?.code == .tlsFailed)
    }

    @Test("an upgrade that goes wrong reaches onError typed, and connect() gives up in time naming it",
          arguments: [("bad-accept", RealtimeError.Code.handshakeInvalid), ("no-upgrade", .handshakeInvalid),
                      ("endless-headers", .handshakeInvalid), ("silent", .connectTimedOut)])
    func brokenUpgrade(mode: String, expected: RealtimeError.Code) async throws {
        let server = try await HostileServer.start(mode)
        defer { server.stop() }
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 1, maximumDelay: .milliseconds(100),
                                     jitter: .none)
        // 3 s per attempt, not 1: a python server slow to answer on a loaded machine must not turn the
        // expected failure into a timeout; an attempt on "silent" still times out within the 6 s call.
        let session = session(server, policy: policy) {
            $0.connectTimeout = .seconds(3)
            $0.connectCallTimeout = .seconds(6)
        }
        let errors = Locked<[RealtimeError]>([])
        session.onError { error in errors.withLock { $0.append(error) } }
        let started = ContinuousClock.now
        do {
            try await session.connect()
            Issue.record("connected to a server in mode \(mode)")
        } catch let error as RealtimeError {
            let waited = ContinuousClock.now - started
            // connect() throws on its own timer; onError reports on the delivery queue.
            await pusherWait("an error reported") { !errors.withLock { $0 }.isEmpty }
            let seen = errors.withLock { $0 }
            print("\(mode): connect() threw after \(waited): \(error); \(seen.count) errors reported, first: "
                  + (seen.first.map(String.init(describing:)) ?? "none"))
            #expect(error.code == .connectTimedOut)
            #expect(error.context.detail?.contains(expected.rawValue) == true)
            #expect(!seen.isEmpty)
            #expect(seen.allSatisfy { $0.code == expected })
            #expect(waited < .seconds(10))
        }
        session.disconnect()
        await pusherWait("the server's connection line") { server.connections >= 1 }
        #expect(server.connections >= 1)
    }
}

