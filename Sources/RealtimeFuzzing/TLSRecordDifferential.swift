#if canImport(COpenSSL)
import COpenSSL
import Foundation
import RealtimeCore
import RealtimeWebSocket

/// Differential target: the TLS 1.3 direct record reader (`TLS13RecordReader`) against OpenSSL's own
/// record layer, fed the same ciphertext.
///
/// Each input sets up a real TLS 1.3 connection in memory (OpenSSL on both ends, memory BIOs, the
/// server's traffic secret captured the way `TLSEngine` captures it), then builds a record stream
/// as the server would send it, sealed under that secret: application data of any size and padding,
/// handshake messages split anywhere (tickets, key updates that do or do not switch keys), alerts,
/// close_notify, unprotected bytes, flipped bits. The stream is cut into reads and handed to both the
/// client's OpenSSL and a reader starting from the same secret and sequence number.
///
/// Input: a suite byte, a cut-seed byte, then steps (see ``StreamBuilder/step(_:)``).
///
/// Property: after every read both have produced the same plaintext, byte for byte, and have ended the
/// same way (close_notify, or failure with the same alert sent or received); at the end, when neither
/// ended, both followed the same key updates, agree whether one was asked of us, and a partial record
/// OpenSSL holds is held by the reader too.
package enum TLSRecordDifferential {
    /// Returns how both readers ended (they agree, or this throws).
    @discardableResult
    package static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) -> Ending {
        var input = FuzzInput(bytes)
        let suite = TLS13Suite.allCases[input.int(below: TLS13Suite.allCases.count)]
        var cutRandom = SplitMix64(seed: UInt64(input.byte()))
        guard let connection = MemoryTLSConnection(suite: suite) else {
            throw FuzzFailure("could not set up the in-memory TLS 1.3 connection")
        }
        var builder = StreamBuilder(sealer: RecordSealer(suite: suite, secret: connection.serverSecret,
                                                         sequenceNumber: connection.serverSequence))
        while !input.isAtEnd { builder.step(&input) }
        let stream = builder.stream
        let steps = builder.steps.prefix(12).joined(separator: ", ")

        // Cut sizes: mostly small reads, sometimes whole records and more; at most about 300 reads.
        let scale = max([1, 7, 64, 700, 20_000][Int(cutRandom.next() % 5)], stream.count / 150)
        var cuts: [Int] = []
        var left = stream.count
        while left > 0 {
            let size = min(left, Int(cutRandom.next() % UInt64(scale)) + 1)
            cuts.append(size)
            left -= size
        }
        do {
            return try compare(stream, cuts: cuts, connection: connection, suite: suite)
        } catch {
            throw FuzzFailure("\(error.message)\n steps: \(steps)")
        }
    }

    /// How a reader stopped.
    package enum Ending: Equatable, CustomStringConvertible {
        case open
        case closedByPeer
        /// Failed; the alert it sends, if any.
        case sentAlert(Int32)
        /// Failed because the peer sent this alert.
        case receivedAlert(Int32)
        case failedWithoutAlert(String)

        package var description: String {
            switch self {
            case .open: "open"
            case .closedByPeer: "close_notify"
            case .sentAlert(let alert): "fails, sending alert \(alert)"
            case .receivedAlert(let alert): "fails on the peer's alert \(alert)"
            case .failedWithoutAlert(let why): "fails without an alert (\(why))"
            }
        }
    }

    static func compare(_ stream: [UInt8], cuts: [Int], connection: MemoryTLSConnection,
                        suite: TLS13Suite) throws(FuzzFailure) -> Ending {
        let reader: TLS13RecordReader
        do {
            reader = try TLS13RecordReader(suite: suite, secret: connection.serverSecret,
                                           sequenceNumber: connection.serverSequence)
        } catch {
            throw FuzzFailure("the reader refused the captured secret: \(error)")
        }
        var direct: [UInt8] = []
        var directEnding = Ending.open
        var openSSL: [UInt8] = []
        var openSSLEnding = Ending.open
        var offset = 0
        for (index, size) in cuts.enumerated() {
            let piece = Array(stream[offset..<offset + size])
            offset += size
            if directEnding == .open {
                // The reader decrypts in place: it gets its own copy.
                var piece = piece
                let outcome = piece.withUnsafeMutableBytes { bytes in
                    Result(catching: { () throws(RealtimeError) in
                        try reader.read(bytes) { plaintext in
                            direct += plaintext
                            return true
                        }
                    })
                }
                switch outcome {
                case .success(.closedByPeer): directEnding = .closedByPeer
                case .success: break
                case .failure(let error):
                    directEnding = ending(of: error)
                }
            }
            if openSSLEnding == .open {
                openSSLEnding = connection.clientReads(piece, into: &openSSL)
            }
            let read = "read \(index + 1) of \(cuts.count) (\(offset) of \(stream.count) bytes)"
            try require(direct == openSSL, """
                plaintext differs after \(read): reader \(direct.count) bytes (\(directEnding)), \
                OpenSSL \(openSSL.count) bytes (\(openSSLEnding))
                """)
            try require(directEnding == openSSLEnding,
                        "endings differ after \(read): reader: \(directEnding); OpenSSL: \(openSSLEnding)")
        }
        guard directEnding == .open else { return directEnding }
        // One way only: OpenSSL does not count a lone record header it has read as pending.
        try require(reader.holdsPartialRecord || !connection.clientHoldsPartialRecord,
                    "OpenSSL holds the start of a record at the end, the reader does not")
        try require(reader.keyUpdates == connection.observer.keyUpdatesRead,
                    "key updates followed: reader \(reader.keyUpdates), OpenSSL \(connection.observer.keyUpdatesRead)")
        try require(reader.peerRequestedKeyUpdate == connection.owesKeyUpdate,
                    "a key update asked of us: reader \(reader.peerRequestedKeyUpdate), OpenSSL \(connection.owesKeyUpdate)")
        return .open
    }

    static func hex(_ bytes: some Collection<UInt8>) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    /// The reader's error as an ending: its `context.detail` names the alert it would have OpenSSL send.
    static func ending(of error: RealtimeError) -> Ending {
        let alerts: [String: Int32] = ["unexpected_message": 10, "bad_record_mac": 20, "record_overflow": 22,
                                       "illegal_parameter": 47, "decode_error": 50, "protocol_version": 70,
                                       "internal_error": 80]
        if let detail = error.context.detail, let alert = alerts[detail] { return .sentAlert(alert) }
        // "the peer sent the TLS alert <name> (<number>)"
        if error.message.hasPrefix("the peer sent the TLS alert"), let open = error.message.lastIndex(of: "("),
           let number = Int32(error.message[error.message.index(after: open)...].prefix { $0.isNumber }) {
            return .receivedAlert(number)
        }
        return .failedWithoutAlert(error.message)
    }
}

