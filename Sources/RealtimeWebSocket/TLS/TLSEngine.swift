#if canImport(COpenSSL)
import COpenSSL
import RealtimeCore

/// A TLS connection driven through memory BIOs: ciphertext in, plaintext out and the reverse, with no
/// socket (so no SIGPIPE from OpenSSL and tests need no network). Confined to one thread at a time.
package final class TLSEngine {
    /// Why a plaintext read stopped.
    package enum ReadStop {
        /// All buffered ciphertext is consumed.
        case needMoreCiphertext
        /// The output buffer is full; call again.
        case bufferFull
        /// The peer sent close_notify.
        case closedByPeer
    }

    private let ssl: OpaquePointer
    /// The engine's own input BIO; OpenSSL reads from it except while a read buffer is lent.
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer
    private let host: String?
    private let pinnedPublicKeys: Set<[UInt8]>
    package private(set) var isHandshakeComplete = false
    /// Where OpenSSL leaves the peer's traffic secret and the count of records read under it, until the
    /// direct reader takes over; nil when the context reads through OpenSSL only.
    private let readSecret: UnsafeMutablePointer<realtime_tls_read_secret>?
    /// OpenSSL is given whole records only while a takeover is possible, so that none is ever half inside
    /// its buffer: the start of an incomplete record waits here.
    private var heldRecordBytes: [UInt8] = []
    private var givesWholeRecords: Bool
    /// The TLS 1.3 record reader, once it has taken over the read direction.
    private var directReader: TLS13RecordReader?

    /// A client for `host` (SNI and name check; IP literals get an IP check and no SNI).
    package convenience init(client context: TLSContext, host: String) throws(RealtimeError) {
        try self.init(context: context, host: host)
    }

    /// A server side.
    package convenience init(server context: TLSContext) throws(RealtimeError) {
        try self.init(context: context, host: nil)
    }

    private init(context: TLSContext, host: String?) throws(RealtimeError) {
        ERR_clear_error()
        guard let ssl = context.makeSSL() else { throw TLSErrors.openSSL("SSL_new") }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSErrors.openSSL("BIO_new")
        }
        // An empty input BIO means "retry later", not end of stream.
        _ = realtime_BIO_set_mem_eof_return(incoming, -1)
        _ = realtime_BIO_set_mem_eof_return(outgoing, -1)
        SSL_set_bio(ssl, incoming, outgoing)  // the SSL now owns both BIOs
        BIO_up_ref(incoming)  // and we keep `incoming` across lent buffers (see withBorrowedCiphertext)
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
        self.host = host
        pinnedPublicKeys = context.pinnedPublicKeys
        if context.recordReading == .directDecryptionOptimization {
            let state = UnsafeMutablePointer<realtime_tls_read_secret>.allocate(capacity: 1)
            let label = context.role == .client ? "SERVER_TRAFFIC_SECRET_0" : "CLIENT_TRAFFIC_SECRET_0"
            if realtime_tls_capture_read_secret(ssl, state, label) == 1 {
                readSecret = state
            } else {
                state.deallocate()
                readSecret = nil
            }
        } else {
            readSecret = nil
        }
        givesWholeRecords = readSecret != nil
        if context.role == .server {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        guard let host, !host.isEmpty else { return }
        if SocketIO.isIPLiteral(host) {
            let literal = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), literal) == 1 else {
                throw TLSErrors.openSSL("setting the IP address to verify")
            }
        } else {
            guard realtime_SSL_set_tlsext_host_name(ssl, host) == 1 else { throw TLSErrors.openSSL("setting SNI") }
            guard SSL_set1_host(ssl, host) == 1 else { throw TLSErrors.openSSL("setting the host name to verify") }
        }
    }

    deinit {
        stopCapturingSecret()
        SSL_free(ssl)
        BIO_free(incoming)
        readSecret?.deallocate()
    }

    private func stopCapturingSecret() {
        guard let readSecret else { return }
        realtime_tls_stop_capture(ssl, readSecret)
    }

    /// Feeds bytes read from the socket straight to OpenSSL. A connection fed only this way never hands
    /// its reading to the direct reader; don't mix it with ``withBorrowedCiphertext(_:_:)`` once bytes
    /// are held there.
    package func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        _ = BIO_write(incoming, base, Int32(bytes.count))
    }

    /// Lets OpenSSL read `bytes` while `body` runs (which should drain it: handshake, then `readPlaintext`).
    /// Until the direct reader takes over, OpenSSL gets whole records only and the start of an incomplete
    /// one waits for the next call; afterwards the engine tries the takeover (see ``readsRecordsDirectly``).
    package func withBorrowedCiphertext<Result>(_ bytes: UnsafeRawBufferPointer, _ body: () -> Result) -> Result {
        precondition(directReader == nil, "records are read directly now")
        guard givesWholeRecords else { return lend(bytes, body) }
        var position = 0
        if !heldRecordBytes.isEmpty {
            let headerTaken = min(max(0, 5 - heldRecordBytes.count), bytes.count)
            heldRecordBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<headerTaken]))
            position = headerTaken
            guard let total = heldRecordBytes.withUnsafeBytes(Self.plausibleRecordSize) else {
                // Not TLS records (or not yet 5 bytes): let OpenSSL see everything and judge.
                if heldRecordBytes.count >= 5 { return giveUpWholeRecords(rest: bytes[position...], body) }
                return body()
            }
            let bodyTaken = min(total - heldRecordBytes.count, bytes.count - position)
            heldRecordBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[position..<position + bodyTaken]))
            position += bodyTaken
            guard heldRecordBytes.count == total else { return body() }
            heldRecordBytes.withUnsafeBytes { receiveCiphertext($0) }
            heldRecordBytes.removeAll(keepingCapacity: true)
        }
        var end = position
        while bytes.count - end >= 5 {
            guard let total = Self.plausibleRecordSize(UnsafeRawBufferPointer(rebasing: bytes[end..<end + 5])) else {
                return giveUpWholeRecords(rest: bytes[position...], body)
            }
            guard bytes.count - end >= total else { break }
            end += total
        }
        heldRecordBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[end...]))
        let result = lend(UnsafeRawBufferPointer(rebasing: bytes[position..<end]), body)
        startReadingDirectlyIfPossible()
        return result
    }

    /// The size of the record whose header starts `header`, or nil unless it looks like TLS.
    private static func plausibleRecordSize(_ header: UnsafeRawBufferPointer) -> Int? {
        guard header.count >= 5, (20...23).contains(header[0]), header[1] == 3 else { return nil }
        let length = Int(header[3]) << 8 | Int(header[4])
        return length <= 16_384 + 2_048 ? length + 5 : nil
    }

    /// Ends the whole-record feeding: OpenSSL gets what was held and `rest`, and reads alone from now on.
    private func giveUpWholeRecords<Result>(rest: Slice<UnsafeRawBufferPointer>, _ body: () -> Result) -> Result {
        stopGivingWholeRecords()
        return lend(UnsafeRawBufferPointer(rebasing: rest), body)
    }

    private func stopGivingWholeRecords() {
        givesWholeRecords = false
        stopCapturingSecret()
        heldRecordBytes.withUnsafeBytes { receiveCiphertext($0) }
        heldRecordBytes = []
    }

    /// Hands the read direction to a ``TLS13RecordReader`` once the handshake is done, when the connection
    /// is TLS 1.3 with a suite it knows, the secret was captured and OpenSSL holds no unread record.
    private func startReadingDirectlyIfPossible() {
        guard givesWholeRecords, isHandshakeComplete, let readSecret else { return }
        guard SSL_version(ssl) == TLS1_3_VERSION,
              let suite = TLS13Suite(id: UInt16(truncatingIfNeeded: SSL_CIPHER_get_id(SSL_get_current_cipher(ssl)))),
              Int(readSecret.pointee.secret_length) == suite.hashLength, readSecret.pointee.stale == 0 else {
            stopGivingWholeRecords()
            return
        }
        // Records still inside OpenSSL (a body that stopped early): try again after the next read.
        guard realtime_BIO_ctrl_pending(incoming) == 0, SSL_has_pending(ssl) == 0 else { return }
        let sequenceNumber = readSecret.pointee.records_under_secret
        do throws(RealtimeError) {
            // The reader copies the secret; stopCapturingSecret() below wipes the capture.
            let reader = try withUnsafeBytes(of: &readSecret.pointee.secret) { secret in
                Result { () throws(RealtimeError) in
                    try TLS13RecordReader(suite: suite, secret: UnsafeRawBufferPointer(rebasing: secret[0..<suite.hashLength]),
                                          sequenceNumber: sequenceNumber)
                }
            }.get()
            var held: [UInt8] = []
            swap(&held, &heldRecordBytes)
            reader.carry(held)
            directReader = reader
            givesWholeRecords = false
            stopCapturingSecret()
        } catch {
            stopGivingWholeRecords()
        }
    }

    /// True once a ``TLS13RecordReader`` reads what the peer sends: call ``readRecordsDirectly`` instead of
    /// ``withBorrowedCiphertext(_:_:)`` and ``readPlaintext(into:)``.
    package var readsRecordsDirectly: Bool { directReader != nil }

    /// Decrypts `bytes` in place with the direct reader, handing each record's plaintext to `deliver`
    /// (which returns false to stop). A KeyUpdate that asks for ours queues it (drain the ciphertext
    /// afterwards).
    package func readRecordsDirectly(_ bytes: UnsafeMutableRawBufferPointer,
                                     deliver: (UnsafeRawBufferPointer) -> Bool) throws(RealtimeError) -> ReadStop {
        guard let directReader else { preconditionFailure("the direct reader has not taken over") }
        let outcome: TLS13RecordReader.Outcome
        do {
            outcome = try directReader.read(bytes, deliver: deliver)
        } catch {
            queueAlert(rejecting: error)
            throw error
        }
        if directReader.peerRequestedKeyUpdate {
            directReader.peerRequestedKeyUpdate = false
            try updateSendingKeys(requestingPeerUpdate: false)
        }
        return outcome == .closedByPeer ? .closedByPeer : .needMoreCiphertext
    }

    /// Queues the fatal alert RFC 8446 §5.2 asks for when the direct reader rejects a record. Only OpenSSL
    /// holds the sending keys and it has no call that sends a chosen alert, so it is handed a record that
    /// fails its own checks the same way: it queues the alert (drain the ciphertext afterwards) and will
    /// send no close_notify after it. Rejections OpenSSL cannot be led to without the peer's keys
    /// (decode_error, illegal_parameter, internal_error) and the peer's own alerts get none.
    private func queueAlert(rejecting error: RealtimeError) {
        let record: [UInt8]
        switch error.context.detail {
        case "bad_record_mac": record = [23, 3, 3, 0, 17] + [UInt8](repeating: 0, count: 17)  // fails the tag
        case "record_overflow": record = [23, 3, 3, 0xFF, 0xFF]  // a length no TLS 1.3 record may have
        case "unexpected_message": record = [22, 3, 3, 0, 4, 1, 0, 0, 0]  // unprotected, after the handshake
        case "protocol_version": record = [23, 0, 0, 0, 0]  // a version that is not TLS
        default: return
        }
        ERR_clear_error()
        record.withUnsafeBytes { receiveCiphertext($0) }
        var sink: UInt8 = 0
        _ = SSL_read(ssl, &sink, 1)
        ERR_clear_error()
    }

    /// True when the start of a record is buffered without its end: a stream ending now was cut inside it.
    package var holdsPartialRecord: Bool {
        if let directReader { return directReader.holdsPartialRecord }
        return !heldRecordBytes.isEmpty || realtime_BIO_ctrl_pending(incoming) > 0 || SSL_has_pending(ssl) == 1
    }

    /// The direct reader's sequence number and key-update count (for tests).
    package var directReadState: (sequenceNumber: UInt64, keyUpdates: Int)? {
        directReader.map { ($0.sequenceNumber, $0.keyUpdates) }
    }

    /// Moves the sending direction to its next TLS 1.3 traffic secret and queues the KeyUpdate message
    /// (RFC 8446 §4.6.3); `requestingPeerUpdate` asks the peer to update its own.
    package func updateSendingKeys(requestingPeerUpdate: Bool) throws(RealtimeError) {
        guard isHandshakeComplete, SSL_version(ssl) == TLS1_3_VERSION else {
            throw RealtimeError(.unsupported, "key updates need a completed TLS 1.3 handshake")
        }
        ERR_clear_error()
        let kind = requestingPeerUpdate ? SSL_KEY_UPDATE_REQUESTED : SSL_KEY_UPDATE_NOT_REQUESTED
        guard SSL_key_update(ssl, kind) == 1, SSL_do_handshake(ssl) == 1 else {
            throw TLSErrors.openSSL("sending a TLS KeyUpdate")
        }
    }

    /// OpenSSL reads `bytes` in place, without the copy into the input BIO, while `body` runs; whatever
    /// is left afterwards is copied, since `bytes` is reused after this call.
    private func lend<Result>(_ bytes: UnsafeRawBufferPointer, _ body: () -> Result) -> Result {
        guard let base = bytes.baseAddress, !bytes.isEmpty, realtime_BIO_ctrl_pending(incoming) == 0,
              let borrowed = BIO_new_mem_buf(base, Int32(clamping: bytes.count)) else {
            receiveCiphertext(bytes)
            return body()
        }
        _ = realtime_BIO_set_mem_eof_return(borrowed, -1)
        SSL_set0_rbio(ssl, borrowed)  // drops the SSL's reference to `incoming`; ours keeps it alive
        let result = body()
        var rest: UnsafeMutablePointer<CChar>?
        let left = realtime_BIO_get_mem_data(borrowed, &rest)
        if left > 0, let rest { _ = BIO_write(incoming, rest, Int32(left)) }
        BIO_up_ref(incoming)
        SSL_set0_rbio(ssl, incoming)  // frees `borrowed`
        return result
    }

    /// Advances the handshake with what has been received; true once it is complete.
    package func advanceHandshake() throws(RealtimeError) -> Bool {
        if isHandshakeComplete { return true }
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            isHandshakeComplete = true  // so that a pin mismatch still ends with close_notify
            if !pinnedPublicKeys.isEmpty { try checkPinnedPublicKeys() }
            return true
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return false
        default:
            throw TLSErrors.handshakeFailed(ssl: ssl, host: host)
        }
    }

    /// Fails unless a certificate of the verified chain has a pinned SubjectPublicKeyInfo hash.
    private func checkPinnedPublicKeys() throws(RealtimeError) {
        var seen: [String] = []
        if let chain = SSL_get0_verified_chain(ssl) {
            for index in 0..<max(0, OPENSSL_sk_num(chain)) {
                guard let certificate = OPENSSL_sk_value(chain, index),
                      let hash = Self.publicKeyHash(OpaquePointer(certificate)) else { continue }
                if pinnedPublicKeys.contains(hash) { return }
                seen.append("sha256/" + Base64.encode(hash))
            }
        }
        throw RealtimeError(.tlsFailed, "the server's certificate chain carries none of the pinned public keys",
                            context: .init(detail: "the chain's pins: " + seen.joined(separator: ", ")))
    }

    /// SHA-256 of a certificate's DER SubjectPublicKeyInfo.
    private static func publicKeyHash(_ certificate: OpaquePointer) -> [UInt8]? {
        guard let key = X509_get0_pubkey(certificate) else { return nil }
        let length = i2d_PUBKEY(key, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(key, &cursor)
        }
        guard written == length else { return nil }
        var hash = [UInt8](repeating: 0, count: 32)
        var hashLength: UInt32 = 0
        guard EVP_Digest(der, der.count, &hash, &hashLength, EVP_sha256(), nil) == 1, hashLength == 32 else { return nil }
        return hash
    }

    /// Decrypts buffered records into `buffer` until OpenSSL wants more ciphertext or the buffer is full.
    package func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) throws(RealtimeError) -> (count: Int, stop: ReadStop) {
        var filled = 0
        ERR_clear_error()
        while filled < buffer.count {
            let result = SSL_read(ssl, buffer.baseAddress! + filled, Int32(clamping: buffer.count - filled))
            if result > 0 {
                filled += Int(result)
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return (filled, .needMoreCiphertext)
            case SSL_ERROR_ZERO_RETURN:
                return (filled, .closedByPeer)
            default:
                let reason = TLSErrors.queuedReason() ?? "SSL_read failed"
                throw RealtimeError(.tlsFailed, "TLS record could not be read", context: .init(detail: reason))
            }
        }
        return (filled, .bufferFull)
    }

    /// Encrypts `bytes`; the records are then in ``drainCiphertext(into:)``.
    package func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws(RealtimeError) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        ERR_clear_error()
        var offset = 0
        while offset < bytes.count {
            // A memory BIO never blocks, so each call takes everything it is given.
            let result = SSL_write(ssl, base + offset, Int32(clamping: bytes.count - offset))
            guard result > 0 else {
                let reason = TLSErrors.queuedReason() ?? "SSL_write failed"
                throw RealtimeError(.tlsFailed, "TLS record could not be written", context: .init(detail: reason))
            }
            offset += Int(result)
        }
    }

    /// Encrypts `bytes`.
    package func writePlaintext(_ bytes: [UInt8]) throws(RealtimeError) {
        var failure: RealtimeError?
        bytes.withUnsafeBytes { raw in
            do throws(RealtimeError) {
                try writePlaintext(raw)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// True when records are waiting to be sent.
    package var hasCiphertext: Bool { realtime_BIO_ctrl_pending(outgoing) > 0 }

    /// Appends every pending record to `output`.
    package func drainCiphertext(into output: inout [UInt8]) {
        let pending = Int(realtime_BIO_ctrl_pending(outgoing))
        guard pending > 0 else { return }
        if output.isEmpty {
            // The usual case: read straight into fresh storage, without zero-filling it first.
            output = [UInt8](unsafeUninitializedCapacity: pending) { buffer, count in
                count = max(0, Int(BIO_read(outgoing, buffer.baseAddress!, Int32(pending))))
            }
            return
        }
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: pending))
        let read = output.withUnsafeMutableBytes { raw in
            BIO_read(outgoing, raw.baseAddress! + start, Int32(pending))
        }
        output.removeLast(pending - max(0, Int(read)))
    }

    /// Frees OpenSSL's record buffers when they hold nothing (an idle connection keeps about 34 KiB less);
    /// they are allocated again on the next read or write.
    package func releaseBuffers() {
        _ = SSL_free_buffers(ssl)
        directReader?.releaseBuffers()
        if heldRecordBytes.isEmpty { heldRecordBytes = [] }
    }

    /// Queues close_notify (best effort).
    func shutdown() {
        guard isHandshakeComplete else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The ALPN protocol the server selected.
    var negotiatedApplicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The negotiated cipher suite, "TLS_CHACHA20_POLY1305_SHA256" and the like.
    var cipherName: String { SocketIO.string(fromCString: SSL_CIPHER_get_name(SSL_get_current_cipher(ssl))) }

    /// "TLSv1.3" and the like.
    var protocolVersion: String { SocketIO.string(fromCString: SSL_get_version(ssl)) }
}
#endif
