import Foundation
#if canImport(Glibc)
import Glibc
#endif
@_spi(DialectAuthoring) import RealtimeCore
@testable import RealtimeWebSocket

/// Certificates made at test time with the `openssl` CLI in a temporary folder: a trusted CA, a leaf for
/// `localhost` and 127.0.0.1 signed by it, an expired leaf and a leaf for another name from the same CA, and a leaf from another CA.
struct TLSTestCertificates: Sendable {
    let directory: URL
    var caCertificate: String { directory.appendingPathComponent("ca.pem").path }
    var leafCertificate: String { directory.appendingPathComponent("leaf.pem").path }
    var leafKey: String { directory.appendingPathComponent("leaf.key").path }
    var expiredCertificate: String { directory.appendingPathComponent("expired.pem").path }
    var strangerCertificate: String { directory.appendingPathComponent("stranger.pem").path }
    /// Signed by the trusted CA for `other.test` only: wrong for `localhost` and for 127.0.0.1.
    var otherNameCertificate: String { directory.appendingPathComponent("other-name.pem").path }

    /// The base64 SHA-256 of a certificate's SubjectPublicKeyInfo, computed by the `openssl` CLI
    /// (`name`: "leaf", "ca" or "other-ca").
    func publicKeyPin(_ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("\(name).pin"), encoding: .utf8)) ?? ""
    }

    /// Made once per test process.
    static let shared: Result<TLSTestCertificates, TLSTestFailure> = {
        do throws(TLSTestFailure) {
            return .success(try make())
        } catch {
            return .failure(error)
        }
    }()

    static func make() throws(TLSTestFailure) -> TLSTestCertificates {
        removeFoldersOfFinishedRuns()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("realtime-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw TLSTestFailure(message: "cannot create \(directory.path): \(error)")
        }
        let script = """
        set -e
        cd "\(directory.path)"
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > leaf.ext
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
            -days 3 -subj "/CN=Realtime Test CA" 2>/dev/null
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout other-ca.key \
            -out other-ca.pem -days 3 -subj "/CN=Stranger CA" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr \
            -subj "/CN=localhost" 2>/dev/null
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 \
            -extfile leaf.ext 2>/dev/null
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out expired.pem -days -1 \
            -extfile leaf.ext 2>/dev/null
        printf 'subjectAltName=DNS:other.test\nbasicConstraints=CA:FALSE\n' > other.ext
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out other-name.pem -days 2 \
            -extfile other.ext 2>/dev/null
        openssl x509 -req -in leaf.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -out stranger.pem \
            -days 2 -extfile leaf.ext 2>/dev/null
        for name in leaf ca other-ca; do
            openssl x509 -pubkey -noout -in $name.pem | openssl pkey -pubin -outform der \
                | openssl dgst -sha256 -binary | openssl base64 -A > $name.pin
        done
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        do {
            try process.run()
        } catch {
            throw TLSTestFailure(message: "cannot run openssl: \(error)")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TLSTestFailure(message: "openssl exited with \(process.terminationStatus)")
        }
        return TLSTestCertificates(directory: directory)
    }

    /// Each run's folder lives as long as its process; the next run removes those of processes that ended.
    static func removeFoldersOfFinishedRuns() {
        let temporary = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix("realtime-tls-") {
            let parts = name.split(separator: "-")
            guard parts.count == 4, let pid = Int32(parts[2]), pid != getpid(), kill(pid, 0) != 0 else { continue }
            try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
        }
    }

    func pem(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
}

struct TLSTestFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// `openssl s_server -www` on 127.0.0.1 and a free port, stopped by ``stop()``.
final class OpenSSLServer {
    let port: Int
    private let process: Process

    init(certificate: String, key: String) throws {
        // Bind port 0 to learn a free port, release it and hand it to s_server.
        let probe = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 1)
        port = probe.address.port
        SocketIO.closeFD(probe.fd)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")  // env execs openssl: same pid
        process.arguments = ["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key,
                             "-www", "-naccept", "100"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // s_server block-buffers its "ACCEPT" line when stdout is not a terminal, so wait for the port
        // itself: an external process's readiness, not a timing assertion.
        for _ in 0..<2_000 {   // up to 20 s on a loaded machine
            if Self.canConnect(port: port) { return }
            if !process.isRunning { break }
            usleep(10_000)
        }
        stop()
        throw TLSTestFailure(message: "s_server did not start listening on \(port)")
    }

    private static func canConnect(port: Int) -> Bool {
        guard let address = SocketAddress(numericHost: "127.0.0.1", port: port) else { return false }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { SocketIO.closeFD(fd) }
        return address.withSockAddr { connect(fd, $0, $1) } == 0
    }

    func stop() {
        if process.isRunning {
            // s_server does not exit on SIGTERM while it waits in accept.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
