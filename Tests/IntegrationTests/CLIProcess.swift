import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// The built `realtime` executable run as a user runs it: arguments in, stdout lines and an exit status out.
final class CLIProcess: Sendable {
    private struct State {
        var stdout = Data()
        var stderr = Data()
        var stdoutClosed = false
        var status: Int32?
    }

    let arguments: [String]
    private let process: Process
    private let input: FileHandle
    private let state = Locked(State())

    /// The executable next to the test bundle (`swift build --build-tests` builds it into the same folder).
    static let executable: URL? = {
        var folders: [URL] = []
        if let override = ProcessInfo.processInfo.environment["REALTIME_CLI"] {
            return URL(fileURLWithPath: override)
        }
        folders += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        if let main = Bundle.main.executableURL { folders.append(main.deletingLastPathComponent()) }
        folders.append(SocketIOPeer.repositoryRoot.appendingPathComponent(".build/debug"))
        return folders.map { $0.appendingPathComponent("realtime") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Starts `realtime <arguments>` (or another `program`); its stdin stays open until ``stop()``, for `serve`
    /// commands and for peers that exit when it closes.
    init(_ arguments: [String], program: URL? = nil) throws {
        guard let executable = program ?? Self.executable else {
            throw RealtimeError(.invalidArgument, "the realtime executable is not built: run swift build --build-tests")
        }
        self.arguments = arguments
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let stdout = Pipe()
        let stderr = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin
        input = stdin.fileHandleForWriting
        let state = self.state
        process.terminationHandler = { process in
            state.withLock { $0.status = process.terminationStatus }
        }
        try process.run()
        Self.drain(stdout.fileHandleForReading) { chunk in
            state.withLock { state in
                if chunk.isEmpty { state.stdoutClosed = true } else { state.stdout.append(chunk) }
            }
        }
        Self.drain(stderr.fileHandleForReading) { chunk in state.withLock { $0.stderr.append(chunk) } }
    }

    private static func drain(_ handle: FileHandle, _ received: @escaping @Sendable (Data) -> Void) {
        Thread.detachNewThread {
            while true {
                let chunk = handle.availableData
                received(chunk)
                if chunk.isEmpty { return }
            }
        }
    }

    /// Complete stdout lines so far.
    var lines: [String] {
        let text = state.withLock { String(decoding: $0.stdout, as: UTF8.self) }
        var lines = text.components(separatedBy: "\n")
        lines.removeLast()   // the unfinished line, or "" after the last newline
        return lines
    }

    var stderr: String { state.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    /// Waits for a stdout line that satisfies `condition`.
    func line(timeout: Duration = .seconds(30), where condition: @Sendable (String) -> Bool) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = lines.first(where: condition) { return found }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return lines.first(where: condition)
    }

    /// Waits for the line `{"type":"subscribed",…}` of `channel` (as JSON text).
    func subscribed(_ channel: String, timeout: Duration = .seconds(30)) async -> Bool {
        let expected = #"{"type":"subscribed","channel":"# + JSONValue.string(channel).serialized() + "}"
        return await line(timeout: timeout) { $0 == expected } != nil
    }

    /// Waits for the exit and the end of stdout; `nil` if it is still running after `timeout`.
    func exitStatus(timeout: Duration = .seconds(60)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let (status, closed) = state.withLock { ($0.status, $0.stdoutClosed) }
            if let status, closed { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Writes one line to stdin.
    func send(_ line: String) {
        input.write(Data((line + "\n").utf8))
    }

    /// Sends `signal` (SIGINT, SIGTERM) as a terminal or a service manager would.
    func signal(_ number: Int32) {
        if process.isRunning { Foundation.kill(process.processIdentifier, number) }
    }

    /// Kills the process if it still runs (a test that failed halfway must not leave it behind).
    func stop() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        try? input.close()
    }

    deinit { stop() }

    /// What a failed expectation should show.
    var transcript: String {
        "realtime \(arguments.joined(separator: " "))\nstdout:\n\(lines.joined(separator: "\n"))\nstderr:\n\(stderr)"
    }
}

/// Runs `realtime <arguments>` to its end and returns its status and stdout lines.
func runCLI(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> (status: Int32?, lines: [String],
                                                                                    transcript: String) {
    let process = try CLIProcess(arguments)
    defer { process.stop() }
    let status = await process.exitStatus(timeout: timeout)
    return (status, process.lines, process.transcript)
}

/// The JSON lines the CLI prints, built the way a test states its expectations.
enum CLILine {
    static let connecting = #"{"type":"state","from":"initialized","to":"connecting"}"#
    static let connected = #"{"type":"state","from":"connecting","to":"connected"}"#

    static func subscribed(_ channel: String) -> String {
        #"{"type":"subscribed","channel":"# + JSONValue.string(channel).serialized() + "}"
    }

    static func event(_ channel: String, _ event: String, _ data: String, args: String? = nil) -> String {
        #"{"type":"event","channel":"# + JSONValue.string(channel).serialized() + #","event":"#
            + JSONValue.string(event).serialized() + #","data":"# + data + (args.map { #","args":"# + $0 } ?? "") + "}"
    }

    static func error(_ code: String, _ message: String) -> String {
        #"{"type":"error","code":"# + JSONValue.string(code).serialized() + #","message":"#
            + JSONValue.string(message).serialized() + "}"
    }

    static func ack(_ data: String) -> String { #"{"type":"ack","data":"# + data + "}" }

    static func sent(_ channel: String, _ event: String) -> String {
        #"{"type":"sent","channel":"# + JSONValue.string(channel).serialized() + #","event":"#
            + JSONValue.string(event).serialized() + "}"
    }

    /// Everything `realtime send … --json` prints when it sends `event` on `channel` once.
    static func sendTranscript(_ channel: String, _ event: String) -> [String] {
        [connecting, connected, subscribed(channel), sent(channel, event)]
    }
}
