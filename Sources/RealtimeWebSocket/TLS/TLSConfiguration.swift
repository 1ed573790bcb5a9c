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
    /// TLS 1.2 or 1.3, whichever is the highest both ends speak; the default.
    case tls12
    /// TLS 1.3 only: a peer that stops at 1.2 fails the handshake.
    case tls13
}

/// Which TLS 1.3 cipher a client asks for first. The order is fixed: nothing is timed at start-up, so two
/// runs of the same program on the same machine always offer the same list. Every suite stays on offer;
/// only the first choice changes.
public enum TLSCipherPreference: Sendable, Hashable {
    /// AES-128-GCM, then ChaCha20-Poly1305, then AES-256-GCM: the order mainstream browsers and TLS
    /// libraries use, cheapest on CPUs with AES instructions (every current x86-64 and ARMv8 server and phone).
    case aesGCM
    /// ChaCha20-Poly1305 first: faster only on CPUs without AES instructions (some low-end ARM boards).
    case chaCha20Poly1305
}

/// Who decrypts incoming records once a TLS 1.3 handshake is done.
public enum TLSRecordReading: Sendable, Hashable {
    /// OpenSSL's record layer throughout: the default, and what a careful user expects.
    case openSSL
    /// An optimisation, off unless asked for: this package's own TLS 1.3 record reader decrypts what the
    /// peer sends after the handshake, in one AEAD pass (OpenSSL's EVP AES-GCM or ChaCha20-Poly1305, or a
    /// VAES AES-GCM opener on x86-64 CPUs that have it) from the bytes read off the socket into the
    /// WebSocket decoder's buffer, instead of OpenSSL's record layer with its copies in and out.
    ///
    /// OpenSSL keeps the handshake, everything sent, and any TLS 1.2 or CCM connection. To take over, the
    /// reader needs the peer's traffic secret, which OpenSSL 3.0 hands out only through its key-log
    /// callback (installed only on contexts that choose this case; the secret is kept in memory only and
    /// wiped when the reader ends), and when it must reject a record it leads OpenSSL to send the alert by
    /// feeding it a record that fails OpenSSL's own checks. It is a TLS record layer outside OpenSSL, so
    /// choose it only where the CPU saved matters.
    ///
    /// The reader accepts and refuses exactly what OpenSSL's record layer does, with the same alerts; a
    /// differential fuzz target holds it to that.
    ///
    /// Measured gain (`swift run -c release realtime-bench transport`, 2-core x86-64 VM with VAES,
    /// TLS 1.3 AES-128-GCM, 1 M × 150-byte frames, both readers in the same run, seven runs): the record
    /// layer alone, from memory, is 2.3–3.9× as fast as OpenSSL's (20–23 ms against 51–85 ms; OpenSSL's
    /// time varies most between runs); a whole wss receive over loopback gets 1.12–1.22× the messages per
    /// client CPU-second on the best rounds and 1.12–1.22× on the medians (7–25 % below ws instead of
    /// 18–33 %). Where VAES is missing the AEAD is EVP's and the gain is smaller (1.4× for the record layer).
    case directDecryptionOptimization
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
    /// The TLS 1.3 cipher asked for first (the others stay on offer); AES-128-GCM by default.
    public var cipherPreference: TLSCipherPreference
    /// Who decrypts what the server sends after a TLS 1.3 handshake: OpenSSL by default.
    public var recordReading: TLSRecordReading
    /// Public-key pins: base64 SHA-256 hashes of a certificate's SubjectPublicKeyInfo, optionally written
    /// `sha256/<base64>`. When any are given, the verified chain (leaf, intermediates or root) must carry
    /// one of them, on top of the usual verification; a mismatch fails with `.tlsFailed` and lists the
    /// chain's own pins. Pin a backup key too, so that a key rotation does not lock clients out. Get a pin
    /// with `openssl x509 -pubkey -noout -in cert.pem | openssl pkey -pubin -outform der |
    /// openssl dgst -sha256 -binary | base64`.
    public var pinnedPublicKeys: [String]

    /// Defaults: system roots, no extra roots, TLS 1.2 or later, ALPN `http/1.1`, AES-128-GCM first,
    /// OpenSSL's record layer, no pins.
    public init(trustsSystemRoots: Bool = true, additionalTrustRoots: [TLSPEMSource] = [],
                minimumVersion: TLSMinimumVersion = .tls12, applicationProtocols: [String] = ["http/1.1"],
                cipherPreference: TLSCipherPreference = .aesGCM, recordReading: TLSRecordReading = .openSSL,
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

    /// A server identity from PEM files or PEM text; OpenSSL's record layer unless `recordReading` asks
    /// for ``TLSRecordReading/directDecryptionOptimization``.
    public init(certificateChain: TLSPEMSource, privateKey: TLSPEMSource, minimumVersion: TLSMinimumVersion = .tls12,
                recordReading: TLSRecordReading = .openSSL) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.minimumVersion = minimumVersion
        self.recordReading = recordReading
    }
}
