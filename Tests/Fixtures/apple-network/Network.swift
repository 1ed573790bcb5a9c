// A type-check-only stand-in for Apple's Network framework (Security's declarations are in the stub
// Security module, Security.swift), so the Apple-only files in `Sources/RealtimeWebSocket/Apple/`
// (NetworkWebSocketTransport.swift, NetworkPathFollowing.swift) can be compiled on Linux. It declares only
// what those files touch, with the signatures Apple's documentation gives; every body is
// `fatalError("stub")`: nothing here is meant to run. `typecheck.sh` builds it with
// `-enable-library-evolution`, as the SDK's modules are, so its enums are non-frozen for clients exactly as
// the real ones are.
//
// Pages are under https://developer.apple.com/documentation/ ("…/" below); each comment names the page
// the declaration was taken from.
//
// Where a declaration lives: `DNSServiceErrorType` belongs to dns_sd, which Network re-exports; it is
// declared here.

import Dispatch
import Foundation  // Data, NSObjectProtocol, POSIXErrorCode (from Glibc, which Foundation re-exports)
#if canImport(FoundationNetworking)
import FoundationNetworking  // URLSessionConfiguration, which Network extends with `proxyConfigurations`
#endif
// Network's own headers import Security's, so a file that imports Network sees Security too; the stub
// Security module (Security.swift beside this file) stands in for it.
@_exported import Security

// MARK: - Scalar types

/// …/network/nwerror/dns(_:) shows `case dns(DNSServiceErrorType)`; its symbol identifier
/// (`s:7Network7NWErrorO3dnsyACs5Int32VcACmF`) spells the payload type out as `Swift.Int32`.
public typealias DNSServiceErrorType = Int32

// MARK: - NWError

/// …/network/nwerror: `enum NWError`, conforming to Equatable, CustomNSError,
/// CustomDebugStringConvertible, Sendable, Error.
public enum NWError: Error, Equatable, CustomNSError, CustomDebugStringConvertible, Sendable {
    /// …/network/nwerror/posix(_:): `case posix(POSIXErrorCode)`.
    case posix(POSIXErrorCode)
    /// …/network/nwerror/dns(_:): `case dns(DNSServiceErrorType)`.
    case dns(DNSServiceErrorType)
    /// …/network/nwerror/tls(_:): `case tls(OSStatus)`.
    case tls(OSStatus)
    /// …/network/nwerror/wifiaware(_:): `case wifiAware(Int32)` (iOS/macOS 26 and later).
    @available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
    case wifiAware(Int32)

    public var debugDescription: String { fatalError("stub") }
}

// MARK: - Endpoints

/// …/network/nwendpoint (the enum `NWEndpoint`; only the case `init(to:using:)` below needs).
public enum NWEndpoint: Sendable {
    /// …/network/nwendpoint/hostport(host:port:):
    /// `case hostPort(host: NWEndpoint.Host, port: NWEndpoint.Port)`.
    case hostPort(host: NWEndpoint.Host, port: NWEndpoint.Port)

    /// …/network/nwendpoint/host: `enum Host` (cases name/ipv4/ipv6 left out: the transport never
    /// matches on them, and they would drag in NWInterface and the address types).
    public enum Host: Sendable {
        /// …/network/nwendpoint/host/init(_:): `init(_ string: String)`.
        public init(_ string: String) { fatalError("stub") }
    }

    /// …/network/nwendpoint/port: `struct Port`.
    public struct Port: ExpressibleByIntegerLiteral, Sendable {
        /// The literal type of `init(integerLiteral:)`: Port is a 16-bit port number (raw value UInt16).
        public typealias IntegerLiteralType = UInt16

        /// `init(integerLiteral value: NWEndpoint.Port.IntegerLiteralType)` — Apple's page for it is not
        /// in the stored set; the declaration is as listed at onestack.dev/ios-reference/Network/NWEndpoint.Port.
        public init(integerLiteral value: UInt16) { fatalError("stub") }
    }
}

// MARK: - Protocol options

/// …/network/nwprotocol: `class NWProtocol`, Sendable.
public class NWProtocol: @unchecked Sendable {
    init() {}
}

/// …/network/nwprotocoloptions: `class NWProtocolOptions`, Sendable.
public class NWProtocolOptions: @unchecked Sendable {
    init() {}
}

/// …/network/nwprotocoltls (class `NWProtocolTLS`, inherits NWProtocol).
public class NWProtocolTLS: NWProtocol, @unchecked Sendable {
    /// …/network/nwprotocoltls/options: `class Options`, inherits NWProtocolOptions, Sendable.
    public class Options: NWProtocolOptions, @unchecked Sendable {
        /// …/network/nwprotocoltls/options (Topics: `init()`, "Initializes a default set of TLS
        /// connection options").
        override public init() { fatalError("stub") }

        /// …/network/nwprotocoltls/options/securityprotocoloptions:
        /// `var securityProtocolOptions: sec_protocol_options_t { get }`.
        public var securityProtocolOptions: sec_protocol_options_t { fatalError("stub") }
    }
}

