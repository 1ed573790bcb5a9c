#if canImport(COpenSSL)
import COpenSSL
import RealtimeCore
#if canImport(CRealtimeAEAD)
import CRealtimeAEAD
#endif

/// Opens (decrypts in place and authenticates) AEAD-sealed bytes under one key, for the direct TLS 1.3
/// record reader. The path is chosen once, explicitly or as the fastest this CPU runs, so that each can be
/// tested with known-answer vectors whatever the default would be. Confined to one thread at a time.
package final class AEADOpener {
    /// The AEADs TLS 1.3 records use.
    package enum Algorithm: Sendable, CaseIterable {
        case aes128GCM
        case aes256GCM
        case chaCha20Poly1305

        package var keyLength: Int { self == .aes128GCM ? 16 : 32 }

        var cipher: OpaquePointer? {
            switch self {
            case .aes128GCM: EVP_aes_128_gcm()
            case .aes256GCM: EVP_aes_256_gcm()
            case .chaCha20Poly1305: EVP_chacha20_poly1305()
            }
        }
    }

    /// Which code decrypts.
    package enum Path: String, Sendable, CaseIterable {
        /// OpenSSL's EVP interface: every algorithm, on every CPU.
        case evp
        /// CRealtimeAEAD's AES-GCM with VAES and VPCLMULQDQ: AES only, x86-64 CPUs with those instructions.
        case wideAESGCM

        /// Whether this path can open `algorithm` on this CPU, and if not, why.
        package func unavailability(for algorithm: Algorithm) -> String? {
            switch self {
            case .evp:
                return nil
            case .wideAESGCM:
                guard algorithm != .chaCha20Poly1305 else { return "the wide path is AES-GCM only" }
                #if canImport(CRealtimeAEAD)
                return realtime_gcm_available() == 1 ? nil
                    : "this CPU (or OS) lacks AVX2, AES-NI, PCLMULQDQ, VAES or VPCLMULQDQ"
                #else
                return "CRealtimeAEAD is not built on this platform"
                #endif
            }
        }

        /// The fastest path for `algorithm` here.
        package static func fastest(for algorithm: Algorithm) -> Path {
            wideAESGCM.unavailability(for: algorithm) == nil ? .wideAESGCM : .evp
        }
    }

    package static let nonceLength = 12
    package static let tagLength = 16

    package let algorithm: Algorithm
    package let path: Path
    private let context: OpaquePointer
    #if canImport(CRealtimeAEAD)
    /// The expanded key of the wide path; nil on EVP.
    private var wideKey: UnsafeMutablePointer<realtime_gcm_key>?
    #endif

    /// An opener for `key` on `path` (the fastest here when nil); throws `.unsupported` for a path this CPU
    /// cannot run and `.tlsFailed` when OpenSSL refuses the key.
    package init(_ algorithm: Algorithm, key: UnsafeRawBufferPointer, path: Path? = nil) throws(RealtimeError) {
        let path = path ?? .fastest(for: algorithm)
        if let reason = path.unavailability(for: algorithm) {
            throw RealtimeError(.unsupported, "the \(path.rawValue) AEAD path cannot run here",
                                context: .init(detail: reason))
        }
        guard let context = EVP_CIPHER_CTX_new() else { throw TLSErrors.openSSL("EVP_CIPHER_CTX_new") }
        self.context = context
        self.algorithm = algorithm
        self.path = path
        try rekey(key)
    }

    deinit {
        wipe()
        EVP_CIPHER_CTX_free(context)  // OpenSSL cleanses the key schedule it frees
    }

    /// Replaces the key (a TLS KeyUpdate).
    package func rekey(_ key: UnsafeRawBufferPointer) throws(RealtimeError) {
        guard key.count == algorithm.keyLength, let raw = key.baseAddress else {
            throw RealtimeError(.tlsFailed, "the TLS read key has the wrong length",
                                context: .init(detail: "\(key.count) bytes for \(algorithm)"))
        }
        let bytes = raw.assumingMemoryBound(to: UInt8.self)
        switch path {
        case .evp:
            guard EVP_DecryptInit_ex(context, algorithm.cipher, nil, bytes, nil) == 1 else {
                throw TLSErrors.openSSL("installing the TLS read key")
            }
        case .wideAESGCM:
            #if canImport(CRealtimeAEAD)
            let wideKey = wideKey ?? .allocate(capacity: 1)
            self.wideKey = wideKey
            guard realtime_gcm_init(wideKey, bytes, key.count) == 1 else {
                throw RealtimeError(.tlsFailed, "the direct decryption optimization could not install the TLS read key (AES-GCM)")
            }
            #endif
        }
    }

    /// Decrypts `data` in place with `nonce` (12 bytes) and `aad`, checking `tag` (16 bytes): true when it
    /// matches. On false `data` holds unauthenticated bytes that must not be used.
    package func open(nonce: UnsafeRawPointer, aad: UnsafeRawBufferPointer, data: UnsafeMutableRawBufferPointer,
                      tag: UnsafeRawPointer) -> Bool {
        let nonce = nonce.assumingMemoryBound(to: UInt8.self)
        let aadBase = aad.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let dataBase = data.baseAddress?.assumingMemoryBound(to: UInt8.self)
        #if canImport(CRealtimeAEAD)
        if let wideKey {
            return realtime_gcm_open(wideKey, nonce, aadBase, aad.count, dataBase, data.count,
                                     tag.assumingMemoryBound(to: UInt8.self)) == 1
        }
        #endif
        var scratch: UInt8 = 0
        return withUnsafeMutablePointer(to: &scratch) { scratch in
            // EVP wants somewhere to write even when there are no bytes.
            let output = dataBase ?? scratch
            var written: Int32 = 0
            var finalWritten: Int32 = 0
            let opened = EVP_DecryptInit_ex(context, nil, nil, nil, nonce) == 1
                && (aad.isEmpty || EVP_DecryptUpdate(context, nil, &written, aadBase, Int32(aad.count)) == 1)
                && (data.isEmpty || EVP_DecryptUpdate(context, output, &written, output, Int32(data.count)) == 1)
                && realtime_EVP_CIPHER_CTX_set_tag(context, UnsafeMutableRawPointer(mutating: tag),
                                                   Int32(Self.tagLength)) == 1
                && EVP_DecryptFinal_ex(context, output + (data.isEmpty ? 0 : Int(written)), &finalWritten) == 1
            ERR_clear_error()
            return opened
        }
    }

    /// Zeroes the key: the wide path's key schedule and hash powers, and EVP's context (reset, which
    /// cleanses). The opener refuses everything afterwards until ``rekey(_:)``.
    package func wipe() {
        #if canImport(CRealtimeAEAD)
        if let wideKey {
            realtime_gcm_wipe(wideKey)
            wideKey.deallocate()
            self.wideKey = nil
        }
        #endif
        _ = EVP_CIPHER_CTX_reset(context)
    }
}
#endif
