#if canImport(COpenSSL)
import COpenSSL
import RealtimeCore

/// A TLS 1.3 cipher suite the direct record reader decrypts (RFC 8446 §B.4).
package enum TLS13Suite: Sendable, CaseIterable {
    case aes128GCMSHA256
    case aes256GCMSHA384
    case chaCha20Poly1305SHA256

    /// The suite of a two-byte IANA id (0x1301…0x1303); nil for the others (CCM), which stay with OpenSSL.
    package init?(id: UInt16) {
        switch id {
        case 0x1301: self = .aes128GCMSHA256
        case 0x1302: self = .aes256GCMSHA384
        case 0x1303: self = .chaCha20Poly1305SHA256
        default: return nil
        }
    }

    var keyLength: Int { self == .aes128GCMSHA256 ? 16 : 32 }
    var hashLength: Int { self == .aes256GCMSHA384 ? 48 : 32 }
    static let ivLength = 12
    static let tagLength = 16

    var algorithm: AEADOpener.Algorithm {
        switch self {
        case .aes128GCMSHA256: .aes128GCM
        case .aes256GCMSHA384: .aes256GCM
        case .chaCha20Poly1305SHA256: .chaCha20Poly1305
        }
    }

    var digest: OpaquePointer? { self == .aes256GCMSHA384 ? EVP_sha384() : EVP_sha256() }

    /// HKDF-Expand-Label(secret, label, "", output.count) of RFC 8446 §7.1 into `output`, for lengths up to
    /// one hash output (all that traffic keys, IVs and updated secrets need). `output` may be `secret`.
    package func expandLabel(secret: UnsafeRawBufferPointer, label: String, into output: UnsafeMutableRawBufferPointer) {
        let length = output.count
        precondition(length <= hashLength, "one HKDF block only")
        let fullLabel = Array("tls13 \(label)".utf8)
        // HkdfLabel { uint16 length; opaque label<7..255>; opaque context<0..255> } then the block counter 1.
        var info: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF), UInt8(fullLabel.count)]
        info += fullLabel
        info += [0, 1]
        var block = [UInt8](repeating: 0, count: 64)
        var blockLength: UInt32 = 0
        _ = HMAC(digest, secret.baseAddress, Int32(secret.count), info, info.count, &block, &blockLength)
        block.withUnsafeBytes { output.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
        secureZero(&block)
    }

    /// The same, returned as an array (tests, and callers that wipe the result themselves).
    package func expandLabel(secret: [UInt8], label: String, length: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        secret.withUnsafeBytes { secret in
            output.withUnsafeMutableBytes { expandLabel(secret: secret, label: label, into: $0) }
        }
        return output
    }
}

