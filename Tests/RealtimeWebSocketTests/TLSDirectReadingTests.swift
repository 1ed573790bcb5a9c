import COpenSSL
import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// One side of an in-memory TLS connection, fed the way `WebSocketChannel` feeds its engine: through
/// `withBorrowedCiphertext` until the direct reader takes over, then through `readRecordsDirectly`.
final class TLSEndpoint {
    let engine: TLSEngine
    var received: [UInt8] = []
    var closedByPeer = false
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)

    init(_ engine: TLSEngine) { self.engine = engine }
    deinit { buffer.deallocate() }

    func feed(_ bytes: UnsafeMutableRawBufferPointer) throws(RealtimeError) {
        if engine.readsRecordsDirectly {
            let stop = try engine.readRecordsDirectly(bytes) { plaintext in
                received += plaintext
                return true
            }
            if stop == .closedByPeer { closedByPeer = true }
            return
        }
        let bytes = UnsafeRawBufferPointer(bytes)
        let engine = engine
        let buffer = buffer
        let result: Result<Void, RealtimeError> = engine.withBorrowedCiphertext(bytes) {
            Result { () throws(RealtimeError) in
                if !engine.isHandshakeComplete, try !engine.advanceHandshake() { return }
                while true {
                    let (count, stop) = try engine.readPlaintext(into: buffer)
                    received += buffer[0..<count]
                    if stop == .closedByPeer { closedByPeer = true }
                    if stop != .bufferFull { break }
                }
            }
        }
        try result.get()
    }

    func drain() -> [UInt8] {
        var bytes: [UInt8] = []
        engine.drainCiphertext(into: &bytes)
        return bytes
    }

    /// Passes everything this side has to send to `peer`, cut into pieces by `cut`.
    func send(to peer: TLSEndpoint, cut: (Int) -> [Int] = { [$0] }) throws(RealtimeError) {
        let bytes = drain()
        var offset = 0
        for size in cut(bytes.count) where size > 0 {
            var piece = Array(bytes[offset..<offset + size])
            offset += size
            try piece.withUnsafeMutableBytes { raw in Result { () throws(RealtimeError) in try peer.feed(raw) } }.get()
        }
        precondition(offset == bytes.count, "the cut must cover every byte")
    }
}

/// Ways to cut a byte stream into reads.
enum Cuts {
    static func whole(_ count: Int) -> [Int] { [count] }
    static func single(_ count: Int) -> [Int] { Array(repeating: 1, count: count) }
    static func random(seed: UInt64) -> (Int) -> [Int] {
        var generator = SplitMix64(seed: seed)
        return { count in
            var sizes: [Int] = []
            var left = count
            while left > 0 {
                let size = min(left, Int(generator.next() % 20_000) + 1)
                sizes.append(size)
                left -= size
            }
            return sizes
        }
    }
}

struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("TLS 1.3 direct record reading")
struct TLSDirectReadingTests {
    let certificates: TLSTestCertificates

    init() throws {
        certificates = try TLSTestCertificates.shared.get()
    }

    static let suiteNames: [(String, TLS13Suite)] = [
        ("TLS_AES_128_GCM_SHA256", .aes128GCMSHA256),
        ("TLS_AES_256_GCM_SHA384", .aes256GCMSHA384),
        ("TLS_CHACHA20_POLY1305_SHA256", .chaCha20Poly1305SHA256),
    ]

    /// A connected pair; `suite` is forced through the server's TLS 1.3 suite list.
    func pair(suite: String = "TLS_AES_128_GCM_SHA256", client clientReading: TLSRecordReading = .directDecryptionOptimization,
              server serverReading: TLSRecordReading = .directDecryptionOptimization, minimumVersion: TLSMinimumVersion = .tls12,
              cut: (Int) -> [Int] = Cuts.whole) throws -> (client: TLSEndpoint, server: TLSEndpoint) {
        let serverContext = try TLSContext(server: TLSServerConfiguration(
            certificateChain: .file(certificates.leafCertificate), privateKey: .file(certificates.leafKey),
            minimumVersion: minimumVersion, recordReading: serverReading))
        serverContext.restrictSuites(tls13: suite)
        let clientContext = try TLSContext(client: TLSConfiguration(
            additionalTrustRoots: [.file(certificates.caCertificate)], recordReading: clientReading))
        let client = TLSEndpoint(try TLSEngine(client: clientContext, host: "localhost"))
        let server = TLSEndpoint(try TLSEngine(server: serverContext))
        for _ in 0..<10 where !(client.engine.isHandshakeComplete && server.engine.isHandshakeComplete) {
            _ = try client.engine.advanceHandshake()
            try client.send(to: server, cut: cut)
            try server.send(to: client, cut: cut)
        }
        #expect(client.engine.isHandshakeComplete && server.engine.isHandshakeComplete)
        return (client, server)
    }

