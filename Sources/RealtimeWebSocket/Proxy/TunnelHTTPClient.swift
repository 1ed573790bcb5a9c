import Foundation
import RealtimeCore

/// An ``HTTPClient`` that sends each request through an HTTP proxy's `CONNECT` tunnel on the transport's
/// event loops, with the TLS context it is given, verified against the server's name: the transport's
/// (its roots and pins) for Socket.IO's long-polling, the default one for the app's own auth backend.
///
/// It exists because swift-corelibs-foundation's `URLSession` (libcurl) ignores
/// `URLSessionConfiguration.connectionProxyDictionary`: it reads only the `http_proxy`/`https_proxy`
/// environment variables, process-wide. `WebSocketTransport` hands it to Socket.IO's long-polling and to
/// the Pusher auth endpoint when the transport has a proxy, so they take the same route as the WebSocket.
/// One connection per request, so no per-host limit is needed: polling has at most a GET and a POST in
/// flight, and an auth client makes one request.
final class TunnelHTTPClient: HTTPClient {
    /// The largest response body accepted: above Engine.IO's default `maxHttpBufferSize` (1 MB) by far,
    /// and a bound on what a server can make the client hold.
    static let maximumBodySize = 128 << 20

    private let group: EventLoopGroup
    private let proxy: ProxyConfiguration
    private let tlsContext: @Sendable () throws(RealtimeError) -> TLSContext
    private let finished = Locked(false)

    /// - Parameter tlsContext: the TLS context for `https`, asked for on the first `https` request.
    init(group: EventLoopGroup, proxy: ProxyConfiguration,
         tlsContext: @escaping @Sendable () throws(RealtimeError) -> TLSContext) {
        self.group = group
        self.proxy = proxy
        self.tlsContext = tlsContext
    }

    func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, RealtimeError>) -> Void) {
        let target: HTTPExchangeChannel.Target
        do throws(RealtimeError) {
            guard !finished.withLock({ $0 }) else {
                throw RealtimeError(.transportFailed, "the HTTP client is finished", context: .init(detail: request.url.host))
            }
            target = try makeTarget(request.url)
        } catch {
            completion(.failure(error))
            return
        }
        let loop = group.next()
        let token = loop.makeToken()
        let proxy = proxy
        let group = group
        let accepted = loop.execute { context in
            let channel = HTTPExchangeChannel(token: token, request: request, target: target,
                                              maximumBodySize: Self.maximumBodySize, completion: completion)
            context.attach(channel, token: token)
            channel.start(in: context)
            if let numeric = SocketAddress(numericHost: proxy.host, port: proxy.port) {
                channel.resolved(.success([numeric]), in: context)
                return
            }
            // Only the proxy's name is resolved here; the proxy resolves the server's.
            group.resolverQueue.async {
                let result: Result<[SocketAddress], RealtimeError>
                do throws(RealtimeError) {
                    result = .success(try SocketIO.resolve(host: proxy.host, port: proxy.port))
                } catch {
                    result = .failure(error)
                }
                loop.execute { context in
                    (context.handler(token) as? HTTPExchangeChannel)?.resolved(result, in: context)
                }
            }
        }
        if !accepted {
            completion(.failure(RealtimeError(.transportFailed, "the event-loop group is shut down")))
        }
    }

    func finish() {
        finished.withLock { $0 = true }
    }

    private func makeTarget(_ url: URL) throws(RealtimeError) -> HTTPExchangeChannel.Target {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw RealtimeError(.invalidArgument, "an HTTP request needs an http or https URL", context: .init(detail: url.absoluteString))
        }
        guard var host = url.host, !host.isEmpty else {
            throw RealtimeError(.invalidArgument, "the URL \(url.absoluteString) has no host")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let secure = scheme == "https"
        // As for ws://: plain http to this machine's server must not cross the network to a proxy elsewhere.
        // (Plain http to a remote server was already allowed explicitly by the request, or refused.)
        if !secure, Loopback.contains(host: host), !Loopback.contains(host: proxy.host) {
            throw RealtimeError(.invalidArgument,
                                "refusing unencrypted http:// through the \(proxy), which is not on this machine: use https://",
                                context: .init(detail: url.host))
        }
        return HTTPExchangeChannel.Target(host: host, port: url.port ?? (secure ? 443 : 80),
                                          tlsContext: secure ? try tlsContext() : nil, proxy: proxy)
    }
}