/// …/network/nwprotocoltcp: `class NWProtocolTCP`, inherits NWProtocol, Sendable.
public class NWProtocolTCP: NWProtocol, @unchecked Sendable {
    /// …/network/nwprotocoltcp/options (inherits NWProtocolOptions).
    public class Options: NWProtocolOptions, @unchecked Sendable {
        /// …/network/nwprotocoltcp/options/init(): `init()`.
        override public init() { fatalError("stub") }
    }
}

// MARK: - Parameters

/// …/network/nwparameters: `final class NWParameters`. (Its page's conformance list is not in the stored
/// excerpt; the transport only passes it to `NWConnection`'s initializer, so none is declared.)
public final class NWParameters {
    /// …/network/nwparameters/init(): `init()`.
    public init() { fatalError("stub") }

    /// …/network/nwparameters/init(tls:tcp:):
    /// `convenience init(tls: NWProtocolTLS.Options?, tcp: NWProtocolTCP.Options = NWProtocolTCP.Options())`.
    public convenience init(tls: NWProtocolTLS.Options?, tcp: NWProtocolTCP.Options = NWProtocolTCP.Options()) {
        fatalError("stub")
    }

    /// …/network/nwparameters/tcp ("A set of default parameters for connections and listeners that use
    /// TCP"), declared like its sibling …/network/nwparameters/tls: `final class var tls: NWParameters { get }`.
    public class var tcp: NWParameters { fatalError("stub") }

    /// …/network/nwparameters/setprivacycontext(_:):
    /// `final func setPrivacyContext(_ privacyContext: NWParameters.PrivacyContext)`.
    public func setPrivacyContext(_ privacyContext: NWParameters.PrivacyContext) { fatalError("stub") }

    /// …/network/nwparameters/privacycontext: `class PrivacyContext` (iOS 14, macOS 11).
    public class PrivacyContext {
        /// …/network/nwparameters/privacycontext/init(description:): `init(description: String)`.
        public init(description: String) { fatalError("stub") }

        /// …/network/nwparameters/privacycontext/proxyconfigurations:
        /// `var proxyConfigurations: [ProxyConfiguration] { get set }` (iOS 17, macOS 14).
        @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
        public var proxyConfigurations: [ProxyConfiguration] {
            get { fatalError("stub") }
            set { fatalError("stub") }
        }
    }
}

// MARK: - Proxies

/// …/network/proxyconfiguration: `struct ProxyConfiguration` ("A proxy configuration for Relays, Oblivious
/// HTTP, HTTP CONNECT, or SOCKSv5"; iOS 17, macOS 14). The page's excerpt lists no conformances; none is
/// declared.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
public struct ProxyConfiguration {
    /// …/network/proxyconfiguration/init(httpconnectproxy:tlsoptions:):
    /// `init(httpCONNECTProxy: NWEndpoint, tlsOptions: NWProtocolTLS.Options? = nil)`.
    public init(httpCONNECTProxy: NWEndpoint, tlsOptions: NWProtocolTLS.Options? = nil) { fatalError("stub") }

    /// …/network/proxyconfiguration/applycredential(username:password:):
    /// `func applyCredential(username: String, password: String)`.
    public func applyCredential(username: String, password: String) { fatalError("stub") }
}

/// …/foundation/urlsessionconfiguration/proxyconfigurations: `var proxyConfigurations: [ProxyConfiguration]
/// { get set }` (iOS 17, macOS 14), an extension Network declares on Foundation's class (its symbol,
/// `s:So25NSURLSessionConfigurationC7NetworkE19proxyConfigurations…`, is in module Network).
extension URLSessionConfiguration {
    @available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
    public var proxyConfigurations: [ProxyConfiguration] {
        get { fatalError("stub") }
        set { fatalError("stub") }
    }
}

// MARK: - NWConnection

/// …/network/nwconnection: `final class NWConnection`. The SDK marks it `@unchecked Sendable` (its
/// handlers run on the queue given to `start(queue:)`); the stored excerpt of the page stops before the
/// conformance list, so this stub follows the SDK and says so here.
public final class NWConnection: CustomDebugStringConvertible, @unchecked Sendable {
    /// …/network/nwconnection/init(to:using:): `init(to: NWEndpoint, using: NWParameters)`.
    public init(to: NWEndpoint, using: NWParameters) { fatalError("stub") }

    /// …/network/nwconnection/init(host:port:using:):
    /// `convenience init(host: NWEndpoint.Host, port: NWEndpoint.Port, using: NWParameters)`.
    public convenience init(host: NWEndpoint.Host, port: NWEndpoint.Port, using: NWParameters) {
        fatalError("stub")
    }

    /// …/network/nwconnection/stateupdatehandler:
    /// `@preconcurrency final var stateUpdateHandler: (@Sendable (NWConnection.State) -> Void)? { get set }`.
    @preconcurrency public var stateUpdateHandler: (@Sendable (NWConnection.State) -> Void)? {
        get { fatalError("stub") }
        set { fatalError("stub") }
    }