    static func pattern(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ seed) }
    }

    @Test("HKDF-Expand-Label gives RFC 8448's server application key and IV")
    func rfc8448KeyAndIV() {
        let secret = hexBytes("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643")
        let suite = TLS13Suite.aes128GCMSHA256
        #expect(suite.expandLabel(secret: secret, label: "key", length: 16) == hexBytes("9f02283b6c9c07efc26bb9f2ac92e356"))
        #expect(suite.expandLabel(secret: secret, label: "iv", length: 12) == hexBytes("cf782b88dd83549aadf1e984"))
    }

    @Test("every suite, both directions, whole and one-byte and random reads: the reader takes over and reads it all",
          arguments: suiteNames.map(\.0), ["whole", "single", "random"])
    func takesOverAndReads(suite: String, cutName: String) throws {
        let cut: (Int) -> [Int] = switch cutName {
        case "whole": Cuts.whole
        case "single": Cuts.single
        default: Cuts.random(seed: UInt64(suite.count))
        }
        let (client, server) = try pair(suite: suite, cut: cut)
        #expect(client.engine.cipherName == suite)
        let toClient = Self.pattern(150_000, seed: 1)
        let toServer = Self.pattern(70_000, seed: 2)
        for part in stride(from: 0, to: toClient.count, by: 50_000) {
            try server.engine.writePlaintext(Array(toClient[part..<min(toClient.count, part + 50_000)]))
            try server.send(to: client, cut: cut)
        }
        try client.engine.writePlaintext(toServer)
        try client.send(to: server, cut: cut)
        #expect(client.engine.readsRecordsDirectly)
        #expect(server.engine.readsRecordsDirectly)
        #expect(difference(client.received, toClient) == nil)
        #expect(difference(server.received, toServer) == nil)
        // OpenSSL's server sends two session tickets before the data (sequence numbers 0 and 1), then each
        // 50,000-byte write takes four records.
        let records = 2 + 3 * 4
        #expect(client.engine.directReadState?.sequenceNumber == UInt64(records))
    }

    @Test("records OpenSSL read before the takeover count: the server reads the upgrade request itself first")
    func sequenceContinuesAfterOpenSSL() throws {
        let (client, server) = try pair()
        // The client's Finished travelled with nothing after it; now data then more data.
        try client.engine.writePlaintext(Self.pattern(100, seed: 3))
        try client.send(to: server)
        try client.engine.writePlaintext(Self.pattern(40_000, seed: 4))
        try client.send(to: server)
        #expect(difference(server.received, Self.pattern(100, seed: 3) + Self.pattern(40_000, seed: 4)) == nil)

        // Finished and data in one read: OpenSSL reads the data records, the reader continues after them.
        let serverContext = try TLSContext(server: TLSServerConfiguration(
            certificateChain: .file(certificates.leafCertificate), privateKey: .file(certificates.leafKey),
            recordReading: .directDecryptionOptimization))
        let clientContext = try TLSContext(client: TLSConfiguration(additionalTrustRoots: [.file(certificates.caCertificate)],
                                                                    recordReading: .directDecryptionOptimization))
        let lateClient = TLSEndpoint(try TLSEngine(client: clientContext, host: "localhost"))
        let lateServer = TLSEndpoint(try TLSEngine(server: serverContext))
        _ = try lateClient.engine.advanceHandshake()
        try lateClient.send(to: lateServer)
        try lateServer.send(to: lateClient)
        #expect(lateClient.engine.isHandshakeComplete)
        try lateClient.engine.writePlaintext(Self.pattern(20_000, seed: 5))  // two records after Finished
        try lateClient.send(to: lateServer)
        #expect(lateServer.engine.readsRecordsDirectly)
        #expect(lateServer.engine.directReadState?.sequenceNumber == 2)
        try lateClient.engine.writePlaintext(Self.pattern(30_000, seed: 6))
        try lateClient.send(to: lateServer, cut: Cuts.random(seed: 9))
        #expect(difference(lateServer.received, Self.pattern(20_000, seed: 5) + Self.pattern(30_000, seed: 6)) == nil)
        #expect(lateServer.engine.directReadState?.sequenceNumber == 4)
    }

    @Test("key updates: the reader follows the peer's, and answers one that asks for ours",
          arguments: suiteNames.map(\.0), [TLSRecordReading.directDecryptionOptimization, .openSSL])
    func keyUpdates(suite: String, serverReading: TLSRecordReading) throws {
        let (client, server) = try pair(suite: suite, server: serverReading)
        var expectedAtClient: [UInt8] = []
        var expectedAtServer: [UInt8] = []
        for round in 0..<6 {
            let data = Self.pattern(20_000 + round, seed: round)
            try server.engine.updateSendingKeys(requestingPeerUpdate: round % 2 == 1)
            try server.engine.writePlaintext(data)
            expectedAtClient += data
            try server.send(to: client, cut: Cuts.random(seed: UInt64(round)))
            // The client's answer (when asked) goes out before its data, under the old key.
            let reply = Self.pattern(5_000 + round, seed: 100 + round)
            try client.engine.writePlaintext(reply)
            expectedAtServer += reply
            try client.send(to: server, cut: Cuts.random(seed: UInt64(50 + round)))
        }
        #expect(client.engine.directReadState?.keyUpdates == 6)
        #expect(difference(client.received, expectedAtClient) == nil)
        #expect(difference(server.received, expectedAtServer) == nil)
    }

    @Test("a KeyUpdate OpenSSL read before the takeover keeps that connection on OpenSSL, intact")
    func keyUpdateBeforeTakeover() throws {
        let serverContext = try TLSContext(server: TLSServerConfiguration(
            certificateChain: .file(certificates.leafCertificate), privateKey: .file(certificates.leafKey),
            recordReading: .directDecryptionOptimization))
        let clientContext = try TLSContext(client: TLSConfiguration(additionalTrustRoots: [.file(certificates.caCertificate)],
                                                                    recordReading: .directDecryptionOptimization))
        let client = TLSEndpoint(try TLSEngine(client: clientContext, host: "localhost"))
        let server = TLSEndpoint(try TLSEngine(server: serverContext))
        _ = try client.engine.advanceHandshake()
        try client.send(to: server)
        try server.send(to: client)
        try client.engine.writePlaintext(Self.pattern(1_000, seed: 1))
        try client.engine.updateSendingKeys(requestingPeerUpdate: false)
        try client.engine.writePlaintext(Self.pattern(1_000, seed: 2))
        try client.send(to: server)  // Finished, data, KeyUpdate, data: all read by OpenSSL
        #expect(!server.engine.readsRecordsDirectly)
        try client.engine.writePlaintext(Self.pattern(30_000, seed: 3))
        try client.send(to: server, cut: Cuts.random(seed: 3))
        #expect(difference(server.received, Self.pattern(1_000, seed: 1) + Self.pattern(1_000, seed: 2) + Self.pattern(30_000, seed: 3)) == nil)
    }

    @Test("TLS 1.2 stays with OpenSSL's record layer and still works")
    func tls12StaysWithOpenSSL() throws {
        let serverContext = try TLSContext(server: TLSServerConfiguration(
            certificateChain: .file(certificates.leafCertificate), privateKey: .file(certificates.leafKey),
            recordReading: .directDecryptionOptimization))
        serverContext.limitToTLS12()
        let clientContext = try TLSContext(client: TLSConfiguration(additionalTrustRoots: [.file(certificates.caCertificate)],
                                                                    recordReading: .directDecryptionOptimization))
        let client = TLSEndpoint(try TLSEngine(client: clientContext, host: "localhost"))
        let server = TLSEndpoint(try TLSEngine(server: serverContext))
        for _ in 0..<6 {
            _ = try client.engine.advanceHandshake()
            try client.send(to: server)
            try server.send(to: client)
        }
        #expect(client.engine.protocolVersion == "TLSv1.2")
        try server.engine.writePlaintext(Self.pattern(50_000, seed: 7))
        try server.send(to: client, cut: Cuts.random(seed: 7))
        #expect(!client.engine.readsRecordsDirectly)
        #expect(difference(client.received, Self.pattern(50_000, seed: 7)) == nil)
    }

    @Test("close_notify ends the stream after the data before it")
    func closeNotify() throws {
        let (client, server) = try pair()
        try server.engine.writePlaintext(Self.pattern(3_000, seed: 1))
        server.engine.shutdown()
        try server.send(to: client)
        #expect(difference(client.received, Self.pattern(3_000, seed: 1)) == nil)
        #expect(client.closedByPeer)
    }

    @Test("by default neither side hands its reading to the direct reader, nor installs the key-log callback")
    func defaultsKeepOpenSSL() throws {
        let serverContext = try TLSContext(server: TLSServerConfiguration(
            certificateChain: .file(certificates.leafCertificate), privateKey: .file(certificates.leafKey)))
        let clientContext = try TLSContext(client: TLSConfiguration(additionalTrustRoots: [.file(certificates.caCertificate)]))
        #expect(!clientContext.capturesTrafficSecrets)
        #expect(!serverContext.capturesTrafficSecrets)
        let client = TLSEndpoint(try TLSEngine(client: clientContext, host: "localhost"))
        let server = TLSEndpoint(try TLSEngine(server: serverContext))
        for _ in 0..<6 where !(client.engine.isHandshakeComplete && server.engine.isHandshakeComplete) {
            _ = try client.engine.advanceHandshake()
            try client.send(to: server)
            try server.send(to: client)
        }
        #expect(client.engine.protocolVersion == "TLSv1.3")
        try server.engine.writePlaintext(Self.pattern(50_000, seed: 8))
        try server.send(to: client)
        try client.engine.writePlaintext(Self.pattern(20_000, seed: 9))
        try client.send(to: server)
        #expect(!client.engine.readsRecordsDirectly)
        #expect(!server.engine.readsRecordsDirectly)
        #expect(difference(client.received, Self.pattern(50_000, seed: 8)) == nil)
        #expect(difference(server.received, Self.pattern(20_000, seed: 9)) == nil)
        // Asking for the optimisation does install it (so the checks above can fail).
        let directContext = try TLSContext(client: TLSConfiguration(recordReading: .directDecryptionOptimization))
        #expect(directContext.capturesTrafficSecrets)
    }

    @Test("a record altered in flight fails authentication with a typed error")
    func tamperedRecord() throws {
        let (client, server) = try pair()
        try server.engine.writePlaintext(Self.pattern(1_000, seed: 1))
        var bytes = server.drain()
        bytes[bytes.count - 20] ^= 0x01
        #expect {
            try bytes.withUnsafeMutableBytes { raw in Result { () throws(RealtimeError) in try client.feed(raw) } }.get()
        } throws: { error in
            let error = error as? RealtimeError
            return error?.code == .tlsFailed && error?.context.detail == "bad_record_mac"
        }
    }
}

