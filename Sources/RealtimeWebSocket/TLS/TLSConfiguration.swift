import RealtimeCore

/// Certificates or a key, from a PEM file or PEM text.
public enum TLSPEMSource: Sendable, Hashable {
    /// A PEM file on disk.
    case file(String)
    /// PEM text (one or more `-----BEGIN …-----` blocks).
    case pem(String)
}

/// The lowest TLS version a connection accepts.
public enum TLSMinimumVersion: Sendable, Hashable {
    case tls12
    case tls13
}

/// Which TLS 1.3 cipher a client asks for first. Both are AEADs of equal standing; which one is cheaper per
/// byte depends on the CPU and the OpenSSL build (AES-GCM where AES-NI and carry-less multiply are fast,
/// ChaCha20-Poly1305 on CPUs without them), so by default it is measured rather than assumed.
public enum TLSCipherPreference: Sendable, Hashable {
    /// AES-128-GCM unless ChaCha20-Poly1305 is clearly (25 %) faster on this machine, measured once per
    /// process (a few milliseconds, when the first `wss://` client context is made).
    case fastestMeasured
    /// AES-128-GCM first.
    case aesGCM
    /// ChaCha20-Poly1305 first.
    case chaCha20Poly1305
}

/// Who decrypts incoming records once a TLS 1.3 handshake is done.
public enum TLSRecordReading: Sendable, Hashable {
    /// This package's TLS 1.3 record reader: one AEAD pass (OpenSSL's EVP AES-GCM or ChaCha20-Poly1305)
    /// from the bytes read off the socket into the WebSocket decoder's buffer, instead of OpenSSL's record
    /// layer with its three copies. OpenSSL keeps the handshake, everything sent and any TLS 1.2 or CCM
    /// connection; the peer's traffic secret reaches the reader through OpenSSL's key-log callback and
    /// stays in memory only.
    case direct
    /// OpenSSL's record layer throughout.
    case openSSL
}

/// How `wss://` connections verify the server.
///
/// Verification is always on: the certificate chain must lead to a trusted root, be within its validity
/// period and name the host (or, for an IP literal, carry that IP address).
public struct TLSConfiguration: Sendable, Hashable {
    /// Trust the operating system's root store (`/etc/ssl/certs` on Debian).
    public var trustsSystemRoots: Bool
    /// Extra roots to trust besides (or instead of) the system store, e.g. a private CA.
    public var additionalTrustRoots: [TLSPEMSource]
    /// TLS 1.2 unless raised.
    public var minimumVersion: TLSMinimumVersion
    /// ALPN protocols offered; WebSocket upgrades are HTTP/1.1.
    public var applicationProtocols: [String]
    /// The TLS 1.3 cipher asked for first (the others stay on offer).
    public var cipherPreference: TLSCipherPreference
    /// Who decrypts what the server sends after a TLS 1.3 handshake.
    public var recordReading: TLSRecordReading
    /// Public-key pins: base64 SHA-256 hashes of a certificate's SubjectPublicKeyInfo, optionally written
    /// `sha256/<base64>`. When any are given, the verified chain (leaf, intermediates or root) must carry
    /// one of them, on top of the usual verification; a mismatch fails with `.tlsFailed` and lists the
    /// chain's own pins. Pin a backup key too, so that a key rotation does not lock clients out. Get a pin
    /// with `openssl x509 -pubkey -noout -in cert.pem | openssl pkey -pubin -outform der |
    /// openssl dgst -sha256 -binary | base64`.
    public var pinnedPublicKeys: [String]

    /// Defaults: system roots, no extra roots, TLS 1.2 or later, ALPN `http/1.1`, the faster cipher, the
    /// direct record reader, no pins.
    public init(trustsSystemRoots: Bool = true, additionalTrustRoots: [TLSPEMSource] = [],
                minimumVersion: TLSMinimumVersion = .tls12, applicationProtocols: [String] = ["http/1.1"],
                cipherPreference: TLSCipherPreference = .fastestMeasured, recordReading: TLSRecordReading = .direct,
                pinnedPublicKeys: [String] = []) {
        self.trustsSystemRoots = trustsSystemRoots
        self.additionalTrustRoots = additionalTrustRoots
        self.minimumVersion = minimumVersion
        self.applicationProtocols = applicationProtocols
        self.cipherPreference = cipherPreference
        self.recordReading = recordReading
        self.pinnedPublicKeys = pinnedPublicKeys
    }

    /// True with extra roots, pins or without the system roots: a trust policy a plain `URLSession` (or
    /// Network.framework's defaults) would not apply.
    var customizesTrust: Bool {
        !additionalTrustRoots.isEmpty || !pinnedPublicKeys.isEmpty || !trustsSystemRoots
    }

    /// The pins as 32-byte hashes; throws `.invalidArgument` for one that is not a base64 SHA-256 hash.
    func decodedPins() throws(RealtimeError) -> Set<[UInt8]> {
        var pins: Set<[UInt8]> = []
        for pin in pinnedPublicKeys {
            let text = pin.hasPrefix("sha256/") ? String(pin.dropFirst("sha256/".count)) : pin
            guard let hash = Base64.decode(text), hash.count == 32 else {
                throw RealtimeError(.invalidArgument, "a public-key pin must be a base64 SHA-256 hash",
                                    context: .init(detail: pin))
            }
            pins.insert(hash)
        }
        return pins
    }
}

/// The certificate and key a TLS server presents (for embedded test servers and benchmarks).
public struct TLSServerConfiguration: Sendable, Hashable {
    /// The leaf certificate followed by any intermediates.
    public var certificateChain: TLSPEMSource
    /// The leaf's private key (unencrypted PEM).
    public var privateKey: TLSPEMSource
    /// The lowest TLS version accepted from clients.
    public var minimumVersion: TLSMinimumVersion
    /// Who decrypts what clients send after a TLS 1.3 handshake.
    public var recordReading: TLSRecordReading

    /// A server identity from PEM files or PEM text.
    public init(certificateChain: TLSPEMSource, privateKey: TLSPEMSource, minimumVersion: TLSMinimumVersion = .tls12,
                recordReading: TLSRecordReading = .direct) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.minimumVersion = minimumVersion
        self.recordReading = recordReading
    }
}
