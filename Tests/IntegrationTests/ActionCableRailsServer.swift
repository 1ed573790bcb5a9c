#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// A puma process serving `Tests/Fixtures/actioncable/config.ru` (Rails Action Cable 6.1, async adapter) on
/// 127.0.0.1 at a free port. Started per test, stopped by ``stop()``.
final class RailsCableServer: Sendable {
    let port: UInt16
    /// A second, TLS-only port when started with certificates.
    let tlsPort: UInt16?
    let pid: pid_t
    let logPath: String

    var url: URL { URL(string: "ws://127.0.0.1:\(port)/cable")! }
    /// The wss endpoint of ``tlsPort``.
    var tlsURL: URL? { tlsPort.map { URL(string: "wss://127.0.0.1:\($0)/cable")! } }

    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/actioncable/config.ru").standardizedFileURL.path

    /// Why the live tests cannot run here, or nil when puma and the fixture are present.
    static var unavailableReason: String? {
        guard executable("puma") != nil, executable("ruby") != nil else {
            return "puma/ruby-actioncable are not installed: run Tests/Fixtures/actioncable/provision.sh"
        }
        guard FileManager.default.fileExists(atPath: fixture) else { return "missing fixture \(fixture)" }
        return nil
    }

    private init(port: UInt16, tlsPort: UInt16?, pid: pid_t, logPath: String) {
        self.port = port
        self.tlsPort = tlsPort
        self.pid = pid
        self.logPath = logPath
    }

    /// Starts puma and waits until `GET /health` answers (at most `timeout`). With `tls`, puma also binds a
    /// TLS port (``tlsPort``) serving that leaf certificate.
    static func start(timeout: Duration = .seconds(60), tls: ChaosCertificates? = nil,
                      attempts: Int = 3) async throws -> RailsCableServer {
        guard let puma = executable("puma") else { throw ActionCableLiveError("puma not found") }
        let port = try freePort()
        var tlsPort: UInt16?
        var binds = ["-b", "tcp://127.0.0.1:\(port)"]
        if let tls {
            var second = try freePort()
            while second == port { second = try freePort() }
            tlsPort = second
            binds += ["-b", "ssl://127.0.0.1:\(second)?cert=\(tls.leaf)&key=\(tls.key)&verify_mode=none"]
        }
        let logPath = NSTemporaryDirectory() + "actioncable-puma-\(port).log"
        let arguments = [puma] + binds + ["-t", "1:8", "-e", "development", fixture]
        var environment = ProcessInfo.processInfo.environment
        environment["CABLE_LOG_LEVEL"] = "warn"
        let pid = try spawn(arguments, environment: environment, output: logPath)
        let server = RailsCableServer(port: port, tlsPort: tlsPort, pid: pid, logPath: logPath)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if server.hasExited {
                let log = server.log
                server.removeLog()
                // Another process took a port between the pick and puma's bind: pick again.
                if log.contains("EADDRINUSE"), attempts > 1 {
                    return try await start(timeout: timeout, tls: tls, attempts: attempts - 1)
                }
                throw ActionCableLiveError("puma exited during start-up: \(log.suffix(2_000))")
            }
            if let reply = try? server.request("GET", "/health"), reply.status == 200 { return server }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = server.log
        server.stop()
        throw ActionCableLiveError("puma did not answer /health within \(timeout): \(log.suffix(2_000))")
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    private var hasExited: Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid
    }

    /// Freezes the process: it accepts no data and sends no pings until ``resume()``.
    func suspend() { kill(pid, SIGSTOP) }
    func resume() { kill(pid, SIGCONT) }

    private func removeLog() { try? FileManager.default.removeItem(atPath: logPath) }

    /// SIGTERM, then SIGKILL after 5 s; reaps the process and deletes its log.
    func stop() {
        defer { removeLog() }
        kill(pid, SIGCONT)
        kill(pid, SIGTERM)
        for _ in 0..<100 {
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || reaped < 0 { return }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    // MARK: Control routes

    @discardableResult
    func broadcast(stream: String, _ json: String) throws -> Int {
        try request("POST", "/control/broadcast?stream=\(stream)", body: json).status
    }

    @discardableResult
    func post(_ path: String) throws -> Int { try request("POST", path).status }

    /// Users with an open connection, as the server sees them.
    func connectedUsers() throws -> [String] {
        let reply = try request("GET", "/control/connections")
        return (try JSONValue.parse(reply.body).arrayValue ?? []).compactMap(\.stringValue)
    }

    /// One HTTP/1.1 exchange over a fresh loopback connection (blocking, 5 s receive timeout).
    func request(_ method: String, _ path: String, body: String = "") throws -> (status: Int, body: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ActionCableLiveError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = Self.loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw ActionCableLiveError("connect to 127.0.0.1:\(port) failed: errno \(errno)") }
        let payload = Array(body.utf8)
        let head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(payload.count)\r\nConnection: close\r\n\r\n"
        let bytes = Array(head.utf8) + payload
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { throw ActionCableLiveError("write to the control route failed: errno \(errno)") }
            written += count
        }
        var response = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            response.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let statusLine = text.split(separator: "\r\n", maxSplits: 1).first,
              let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw ActionCableLiveError("malformed control reply: \(text.prefix(200))")
        }
        let bodyText = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, bodyText)
    }

    // MARK: Process plumbing

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// A free port for puma to bind (see ``LoopbackPorts``).
    private static func freePort() throws -> UInt16 { try LoopbackPorts.pick() }

    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    private static func spawn(_ arguments: [String], environment: [String: String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard result == 0 else { throw ActionCableLiveError("posix_spawn \(arguments[0]) failed: \(result)") }
        return pid
    }
}

/// Polls `condition` every 20 ms until it holds; records an issue and throws after `timeout`.
/// Runs `trigger` until `condition` holds, waiting `interval` after each of at most `attempts` tries, for
/// server actions that Rails may drop in a race of its own (see the remote-disconnect test).
func cableRetrying(_ description: String, attempts: Int = 3, interval: Duration = .seconds(4),
                   sourceLocation: SourceLocation = #_sourceLocation,
                   trigger: () async throws -> Void, until condition: () -> Bool) async throws {
    let clock = ContinuousClock()
    for _ in 0..<attempts {
        try await trigger()
        let deadline = clock.now + interval
        while clock.now < deadline {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
    Issue.record("\(description) did not happen after \(attempts) tries", sourceLocation: sourceLocation)
    throw ActionCableLiveError("\(description) did not happen after \(attempts) tries")
}

func cableWaitUntil(_ description: String, timeout: Duration = .seconds(10),
               sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !condition() {
        guard clock.now < deadline else {
            Issue.record("timed out after \(timeout) waiting for \(description)", sourceLocation: sourceLocation)
            throw ActionCableLiveError("timed out waiting for \(description)")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// A failure of the live-test plumbing (process, port, control route), not of the code under test.
struct ActionCableLiveError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