extension TLSDirectReadingTests {
    @Test("a rejected record is answered with the matching fatal alert, and no close_notify after it",
          arguments: [("tampered", "bad record mac"), ("too long", "record overflow"),
                      ("unprotected change_cipher_spec", "unexpected message"), ("short", "bad record mac"),
                      ("not TLS", "protocol version"), ("version 0x0301", nil)])
    func alertOnRejection(_ name: String, alert: String?) throws {
        // The server reads through OpenSSL, which names the alert it receives.
        let (client, server) = try pair(client: .directDecryptionOptimization, server: .openSSL)
        try server.engine.writePlaintext(Self.pattern(100, seed: 1))
        try server.send(to: client)
        #expect(client.engine.readsRecordsDirectly)
        var bytes: [UInt8]
        switch name {
        case "tampered":
            try server.engine.writePlaintext(Self.pattern(100, seed: 2))
            bytes = server.drain()
            bytes[bytes.count - 3] ^= 0x40
        case "too long": bytes = [23, 3, 3, 0x41, 0x01] + [UInt8](repeating: 0, count: 10)
        case "unprotected change_cipher_spec": bytes = [20, 3, 3, 0, 1, 1]
        case "short": bytes = [23, 3, 3, 0, 16] + [UInt8](repeating: 0, count: 16)
        case "not TLS": bytes = [23, 2, 3, 0, 20]
        default: bytes = [23, 3, 1, 0, 20]
        }
        #expect(throws: RealtimeError.self) {
            try bytes.withUnsafeMutableBytes { raw in Result { () throws(RealtimeError) in try client.feed(raw) } }.get()
        }
        client.engine.shutdown()  // what the channel does next; must add nothing after an alert
        let sent = client.drain()
        guard let alert else {
            // decode_error cannot be led out of OpenSSL: the connection ends with close_notify alone.
            #expect(!sent.isEmpty)
            var copy = sent
            try copy.withUnsafeMutableBytes { raw in Result { () throws(RealtimeError) in try server.feed(raw) } }.get()
            #expect(server.closedByPeer)
            return
        }
        // One protected record: the alert alone (5-byte header, 2 bytes + content type + 16-byte tag).
        #expect(sent.count == 5 + 2 + 1 + 16)
        var copy = sent
        #expect {
            try copy.withUnsafeMutableBytes { raw in Result { () throws(RealtimeError) in try server.feed(raw) } }.get()
        } throws: { error in
            let error = error as? RealtimeError
            return error?.code == .tlsFailed && error?.context.detail?.contains(alert) == true
        }
    }
}