/// Builds the server's side of the stream, step by step.
struct StreamBuilder {
    var sealer: RecordSealer
    private(set) var stream: [UInt8] = []
    /// What each step added, for failure messages.
    private(set) var steps: [String] = []
    /// Where the last record is, for the bit-flipping step.
    private var lastRecord: Range<Int>?

    init(sealer: RecordSealer) { self.sealer = sealer }

    /// `0` application data (2-byte length up to 16,400, a pattern byte, padding), `1` handshake bytes
    /// (any, so messages split and malformed ones happen), `2` KeyUpdate (requested or not; a flag
    /// keeps the old key, so the next records fail to open), `3` an alert (level, description, extra
    /// bytes), `4` close_notify, `5` unprotected bytes, `6` a flipped bit in the last record, `7` a
    /// record of any content type with any content and padding.
    mutating func step(_ input: inout FuzzInput) {
        switch input.byte() % 8 {
        case 0:
            let length = input.int(below: 16_401)
            let pattern = input.byte()
            let content = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 ^ Int(pattern)) }
            let padding = padding(&input)
            append(sealer.seal(content, type: 23, padding: padding), "data(\(length)+\(padding))")
        case 1:
            let bytes = input.bytes(upTo: 80)
            let padding = padding(&input)
            append(sealer.seal(bytes, type: 22, padding: padding), "handshake(\(TLSRecordDifferential.hex(bytes))+\(padding))")
        case 2:
            let flags = input.byte()
            append(sealer.seal([24, 0, 0, 1, flags & 1], type: 22, padding: 0),
                   "keyUpdate(requested: \(flags & 1), switch: \(flags & 2 == 0))")
            if flags & 2 == 0 { sealer.updateKeys() }
        case 3:
            let alert = [input.byte(), input.byte()] + [UInt8](repeating: 0xAA, count: input.int(below: 3))
            let padding = padding(&input)
            append(sealer.seal(alert, type: 21, padding: padding), "alert(\(TLSRecordDifferential.hex(alert))+\(padding))")
        case 4:
            append(sealer.seal([1, 0], type: 21, padding: 0), "close_notify")
        case 5:
            let bytes = input.bytes(upTo: 40)
            append(bytes, "raw(\(TLSRecordDifferential.hex(bytes)))")
        case 6:
            guard let record = lastRecord, !record.isEmpty else { return }
            let position = record.lowerBound + input.int(below: record.count)
            let bit = input.byte() % 8
            stream[position] ^= UInt8(1) << bit
            steps.append("flip(byte \(position - record.lowerBound), bit \(bit))")
        default:
            let type = input.byte()
            let bytes = input.bytes(upTo: 40)
            let padding = padding(&input)
            append(sealer.seal(bytes, type: type, padding: padding),
                   "record(type \(type), \(TLSRecordDifferential.hex(bytes))+\(padding))")
        }
    }

    private mutating func append(_ record: [UInt8], _ step: String) {
        steps.append(step)
        lastRecord = stream.count..<stream.count + record.count
        stream += record
    }

    /// Usually none; sometimes a little, sometimes enough to overflow a record.
    private func padding(_ input: inout FuzzInput) -> Int {
        let choice = input.byte()
        switch choice >> 6 {
        case 0, 1: return 0
        case 2: return Int(choice & 0x3F)
        default: return Int(choice & 0x3F) * 300
        }
    }
}