    /// …/network/nwconnection/start(queue:): `final func start(queue: DispatchQueue)`.
    public func start(queue: DispatchQueue) { fatalError("stub") }

    /// …/network/nwconnection/receive(minimumincompletelength:maximumlength:completion:):
    /// `@preconcurrency final func receive(minimumIncompleteLength: Int, maximumLength: Int,
    /// completion: @escaping @Sendable (Data?, NWConnection.ContentContext?, Bool, NWError?) -> Void)`.
    @preconcurrency
    public func receive(minimumIncompleteLength: Int, maximumLength: Int,
                        completion: @escaping @Sendable (Data?, NWConnection.ContentContext?, Bool, NWError?) -> Void) {
        fatalError("stub")
    }

    /// …/network/nwconnection/send(content:contentcontext:iscomplete:completion:)-5ecuz:
    /// `@preconcurrency final func send(content: Data?, contentContext: NWConnection.ContentContext =
    /// .defaultMessage, isComplete: Bool = true, completion: NWConnection.SendCompletion)`.
    @preconcurrency
    public func send(content: Data?, contentContext: NWConnection.ContentContext = .defaultMessage,
                     isComplete: Bool = true, completion: NWConnection.SendCompletion) {
        fatalError("stub")
    }

    /// …/network/nwconnection/cancel(): `final func cancel()`.
    public func cancel() { fatalError("stub") }

    public var debugDescription: String { fatalError("stub") }

    /// …/network/nwconnection/state-swift.enum: `enum State`, with the cases
    /// …/state-swift.enum/setup `case setup`, …/waiting(_:) `case waiting(NWError)`,
    /// …/preparing `case preparing`, …/ready `case ready`, …/failed(_:) `case failed(NWError)`,
    /// …/cancelled `case cancelled`. Declared Sendable (its payloads are); the stored excerpt of the page
    /// stops before its conformance list.
    public enum State: Sendable {
        case setup
        case waiting(NWError)
        case preparing
        case ready
        case failed(NWError)
        case cancelled
    }

    /// …/network/nwconnection/contentcontext: `class ContentContext` (symbol kind: class). Declared
    /// `@unchecked Sendable` (the stored excerpt stops before its conformance list), which also lets
    /// `defaultMessage` be a `static let` under Swift 6.
    public final class ContentContext: @unchecked Sendable {
        init() {}

        /// …/network/nwconnection/contentcontext/defaultmessage:
        /// `static let defaultMessage: NWConnection.ContentContext`.
        public static let defaultMessage = ContentContext()
    }

    /// …/network/nwconnection/sendcompletion: `enum SendCompletion` (Sendable: its one payload is a
    /// `@Sendable` closure).
    public enum SendCompletion: Sendable {
        /// …/network/nwconnection/sendcompletion/contentprocessed(_:):
        /// `@preconcurrency case contentProcessed(@Sendable (NWError?) -> Void)`.
        @preconcurrency case contentProcessed(@Sendable (NWError?) -> Void)
        /// …/network/nwconnection/sendcompletion/idempotent.
        case idempotent
    }
}

// MARK: - Path monitoring (used by Sources/RealtimeWebSocket/Apple/NetworkPathFollowing.swift)

/// …/network/nwpathmonitor: `final class NWPathMonitor`. (Its conformance list is not in the stored
/// excerpt; none is declared.)
public final class NWPathMonitor {
    /// …/network/nwpathmonitor (Topics: `init()`, "Initializes a path monitor to observe all available
    /// interface types").
    public init() { fatalError("stub") }

    /// …/network/nwpathmonitor/pathupdatehandler:
    /// `@preconcurrency final var pathUpdateHandler: (@Sendable (NWPath) -> Void)? { get set }`.
    @preconcurrency public var pathUpdateHandler: (@Sendable (NWPath) -> Void)? {
        get { fatalError("stub") }
        set { fatalError("stub") }
    }

    /// …/network/nwpathmonitor (Topics: `start(queue:)`, "Starts monitoring path changes, and sets a queue
    /// on which to deliver path events"), declared like NWConnection's: `final func start(queue: DispatchQueue)`.
    public func start(queue: DispatchQueue) { fatalError("stub") }

    /// `final func cancel()`, as NWConnection's …/network/nwconnection/cancel().
    public func cancel() { fatalError("stub") }
}

/// …/network/nwpath (symbol `s:7Network6NWPathV`: a struct).
public struct NWPath {
    /// …/network/nwpath/status-swift.property: `let status: NWPath.Status`.
    public var status: NWPath.Status { fatalError("stub") }

    /// …/network/nwpath/status-swift.enum: `enum Status` with …/unsatisfied `case unsatisfied`,
    /// …/satisfied `case satisfied`, …/requiresconnection `case requiresConnection`.
    public enum Status: Sendable {
        case unsatisfied
        case satisfied
        case requiresConnection
    }
}
