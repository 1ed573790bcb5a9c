#if canImport(COpenSSL)
import COpenSSL
import RealtimeCore

/// The TLS 1.3 suite list for a preference: a fixed order, never measured.
package enum TLSCipherSuites {
    /// AES-128-GCM before AES-256 (as browsers do): as strong in practice and cheaper per byte.
    static let aesFirst = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384"
    static let chaChaFirst = "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384"

    package static func suites(for preference: TLSCipherPreference) -> String {
        switch preference {
        case .aesGCM: aesFirst
        case .chaCha20Poly1305: chaChaFirst
        }
    }

    /// Bytes per second the AEAD of `preference`'s first suite seals in full records (best of five); for
    /// `realtime-bench` only, never on a connection's path.
    package static func sealBytesPerSecond(_ preference: TLSCipherPreference) -> Double {
        let cipher = suites(for: preference).hasPrefix("TLS_CHACHA") ? EVP_chacha20_poly1305() : EVP_aes_128_gcm()
        guard let cipher, sealNanoseconds(cipher) != nil else { return 0 }
        let best = (0..<5).compactMap { _ in sealNanoseconds(cipher) }.min() ?? .max
        return Double(32 * 16_384) / (Double(best) / 1e9)
    }

    /// Time to seal 32 full TLS records (16 KiB each, a fresh nonce per record, one key), in nanoseconds.
    static func sealNanoseconds(_ cipher: OpaquePointer) -> UInt64? {
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let recordSize = 16_384
        let key = [UInt8](repeating: 0x42, count: 32)
        var nonce = [UInt8](repeating: 0x24, count: 12)
        let input = [UInt8](repeating: 0x5A, count: recordSize)
        var output = [UInt8](repeating: 0, count: recordSize + 64)
        guard EVP_EncryptInit_ex(context, cipher, nil, key, nonce) == 1 else { return nil }
        let start = EventLoop.now()
        for record in 0..<32 {
            nonce[11] = UInt8(record)
            var written: Int32 = 0
            guard EVP_EncryptInit_ex(context, nil, nil, nil, nonce) == 1,
                  EVP_EncryptUpdate(context, &output, &written, input, Int32(recordSize)) == 1,
                  EVP_EncryptFinal_ex(context, &output, &written) == 1 else { return nil }
        }
        return EventLoop.now() &- start
    }
}
#endif
