#if canImport(COpenSSL)
import COpenSSL
import RealtimeCore

/// An OpenSSL `SSL_CTX`, configured once and shared by many connections. OpenSSL allows concurrent
/// `SSL_new` on a configured context; the lock only keeps the pointer's use honest for Swift.
package final class TLSContext: Sendable {
    enum Role: Sendable { case client, server }

    let role: Role
    let recordReading: TLSRecordReading
    /// SHA-256 hashes of SubjectPublicKeyInfo, one of which the server's verified chain must carry.
    let pinnedPublicKeys: Set<[UInt8]>
    private let context: Locked<OpaquePointer>

    /// A client context: peer verification on, roots from `configuration`, ALPN, TLS ≥ 1.2.
    package init(client configuration: TLSConfiguration) throws(RealtimeError) {
        pinnedPublicKeys = try configuration.decodedPins()
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSErrors.openSSL("SSL_CTX_new") }
        do throws(RealtimeError) {
            try Self.configureCommon(context, minimumVersion: configuration.minimumVersion,
                                     recordReading: configuration.recordReading)
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            guard SSL_CTX_set_ciphersuites(context, TLSCipherSuites.suites(for: configuration.cipherPreference)) == 1 else {
                throw TLSErrors.openSSL("SSL_CTX_set_ciphersuites")
            }
            if configuration.trustsSystemRoots, SSL_CTX_set_default_verify_paths(context) != 1 {
                throw TLSErrors.openSSL("loading the system trust store")
            }
            for source in configuration.additionalTrustRoots {
                try Self.addTrustRoots(source, to: context)
            }
            if !configuration.applicationProtocols.isEmpty {
                var wire: [UInt8] = []
                for name in configuration.applicationProtocols {
                    let bytes = Array(name.utf8)
                    guard (1...255).contains(bytes.count) else {
                        throw RealtimeError(.invalidArgument, "ALPN protocol names must be 1 to 255 bytes")
                    }
                    wire.append(UInt8(bytes.count))
                    wire += bytes
                }
                // Returns 0 on success, unlike most OpenSSL calls.
                guard SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0 else {
                    throw TLSErrors.openSSL("SSL_CTX_set_alpn_protos")
                }
            }
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        role = .client
        recordReading = configuration.recordReading
        self.context = Locked(context)
    }

    /// A server context presenting `configuration`'s certificate chain and key.
    package init(server configuration: TLSServerConfiguration) throws(RealtimeError) {
        pinnedPublicKeys = []
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSErrors.openSSL("SSL_CTX_new") }
        do throws(RealtimeError) {
            try Self.configureCommon(context, minimumVersion: configuration.minimumVersion,
                                     recordReading: configuration.recordReading)
            switch configuration.certificateChain {
            case .file(let path):
                guard SSL_CTX_use_certificate_chain_file(context, path) == 1 else {
                    throw TLSErrors.openSSL("loading the certificate chain \(path)")
                }
            case .pem(let text):
                let certificates = try Self.readCertificates(pem: text)
                defer { certificates.forEach { X509_free($0) } }
                guard let leaf = certificates.first, SSL_CTX_use_certificate(context, leaf) == 1 else {
                    throw TLSErrors.openSSL("loading the certificate")
                }
                for extra in certificates.dropFirst() {
                    guard realtime_SSL_CTX_add1_chain_cert(context, extra) == 1 else { throw TLSErrors.openSSL("adding a chain certificate") }
                }
            }
            switch configuration.privateKey {
            case .file(let path):
                guard SSL_CTX_use_PrivateKey_file(context, path, SSL_FILETYPE_PEM) == 1 else {
                    throw TLSErrors.openSSL("loading the private key \(path)")
                }
            case .pem(let text):
                let bio = try Self.memoryBIO(text)
                defer { BIO_free(bio) }
                guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw TLSErrors.openSSL("parsing the private key") }
                defer { EVP_PKEY_free(key) }
                guard SSL_CTX_use_PrivateKey(context, key) == 1 else { throw TLSErrors.openSSL("using the private key") }
            }
            guard SSL_CTX_check_private_key(context) == 1 else { throw TLSErrors.openSSL("the key does not match the certificate") }
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        role = .server
        recordReading = configuration.recordReading
        self.context = Locked(context)
    }

    deinit {
        context.withLock { SSL_CTX_free($0) }
    }

    /// True when OpenSSL's key-log callback is installed (only for the direct decryption optimisation).
    package var capturesTrafficSecrets: Bool {
        context.withLock { SSL_CTX_get_keylog_callback($0) != nil }
    }

    /// Narrows the TLS 1.3 suites this context accepts to `suites` (tests and benchmarks pick one).
    package func restrictSuites(tls13 suites: String) {
        context.withLock { _ = SSL_CTX_set_ciphersuites($0, suites) }
    }

    /// Caps the protocol at TLS 1.2 (tests of the path TLS 1.3 does not take).
    package func limitToTLS12() {
        context.withLock { _ = realtime_SSL_CTX_set_max_proto_version($0, TLS1_2_VERSION) }
    }

    /// A new `SSL` for one connection.
    func makeSSL() -> OpaquePointer? {
        context.withLock { SSL_new($0) }
    }

    private static func configureCommon(_ context: OpaquePointer, minimumVersion: TLSMinimumVersion,
                                        recordReading: TLSRecordReading) throws(RealtimeError) {
        let version = minimumVersion == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION
        guard realtime_SSL_CTX_set_min_proto_version(context, version) == 1 else {
            throw TLSErrors.openSSL("SSL_CTX_set_min_proto_version")
        }
        // Busy connections keep their buffers (SSL_MODE_RELEASE_BUFFERS would free and reallocate the read
        // buffer after every record); idle ones give them back through TLSEngine.releaseBuffers().
        // Read-ahead takes all buffered ciphertext (up to 64 KiB) in one BIO read instead of two per record.
        _ = realtime_SSL_CTX_set_read_ahead(context, 1)
        SSL_CTX_set_default_read_buffer_len(context, 64 * 1024)
        // Only the direct reader needs the peer's TLS 1.3 traffic secret: the key-log callback that hands
        // it over (writing nothing anywhere) is not even installed on OpenSSL-only contexts.
        if recordReading == .directDecryptionOptimization { realtime_SSL_CTX_capture_secrets(context) }
    }

    private static func addTrustRoots(_ source: TLSPEMSource, to context: OpaquePointer) throws(RealtimeError) {
        switch source {
        case .file(let path):
            guard SSL_CTX_load_verify_locations(context, path, nil) == 1 else {
                throw TLSErrors.openSSL("loading trusted certificates from \(path)")
            }
        case .pem(let text):
            let certificates = try readCertificates(pem: text)
            defer { certificates.forEach { X509_free($0) } }
            guard let store = SSL_CTX_get_cert_store(context) else { throw TLSErrors.openSSL("SSL_CTX_get_cert_store") }
            for certificate in certificates where X509_STORE_add_cert(store, certificate) != 1 {
                throw TLSErrors.openSSL("adding a trusted certificate")
            }
        }
    }

    private static func memoryBIO(_ text: String) throws(RealtimeError) -> OpaquePointer {
        let bytes = Array(text.utf8)
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSErrors.openSSL("BIO_new") }
        guard BIO_write(bio, bytes, Int32(bytes.count)) == Int32(bytes.count) else {
            BIO_free(bio)
            throw TLSErrors.openSSL("BIO_write")
        }
        return bio
    }

    private static func readCertificates(pem text: String) throws(RealtimeError) -> [OpaquePointer] {
        let bio = try memoryBIO(text)
        defer { BIO_free(bio) }
        var certificates: [OpaquePointer] = []
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { certificates.append(certificate) }
        ERR_clear_error()  // the loop ends on an expected "no start line"
        guard !certificates.isEmpty else {
            throw RealtimeError(.invalidArgument, "the PEM text holds no certificate")
        }
        return certificates
    }
}
#endif
