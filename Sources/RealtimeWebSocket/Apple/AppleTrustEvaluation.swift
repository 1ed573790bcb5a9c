#if canImport(Network)
import Foundation
import RealtimeCore
#if canImport(Security)
import Security
#endif
#if canImport(CommonCrypto)
import CommonCrypto
#endif

extension TLSTrustPolicy {
    /// Evaluates `trust` (a server's chain with its host name policy) with this policy: the extra roots as
    /// anchors, the system's kept or dropped, then `SecTrustEvaluateWithError`, then the pins against
    /// the SubjectPublicKeyInfo of every certificate of the evaluated chain. Nil when trusted.
    func evaluate(_ trust: SecTrust) -> RealtimeError? {
        if !anchorCertificates.isEmpty || !trustsSystemRoots {
            let anchors = anchorCertificates.compactMap { SecCertificateCreateWithData(nil, Data($0) as CFData) }
            guard anchors.count == anchorCertificates.count else {
                return RealtimeError(.invalidArgument, "a trusted root is not a DER certificate Security accepts")
            }
            // Setting anchors drops the system's unless told otherwise; with none and no system roots,
            // nothing is trusted, which is what the configuration says.
            guard SecTrustSetAnchorCertificates(trust, anchors as CFArray) == errSecSuccess,
                  SecTrustSetAnchorCertificatesOnly(trust, !trustsSystemRoots) == errSecSuccess else {
                return RealtimeError(.tlsFailed, "TLS setup failed: could not set the trusted roots")
            }
        }
        var error: CFError?
        guard SecTrustEvaluateWithError(trust, &error) else {
            return RealtimeError(.tlsFailed, "TLS handshake failed: the server certificate could not be verified",
                                 context: .init(detail: error.map { ($0 as any Error).localizedDescription }))
        }
        guard !pins.isEmpty else { return nil }
        let chain = (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
        let keys = chain.compactMap { certificate -> [UInt8]? in
            // The raw key (PKCS#1 or an EC point), not a SubjectPublicKeyInfo: rebuilt before hashing.
            guard let key = SecCertificateCopyKey(certificate),
                  let raw = SecKeyCopyExternalRepresentation(key, nil) as Data? else { return nil }
            return SubjectPublicKeyInfo.der(fromExternalRepresentation: [UInt8](raw))
        }
        return checkPins(chain: keys) { bytes in
            var digest = [UInt8](repeating: 0, count: 32)
            _ = CC_SHA256(bytes, CC_LONG(bytes.count), &digest)
            return digest
        }
    }
}
#endif
