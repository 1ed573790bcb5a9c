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

    public init(trustsSystemRoots: Bool = true, additionalTrustRoots: [TLSPEMSource] = [],
                minimumVersion: TLSMinimumVersion = .tls12, applicationProtocols: [String] = ["http/1.1"]) {
        self.trustsSystemRoots = trustsSystemRoots
        self.additionalTrustRoots = additionalTrustRoots
        self.minimumVersion = minimumVersion
        self.applicationProtocols = applicationProtocols
    }
}

/// The certificate and key a TLS server presents (for embedded test servers and benchmarks).
public struct TLSServerConfiguration: Sendable, Hashable {
    /// The leaf certificate followed by any intermediates.
    public var certificateChain: TLSPEMSource
    /// The leaf's private key (unencrypted PEM).
    public var privateKey: TLSPEMSource
    public var minimumVersion: TLSMinimumVersion

    public init(certificateChain: TLSPEMSource, privateKey: TLSPEMSource, minimumVersion: TLSMinimumVersion = .tls12) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.minimumVersion = minimumVersion
    }
}
