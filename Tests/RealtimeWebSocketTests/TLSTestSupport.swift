import Foundation
import RealtimeCore
@testable import RealtimeWebSocket

/// Certificates made at test time with the `openssl` CLI in a temporary folder: a trusted CA, a leaf for
/// `localhost` and 127.0.0.1 signed by it, an expired leaf from the same CA, and a leaf from another CA.
struct TLSTestCertificates: Sendable {
    let directory: URL
    var caCertificate: String { directory.appendingPathComponent("ca.pem").path }
    var leafCertificate: String { directory.appendingPathComponent("leaf.pem").path }
    var leafKey: String { directory.appendingPathComponent("leaf.key").path }
    var expiredCertificate: String { directory.appendingPathComponent("expired.pem").path }
    var strangerCertificate: String { directory.appendingPathComponent("stranger.pem").path }

    /// Made once per test process.
    static let shared: Result<TLSTestCertificates, TLSTestFailure> = {
        do throws(TLSTestFailure) {
            return .success(try make())
        } catch {
            return .failure(error)
        }
    }()

    static func make() throws(TLSTestFailure) -> TLSTestCertificates {
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
        openssl x509 -req -in leaf.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -out stranger.pem \
            -days 2 -extfile leaf.ext 2>/dev/null
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
    private let output: Pipe

    init(certificate: String, key: String) throws {
        // Bind port 0 to learn a free port, release it and hand it to s_server.
        let probe = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 1)
        port = probe.address.port
        SocketIO.closeFD(probe.fd)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key,
                             "-www", "-naccept", "100"]
        output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // s_server prints ACCEPT once it listens.
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("ACCEPT") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw TLSTestFailure(message: "s_server exited early") }
            seen += chunk
        }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