/// Records sealed by the test itself, to show the reader what OpenSSL never sends.
@Suite("TLS 1.3 record reader on crafted records")
struct TLS13RecordReaderTests {
    static let secret = hexBytes("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643")

    /// Seals `content` + `type` + `padding` zeros as record `sequence` (RFC 8446 §5.2).
    final class Sealer {
        var secret = TLS13RecordReaderTests.secret
        var sequence: UInt64 = 0
        let suite = TLS13Suite.aes128GCMSHA256

        func seal(_ content: [UInt8], type: UInt8, padding: Int = 0) -> [UInt8] {
            let key = suite.expandLabel(secret: secret, label: "key", length: 16)
            var nonce = suite.expandLabel(secret: secret, label: "iv", length: 12)
            for index in 0..<8 { nonce[4 + index] ^= UInt8(truncatingIfNeeded: sequence >> (56 - 8 * UInt64(index))) }
            sequence += 1
            let inner = content + [type] + [UInt8](repeating: 0, count: padding)
            let length = inner.count + 16
            let header: [UInt8] = [23, 3, 3, UInt8(length >> 8), UInt8(length & 0xFF)]
            let context = EVP_CIPHER_CTX_new()!
            defer { EVP_CIPHER_CTX_free(context) }
            var output = [UInt8](repeating: 0, count: inner.count + 16)
            var written: Int32 = 0
            precondition(EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce) == 1)
            precondition(EVP_EncryptUpdate(context, nil, &written, header, 5) == 1)
            precondition(EVP_EncryptUpdate(context, &output, &written, inner, Int32(inner.count)) == 1)
            var tail: Int32 = 0
            precondition(EVP_EncryptFinal_ex(context, &output, &tail) == 1)
            var tag = [UInt8](repeating: 0, count: 16)
            precondition(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, &tag) == 1)
            output.replaceSubrange(inner.count..<inner.count + 16, with: tag)
            return header + output
        }

        func keyUpdate(requested: Bool) -> [UInt8] {
            let record = seal([24, 0, 0, 1, requested ? 1 : 0], type: 22)
            secret = suite.expandLabel(secret: secret, label: "traffic upd", length: 32)
            sequence = 0
            return record
        }
    }

    struct Read {
        var plaintext: [UInt8] = []
        var outcome: TLS13RecordReader.Outcome?
        var error: RealtimeError?
    }

    func read(_ stream: [UInt8], cut: (Int) -> [Int] = Cuts.whole, reader: TLS13RecordReader? = nil) throws -> Read {
        let reader = try reader ?? TLS13RecordReader(suite: .aes128GCMSHA256, secret: Self.secret, sequenceNumber: 0)
        var result = Read()
        var offset = 0
        for size in cut(stream.count) {
            var piece = Array(stream[offset..<offset + size])
            offset += size
            var plaintext: [UInt8] = []
            let outcome = piece.withUnsafeMutableBytes { bytes in
                Result { () throws(RealtimeError) in
                    try reader.read(bytes) { chunk in
                        plaintext += chunk
                        return true
                    }
                }
            }
            result.plaintext += plaintext
            do {
                result.outcome = try outcome.get()
            } catch {
                result.error = error
                return result
            }
        }
        return result
    }

    @Test("padding, empty records, tickets split over records, key updates, under every cut (EVP)", arguments: 0..<24)
    func mixedStreamEVP(seed: Int) throws { try mixedStream(seed: seed, path: .evp) }

    @Test("padding, empty records, tickets split over records, key updates, under every cut (VAES path)",
          AESGCMOpenTests.wideEnabled, arguments: 0..<24)
    func mixedStreamWide(seed: Int) throws { try mixedStream(seed: seed, path: .wideAESGCM) }

    func mixedStream(seed: Int, path: AEADOpener.Path) throws {
        let sealer = Sealer()
        var stream: [UInt8] = []
        var expected: [UInt8] = []
        // A well-formed NewSessionTicket: lifetime, age_add, a 1-byte nonce, a 26-byte ticket, no extensions.
        let ticket: [UInt8] = [4, 0, 0, 40, 0, 0, 0, 60, 1, 2, 3, 4, 1, 9, 0, 26]
            + [UInt8](repeating: 0xAB, count: 26) + [0, 0]
        stream += sealer.seal(Array(ticket[0..<10]), type: 22)
        stream += sealer.seal(Array(ticket[10...]), type: 22, padding: 7)
        for index in 0..<20 {
            let data = TLSDirectReadingTests.pattern(index * 800, seed: index)
            stream += sealer.seal(data, type: 23, padding: index % 3 == 0 ? 100 : 0)
            expected += data
            if index % 7 == 6 { stream += sealer.keyUpdate(requested: index == 13) }
        }
        stream += sealer.seal(Array(repeating: 0x55, count: 16_384), type: 23)
        expected += Array(repeating: 0x55, count: 16_384)
        let cut: (Int) -> [Int] = switch seed {
        case 0: Cuts.whole
        case 1: Cuts.single
        default: Cuts.random(seed: UInt64(seed))
        }
        let reader = try TLS13RecordReader(suite: .aes128GCMSHA256, secret: Self.secret, sequenceNumber: 0, path: path)
        #expect(reader.aeadPath == path)
        let result = try read(stream, cut: cut, reader: reader)
        #expect(result.error == nil)
        #expect(difference(result.plaintext, expected) == nil)
        #expect(result.outcome == .needMoreCiphertext)
        #expect(reader.keyUpdates == 2)
        #expect(reader.peerRequestedKeyUpdate)
        #expect(reader.bufferedByteCount == 0)
    }

    @Test("an encrypted alert other than close_notify is a typed error naming it")
    func fatalAlert() throws {
        let sealer = Sealer()
        let result = try read(sealer.seal([1, 2], type: 23) + sealer.seal([2, 40], type: 21))
        #expect(result.plaintext == [1, 2])
        #expect(result.error?.code == .tlsFailed)
        #expect(result.error?.message.contains("handshake failure") == true)
    }

    @Test("close_notify stops reading: later records are ignored")
    func closeNotify() throws {
        let sealer = Sealer()
        let result = try read(sealer.seal([9], type: 23) + sealer.seal([1, 0], type: 21) + sealer.seal([8], type: 23))
        #expect(result.plaintext == [9])
        #expect(result.outcome == .closedByPeer)
    }

    @Test("wipeKeys() zeroes the secret, IV and nonce storage; every read afterwards fails typed")
    func wipeKeys() throws {
        let sealer = Sealer()
        let reader = try TLS13RecordReader(suite: .aes128GCMSHA256, secret: Self.secret, sequenceNumber: 0)
        #expect(reader.keyStorageSnapshot.prefix(32) == Self.secret[...])
        #expect(try read(sealer.seal([1, 2, 3], type: 23), reader: reader).plaintext == [1, 2, 3])
        reader.wipeKeys()
        #expect(reader.keyStorageSnapshot.count == 32 + 24)
        #expect(reader.keyStorageSnapshot.allSatisfy { $0 == 0 })
        let after = try read(sealer.seal([4], type: 23), reader: reader)
        #expect(after.plaintext.isEmpty)
        #expect(after.error?.code == .tlsFailed)
        #expect(after.error?.context.detail == "internal_error")
    }

    @Test("the keys are zeroed as soon as the peer closes or a record is rejected", arguments: ["close_notify", "bad record"])
    func keysWipedWhenDone(_ ending: String) throws {
        let sealer = Sealer()
        let reader = try TLS13RecordReader(suite: .aes128GCMSHA256, secret: Self.secret, sequenceNumber: 0)
        let first = sealer.seal([7], type: 23)
        var last = sealer.seal([1, 0], type: 21)
        if ending == "bad record" { last[last.count - 1] ^= 1 }
        let result = try read(first + last, reader: reader)
        #expect(result.plaintext == [7])
        #expect(ending == "close_notify" ? result.outcome == .closedByPeer : result.error?.context.detail == "bad_record_mac")
        #expect(reader.keyStorageSnapshot.allSatisfy { $0 == 0 })
    }

    @Test("a key update replaces the secret in place: the old one is not left beside the new")
    func keyUpdateOverwritesSecret() throws {
        let sealer = Sealer()
        let reader = try TLS13RecordReader(suite: .aes128GCMSHA256, secret: Self.secret, sequenceNumber: 0)
        let stream = sealer.keyUpdate(requested: false) + sealer.seal([5], type: 23)
        #expect(try read(stream, reader: reader).plaintext == [5])
        let storage = reader.keyStorageSnapshot
        #expect(Array(storage.prefix(32)) == sealer.secret)
        #expect(!storage.contains(subsequence: Self.secret))
    }

    @Test("malformed records each get their own typed error", arguments: [
        "unprotected alert", "unprotected change_cipher_spec", "no content type", "too long", "plaintext too long",
        "short", "not TLS", "version 0x0301", "malformed ticket", "KeyUpdate request 2",
        "data inside a handshake message", "data after KeyUpdate", "unknown handshake message", "wrong sequence number",
    ])
    func malformed(_ name: String) throws {
        let sealer = Sealer()
        let stream: [UInt8]
        let detail: String
        switch name {
        case "unprotected alert": (stream, detail) = ([21, 3, 3, 0, 2, 2, 80], "unexpected_message")
        case "unprotected change_cipher_spec": (stream, detail) = ([20, 3, 3, 0, 1, 1], "unexpected_message")
        case "no content type": (stream, detail) = (sealer.seal([], type: 0, padding: 5), "unexpected_message")
        case "too long": (stream, detail) = ([23, 3, 3, 0x41, 0x01] + [UInt8](repeating: 0, count: 10), "record_overflow")
        case "plaintext too long": (stream, detail) = (sealer.seal([UInt8](repeating: 1, count: 16_385), type: 23), "record_overflow")
        case "short": (stream, detail) = ([23, 3, 3, 0, 16] + [UInt8](repeating: 0, count: 16), "bad_record_mac")
        case "not TLS": (stream, detail) = ([23, 2, 3, 0, 20], "protocol_version")
        case "version 0x0301": (stream, detail) = ([23, 3, 1, 0, 20], "decode_error")
        case "malformed ticket": (stream, detail) = (sealer.seal([4, 0, 0, 2, 1, 2], type: 22), "decode_error")
        case "KeyUpdate request 2": (stream, detail) = (sealer.seal([24, 0, 0, 1, 2], type: 22), "illegal_parameter")
        case "data inside a handshake message":
            (stream, detail) = (sealer.seal([4, 0, 0, 9, 1], type: 22) + sealer.seal([1], type: 23), "unexpected_message")
        case "data after KeyUpdate":
            (stream, detail) = (sealer.seal([24, 0, 0, 1, 0, 4, 0, 0, 0], type: 22), "unexpected_message")
        case "unknown handshake message": (stream, detail) = (sealer.seal([2, 0, 0, 0], type: 22), "unexpected_message")
        default:
            sealer.sequence = 1
            (stream, detail) = (sealer.seal([1], type: 23), "bad_record_mac")
        }
        let result = try read(stream)
        #expect(result.plaintext.isEmpty)
        #expect(result.error?.code == .tlsFailed)
        #expect(result.error?.context.detail == detail)
    }
}

/// Nil when the byte arrays are equal, else their sizes and the first difference: long arrays are not
/// printed when a test fails.
func difference(_ received: [UInt8], _ expected: [UInt8]) -> String? {
    guard received != expected else { return nil }
    let first = zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
    return "\(received.count) bytes received, \(expected.count) expected, first difference at \(first.map(String.init) ?? "the end")"
}

func hexBytes(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