/// Seals TLS 1.3 records (RFC 8446 §5.2) under a traffic secret, as the server would.
struct RecordSealer {
    let suite: TLS13Suite
    private(set) var secret: [UInt8]
    private(set) var sequenceNumber: UInt64

    init(suite: TLS13Suite, secret: [UInt8], sequenceNumber: UInt64) {
        self.suite = suite
        self.secret = secret
        self.sequenceNumber = sequenceNumber
    }

    mutating func updateKeys() {
        secret = suite.expandLabel(secret: secret, label: "traffic upd", length: secret.count)
        sequenceNumber = 0
    }

    mutating func seal(_ content: [UInt8], type: UInt8, padding: Int) -> [UInt8] {
        let key = suite.expandLabel(secret: secret, label: "key", length: suite == .aes128GCMSHA256 ? 16 : 32)
        var nonce = suite.expandLabel(secret: secret, label: "iv", length: 12)
        for index in 0..<8 {
            nonce[4 + index] ^= UInt8(truncatingIfNeeded: sequenceNumber >> (56 - 8 * UInt64(index)))
        }
        sequenceNumber &+= 1
        let inner = content + [type] + [UInt8](repeating: 0, count: padding)
        let length = inner.count + 16
        let header: [UInt8] = [23, 3, 3, UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        let cipher = switch suite {
        case .aes128GCMSHA256: EVP_aes_128_gcm()
        case .aes256GCMSHA384: EVP_aes_256_gcm()
        case .chaCha20Poly1305SHA256: EVP_chacha20_poly1305()
        }
        guard let context = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: inner.count + 16)
        var written: Int32 = 0
        var tail: Int32 = 0
        guard EVP_EncryptInit_ex(context, cipher, nil, key, nonce) == 1,
              EVP_EncryptUpdate(context, nil, &written, header, 5) == 1,
              EVP_EncryptUpdate(context, &output, &written, inner, Int32(inner.count)) == 1,
              EVP_EncryptFinal_ex(context, &output, &tail) == 1 else { fatalError("sealing a record failed") }
        var tag = [UInt8](repeating: 0, count: 16)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, &tag) == 1 else { fatalError("no tag") }
        output.replaceSubrange(inner.count..<inner.count + 16, with: tag)
        return header + output
    }
}

/// Counts what OpenSSL's callbacks report for one connection.
final class OpenSSLObserver {
    var sentAlert: Int32?
    var receivedAlert: Int32?
    var keyUpdatesRead = 0
    var keyUpdatesWritten = 0
}

