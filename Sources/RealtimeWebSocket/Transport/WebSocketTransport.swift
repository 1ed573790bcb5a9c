import Foundation
import RealtimeCore

/// The package's RFC 6455 client: POSIX sockets on a small ``EventLoopGroup``, TLS through OpenSSL.
///
/// ```swift
/// let transport = WebSocketTransport()
/// let connection = transport.open(ConnectionRequest(url: URL(string: "wss://example.com/socket")!)) { event in
///     // .opened, then .received batches, then exactly one .closed — serially, on a loop thread
/// }
/// ```
///
/// Handlers run on the connection's loop thread: keep them short and hop elsewhere for real work, because
/// every connection of that loop waits meanwhile. `ws://` (and `http://`) to a host that is not loopback is
/// refused unless the request sets `allowsInsecureTransportToRemoteHosts`; through a proxy, so is `ws://`
/// to a proxy that is not loopback.
public final class WebSocketTransport: RealtimeTransport, HTTPClientProviding, CloseTimeoutProviding, DeliveryProviding {
    /// Limits, timeouts and TLS settings shared by every connection of the transport.
    public struct Configuration: Sendable {
        /// How `wss://` verifies servers.
        public var tls: TLSConfiguration
        /// Frame, message and fragment limits for received data.
        public var limits: WebSocketLimits
        /// Bytes that may wait to be written before the connection fails with `.limitExceeded`.
        public var maximumBufferedBytes: Int
        /// How long to wait for the peer's close frame after sending ours.
        public var closeTimeout: Duration
        /// How long ``WebSocketClientConnection/ping()`` waits for the pong.
        public var pingTimeout: Duration
        /// The largest upgrade response accepted.
        public var maximumHandshakeResponseSize: Int
        /// An HTTP proxy every connection goes through with `CONNECT` (and Socket.IO's long-polling and the
        /// Pusher auth endpoint's requests with it); nil connects directly. The environment is read only through
        /// ``ProxyConfiguration/fromEnvironment(for:environment:)``.
        public var proxy: ProxyConfiguration?

        /// permessage-deflate (RFC 7692) to offer: on by default, used when the server accepts it; `nil`
        /// offers no compression. Incoming compressed messages are inflated within `limits`.
        public var compression: PerMessageDeflateOptions?

        /// The read-coalescing window of the private loop group the transport starts when it is given
        /// none (see ``EventLoopGroup/init(threadCount:readCoalescing:)``): `nil`, off, by default.
        public var readCoalescing: Duration?

        /// Defaults: verified TLS ≥ 1.2, 16 MiB frames and messages, 8 MiB write queue, 5 s close and
        /// 10 s ping timeouts, 16 KiB upgrade responses, permessage-deflate offered with its defaults, no
        /// proxy, no read coalescing.
        public init(tls: TLSConfiguration = TLSConfiguration(), limits: WebSocketLimits = WebSocketLimits(),
                    maximumBufferedBytes: Int = 8 << 20, closeTimeout: Duration = .seconds(5),
                    pingTimeout: Duration = .seconds(10), maximumHandshakeResponseSize: Int = 16_384,
                    compression: PerMessageDeflateOptions? = PerMessageDeflateOptions(),
                    proxy: ProxyConfiguration? = nil, readCoalescing: Duration? = nil) {
            self.tls = tls
            self.limits = limits
            self.maximumBufferedBytes = maximumBufferedBytes
            self.closeTimeout = closeTimeout
            self.pingTimeout = pingTimeout
            self.maximumHandshakeResponseSize = maximumHandshakeResponseSize
            self.proxy = proxy
            self.compression = compression
            self.readCoalescing = readCoalescing
        }
    }

    /// The settings every connection of this transport uses.
    public let configuration: Configuration
    private let group: Result<EventLoopGroup, RealtimeError>
    private let tlsContext = Locked<Result<TLSContext, RealtimeError>?>(nil)
    /// The context of ``TLSConfiguration/init()`` for HTTP to servers other than the transport's (the app's
    /// auth backend) through the proxy; made on first use.
    private let platformTLSContext = Locked<Result<TLSContext, RealtimeError>?>(nil)

    /// - Parameters:
    ///   - group: the loops to run on. Without one, the transport starts a private one-thread group that
    ///     stops when the transport and its last connection are gone.
    public init(configuration: Configuration = Configuration(), group: EventLoopGroup? = nil) {
        self.configuration = configuration
        if let group {
            self.group = .success(group)
        } else {
            do {
                self.group = .success(try EventLoopGroup(threadCount: 1, readCoalescing: configuration.readCoalescing))
            } catch {
                self.group = .failure(error)
            }
        }
    }

    /// One of the group's delivery threads (round-robin), where the session's handlers run unless it picks
    /// another target, and its loop, where the session's connections open.
    package func makeDefaultDelivery() -> DefaultDelivery? {
        guard case .success(let group) = group else { return nil }
        let (thread, loopIndex) = group.nextDelivery()
        return DefaultDelivery(target: .custom { work in thread.enqueue(work) }, loopAffinity: loopIndex)
    }

    /// Starts opening `request` (resolve, connect, TLS, upgrade within `request.connectTimeout`).
    /// Failures, including a refused `ws://` to a remote host, arrive as the handler's one `.closed`.
    public func open(_ request: ConnectionRequest,
                     handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        openConnection(request, handler: handler)
    }

