#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Realtime
import RealtimeTesting
import Testing

/// pusher-fake (github.com/tristandunn/pusher-fake, Ruby, MIT), the most used third-party Pusher-protocol
/// server, run by `Tests/Fixtures/pusher-fake/server.rb` on free loopback ports. It is the installed gem, or
/// the copy `Tests/Fixtures/pusher-fake/provision.sh` puts in `.peers/pusher-fake` (run-all runs it).
final class PusherFakeServer: Sendable {
    static let key = "peer-key"
    static let secret = "peer-secret"
    /// The master key `sdk.py` encrypts `private-encrypted-` events with.
    static let encryptionMasterKey = Array("0123456789abcdef0123456789abcdef".utf8)

    let wsPort: Int
    let httpPort: Int
    /// The leaf certificate the WebSocket port serves wss with, or nil for plain ws.
    let tls: ChaosCertificates?
    private let process = Locked<Process?>(nil)
    private let output = PeerOutput()

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `.peers/pusher-fake`, where provision.sh puts the copy of pusher-fake and the SDK venv.
    static var peerDirectory: URL {
        let peers = ProcessInfo.processInfo.environment["REALTIME_PEERS"].map { URL(fileURLWithPath: $0) }
            ?? repositoryRoot.appendingPathComponent(".peers")
        return peers.appendingPathComponent("pusher-fake")
    }

    static var python: URL { peerDirectory.appendingPathComponent("venv/bin/python") }
    private static var copiedLibrary: URL { peerDirectory.appendingPathComponent("lib") }

    /// Why pusher-fake cannot run here, or nil. (A gem without the venv is reported too: the tests need the SDK.)
    static var unavailableReason: String? {
        guard RailsCableServer.executable("ruby") != nil else {
            return "ruby is not installed: run Tests/Fixtures/pusher-fake/provision.sh"
        }
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            return "pusher-fake peer missing (\(python.path)): run Tests/Fixtures/pusher-fake/provision.sh"
        }
        return nil
    }

    private init(wsPort: Int, httpPort: Int, tls: ChaosCertificates?) {
        self.wsPort = wsPort
        self.httpPort = httpPort
        self.tls = tls
    }

    /// Starts pusher-fake on two free ports and waits for its ready line; with `tls`, the WebSocket port
    /// speaks wss only.
    static func start(tls: ChaosCertificates? = nil) async throws -> PusherFakeServer {
        if let reason = unavailableReason { throw PusherFakeError(reason) }
        var attempt = 1
        while true {
            let wsPort = try freePort()
            var httpPort = try freePort()
            while httpPort == wsPort { httpPort = try freePort() }
            let server = PusherFakeServer(wsPort: wsPort, httpPort: httpPort, tls: tls)
            do {
                try await server.launch()
                return server
            } catch where attempt < 3 {
                // Most likely another process took a port between the pick and the bind: pick again.
                print("pusher-fake start attempt \(attempt) failed, retrying on other ports: \(error)")
                attempt += 1
            }
        }
    }

    /// The lines pusher-fake printed (ready lines and errors), for failure messages.
    var log: String { output.lines.joined(separator: "\n") }

    private func launch() async throws {
        guard let ruby = RailsCableServer.executable("ruby") else { throw PusherFakeError("ruby not found") }
        let readyBefore = output.lines.filter { $0.hasPrefix("READY ") }.count
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ruby)
        let script = Self.repositoryRoot.appendingPathComponent("Tests/Fixtures/pusher-fake/server.rb").path
        // provision.sh leaves a copied lib/ only when no gem is installed.
        let library = Self.copiedLibrary.path
        process.arguments = FileManager.default.fileExists(atPath: library + "/pusher-fake.rb")
            ? ["-I", library, script] : [script]
        var environment = ProcessInfo.processInfo.environment
        environment["PUSHER_WS_PORT"] = String(wsPort)
        environment["PUSHER_HTTP_PORT"] = String(httpPort)
        if let tls {
            environment["PUSHER_TLS_CERT"] = tls.leaf
            environment["PUSHER_TLS_KEY"] = tls.key
        }
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process.withLock { $0 = process }
        output.follow(pipe.fileHandleForReading)
        // A cold Ruby start on a loaded CI machine can take seconds; the bound is generous on purpose.
        let started = await fakeEventually(seconds: 60) {
            output.lines.filter { $0.hasPrefix("READY ") }.count > readyBefore || !process.isRunning
        }
        guard started, process.isRunning else {
            kill()
            throw PusherFakeError("pusher-fake did not start on ws \(wsPort) / http \(httpPort): \(log.suffix(2_000))")
        }
    }

    /// Kills pusher-fake at once (as a crash would) and reaps it; its connections drop.
    func kill() {
        guard let process = process.withLock({ current -> Process? in
            defer { current = nil }
            return current
        }) else { return }
        Self.killAndReap(process)
    }

    /// Starts pusher-fake again on the same ports after ``kill()`` (with no memory of channels or members).
    func restart() async throws { try await launch() }

    func stop() { kill() }

    static func killAndReap(_ process: Process) {
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        Foundation.kill(pid, SIGKILL)
        // waitUntilExit would block a cooperative thread for as long as the kernel takes; poll instead.
        for _ in 0..<500 where process.isRunning { usleep(10_000) }
    }

    /// A free port for a peer process to bind (see ``LoopbackPorts``).
    static func freePort() throws -> Int { Int(try LoopbackPorts.pick()) }
}