/// A TLS 1.3 connection between two OpenSSL endpoints in memory, handshake done, with the server's
/// application traffic secret captured on the client through the same key-log hook `TLSEngine` uses.
final class MemoryTLSConnection {
    let client: OpaquePointer
    private let server: OpaquePointer
    /// The client's input: what the server "sends".
    private let clientInput: OpaquePointer
    let serverSecret: [UInt8]
    /// Records the client read under that secret before the stream starts (none: no tickets are sent).
    let serverSequence: UInt64
    let observer = OpenSSLObserver()
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)

    init?(suite: TLS13Suite) {
        let contexts = OpenSSLContexts.shared
        guard let contexts, let client = SSL_new(contexts.client(suite)), let server = SSL_new(contexts.server) else { return nil }
        self.client = client
        self.server = server
        let bios = (0..<4).map { _ -> OpaquePointer in
            let bio = BIO_new(BIO_s_mem())!
            _ = realtime_BIO_set_mem_eof_return(bio, -1)  // empty means "later", not end of stream
            return bio
        }
        SSL_set_bio(client, bios[0], bios[1])
        SSL_set_bio(server, bios[2], bios[3])
        clientInput = bios[0]
        SSL_set_connect_state(client)
        SSL_set_accept_state(server)

        let capture = UnsafeMutablePointer<realtime_tls_read_secret>.allocate(capacity: 1)
        defer { capture.deallocate() }
        guard realtime_tls_capture_read_secret(client, capture, "SERVER_TRAFFIC_SECRET_0") == 1 else { return nil }
        var done = false
        for _ in 0..<8 where !done {
            let clientDone = SSL_do_handshake(client) == 1
            Self.move(from: bios[1], to: bios[2])
            let serverDone = SSL_do_handshake(server) == 1
            Self.move(from: bios[3], to: bios[0])
            done = clientDone && serverDone
        }
        let length = Int(capture.pointee.secret_length)
        guard done, length == (suite == .aes256GCMSHA384 ? 48 : 32), capture.pointee.stale == 0 else {
            realtime_tls_stop_capture(client, capture)
            return nil
        }
        serverSecret = withUnsafeBytes(of: &capture.pointee.secret) { Array($0.prefix(length)) }
        serverSequence = capture.pointee.records_under_secret
        realtime_tls_stop_capture(client, capture)
        ERR_clear_error()

        SSL_set_ex_data(client, OpenSSLContexts.observerIndex, Unmanaged.passUnretained(observer).toOpaque())
        SSL_set_info_callback(client) { ssl, kind, value in
            guard let observer = OpenSSLContexts.observer(of: ssl) else { return }
            if kind & SSL_CB_WRITE_ALERT == SSL_CB_WRITE_ALERT, observer.sentAlert == nil { observer.sentAlert = value & 0xFF }
            // The last alert read is the one that ended the connection (user_canceled ones before it are ignored).
            if kind & SSL_CB_READ_ALERT == SSL_CB_READ_ALERT { observer.receivedAlert = value & 0xFF }
        }
        SSL_set_msg_callback(client) { writing, _, contentType, bytes, length, ssl, _ in
            guard contentType == SSL3_RT_HANDSHAKE, length > 0, let bytes,
                  let observer = OpenSSLContexts.observer(of: ssl) else { return }
            let type = bytes.load(as: UInt8.self)
            guard type == 24 else { return }
            if writing == 0 { observer.keyUpdatesRead += 1 } else { observer.keyUpdatesWritten += 1 }
        }
    }

    deinit {
        SSL_free(client)
        SSL_free(server)
    }

    private static func move(from source: OpaquePointer, to destination: OpaquePointer) {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = BIO_read(source, &chunk, Int32(chunk.count))
            guard count > 0 else { return }
            _ = BIO_write(destination, chunk, count)
        }
    }

    /// Gives `bytes` to the client's OpenSSL and reads every record it can; appends the plaintext.
    func clientReads(_ bytes: [UInt8], into plaintext: inout [UInt8]) -> TLSRecordDifferential.Ending {
        if !bytes.isEmpty { _ = BIO_write(clientInput, bytes, Int32(bytes.count)) }
        ERR_clear_error()
        while true {
            let count = SSL_read(client, &buffer, Int32(buffer.count))
            if count > 0 {
                plaintext += buffer[0..<Int(count)]
                continue
            }
            let error = SSL_get_error(client, count)
            switch error {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .open
            case SSL_ERROR_ZERO_RETURN:
                return .closedByPeer
            default:
                defer { ERR_clear_error() }
                if let alert = observer.sentAlert { return .sentAlert(alert) }
                if let alert = observer.receivedAlert { return .receivedAlert(alert) }
                let code = ERR_peek_error()
                var text = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &text, text.count)
                return .failedWithoutAlert(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                                                  as: UTF8.self))
            }
        }
    }

    /// True when the peer asked for our KeyUpdate: OpenSSL sent it, or queued it for its next write.
    var owesKeyUpdate: Bool {
        observer.keyUpdatesWritten > 0 || SSL_get_key_update_type(client) != SSL_KEY_UPDATE_NONE
    }

    /// True when the start of a record waits inside OpenSSL for the rest.
    var clientHoldsPartialRecord: Bool {
        realtime_BIO_ctrl_pending(clientInput) > 0 || SSL_has_pending(client) == 1
    }
}

