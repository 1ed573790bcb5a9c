// A type-check-only stand-in for the parts of Apple's Security framework (and the few CoreFoundation,
// CommonCrypto and Foundation declarations beside them) that the Apple-only sources use:
// Sources/RealtimeWebSocket/Apple/ and the `canImport(Security)` parts of Sources/RealtimeCore (its HTTP
// client's trust delegate among them) and Adapters/SocketIO. Like Network.swift (which re-exports this
// module, as Network's headers do), it declares only what those files touch, with the signatures Apple's documentation gives, and every
// body is `fatalError("stub")`.
//
// Pages are under https://developer.apple.com/documentation/ ("…/" below).
//
// Where a declaration lives: `OSStatus` is MacTypes'; `CFArray`, `CFData`, `CFError` and `CFAllocator`
// are CoreFoundation's, declared here as the Foundation classes they bridge to (`as CFArray` then
// type-checks as it does against the SDK); `CC_SHA256` and `CC_LONG` are CommonCrypto's (the sources
// import CommonCrypto where it exists, which here it does not); `URLProtectionSpace.serverTrust` and
// `URLCredential(trust:)` are Foundation's on Apple platforms, and swift-corelibs-foundation marks its own
// unavailable, so the stub's take their place in overload resolution.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Scalar types (MacTypes)

/// …/network/nwerror/tls(_:) shows `case tls(OSStatus)`; its symbol identifier
/// (`s:7Network7NWErrorO3tlsyACs5Int32VcACmF`) spells the payload type out as `Swift.Int32`.
public typealias OSStatus = Int32

// MARK: - Secure protocol options

/// …/security/os_sec_protocol_options: `protocol OS_sec_protocol_options : NSObjectProtocol`.
public protocol OS_sec_protocol_options: NSObjectProtocol {}

/// …/security/sec_protocol_options_t: `typealias sec_protocol_options_t = any OS_sec_protocol_options`.
public typealias sec_protocol_options_t = any OS_sec_protocol_options

/// …/security/tls_protocol_version_t: `enum tls_protocol_version_t` with cases TLSv10, TLSv11, TLSv12,
/// TLSv13, DTLSv10, DTLSv12 (conforms to RawRepresentable, Equatable, …). It is a C enum
/// (`c:@E@tls_protocol_version_t`) of `uint16_t`; the raw values are the wire versions, as listed for
/// the same enum at learn.microsoft.com/en-us/dotnet/api/security.tlsprotocolversion. Imported C enums
/// are Sendable.
public enum tls_protocol_version_t: UInt16, Sendable {
    case TLSv10 = 0x0301
    case TLSv11 = 0x0302
    case TLSv12 = 0x0303
    case TLSv13 = 0x0304
    case DTLSv12 = 0xFEFD
    case DTLSv10 = 0xFEFF
}

/// …/security/sec_protocol_options_set_min_tls_protocol_version(_:_:):
/// `func sec_protocol_options_set_min_tls_protocol_version(_ options: sec_protocol_options_t,
/// _ version: tls_protocol_version_t)`.
public func sec_protocol_options_set_min_tls_protocol_version(_ options: sec_protocol_options_t,
                                                              _ version: tls_protocol_version_t) {
    fatalError("stub")
}

/// …/security/sec_protocol_options_add_tls_application_protocol(_:_:):
/// `func sec_protocol_options_add_tls_application_protocol(_ options: sec_protocol_options_t,
/// _ application_protocol: UnsafePointer<CChar>)`.
public func sec_protocol_options_add_tls_application_protocol(_ options: sec_protocol_options_t,
                                                              _ application_protocol: UnsafePointer<CChar>) {
    fatalError("stub")
}

// MARK: - CoreFoundation (as bridged)

/// CoreFoundation's `CFArray`, toll-free bridged to `NSArray`.
public typealias CFArray = NSArray
/// CoreFoundation's `CFData`, toll-free bridged to `NSData`.
public typealias CFData = NSData
/// CoreFoundation's `CFError`, toll-free bridged to `NSError`.
public typealias CFError = NSError
/// …/corefoundation/cfallocator: `class CFAllocator`.
public final class CFAllocator {}

// MARK: - Certificates, keys and trust

/// …/security/sectrust: `class SecTrust`.
public final class SecTrust {}
/// …/security/seccertificate: `class SecCertificate`.
public final class SecCertificate {}
/// …/security/seckey: `class SecKey`.
public final class SecKey {}