/// The app's side, in the official `pusher` server SDK: `Tests/Fixtures/pusher-fake/sdk.py` triggers events
/// over pusher-fake's REST API, serves an auth endpoint signed by the SDK, and drives a pysher client.
final class PusherFakeApp: Sendable {
    private let process: Process
    private let input: FileHandle
    private let output: PeerOutput
    private let nextID = Locked(0)
    /// The SDK-signed auth endpoint (form POST, as Pusher's clients send it).
    let authURL: URL

    private init(process: Process, input: FileHandle, authPort: Int, output: PeerOutput) {
        self.process = process
        self.input = input
        self.output = output
        authURL = URL(string: "http://127.0.0.1:\(authPort)/pusher/auth")!
    }

    static func start(for server: PusherFakeServer) async throws -> PusherFakeApp {
        let process = Process()
        process.executableURL = PusherFakeServer.python
        let script = PusherFakeServer.repositoryRoot.appendingPathComponent("Tests/Fixtures/pusher-fake/sdk.py").path
        process.arguments = [script, String(server.wsPort), String(server.httpPort)]
        let stdout = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        process.standardError = stdout
        try process.run()
        let output = PeerOutput()
        output.follow(stdout.fileHandleForReading)
        _ = await fakeEventually(seconds: 60) { output.lines.contains { $0.hasPrefix("READY ") } || !process.isRunning }
        guard let port = output.lines.first(where: { $0.hasPrefix("READY ") }).flatMap({ Int($0.dropFirst(6)) }) else {
            PusherFakeServer.killAndReap(process)
            throw PusherFakeError("sdk.py did not start: \(output.lines.suffix(20).joined(separator: "\n"))")
        }
        return PusherFakeApp(process: process, input: stdin.fileHandleForWriting, authPort: port, output: output)
    }

    /// Every JSON object sdk.py printed.
    var messages: [JSONValue] { output.lines.compactMap { try? JSONValue.parse($0) }.filter { $0.objectValue != nil } }

    /// Auth requests the endpoint answered: channel and socket id.
    var authRequests: [(channel: String, socketID: String)] {
        messages.filter { $0["type"] == "auth" }.compactMap { message in
            guard let channel = message["channel"]?.stringValue, let socket = message["socket_id"]?.stringValue else {
                return nil
            }
            return (channel, socket)
        }
    }

    /// Sends a command and waits for sdk.py to finish it; throws what the SDK raised.
    @discardableResult
    func run(_ command: [String: JSONValue], sourceLocation: SourceLocation = #_sourceLocation) async throws -> JSONValue {
        let id = nextID.withLock { value -> Int in
            value += 1
            return value
        }
        var members = command
        members["id"] = .integer(Int64(id))
        input.write(Data((JSONValue.object(members).serialized() + "\n").utf8))
        let answer = { self.messages.first { ($0["type"] == "done" || $0["type"] == "failed") && $0["id"] == .integer(Int64(id)) } }
        _ = await fakeEventually(seconds: 30) { answer() != nil }
        guard let result = answer() else {
            Issue.record("sdk.py did not answer \(command)", sourceLocation: sourceLocation)
            throw PusherFakeError("sdk.py did not answer \(command)")
        }
        if result["type"] == "failed" {
            throw PusherFakeError("the pusher SDK failed \(command): \(result["error"]?.stringValue ?? "")")
        }
        return result["result"] ?? .null
    }

    /// A REST trigger by the SDK (which encrypts on `private-encrypted-` channels).
    func trigger(_ channel: String, _ event: String, _ data: JSONValue) async throws {
        try await run(["op": "trigger", "channel": .string(channel), "event": .string(event), "data": data])
    }

    /// Whether pusher-fake has any connection on `channel` (REST `GET /channels/<name>`).
    func occupied(_ channel: String) async throws -> Bool {
        try await run(["op": "info", "channel": .string(channel)])["occupied"]?.boolValue ?? false
    }

    func stop() {
        try? input.close()
        PusherFakeServer.killAndReap(process)
    }
}

/// Collects a child's output lines from a background thread.
final class PeerOutput: Sendable {
    private let collected = Locked<[String]>([])

    var lines: [String] { collected.withLock { $0 } }

    func follow(_ handle: FileHandle) {
        Thread.detachNewThread { [collected] in
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0a) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    collected.withLock { $0.append(line) }
                }
            }
        }
    }
}

/// Polls `condition` every 20 ms for up to `seconds`; returns whether it held.
func fakeEventually(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// A failure of the pusher-fake plumbing (process, port, SDK), not of the code under test.
struct PusherFakeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