/// Client and server contexts made once per process: an Ed25519 self-signed certificate (fast to make
/// and to sign with), TLS 1.3 only, no session tickets, one client context per suite.
final class OpenSSLContexts {
    let server: OpaquePointer
    private let clients: [OpaquePointer]

    /// Made on first use; the fuzzer and the tests use it from one thread at a time.
    private static let made = Locked(OpenSSLContexts())
    static var shared: OpenSSLContexts? { made.withLock { $0 } }
    /// The ex_data slot holding each client's ``OpenSSLObserver`` (slot 0 is TLSEngine's secret capture).
    static let observerIndex: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)

    static func observer(of ssl: OpaquePointer?) -> OpenSSLObserver? {
        guard let ssl, let pointer = SSL_get_ex_data(ssl, observerIndex) else { return nil }
        return Unmanaged<OpenSSLObserver>.fromOpaque(pointer).takeUnretainedValue()
    }

    func client(_ suite: TLS13Suite) -> OpaquePointer {
        clients[TLS13Suite.allCases.firstIndex(of: suite)!]
    }

    private init?() {
        guard let keyContext = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(keyContext) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(keyContext) == 1, EVP_PKEY_keygen(keyContext, &key) == 1, let key else { return nil }
        defer { EVP_PKEY_free(key) }
        guard let certificate = X509_new() else { return nil }
        defer { X509_free(certificate) }
        let name = X509_get_subject_name(certificate)
        guard X509_set_version(certificate, 2) == 1,
              ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1) == 1,
              X509_gmtime_adj(X509_getm_notBefore(certificate), -3_600) != nil,
              X509_gmtime_adj(X509_getm_notAfter(certificate), 86_400) != nil,
              X509_set_pubkey(certificate, key) == 1,
              X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "fuzz.test", -1, -1, 0) == 1,
              X509_set_issuer_name(certificate, name) == 1,
              X509_sign(certificate, key, nil) > 0 else { return nil }

        guard let server = SSL_CTX_new(TLS_server_method()) else { return nil }
        guard realtime_SSL_CTX_set_min_proto_version(server, TLS1_3_VERSION) == 1,
              SSL_CTX_use_certificate(server, certificate) == 1, SSL_CTX_use_PrivateKey(server, key) == 1,
              SSL_CTX_set_num_tickets(server, 0) == 1 else {
            SSL_CTX_free(server)
            return nil
        }
        var clients: [OpaquePointer] = []
        for suite in TLS13Suite.allCases {
            guard let client = SSL_CTX_new(TLS_client_method()) else { return nil }
            let name = switch suite {
            case .aes128GCMSHA256: "TLS_AES_128_GCM_SHA256"
            case .aes256GCMSHA384: "TLS_AES_256_GCM_SHA384"
            case .chaCha20Poly1305SHA256: "TLS_CHACHA20_POLY1305_SHA256"
            }
            // The fuzz server is trusted by construction; verification is not what is tested here.
            SSL_CTX_set_verify(client, SSL_VERIFY_NONE, nil)
            guard realtime_SSL_CTX_set_min_proto_version(client, TLS1_3_VERSION) == 1,
                  SSL_CTX_set_ciphersuites(client, name) == 1 else { return nil }
            realtime_SSL_CTX_capture_secrets(client)
            clients.append(client)
        }
        self.server = server
        self.clients = clients
    }
}
#endif