/// Decrypts the peer's TLS 1.3 application-traffic records itself (RFC 8446 §5), after OpenSSL has done
/// the handshake: one AEAD pass, in place, over the bytes read off the socket, where OpenSSL's record
/// layer copies them into its BIO, into its record buffer and out again. Post-handshake
/// messages are handled here (session tickets are dropped, KeyUpdate moves to the next secret and asks
/// the engine to answer when the peer requested it); sending stays with OpenSSL. Fed bytes, it owns no
/// socket. Confined to one thread at a time.
package final class TLS13RecordReader {
    /// Why a read stopped.
    package enum Outcome: Equatable {
        /// All complete records are decrypted; a partial one is kept for the next call.
        case needMoreCiphertext
        /// The peer sent close_notify; nothing after it is read.
        case closedByPeer
        /// `deliver` asked to stop; the rest of this call's bytes are dropped.
        case stopped
    }

    /// The largest TLSCiphertext.length (RFC 8446 §5.2): 2^14 plus 256 bytes of AEAD expansion.
    package static let maximumCiphertextLength = 16_384 + 256
    /// The largest plaintext one record can carry.
    package static let maximumPlaintextLength = 16_384
    /// Post-handshake messages (session tickets) beyond this are refused rather than buffered.
    package static let maximumHandshakeMessageLength = 65_536

    package let suite: TLS13Suite
    private let opener: AEADOpener
    /// The traffic secret (hash length), then the IV and the per-record nonce (12 bytes each): one
    /// allocation, zeroed by ``wipeKeys()`` and at deinit.
    private let keyStorage: UnsafeMutableRawBufferPointer
    private var secret: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: keyStorage[0..<suite.hashLength])
    }
    private var iv: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: keyStorage[suite.hashLength..<suite.hashLength + 12])
    }
    private var nonce: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: keyStorage[suite.hashLength + 12..<suite.hashLength + 24])
    }
    private var keysWiped = false
    package private(set) var sequenceNumber: UInt64
    /// Key updates the peer made since the reader took over.
    package private(set) var keyUpdates = 0
    /// Set when the peer's KeyUpdate asked us to update our sending keys; the engine answers and clears it.
    package var peerRequestedKeyUpdate = false
    private var partialRecord: [UInt8] = []
    private var handshakeBytes: [UInt8] = []
    private var peerClosed = false

    /// A reader for records protected with `secret` (the peer's current application traffic secret, copied:
    /// the caller wipes its own), the next of which has sequence number `sequenceNumber`; `path` picks the
    /// AEAD code (the fastest here when nil).
    package init(suite: TLS13Suite, secret: UnsafeRawBufferPointer, sequenceNumber: UInt64,
                 path: AEADOpener.Path? = nil) throws(RealtimeError) {
        guard secret.count == suite.hashLength else {
            throw RealtimeError(.tlsFailed, "TLS traffic secret has the wrong length",
                                context: .init(detail: "\(secret.count) bytes for \(suite)"))
        }
        let keyStorage = UnsafeMutableRawBufferPointer.allocate(byteCount: suite.hashLength + 24, alignment: 16)
        keyStorage.initializeMemory(as: UInt8.self, repeating: 0)
        keyStorage.copyMemory(from: secret)
        let key = UnsafeMutableRawBufferPointer.allocate(byteCount: suite.algorithm.keyLength, alignment: 16)
        defer {
            secureZero(key)
            key.deallocate()
        }
        suite.expandLabel(secret: secret, label: "key", into: key)
        do throws(RealtimeError) {
            opener = try AEADOpener(suite.algorithm, key: UnsafeRawBufferPointer(key), path: path)
        } catch {
            secureZero(keyStorage)
            keyStorage.deallocate()
            throw error
        }
        self.keyStorage = keyStorage
        self.suite = suite
        self.sequenceNumber = sequenceNumber
        suite.expandLabel(secret: secret, label: "iv", into: iv)
        nonce.copyMemory(from: UnsafeRawBufferPointer(iv))
    }

    /// The same with the secret in an array (tests).
    package convenience init(suite: TLS13Suite, secret: [UInt8], sequenceNumber: UInt64,
                             path: AEADOpener.Path? = nil) throws(RealtimeError) {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: secret.count, alignment: 16)
        defer {
            secureZero(copy)
            copy.deallocate()
        }
        secret.withUnsafeBytes { copy.copyMemory(from: $0) }
        try self.init(suite: suite, secret: UnsafeRawBufferPointer(copy), sequenceNumber: sequenceNumber, path: path)
    }

    deinit {
        wipeKeys()
        keyStorage.deallocate()
    }

    /// The AEAD code this reader decrypts with.
    package var aeadPath: AEADOpener.Path { opener.path }

    /// Zeroes the traffic secret, IV, nonce and the AEAD key schedule. Done when the peer closes, when a
    /// record is rejected and at deinit; every read afterwards fails.
    package func wipeKeys() {
        secureZero(keyStorage)
        opener.wipe()
        keysWiped = true
    }

    /// A copy of the secret, IV and nonce storage (tests check it is zeroed).
    package var keyStorageSnapshot: [UInt8] { Array(keyStorage) }

    /// Starts with `bytes`, the beginning of a record that OpenSSL was not given.
    package func carry(_ bytes: [UInt8]) {
        precondition(partialRecord.isEmpty, "carry before the first read")
        partialRecord = bytes
    }

    /// Bytes of a partial record waiting for the rest.
    package var bufferedByteCount: Int { partialRecord.count + handshakeBytes.count }

    /// Gives back the capacity of empty carry buffers (an idle connection keeps nothing).
    package func releaseBuffers() {
        if partialRecord.isEmpty { partialRecord = [] }
        if handshakeBytes.isEmpty { handshakeBytes = [] }
    }

    /// True while the start of a record waits for the rest.
    package var holdsPartialRecord: Bool { !partialRecord.isEmpty }

    /// Decrypts every complete record in `bytes` in place (after the partial record kept from the last
    /// call) and hands each record's plaintext to `deliver`, which returns false to stop reading. The
    /// plaintext stays where the ciphertext was, so the bytes of one socket read are touched once by the
    /// AEAD and once by whoever parses them, as on an unencrypted connection.
    package func read(_ bytes: UnsafeMutableRawBufferPointer,
                      deliver: (UnsafeRawBufferPointer) -> Bool) throws(RealtimeError) -> Outcome {
        if peerClosed { return .closedByPeer }
        guard !keysWiped else { throw Self.failure("internal_error", "the reader has ended and its keys are wiped") }
        do {
            let outcome = try readRecords(bytes, deliver: deliver)
            if peerClosed { wipeKeys() }  // close_notify: nothing more will be decrypted
            return outcome
        } catch {
            wipeKeys()  // every error here is fatal to the connection
            throw error
        }
    }

    private func readRecords(_ bytes: UnsafeMutableRawBufferPointer,
                             deliver: (UnsafeRawBufferPointer) -> Bool) throws(RealtimeError) -> Outcome {
        var position = 0
        if !partialRecord.isEmpty {
            // Complete the record begun in an earlier read: first its header, then its body.
            let headerTaken = min(max(0, 5 - partialRecord.count), bytes.count)
            partialRecord.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<headerTaken]))
            position = headerTaken
            guard partialRecord.count >= 5 else { return .needMoreCiphertext }
            let total = try Self.checkedLength(Int(partialRecord[3]) << 8 | Int(partialRecord[4])) + 5
            let bodyTaken = min(total - partialRecord.count, bytes.count - position)
            partialRecord.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[position..<position + bodyTaken]))
            position += bodyTaken
            guard partialRecord.count == total else { return .needMoreCiphertext }
            // Opened outside the property, so that `deliver` may do anything with this reader meanwhile.
            var record: [UInt8] = []
            swap(&record, &partialRecord)
            let opened = record.withUnsafeMutableBytes { bytes in
                Result { () throws(RealtimeError) in try open(bytes, deliver: deliver) }
            }
            secureZero(&record)  // it holds plaintext now; its capacity is kept or freed below
            record.removeAll(keepingCapacity: true)
            if partialRecord.isEmpty { swap(&record, &partialRecord) }
            guard try opened.get() else { return peerClosed ? .closedByPeer : .stopped }
        }
        while bytes.count - position >= 5 {
            let total = try Self.checkedLength(Int(bytes[position + 3]) << 8 | Int(bytes[position + 4])) + 5
            guard bytes.count - position >= total else { break }
            let record = UnsafeMutableRawBufferPointer(rebasing: bytes[position..<position + total])
            position += total
            guard try open(record, deliver: deliver) else { return peerClosed ? .closedByPeer : .stopped }
        }
        partialRecord.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[position...]))
        return .needMoreCiphertext
    }

    /// A record header's length field, checked against the size TLS 1.3 allows.
    private static func checkedLength(_ length: Int) throws(RealtimeError) -> Int {
        guard length <= maximumCiphertextLength else {
            throw failure("record_overflow", "a record of \(length) bytes is longer than TLS 1.3 allows")
        }
        return length
    }

    /// Decrypts one whole record in place and acts on its content; false when reading stops.
    private func open(_ record: UnsafeMutableRawBufferPointer,
                      deliver: (UnsafeRawBufferPointer) -> Bool) throws(RealtimeError) -> Bool {
        let type = record[0]
        guard type == 23 else {
            if type == 21, record.count == 7 {
                throw Self.alertFailure(level: record[5], description: record[6], encrypted: false)
            }
            throw Self.failure("unexpected_message", "an unprotected record of type \(type) after the handshake")
        }
        let length = record.count - 5
        guard length > TLS13Suite.tagLength else {
            throw Self.failure("decode_error", "a protected record of \(length) bytes is too short to hold a tag")
        }
        let sealedLength = length - TLS13Suite.tagLength
        let plaintext = record.baseAddress! + 5
        try decrypt(record, sealedLength: sealedLength)
        // TLSInnerPlaintext: content, the real content type, then zero padding.
        var end = sealedLength
        while end > 0, plaintext.load(fromByteOffset: end - 1, as: UInt8.self) == 0 { end -= 1 }
        guard end > 0 else { throw Self.failure("unexpected_message", "a record with no content type") }
        let contentType = plaintext.load(fromByteOffset: end - 1, as: UInt8.self)
        let contentLength = end - 1
        guard contentLength <= Self.maximumPlaintextLength else {
            throw Self.failure("record_overflow", "a record carrying \(contentLength) bytes of plaintext")
        }
        switch contentType {
        case 23:
            guard handshakeBytes.isEmpty else {
                throw Self.failure("unexpected_message", "application data inside a fragmented handshake message")
            }
            return contentLength == 0 || deliver(UnsafeRawBufferPointer(start: plaintext, count: contentLength))
        case 22:
            guard contentLength > 0 else { throw Self.failure("unexpected_message", "an empty handshake record") }
            handshakeBytes.append(contentsOf: UnsafeRawBufferPointer(start: plaintext, count: contentLength))
            try handlePostHandshakeMessages()
            return true
        case 21:
            guard contentLength == 2 else { throw Self.failure("decode_error", "an alert of \(contentLength) bytes") }
            let description = plaintext.load(fromByteOffset: 1, as: UInt8.self)
            if description == 0 {  // close_notify
                peerClosed = true
                return false
            }
            throw Self.alertFailure(level: plaintext.load(as: UInt8.self), description: description, encrypted: true)
        default:
            throw Self.failure("unexpected_message", "a record of content type \(contentType)")
        }
    }

    private func decrypt(_ record: UnsafeMutableRawBufferPointer, sealedLength: Int) throws(RealtimeError) {
        // The per-record nonce is the IV with the 64-bit sequence number XORed into its last 8 bytes.
        for index in 0..<8 {
            nonce[4 + index] = iv[4 + index] ^ UInt8(truncatingIfNeeded: sequenceNumber >> (56 - 8 * UInt64(index)))
        }
        // The header is the additional data.
        let opened = opener.open(nonce: nonce.baseAddress!, aad: UnsafeRawBufferPointer(rebasing: record[0..<5]),
                                 data: UnsafeMutableRawBufferPointer(rebasing: record[5..<5 + sealedLength]),
                                 tag: record.baseAddress! + 5 + sealedLength)
        guard opened else {
            throw Self.failure("bad_record_mac", "record \(sequenceNumber) failed authentication")
        }
        try advanceSequence()
    }

    private func advanceSequence() throws(RealtimeError) {
        guard sequenceNumber < UInt64.max else {
            throw Self.failure("internal_error", "the record sequence number would wrap")
        }
        sequenceNumber += 1
    }

    private func handlePostHandshakeMessages() throws(RealtimeError) {
        while handshakeBytes.count >= 4 {
            let type = handshakeBytes[0]
            let length = Int(handshakeBytes[1]) << 16 | Int(handshakeBytes[2]) << 8 | Int(handshakeBytes[3])
            guard length <= Self.maximumHandshakeMessageLength else {
                throw Self.failure("unexpected_message", "a post-handshake message of \(length) bytes")
            }
            guard handshakeBytes.count >= 4 + length else { return }
            switch type {
            case 4:  // NewSessionTicket: this client does not resume sessions
                break
            case 24:  // KeyUpdate
                guard length == 1, handshakeBytes[4] <= 1 else {
                    throw Self.failure("decode_error", "a malformed KeyUpdate")
                }
                // The next record is under the new key, so nothing may follow in this one.
                guard handshakeBytes.count == 5 else {
                    throw Self.failure("unexpected_message", "data after a KeyUpdate in the same record")
                }
                if handshakeBytes[4] == 1 { peerRequestedKeyUpdate = true }
                suite.expandLabel(secret: UnsafeRawBufferPointer(secret), label: "traffic upd", into: secret)
                sequenceNumber = 0
                keyUpdates += 1
                try installKeys()
            default:
                throw Self.failure("unexpected_message", "post-handshake message type \(type)")
            }
            handshakeBytes.withUnsafeMutableBytes { secureZero(UnsafeMutableRawBufferPointer(rebasing: $0[0..<4 + length])) }
            handshakeBytes.removeFirst(4 + length)
        }
    }

    private func installKeys() throws(RealtimeError) {
        let key = UnsafeMutableRawBufferPointer.allocate(byteCount: suite.algorithm.keyLength, alignment: 16)
        defer {
            secureZero(key)
            key.deallocate()
        }
        suite.expandLabel(secret: UnsafeRawBufferPointer(secret), label: "key", into: key)
        try opener.rekey(UnsafeRawBufferPointer(key))
        suite.expandLabel(secret: UnsafeRawBufferPointer(secret), label: "iv", into: iv)
        nonce.copyMemory(from: UnsafeRawBufferPointer(iv))
    }

    private static func failure(_ alert: String, _ why: String) -> RealtimeError {
        RealtimeError(.tlsFailed, "TLS record could not be read: \(why)", context: .init(detail: alert))
    }

    private static func alertFailure(level: UInt8, description: UInt8, encrypted: Bool) -> RealtimeError {
        let name = SocketIO.string(fromCString: SSL_alert_desc_string_long(Int32(description)))
        return RealtimeError(.tlsFailed, "the peer sent the TLS alert \(name) (\(description))",
                             context: .init(detail: "\(encrypted ? "" : "unprotected ")alert level \(level)"))
    }
}
#endif
