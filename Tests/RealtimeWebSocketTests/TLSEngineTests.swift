import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// The TLS engine without sockets: a client and a server engine pass records to each other in memory.
@Suite("TLS engine over memory BIOs")
struct TLSEngineTests {
    let certificates: TLSTestCertificates

    init() throws {
        certificates = try TLSTestCertificates.shared.get()
    }

    func serverContext(certificate: String? = nil) throws -> TLSContext {
        try TLSContext(server: TLSServerConfiguration(certificateChain: .file(certificate ?? certificates.leafCertificate),
                                                      privateKey: .file(certificates.leafKey)))
    }

    func clientContext(trustingTestCA: Bool = true, pem: Bool = false,
                       cipherPreference: TLSCipherPreference = .aesGCM,
                       recordReading: TLSRecordReading = .openSSL) throws -> TLSContext {
        let roots: [TLSPEMSource] = trustingTestCA
            ? [pem ? .pem(certificates.pem(certificates.caCertificate)) : .file(certificates.caCertificate)] : []
        return try TLSContext(client: TLSConfiguration(additionalTrustRoots: roots, cipherPreference: cipherPreference,
                                                       recordReading: recordReading))
    }

    /// Shuttles records until both sides finish or one fails; returns the client's error.
    func handshake(_ client: TLSEngine, _ server: TLSEngine) -> RealtimeError? {
        var toServer: [UInt8] = []
        var toClient: [UInt8] = []
        for _ in 0..<20 {
            do {
                _ = try client.advanceHandshake()
            } catch {
                return error
            }
            client.drainCiphertext(into: &toServer)
            toServer.withUnsafeBytes { server.receiveCiphertext($0) }
            toServer.removeAll()
            _ = try? server.advanceHandshake()
            server.drainCiphertext(into: &toClient)
            toClient.withUnsafeBytes { client.receiveCiphertext($0) }
            toClient.removeAll()
            if client.isHandshakeComplete && server.isHandshakeComplete { return nil }
        }
        return RealtimeError(.timedOut, "handshake did not finish")
    }

    @Test("a certificate from the trusted CA passes and data flows both ways", arguments: [false, true])
    func trustedRoundTrip(caAsPEMText: Bool) throws {
        let client = try TLSEngine(client: clientContext(pem: caAsPEMText), host: "localhost")
        let server = try TLSEngine(server: serverContext())
        #expect(handshake(client, server) == nil)
        #expect(client.protocolVersion == "TLSv1.3")

        try client.writePlaintext(Array("hello server".utf8))
        var records: [UInt8] = []
        client.drainCiphertext(into: &records)
        #expect(!records.isEmpty)
        #expect(!records.contains(subsequence: Array("hello server".utf8)))
        records.withUnsafeBytes { server.receiveCiphertext($0) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { buffer.deallocate() }
        let (count, stop) = try server.readPlaintext(into: buffer)
        #expect(stop == .needMoreCiphertext)
        #expect(Array(buffer[0..<count]) == Array("hello server".utf8))
    }

    @Test("the client's cipher preference decides the TLS 1.3 suite", arguments: [
        (TLSCipherPreference.aesGCM, "TLS_AES_128_GCM_SHA256"),
        (TLSCipherPreference.chaCha20Poly1305, "TLS_CHACHA20_POLY1305_SHA256"),
    ])
    func cipherPreference(_ preference: TLSCipherPreference, expected: String) throws {
        let client = try TLSEngine(client: clientContext(cipherPreference: preference), host: "localhost")
        let server = try TLSEngine(server: serverContext())
        #expect(handshake(client, server) == nil)
        #expect(client.cipherName == expected)
        #expect(server.cipherName == expected)
    }

    @Test("by default the order is fixed: AES-128-GCM first, ChaCha20-Poly1305 and AES-256-GCM still offered")
    func defaultCipherOrder() throws {
        let defaults = TLSConfiguration()
        #expect(defaults.cipherPreference == .aesGCM)
        #expect(defaults.recordReading == .openSSL)
        #expect(TLSCipherSuites.suites(for: defaults.cipherPreference)
                == "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384")
        let client = try TLSEngine(client: clientContext(cipherPreference: defaults.cipherPreference), host: "localhost")
        let server = try TLSEngine(server: serverContext())
        #expect(handshake(client, server) == nil)
        #expect(client.cipherName == "TLS_AES_128_GCM_SHA256")
        // A server that takes only one of the others still finds it in the default offer.
        for only in ["TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_256_GCM_SHA384"] {
            let narrowServer = try serverContext()
            narrowServer.restrictSuites(tls13: only)
            let client = try TLSEngine(client: clientContext(), host: "localhost")
            #expect(handshake(client, try TLSEngine(server: narrowServer)) == nil, "\(only)")
            #expect(client.cipherName == only)
        }
    }

