#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Realtime
import Testing

/// tinyproxy (Debian's `tinyproxy-bin`; `Tests/Fixtures/proxy/provision.sh` installs it), started per test
/// on 127.0.0.1 at a free port with a generated configuration: `Allow 127.0.0.1`, `ConnectPort` for the
/// ports the test tunnels to (any other gets tinyproxy's 403), optional `BasicAuth`, and a log at level
/// Connect whose `Request … CONNECT host:port` lines prove which tunnels it carried.
final class TinyProxy: Sendable {
    let port: Int
    let directory: URL
    private let process: Process

    static var executable: String? { RailsCableServer.executable("tinyproxy") }

    /// Why tinyproxy cannot run here, or nil.
    static var unavailableReason: String? {
        executable == nil ? "tinyproxy is not installed: run Tests/Fixtures/proxy/provision.sh" : nil
    }

    private init(port: Int, directory: URL, process: Process) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Starts tinyproxy and waits until it accepts connections.
    /// - Parameters:
    ///   - connectPorts: the only ports `CONNECT` may reach.
    ///   - basicAuth: credentials tinyproxy demands (407 without, 401 for wrong ones).
    static func start(connectPorts: [Int], basicAuth: ProxyConfiguration.Credentials? = nil) async throws -> TinyProxy {
        guard let executable else { throw PusherFakeError(unavailableReason ?? "tinyproxy missing") }
        let port = try PusherFakeServer.freePort()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("realtime-tinyproxy-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lines = [
            "Port \(port)", "Listen 127.0.0.1", "Timeout 120", "MaxClients 50", "Allow 127.0.0.1",
            "DisableViaHeader Yes", "LogLevel Connect", "LogFile \"\(directory.appendingPathComponent("tinyproxy.log").path)\"",
        ]
        lines += connectPorts.map { "ConnectPort \($0)" }
        if let basicAuth { lines.append("BasicAuth \(basicAuth.username) \(basicAuth.password)") }
        let configuration = directory.appendingPathComponent("tinyproxy.conf")
        try (lines.joined(separator: "\n") + "\n").write(to: configuration, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-d", "-c", configuration.path]   // -d: in the foreground, so the test owns it
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let proxy = TinyProxy(port: port, directory: directory, process: process)
        let listening = await fakeEventually(seconds: 20) { !process.isRunning || canConnect(port: port) }
        guard listening, process.isRunning else {
            proxy.stop()
            throw PusherFakeError("tinyproxy did not start on \(port): \(proxy.log.suffix(2_000))")
        }
        return proxy
    }

    /// The proxy as the transport's configuration names it.
    func configuration(credentials: ProxyConfiguration.Credentials? = nil) -> ProxyConfiguration {
        ProxyConfiguration(host: "127.0.0.1", port: port, credentials: credentials)
    }

    var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("tinyproxy.log"), encoding: .utf8)) ?? ""
    }

    /// How many `CONNECT` requests to 127.0.0.1:`port` tinyproxy logged.
    func connectRequests(to port: Int) -> Int {
        log.split(separator: "\n").filter { $0.contains("Request (file descriptor") && $0.hasSuffix("CONNECT 127.0.0.1:\(port) HTTP/1.1") }.count
    }

    /// How many tunnels tinyproxy opened to 127.0.0.1 (its "Established connection" lines).
    var establishedTunnels: Int {
        log.split(separator: "\n").filter { $0.contains("Established connection to host \"127.0.0.1\"") }.count
    }

    func stop() {
        PusherFakeServer.killAndReap(process)
        try? FileManager.default.removeItem(at: directory)
    }

    /// True when something accepts TCP connections on 127.0.0.1:`port`.
    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// `Tests/Fixtures/proxy/connect_proxy.py`: a hand-made CONNECT proxy for what tinyproxy will not do. It
/// answers garbage or a cut-short head, hangs, or tunnels to a fixed local port whatever host the request
/// named, and reports each request head it read.
final class ScriptedConnectProxy: Sendable {
    enum Behaviour: Sendable {
        /// Writes these bytes after the request head, then closes.
        case answer(String)
        /// Answers 200 and relays to 127.0.0.1:`port`.
        case tunnel(toPort: Int)
        /// Never answers.
        case silent
    }

    let port: Int
    private let process: Process
    private let input: FileHandle
    private let output: PeerOutput

    private init(port: Int, process: Process, input: FileHandle, output: PeerOutput) {
        self.port = port
        self.process = process
        self.input = input
        self.output = output
    }

    static func start(_ behaviour: Behaviour) async throws -> ScriptedConnectProxy {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = SocketIOPeer.repositoryRoot.appendingPathComponent("Tests/Fixtures/proxy/connect_proxy.py").path
        let mode: [String]
        switch behaviour {
        case .answer(let text): mode = ["--answer-hex", Array(text.utf8).map { String(format: "%02x", $0) }.joined()]
        case .tunnel(let port): mode = ["--tunnel-to", String(port)]
        case .silent: mode = ["--silent"]
        }
        process.arguments = ["python3", script] + mode
        let stdout = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin   // held open while we live: the script exits on EOF
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = PeerOutput()
        output.follow(stdout.fileHandleForReading)
        _ = await fakeEventually(seconds: 20) { output.lines.contains { $0.hasPrefix("READY ") } || !process.isRunning }
        guard let port = output.lines.first(where: { $0.hasPrefix("READY ") }).flatMap({ Int($0.dropFirst(6)) }) else {
            PusherFakeServer.killAndReap(process)
            throw PusherFakeError("connect_proxy.py did not start: \(output.lines.joined(separator: "\n"))")
        }
        return ScriptedConnectProxy(port: port, process: process, input: stdin.fileHandleForWriting, output: output)
    }

    /// The request heads it read, in order.
    var requests: [String] {
        output.lines.filter { $0.hasPrefix("REQUEST ") }.compactMap { try? JSONValue.parse(String($0.dropFirst(8))).stringValue }
    }

    func stop() {
        try? input.close()
        PusherFakeServer.killAndReap(process)
    }
}

/// Opens one connection with `transport` and returns how it ended (`nil` when it opened, after closing it).
func openOutcome(_ transport: WebSocketTransport, _ url: URL,
                 timeout: Duration = .seconds(10)) async -> TransportClosure? {
    let outcome = Locked<(opened: Bool, closure: TransportClosure?)>((false, nil))
    let connection = transport.open(ConnectionRequest(url: url, connectTimeout: timeout)) { event in
        switch event {
        case .opened: outcome.withLock { $0.opened = true }
        case .closed(let closure): outcome.withLock { $0.closure = closure }
        case .received: break
        }
    }
    _ = await fakeEventually(seconds: timeout.seconds + 5) { outcome.withLock { $0.opened || $0.closure != nil } }
    if outcome.withLock({ $0.opened }) {
        connection.close(code: 1000, reason: "done")
        return nil
    }
    return outcome.withLock { $0.closure }
}