/// …/security/errsecsuccess: `var errSecSuccess: OSStatus { get }`.
public var errSecSuccess: OSStatus { 0 }

/// …/security/seccertificatecreatewithdata(_:_:):
/// `func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate?`.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    fatalError("stub")
}

/// …/security/seccertificatecopykey(_:): `func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey?`.
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? { fatalError("stub") }

/// …/security/seckeycopyexternalrepresentation(_:_:): `func SecKeyCopyExternalRepresentation(_ key: SecKey,
/// _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData?`.
public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    fatalError("stub")
}

/// …/security/sectrustsetanchorcertificates(_:_:):
/// `func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray) -> OSStatus`.
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray) -> OSStatus {
    fatalError("stub")
}

/// …/security/sectrustsetanchorcertificatesonly(_:_:):
/// `func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus`.
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    fatalError("stub")
}

/// …/security/sectrustevaluatewitherror(_:_:):
/// `func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool`.
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    fatalError("stub")
}

/// …/security/sectrustcopycertificatechain(_:): `func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray?`
/// (macOS 12, iOS 15 and later; the package's minimum is macOS 13, iOS 16).
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? { fatalError("stub") }

// MARK: - Verify block of secure protocol options

/// …/security/os_sec_trust: `protocol OS_sec_trust : NSObjectProtocol`.
public protocol OS_sec_trust: NSObjectProtocol {}
/// …/security/sec_trust_t: `typealias sec_trust_t = any OS_sec_trust`.
public typealias sec_trust_t = any OS_sec_trust
/// …/security/os_sec_protocol_metadata: `protocol OS_sec_protocol_metadata : NSObjectProtocol`.
public protocol OS_sec_protocol_metadata: NSObjectProtocol {}
/// …/security/sec_protocol_metadata_t: `typealias sec_protocol_metadata_t = any OS_sec_protocol_metadata`.
public typealias sec_protocol_metadata_t = any OS_sec_protocol_metadata

/// …/security/sec_protocol_verify_complete_t: `typealias sec_protocol_verify_complete_t = (Bool) -> Void`.
public typealias sec_protocol_verify_complete_t = (Bool) -> Void

/// …/security/sec_protocol_verify_t: `typealias sec_protocol_verify_t = (sec_protocol_metadata_t,
/// sec_trust_t, @escaping sec_protocol_verify_complete_t) -> Void`.
public typealias sec_protocol_verify_t = (sec_protocol_metadata_t, sec_trust_t, @escaping sec_protocol_verify_complete_t) -> Void

/// …/security/sec_protocol_options_set_verify_block(_:_:_:): `func sec_protocol_options_set_verify_block(
/// _ options: sec_protocol_options_t, _ verify_block: @escaping sec_protocol_verify_t, _ verify_block_queue:
/// dispatch_queue_t)`; Swift imports `dispatch_queue_t` as `DispatchQueue`.
public func sec_protocol_options_set_verify_block(_ options: sec_protocol_options_t,
                                                  _ verify_block: @escaping sec_protocol_verify_t,
                                                  _ verify_block_queue: DispatchQueue) {
    fatalError("stub")
}

/// …/security/sec_trust_copy_ref(_:): `func sec_trust_copy_ref(_ trust: sec_trust_t) -> Unmanaged<SecTrust>`.
public func sec_trust_copy_ref(_ trust: sec_trust_t) -> Unmanaged<SecTrust> { fatalError("stub") }

// MARK: - CommonCrypto

/// CommonCrypto's `CC_LONG` (`uint32_t`).
public typealias CC_LONG = UInt32

/// CommonCrypto's `CC_SHA256`, as Swift imports `unsigned char *CC_SHA256(const void *data, CC_LONG len,
/// unsigned char *md)`.
public func CC_SHA256(_ data: UnsafeRawPointer!, _ len: CC_LONG, _ md: UnsafeMutablePointer<UInt8>!) -> UnsafeMutablePointer<UInt8>! {
    fatalError("stub")
}

// MARK: - Foundation on Apple platforms

extension URLProtectionSpace {
    /// …/foundation/urlprotectionspace/servertrust: `var serverTrust: SecTrust? { get }`.
    public var serverTrust: SecTrust? { fatalError("stub") }
}

extension URLCredential {
    /// …/foundation/urlcredential/init(trust:): `init(trust: SecTrust)`.
    public convenience init(trust: SecTrust) { fatalError("stub") }
}
