import COpenSSL
import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// The platform-neutral half of Apple trust evaluation: extra roots as DER, pins against each chain
/// certificate's SubjectPublicKeyInfo rebuilt from the raw key Apple's API returns. OpenSSL plays the
/// platform here: `i2d_PublicKey` gives the same raw forms as `SecKeyCopyExternalRepresentation` (PKCS#1
/// for RSA, the uncompressed point for EC) and `i2d_PUBKEY` the SubjectPublicKeyInfo to match.
@Suite("TLS trust policy for platform verifiers")
struct TLSTrustPolicyTests {
    let certificates: TLSTestCertificates

    init() throws {
        certificates = try TLSTestCertificates.shared.get()
    }

    static func generateKey(_ kind: String, _ parameter: String) -> OpaquePointer {
        let context = EVP_PKEY_CTX_new_from_name(nil, kind, nil)!
        defer { EVP_PKEY_CTX_free(context) }
        precondition(EVP_PKEY_keygen_init(context) == 1)
        if kind == "RSA" {
            precondition(EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(parameter)!) == 1)
        } else {
            precondition(EVP_PKEY_CTX_set_group_name(context, parameter) == 1)
        }
        var key: OpaquePointer?
        precondition(EVP_PKEY_generate(context, &key) == 1)
        return key!
    }

    static func raw(_ key: OpaquePointer) -> [UInt8] {
        let length = i2d_PublicKey(key, nil)
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            precondition(i2d_PublicKey(key, &cursor) == length)
        }
        return bytes
    }

    static func subjectPublicKeyInfo(_ key: OpaquePointer) -> [UInt8] {
        let length = i2d_PUBKEY(key, nil)
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            precondition(i2d_PUBKEY(key, &cursor) == length)
        }
        return bytes
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] { AESGCMOpenTests.sha256(bytes) }

    @Test("SubjectPublicKeyInfo rebuilt from the raw key equals OpenSSL's, for RSA and EC keys of every size",
          arguments: [("RSA", "1024"), ("RSA", "2048"), ("RSA", "3072"), ("EC", "P-256"), ("EC", "P-384"), ("EC", "P-521")])
    func rebuildsSubjectPublicKeyInfo(kind: String, parameter: String) {
        let key = Self.generateKey(kind, parameter)
        defer { EVP_PKEY_free(key) }
        let raw = Self.raw(key)
        #expect(raw.first == (kind == "RSA" ? 0x30 : 0x04))
        #expect(SubjectPublicKeyInfo.der(fromExternalRepresentation: raw) == Self.subjectPublicKeyInfo(key))
    }

    @Test("keys it cannot describe give nil, never a wrong SubjectPublicKeyInfo")
    func unknownKeys() {
        #expect(SubjectPublicKeyInfo.der(fromExternalRepresentation: []) == nil)
        #expect(SubjectPublicKeyInfo.der(fromExternalRepresentation: [UInt8](repeating: 7, count: 32)) == nil)  // Ed25519
        #expect(SubjectPublicKeyInfo.der(fromExternalRepresentation: [0x02] + [UInt8](repeating: 1, count: 32)) == nil)  // compressed
        #expect(SubjectPublicKeyInfo.der(fromExternalRepresentation: [0x04] + [UInt8](repeating: 1, count: 70)) == nil)  // no such curve
    }

    @Test("the test certificates' pins, computed by the openssl CLI, come out of the raw keys")
    func pinsOfTestCertificates() throws {
        for name in ["leaf", "ca"] {
            let pem = try String(contentsOfFile: certificates.directory.appendingPathComponent("\(name).pem").path, encoding: .utf8)
            let der = try #require(TLSTrustPolicy.certificates(pem: pem).first)
            let certificate = try #require(der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                var cursor = buffer.baseAddress
                return d2i_X509(nil, &cursor, buffer.count)
            })
            defer { X509_free(certificate) }
            let spki = try #require(SubjectPublicKeyInfo.der(fromExternalRepresentation: Self.raw(X509_get0_pubkey(certificate))))
            #expect(Base64.encode(Self.sha256(spki)) == certificates.publicKeyPin(name).trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    @Test("roots from a file or PEM text become DER; bad pins and empty sources are refused")
    func readsConfiguration() throws {
        let pem = try String(contentsOfFile: certificates.caCertificate, encoding: .utf8)
        let fromFile = try TLSTrustPolicy(TLSConfiguration(trustsSystemRoots: false, additionalTrustRoots: [.file(certificates.caCertificate)]))
        let fromText = try TLSTrustPolicy(TLSConfiguration(additionalTrustRoots: [.pem(pem + "\n" + pem)]))
        #expect(fromFile.anchorCertificates.count == 1)
        #expect(fromText.anchorCertificates == fromFile.anchorCertificates + fromFile.anchorCertificates)
        #expect(!fromFile.trustsSystemRoots && fromText.trustsSystemRoots)
        let der = fromFile.anchorCertificates[0]
        #expect(der.first == 0x30 && der.count > 200)
        #expect(throws: RealtimeError.self) { try TLSTrustPolicy(TLSConfiguration(pinnedPublicKeys: ["bm90IGEgcGlu"])) }
        #expect(throws: RealtimeError.self) { try TLSTrustPolicy(TLSConfiguration(additionalTrustRoots: [.pem("no certificate")])) }
        #expect(throws: RealtimeError.self) { try TLSTrustPolicy(TLSConfiguration(additionalTrustRoots: [.file("/nonexistent.pem")])) }
    }

    @Test("pins: one pinned key anywhere in the chain passes; none fails typed, listing the chain's pins")
    func checksPins() throws {
        let leafKey = [UInt8](repeating: 1, count: 91)
        let caKey = [UInt8](repeating: 2, count: 91)
        let caPin = "sha256/" + Base64.encode(Self.sha256(caKey))
        let pinned = try TLSTrustPolicy(TLSConfiguration(pinnedPublicKeys: [caPin]))
        #expect(pinned.checkPins(chain: [leafKey, caKey], sha256: Self.sha256) == nil)
        let error = pinned.checkPins(chain: [leafKey], sha256: Self.sha256)
        #expect(error?.code == .tlsFailed)
        #expect(error?.context.detail == "the chain's pins: sha256/" + Base64.encode(Self.sha256(leafKey)))
        let unpinned = try TLSTrustPolicy(TLSConfiguration())
        #expect(unpinned.checkPins(chain: [], sha256: Self.sha256) == nil)
    }
}