    @Test("an IP literal is verified against the certificate's IP address")
    func ipLiteral() throws {
        let client = try TLSEngine(client: clientContext(), host: "127.0.0.1")
        let server = try TLSEngine(server: serverContext())
        #expect(handshake(client, server) == nil)
        let wrong = try TLSEngine(client: clientContext(), host: "127.0.0.2")
        let error = handshake(wrong, try TLSEngine(server: serverContext()))
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("IP address") == true)
    }

    @Test("an unknown CA fails with its own message")
    func unknownCA() throws {
        let client = try TLSEngine(client: clientContext(trustingTestCA: false), host: "localhost")
        let error = handshake(client, try TLSEngine(server: serverContext()))
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("unknown certificate authority") == true)
    }

    @Test("a certificate from another CA fails even when our CA is trusted")
    func strangerCA() throws {
        let client = try TLSEngine(client: clientContext(), host: "localhost")
        let error = handshake(client, try TLSEngine(server: serverContext(certificate: certificates.strangerCertificate)))
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("unknown certificate authority") == true)
    }

    @Test("a wrong host name fails with its own message")
    func wrongHost() throws {
        let client = try TLSEngine(client: clientContext(), host: "evil.example")
        let error = handshake(client, try TLSEngine(server: serverContext()))
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("does not match the host name evil.example") == true)
        #expect(error?.context.detail?.contains("62") == true)
    }

    @Test("an expired certificate fails with its own message")
    func expired() throws {
        let client = try TLSEngine(client: clientContext(), host: "localhost")
        let error = handshake(client, try TLSEngine(server: serverContext(certificate: certificates.expiredCertificate)))
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("expired") == true)
    }

    @Test("garbage instead of a ServerHello is a TLS failure, not a crash")
    func garbage() throws {
        let client = try TLSEngine(client: clientContext(), host: "localhost")
        #expect(try client.advanceHandshake() == false)
        let junk = Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8)
        junk.withUnsafeBytes { client.receiveCiphertext($0) }
        #expect(throws: RealtimeError.self) { try client.advanceHandshake() }
    }

    @Test("buffers released between bursts come back: many records per borrowed read, then a release, then more")
    func releaseBetweenBursts() throws {
        // OpenSSL's record layer throughout: its read-ahead buffer is what is released here.
        let client = try TLSEngine(client: clientContext(recordReading: .openSSL), host: "localhost")
        let server = try TLSEngine(server: serverContext())
        #expect(handshake(client, server) == nil)
        client.releaseBuffers()
        server.releaseBuffers()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        for burst in 0..<3 {
            // 100 KiB is seven records: read-ahead takes them in one go from the borrowed bytes.
            let plaintext = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ burst) }
            try server.writePlaintext(plaintext)
            var records: [UInt8] = []
            server.drainCiphertext(into: &records)
            var received: [UInt8] = []
            // Delivered in two uneven parts so a record straddles the borrowed reads.
            for part in [records[..<40_001], records[40_001...]] {
                Array(part).withUnsafeBytes { bytes in
                    client.withBorrowedCiphertext(bytes) {
                        while let (count, stop) = try? client.readPlaintext(into: buffer) {
                            received += buffer[0..<count]
                            if stop != .bufferFull { break }
                        }
                    }
                }
            }
            #expect(received == plaintext)
            client.releaseBuffers()
            server.releaseBuffers()
        }
    }

    @Test("a missing CA file is a typed setup error")
    func missingCAFile() {
        #expect {
            try TLSContext(client: TLSConfiguration(additionalTrustRoots: [.file("/nonexistent/ca.pem")]))
        } throws: { error in
            (error as? RealtimeError)?.code == .tlsFailed
        }
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= count else { return false }
        for start in 0...(count - subsequence.count) where Array(self[start..<start + subsequence.count]) == subsequence {
            return true
        }
        return false
    }
}

@Suite("TLS engine with records split into single bytes")
struct TLSEngineChunkingTests {
    @Test("a handshake and 64 KiB of data survive one-byte deliveries")
    func oneByteAtATime() throws {
        let certificates = try TLSTestCertificates.shared.get()
        let client = try TLSEngine(client: TLSContext(client: TLSConfiguration(
            additionalTrustRoots: [.file(certificates.caCertificate)])), host: "localhost")
        let server = try TLSEngine(server: TLSContext(server: TLSServerConfiguration(
            certificateChain: .file(certificates.leafCertificate), privateKey: .file(certificates.leafKey))))
        func pump(_ from: TLSEngine, _ to: TLSEngine) {
            var bytes: [UInt8] = []
            from.drainCiphertext(into: &bytes)
            for byte in bytes { [byte].withUnsafeBytes { to.receiveCiphertext($0) } }
        }
        for _ in 0..<20 where !(client.isHandshakeComplete && server.isHandshakeComplete) {
            _ = try client.advanceHandshake()
            pump(client, server)
            _ = try server.advanceHandshake()
            pump(server, client)
        }
        #expect(client.isHandshakeComplete && server.isHandshakeComplete)
        let message = (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try server.writePlaintext(message)
        pump(server, client)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 1)
        defer { buffer.deallocate() }
        var received: [UInt8] = []
        while true {
            let (count, stop) = try client.readPlaintext(into: buffer)
            received += buffer[0..<count]
            if stop != .bufferFull { break }
        }
        #expect(received == message)
    }
}
