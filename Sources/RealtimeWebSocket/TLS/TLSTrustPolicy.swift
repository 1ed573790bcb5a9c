import Foundation
import RealtimeCore

/// A ``TLSConfiguration``'s trust settings in the shape a platform verifier needs (Network.framework's
/// verify block, a `URLSession` delegate): the extra roots as DER certificates, and the pins checked
/// against the SubjectPublicKeyInfo of each certificate of the verified chain. Platform-neutral so that
/// Linux tests cover everything but the platform calls.
package struct TLSTrustPolicy: Sendable {
    /// Whether the operating system's roots stay trusted beside ``anchorCertificates``.
    package let trustsSystemRoots: Bool
    /// The extra roots, DER-encoded.
    package let anchorCertificates: [[UInt8]]
    /// SHA-256 hashes of SubjectPublicKeyInfo; empty = no pinning.
    package let pins: Set<[UInt8]>

    /// Reads `configuration`'s roots (PEM files or text) and pins; throws `.invalidArgument` for a pin that
    /// is not a base64 SHA-256 hash or a root source without a certificate.
    package init(_ configuration: TLSConfiguration) throws(RealtimeError) {
        trustsSystemRoots = configuration.trustsSystemRoots
        pins = try configuration.decodedPins()
        var anchors: [[UInt8]] = []
        for source in configuration.additionalTrustRoots {
            let text: String
            switch source {
            case .pem(let pem):
                text = pem
            case .file(let path):
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw RealtimeError(.invalidArgument, "cannot read the trusted certificates file", context: .init(detail: path))
                }
                text = String(decoding: data, as: UTF8.self)
            }
            let certificates = Self.certificates(pem: text)
            guard !certificates.isEmpty else {
                throw RealtimeError(.invalidArgument, "the PEM text holds no certificate")
            }
            anchors += certificates
        }
        anchorCertificates = anchors
    }

    /// The DER bodies of every `CERTIFICATE` block in `text` (other blocks are skipped).
    package static func certificates(pem text: String) -> [[UInt8]] {
        var certificates: [[UInt8]] = []
        var body: String?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line == "-----BEGIN CERTIFICATE-----" {
                body = ""
            } else if line == "-----END CERTIFICATE-----" {
                if let body, let der = Base64.decode(body), !der.isEmpty { certificates.append(der) }
                body = nil
            } else if body != nil {
                body! += line
            }
        }
        return certificates
    }

    /// Nil when no pins are set or one of `chain`'s keys (DER SubjectPublicKeyInfo, hashed with `sha256`)
    /// is pinned; otherwise the `.tlsFailed` error that lists the chain's own pins.
    package func checkPins(chain: [[UInt8]], sha256: ([UInt8]) -> [UInt8]) -> RealtimeError? {
        guard !pins.isEmpty else { return nil }
        var seen: [String] = []
        for key in chain {
            let hash = sha256(key)
            if pins.contains(hash) { return nil }
            seen.append("sha256/" + Base64.encode(hash))
        }
        return RealtimeError(.tlsFailed, "the server's certificate chain carries none of the pinned public keys",
                             context: .init(detail: "the chain's pins: " + seen.joined(separator: ", ")))
    }
}

/// DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) rebuilt from the raw key Apple's
/// `SecKeyCopyExternalRepresentation` gives: for RSA the PKCS#1 RSAPublicKey, for elliptic-curve keys the
/// X9.63 uncompressed point. A pin hashes the whole SubjectPublicKeyInfo, so the algorithm identifier in
/// front of the raw key must be exactly what the certificate carries.
package enum SubjectPublicKeyInfo {
    /// rsaEncryption (1.2.840.113549.1.1.1) with its NULL parameters.
    private static let rsaAlgorithm: [UInt8] = [0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01,
                                                0x05, 0x00]
    /// id-ecPublicKey (1.2.840.10045.2.1).
    private static let ecPublicKey: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    /// The named curves by the size of their uncompressed point: P-256 (1.2.840.10045.3.1.7),
    /// P-384 (1.3.132.0.34), P-521 (1.3.132.0.35).
    private static let curves: [Int: [UInt8]] = [
        65: [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07],
        97: [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22],
        133: [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x23],
    ]

    /// The SubjectPublicKeyInfo of `raw`, or nil for a key of another kind (Ed25519, a compressed point):
    /// such a key can match no pin. The two encodings cannot be confused: a PKCS#1 key is a DER SEQUENCE
    /// (first byte 0x30), an uncompressed point starts with 0x04.
    package static func der(fromExternalRepresentation raw: [UInt8]) -> [UInt8]? {
        let algorithm: [UInt8]
        if raw.first == 0x04, let curve = curves[raw.count] {
            algorithm = encode(tag: 0x30, ecPublicKey + curve)
        } else if raw.first == 0x30, raw.count > 8 {
            algorithm = rsaAlgorithm
        } else {
            return nil
        }
        // BIT STRING with no unused bits around the raw key.
        return encode(tag: 0x30, algorithm + encode(tag: 0x03, [0x00] + raw))
    }

    /// A DER tag-length-value.
    private static func encode(tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        var length: [UInt8]
        if count < 0x80 {
            length = [UInt8(count)]
        } else {
            length = []
            var rest = count
            while rest > 0 {
                length.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }
}