    /// Like ``open(_:handler:)``, returning the concrete type (for ``WebSocketClientConnection/ping()`` and
    /// ``WebSocketClientConnection/bufferedAmount``).
    public func openConnection(_ request: ConnectionRequest,
                               handler: @escaping @Sendable (TransportEvent) -> Void) -> WebSocketClientConnection {
        let target: Target
        let group: EventLoopGroup
        do {
            group = try self.group.get()
            target = try Self.target(of: request, proxy: configuration.proxy)
            if target.secure { _ = try sharedTLSContext() }
        } catch {
            return WebSocketClientConnection.failed(error, handler: handler,
                                                    maximumBufferedBytes: configuration.maximumBufferedBytes)
        }
        let handshake = WebSocketClientHandshake(
            url: request.url, headers: request.headers, subprotocols: request.subprotocols, origin: request.origin,
            key: WebSocketClientHandshake.makeKey(),
            maximumResponseSize: configuration.maximumHandshakeResponseSize, deflate: configuration.compression)
        do {
            try handshake.validate()
        } catch {
            return WebSocketClientConnection.failed(error, handler: handler,
                                                    maximumBufferedBytes: configuration.maximumBufferedBytes)
        }
        let tls = target.secure ? try? sharedTLSContext() : nil
        let setup = ChannelSetup.Client(host: target.host, port: target.port, handshake: handshake,
                                        tlsContext: tls, connectTimeout: request.connectTimeout,
                                        proxy: configuration.proxy)
        let options = ChannelOptions(limits: configuration.limits, closeTimeout: configuration.closeTimeout,
                                     pingTimeout: configuration.pingTimeout)
        return WebSocketClientConnection.start(setup, options: options, group: group,
                                               loop: request.loopAffinity.map(group.loop(at:)) ?? group.next(),
                                               maximumBufferedBytes: configuration.maximumBufferedBytes,
                                               handler: handler)
    }

    /// True with extra roots, pins or without the system roots (see ``RealtimeTransport/customizesTLSTrust``).
    public var customizesTLSTrust: Bool { configuration.tls.customizesTrust }

    package var closeTimeout: Duration { configuration.closeTimeout }

    /// An HTTP client (Socket.IO's long-polling, the Pusher auth endpoint): through the proxy's tunnel on
    /// this transport's loops when there is a proxy (`URLSession` on Linux cannot be given one), with this
    /// transport's TLS or, for `.platformDefault`, the default ``TLSConfiguration``; otherwise `URLSession`,
    /// verifying as `trust` says.
    package func makeHTTPClient(maximumConnectionsPerHost: Int?, trust: HTTPClientTrust) -> any HTTPClient {
        guard let proxy = configuration.proxy else {
            return URLSessionHTTPClient(trust: trust.policy(of: self), maximumConnectionsPerHost: maximumConnectionsPerHost)
        }
        do {
            try proxy.validate()
            return TunnelHTTPClient(group: try group.get(), proxy: proxy) { () throws(RealtimeError) in
                switch trust {
                case .transport: try self.sharedTLSContext()
                case .platformDefault: try Self.cachedTLSContext(self.platformTLSContext, TLSConfiguration())
                }
            }
        } catch {
            return FailingHTTPClient(error: error)
        }
    }

    /// The group connections run on (for tests).
    var groupForTesting: Result<EventLoopGroup, RealtimeError> { group }

    private func sharedTLSContext() throws(RealtimeError) -> TLSContext {
        try Self.cachedTLSContext(tlsContext, configuration.tls)
    }

    /// The context `cache` holds, made from `tls` on first use (its failure is kept too).
    private static func cachedTLSContext(_ cache: Locked<Result<TLSContext, RealtimeError>?>,
                                         _ tls: TLSConfiguration) throws(RealtimeError) -> TLSContext {
        #if canImport(COpenSSL)
        let result = cache.withLock { cached -> Result<TLSContext, RealtimeError> in
            if let cached { return cached }
            let made: Result<TLSContext, RealtimeError>
            do throws(RealtimeError) {
                made = .success(try TLSContext(client: tls))
            } catch {
                made = .failure(error)
            }
            cached = made
            return made
        }
        return try result.get()
        #else
        throw RealtimeError(.unsupported, "wss:// needs OpenSSL on this platform; use NetworkWebSocketTransport on Apple platforms")
        #endif
    }

    struct Target {
        var host: String
        var port: Int
        var secure: Bool
    }

    /// Scheme, host and port of a request, with the insecure-transport policy applied (to the proxy too:
    /// plain `ws://` crosses the network to it).
    static func target(of request: ConnectionRequest, proxy: ProxyConfiguration? = nil) throws(RealtimeError) -> Target {
        let url = request.url
        guard let scheme = url.scheme?.lowercased(), ["ws", "wss", "http", "https"].contains(scheme) else {
            throw RealtimeError(.invalidArgument, "a WebSocket URL must use ws, wss, http or https: \(url.absoluteString)")
        }
        guard var host = url.host, !host.isEmpty else {
            throw RealtimeError(.invalidArgument, "the URL \(url.absoluteString) has no host")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let secure = scheme == "wss" || scheme == "https"
        if !secure, !request.allowsInsecureTransportToRemoteHosts, !Loopback.contains(host: host) {
            throw RealtimeError(.invalidArgument,
                                "refusing unencrypted \(scheme):// to \(host): use wss:// (or set allowsInsecureTransportToRemoteHosts)")
        }
        let port = url.port ?? (secure ? 443 : 80)
        guard (1...65535).contains(port) else { throw RealtimeError(.invalidArgument, "port \(port) is out of range") }
        if let proxy {
            try proxy.validate()
            if !secure, !request.allowsInsecureTransportToRemoteHosts, !Loopback.contains(host: proxy.host) {
                throw RealtimeError(.invalidArgument,
                                    "refusing unencrypted \(scheme):// through the \(proxy), which is not on this machine: "
                                        + "use wss:// (or set allowsInsecureTransportToRemoteHosts)")
            }
        }
        return Target(host: host, port: port, secure: secure)
    }
}
