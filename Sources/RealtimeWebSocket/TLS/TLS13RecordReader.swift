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
/// layer copies them into its BIO, into its record buffer and out again. Post-handshake messages are
/// handled here (session tickets are checked and dropped, KeyUpdate moves to the next secret and asks the
/// engine to answer when the peer requested it); sending stays with OpenSSL. Fed bytes, it owns no socket.
/// Confined to one thread at a time.
///
/// It accepts and refuses exactly what OpenSSL 3's own record layer does for a TLS 1.3 client after the
/// handshake, with the same alert, at the same byte: record headers are checked as soon as their five
/// bytes arrive, a handshake message's type and size as soon as its four header bytes do, warning alerts
/// and empty records are counted the same way. The differential fuzz target (`tls-records`) holds it to that.
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
    /// The largest NewSessionTicket accepted (OpenSSL's limit: a 2^16-byte ticket, its extensions and
    /// fields); longer ones are refused as soon as their header arrives, so at most this much is buffered.
    package static let maximumTicketLength = 131_338
    /// Empty application-data records in a row before the connection is refused (a peer could otherwise
    /// keep the reader busy without progress).
    static let maximumEmptyRecords = 32
    /// Warning alerts (user_canceled counts as one) in a row that end the connection.
    static let warningAlertLimit = 5

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
    package var peerRequestedKeyUpdate = false {
        didSet { if !peerRequestedKeyUpdate { answerDueBeforeNextMessage = false } }
    }
    /// OpenSSL writes the KeyUpdate it owes when the next post-handshake message header is whole, before
    /// reading that message; a header that ended its record is then judged only when the next record
    /// comes. Mirrored while the engine has not answered yet.
    private var answerDueBeforeNextMessage = false
    private var partialRecord: [UInt8] = []
    /// The first bytes (fewer than four) of a handshake message header.
    private var handshakeHeader: [UInt8] = []
    /// A post-handshake message whose header was accepted and whose body is still arriving.
    private var handshakeMessage: PendingHandshakeMessage?
    private var emptyRecordsInARow = 0
    private var warningAlertsInARow = 0
    /// The description of the last warning-level alert or user_canceled (0 before any): OpenSSL calls a
    /// close_notify of another level clean only while this is 0.
    private var lastWarningDescription: UInt8 = 0
    private var peerClosed = false

    private struct PendingHandshakeMessage {
        let type: UInt8
        let length: Int
        var body: [UInt8] = []
    }

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
    package var bufferedByteCount: Int {
        partialRecord.count + handshakeHeader.count + (handshakeMessage.map { 4 + $0.body.count } ?? 0)
    }

    /// Gives back the capacity of empty carry buffers (an idle connection keeps nothing).
    package func releaseBuffers() {
        if partialRecord.isEmpty { partialRecord = [] }
        if handshakeHeader.isEmpty { handshakeHeader = [] }
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
            let total = try Self.checkedHeader(partialRecord[0], partialRecord[1], partialRecord[2],
                                               Int(partialRecord[3]) << 8 | Int(partialRecord[4]))
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
            let total = try Self.checkedHeader(bytes[position], bytes[position + 1], bytes[position + 2],
                                               Int(bytes[position + 3]) << 8 | Int(bytes[position + 4]))
            guard bytes.count - position >= total else { break }
            let record = UnsafeMutableRawBufferPointer(rebasing: bytes[position..<position + total])
            position += total
            guard try open(record, deliver: deliver) else { return peerClosed ? .closedByPeer : .stopped }
        }
        partialRecord.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[position...]))
        return .needMoreCiphertext
    }

    /// Checks a record header the moment its five bytes are here, in OpenSSL's order; returns the length
    /// of the whole record. After the handshake every record is protected: outer type application_data,
    /// legacy version 0x0303.
    private static func checkedHeader(_ type: UInt8, _ major: UInt8, _ minor: UInt8,
                                      _ length: Int) throws(RealtimeError) -> Int {
        let version = UInt16(major) << 8 | UInt16(minor)
        guard major == 3 else {
            throw failure("protocol_version", "a record of version \(hex(version)), which is not TLS")
        }
        guard type == 23 else {
            throw failure("unexpected_message", "an unprotected record of type \(type) after the handshake")
        }
        guard version == 0x0303 else {
            throw failure("decode_error", "a protected record of version \(hex(version)) instead of 0x0303")
        }
        guard length <= maximumCiphertextLength else {
            throw failure("record_overflow", "a record of \(length) bytes is longer than TLS 1.3 allows")
        }
        return length + 5
    }

    private static func hex(_ version: UInt16) -> String {
        let digits = String(version, radix: 16)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// Decrypts one whole record (its header checked) in place and acts on its content; false when
    /// reading stops.
    private func open(_ record: UnsafeMutableRawBufferPointer,
                      deliver: (UnsafeRawBufferPointer) -> Bool) throws(RealtimeError) -> Bool {
        let length = record.count - 5
        // A tag and at least the content type byte; anything shorter cannot authenticate.
        guard length > TLS13Suite.tagLength else {
            throw Self.failure("bad_record_mac", "a protected record of \(length) bytes is too short to hold a tag")
        }
        let sealedLength = length - TLS13Suite.tagLength
        let plaintext = record.baseAddress! + 5
        try decrypt(record, sealedLength: sealedLength)
        // TLSInnerPlaintext: content, the real content type, then zero padding.
        var end = sealedLength
        while end > 0, plaintext.load(fromByteOffset: end - 1, as: UInt8.self) == 0 { end -= 1 }
        guard end > 0 else { throw Self.failure("unexpected_message", "a record with no content type") }
        let contentType = plaintext.load(fromByteOffset: end - 1, as: UInt8.self)
        let content = UnsafeRawBufferPointer(start: plaintext, count: end - 1)
        guard (21...23).contains(contentType) else {
            throw Self.failure("unexpected_message", "a record of content type \(contentType)")
        }
        guard !content.isEmpty || contentType == 23 else {
            throw Self.failure("unexpected_message", "an empty \(contentType == 22 ? "handshake" : "alert") record")
        }
        guard content.count <= Self.maximumPlaintextLength else {
            throw Self.failure("record_overflow", "a record carrying \(content.count) bytes of plaintext")
        }
        if content.isEmpty {
            emptyRecordsInARow += 1
            guard emptyRecordsInARow <= Self.maximumEmptyRecords else {
                throw Self.failure("unexpected_message", "more than \(Self.maximumEmptyRecords) empty records in a row")
            }
        } else {
            emptyRecordsInARow = 0
        }
        guard handshakeHeader.isEmpty || contentType == 22 else {
            throw Self.failure("unexpected_message", "a record of content type \(contentType) inside a handshake message header")
        }
        if contentType != 21, !content.isEmpty { warningAlertsInARow = 0 }
        switch contentType {
        case 23:
            guard handshakeMessage == nil else {
                throw Self.failure("unexpected_message", "application data inside a fragmented handshake message")
            }
            return content.isEmpty || deliver(content)
        case 22:
            try readHandshake(content)
            return true
        default:
            return try readAlert(content)
        }
    }

    /// An alert inside a protected record: close_notify ends reading, user_canceled is ignored (RFC 8446
    /// §6.1: a close_notify follows), any other alert is fatal whatever its level. Warning-level alerts and
    /// user_canceled count towards ``warningAlertLimit`` until a record with other content arrives.
    private func readAlert(_ alert: UnsafeRawBufferPointer) throws(RealtimeError) -> Bool {
        guard alert.count == 2 else { throw Self.failure("unexpected_message", "an alert of \(alert.count) bytes") }
        let level = alert[0]
        let description = alert[1]
        let userCanceled: UInt8 = 90
        if level == 1 || description == userCanceled {
            lastWarningDescription = description
            warningAlertsInARow += 1
            guard warningAlertsInARow < Self.warningAlertLimit else {
                throw Self.failure("unexpected_message", "\(Self.warningAlertLimit) warning alerts in a row")
            }
        }
        if description == userCanceled { return true }
        if description == 0, lastWarningDescription == 0 {  // close_notify
            peerClosed = true
            return false
        }
        throw Self.alertFailure(level: level, description: description)
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

    /// Assembles post-handshake messages from a handshake record. A message's type and announced size are
    /// judged as soon as its header is whole; the message is acted on as soon as its body is.
    private func readHandshake(_ content: UnsafeRawBufferPointer) throws(RealtimeError) {
        var offset = 0
        repeat {
            if handshakeMessage == nil {
                let taken = min(4 - handshakeHeader.count, content.count - offset)
                handshakeHeader.append(contentsOf: UnsafeRawBufferPointer(rebasing: content[offset..<offset + taken]))
                offset += taken
                guard handshakeHeader.count == 4 else { return }
                if answerDueBeforeNextMessage {
                    answerDueBeforeNextMessage = false
                    if offset == content.count { return }
                }
                let type = handshakeHeader[0]
                let length = Int(handshakeHeader[1]) << 16 | Int(handshakeHeader[2]) << 8 | Int(handshakeHeader[3])
                secureZero(&handshakeHeader)
                handshakeHeader.removeAll(keepingCapacity: true)
                let limit: Int
                switch type {
                case 4: limit = Self.maximumTicketLength  // NewSessionTicket
                case 24: limit = 1  // KeyUpdate
                default: throw Self.failure("unexpected_message", "post-handshake message type \(type)")
                }
                guard length <= limit else {
                    throw Self.failure("illegal_parameter",
                                       "a post-handshake message of type \(type) announcing \(length) bytes (at most \(limit))")
                }
                handshakeMessage = PendingHandshakeMessage(type: type, length: length)
            }
            guard var message = handshakeMessage else { return }
            handshakeMessage = nil
            let taken = min(message.length - message.body.count, content.count - offset)
            message.body.append(contentsOf: UnsafeRawBufferPointer(rebasing: content[offset..<offset + taken]))
            offset += taken
            guard message.body.count == message.length else {
                handshakeMessage = message
                return
            }
            defer { secureZero(&message.body) }
            try act(on: message, moreInRecord: offset < content.count)
        } while offset < content.count
    }

    /// A whole post-handshake message.
    private func act(on message: PendingHandshakeMessage, moreInRecord: Bool) throws(RealtimeError) {
        if message.type == 4 {
            // This client does not resume sessions: the ticket is checked, then dropped.
            let checked = message.body.withUnsafeBytes { ticket in
                Result { () throws(RealtimeError) in try Self.checkTicket(ticket) }
            }
            return try checked.get()
        }
        // KeyUpdate: the next record is under the new key, so nothing may follow in this one.
        guard !moreInRecord else {
            throw Self.failure("unexpected_message", "data after a KeyUpdate in the same record")
        }
        guard let request = message.body.first else { throw Self.failure("decode_error", "an empty KeyUpdate") }
        guard request <= 1 else { throw Self.failure("illegal_parameter", "a KeyUpdate request of \(request)") }
        if request == 1 {
            peerRequestedKeyUpdate = true
            answerDueBeforeNextMessage = true
        }
        suite.expandLabel(secret: UnsafeRawBufferPointer(secret), label: "traffic upd", into: secret)
        sequenceNumber = 0
        keyUpdates += 1
        try installKeys()
    }

    /// Extensions OpenSSL knows (RFC 8446 §4.2 and TLS 1.2's); of these only early_data may be in a ticket.
    private static let knownExtensions: Set<UInt16> = [0, 1, 5, 10, 11, 12, 13, 14, 16, 18, 21, 22, 23, 35, 41, 42,
                                                        43, 44, 45, 47, 49, 50, 51, 0xFDE8, 0xFF01, 13_172]

    /// A NewSessionTicket (RFC 8446 §4.6.1) well formed: fields of the stated lengths, a ticket of at least
    /// one byte, extensions filling the rest exactly, no known extension but early_data (once, 4 bytes).
    private static func checkTicket(_ ticket: UnsafeRawBufferPointer) throws(RealtimeError) {
        var reader = ByteReader(ticket)
        let malformed = failure("decode_error", "a malformed NewSessionTicket")
        // ticket_lifetime, ticket_age_add, ticket_nonce<0..255>, ticket<1..2^16-1>.
        guard reader.skip(8), let nonceLength = reader.uint8(), reader.skip(Int(nonceLength)),
              let ticketLength = reader.uint16(), ticketLength > 0, reader.skip(Int(ticketLength)),
              let extensionsLength = reader.uint16(), Int(extensionsLength) == reader.remaining else { throw malformed }
        var earlyData: Int?
        while reader.remaining > 0 {
            guard let type = reader.uint16(), let length = reader.uint16(), reader.skip(Int(length)) else {
                throw failure("decode_error", "a malformed extension in a NewSessionTicket")
            }
            guard knownExtensions.contains(type) else { continue }  // unknown extensions are allowed
            guard type == 42, earlyData == nil else {
                throw failure("illegal_parameter", "extension \(type) is not allowed in a NewSessionTicket, or repeated")
            }
            earlyData = Int(length)
        }
        if let earlyData, earlyData != 4 {
            throw failure("decode_error", "an early_data extension of \(earlyData) bytes in a NewSessionTicket")
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

    /// `detail` names the alert OpenSSL would send for the same record.
    private static func failure(_ alert: String, _ why: String) -> RealtimeError {
        RealtimeError(.tlsFailed, "TLS record could not be read: \(why)", context: .init(detail: alert))
    }

    private static func alertFailure(level: UInt8, description: UInt8) -> RealtimeError {
        let name = SocketIO.string(fromCString: SSL_alert_desc_string_long(Int32(description)))
        return RealtimeError(.tlsFailed, "the peer sent the TLS alert \(name) (\(description))",
                             context: .init(detail: "alert level \(level)"))
    }
}

/// Reads big-endian fields off a message, never past its end.
private struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }

    mutating func skip(_ count: Int) -> Bool {
        guard count <= remaining else { return false }
        position += count
        return true
    }

    mutating func uint8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func uint16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }
}
#endif
