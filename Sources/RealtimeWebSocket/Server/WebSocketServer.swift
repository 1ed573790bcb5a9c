import Foundation
import RealtimeCore

/// What the app decides about an upgrade request.
public enum WebSocketUpgradeDecision: Sendable, Hashable {
    /// Answer 101, selecting `subprotocol` (one the client offered, or nil) and adding `headers`.
    case accept(subprotocol: String? = nil, headers: [HTTPHeader] = [])
    /// Answer with an HTTP error status (for example 401, 403, 404) and close.
    case reject(status: Int, reason: String)
}

extension WebSocketServerHandshake.Request {
    /// The path of the request target, without the query.
    public var path: String {
        String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0])
    }

    /// The query of the request target (after `?`), if any.
    public var query: String? {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count == 2 ? String(parts[1]) : nil
    }
}

/// A small WebSocket server on loopback, for embedded test servers, the demo and benchmarks.
///
/// ```swift
/// let server = try WebSocketServer { connection, event in
///     if case .received(let frames) = event { connection.send(frames) }   // echo
/// }
/// let url = server.url   // ws://127.0.0.1:<ephemeral port>/
/// ```
///
/// Events of one connection arrive serially, in order, on its loop thread: `.opened`, any number of
/// `.received` batches (one per socket read), then exactly one `.closed`. Rejected upgrades never reach
/// the handler.
public final class WebSocketServer: Sendable {
    /// Where to listen and how to treat connections.
    public struct Configuration: Sendable {
        /// A numeric address: `127.0.0.1` or `::1` (or another local address).
        public var host: String
        /// 0 picks an ephemeral port; read ``WebSocketServer/port`` after init.
        public var port: Int
        /// Present a certificate and speak `wss`.
        public var tls: TLSServerConfiguration?
        /// Frame, message and fragment limits for what clients send.
        public var limits: WebSocketLimits
        /// Bytes that may wait to be written per connection before it fails with `.limitExceeded`.
        public var maximumBufferedBytes: Int
        /// How long a client may take to send its upgrade request (and TLS handshake).
        public var handshakeTimeout: Duration
        /// How long to wait for the client's close frame after sending ours.
        public var closeTimeout: Duration
        /// Pending connections the kernel queues before `accept`.
        public var backlog: Int32
        /// The largest upgrade request accepted (a longer one gets 431).
        public var maximumRequestSize: Int

        /// Defaults: 127.0.0.1 on an ephemeral port, plain `ws`.
        public init(host: String = "127.0.0.1", port: Int = 0, tls: TLSServerConfiguration? = nil,
                    limits: WebSocketLimits = WebSocketLimits(), maximumBufferedBytes: Int = 8 << 20,
                    handshakeTimeout: Duration = .seconds(10), closeTimeout: Duration = .seconds(5),
                    backlog: Int32 = 4096, maximumRequestSize: Int = 16_384) {
            self.host = host
            self.port = port
            self.tls = tls
            self.limits = limits
            self.maximumBufferedBytes = maximumBufferedBytes
            self.handshakeTimeout = handshakeTimeout
            self.closeTimeout = closeTimeout
            self.backlog = backlog
            self.maximumRequestSize = maximumRequestSize
        }
    }

    /// What happens on one connection.
    public enum Event: Sendable {
        /// The upgrade was accepted; ``WebSocketServerConnection/request`` is set.
        case opened
        /// Everything one read decoded, in wire order.
        case received([TransportFrame])
        /// The last event.
        case closed(TransportClosure)
    }

    /// Receives every connection's events, serially per connection.
    public typealias Handler = @Sendable (WebSocketServerConnection, Event) -> Void
    /// Accepts or rejects one upgrade request.
    public typealias UpgradeDecider = @Sendable (WebSocketServerHandshake.Request) -> WebSocketUpgradeDecision

    /// The port the server listens on.
    public let port: Int
    /// The settings the server was started with.
    public let configuration: Configuration
    private let group: EventLoopGroup
    private let ownsGroup: Bool
    private let listenerLoop: EventLoop
    private let listenerToken: UInt64
    private let connections = Locked<ConnectionRegistry>(ConnectionRegistry())

    /// Starts listening at once.
    /// - Parameters:
    ///   - group: loops to run on; without one a private one-thread group is started and stopped by ``stop()``.
    ///   - shouldUpgrade: decides each upgrade; by default accepts without a subprotocol.
    ///   - handler: receives every connection's events.
    public init(configuration: Configuration = Configuration(), group: EventLoopGroup? = nil,
                shouldUpgrade: @escaping UpgradeDecider = { _ in .accept() },
                handler: @escaping Handler) throws(RealtimeError) {
        self.configuration = configuration
        let loops: EventLoopGroup
        if let group {
            loops = group
            ownsGroup = false
        } else {
            loops = try EventLoopGroup(threadCount: 1)
            ownsGroup = true
        }
        self.group = loops
        #if canImport(COpenSSL)
        var tlsContext: TLSContext?
        if let tls = configuration.tls { tlsContext = try TLSContext(server: tls) }
        #else
        if configuration.tls != nil { throw RealtimeError(.unsupported, "TLS servers need OpenSSL") }
        let tlsContext: TLSContext? = nil
        #endif
        let (fd, address) = try SocketIO.listen(host: configuration.host, port: configuration.port,
                                                backlog: configuration.backlog)
        port = address.port
        listenerLoop = loops.next()
        listenerToken = listenerLoop.makeToken()
        let token = listenerToken
        let acceptor = Acceptor(group: loops, configuration: configuration, tlsContext: tlsContext,
                                shouldUpgrade: shouldUpgrade, handler: handler, registry: connections)
        let started = listenerLoop.execute { context in
            let listener = Listener(fd: fd, token: token, acceptor: acceptor)
            context.attach(listener, token: token)
            do {
                try context.watch(fd: fd, token: token, interest: SelectorInterest(read: true, write: false))
            } catch {
                context.detach(token)
                SocketIO.closeFD(fd)
            }
        }
        if !started {
            SocketIO.closeFD(fd)
            throw RealtimeError(.transportFailed, "the event-loop group is shut down")
        }
    }

    /// A server that is no longer referenced stops: nothing could reach its connections any more.
    deinit { stop() }

    /// `ws://host:port/` (or `wss://`) for clients.
    public var url: URL {
        let scheme = configuration.tls == nil ? "ws" : "wss"
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return URL(string: "\(scheme)://\(host):\(port)/")!
    }

    /// Open connections right now.
    public var connectionCount: Int { connections.withLock { $0.open.count } }

    /// Stops listening and aborts every connection (each reports `.closed`): clients see the socket
    /// drop (1006), as when a server crashes. Also done when the server is released.
    /// ``shutdown(code:reason:)`` closes them cleanly instead.
    public func stop() {
        closeListener()
        let open = connections.withLock { Array($0.open.values) }
        for connection in open { connection.abort() }
        if ownsGroup { group.shutdown() }
    }

    /// Stops listening, starts the close handshake with every client (1001 "going away" by default), and
    /// returns once every connection has ended: clients see a clean close instead of a dropped socket.
    /// A client that does not answer the close frame is dropped after ``Configuration/closeTimeout``;
    /// one still in its upgrade is dropped at once.
    public func shutdown(code: Int = 1001, reason: String = "server shutting down") async {
        // The listener closes first, so that no connection is accepted after the list below is taken.
        await withCheckedContinuation { (closed: CheckedContinuation<Void, Never>) in
            closeListener { closed.resume() }
        }
        let open = connections.withLock { Array($0.open.values) }
        for connection in open { connection.close(code: code, reason: reason) }
        await withCheckedContinuation { (drained: CheckedContinuation<Void, Never>) in
            let isEmpty = connections.withLock { registry in
                if registry.open.isEmpty { return true }
                registry.drainWaiters.append(drained)
                return false
            }
            if isEmpty { drained.resume() }
        }
        if ownsGroup { group.shutdown() }
    }

    /// Closes the listening socket on its loop, then runs `done` (at once when the loops are shut down).
    private func closeListener(then done: @escaping @Sendable () -> Void = {}) {
        let queued = listenerLoop.execute { [listenerToken] context in
            (context.handler(listenerToken) as? Listener)?.close(in: context)
            done()
        }
        if !queued { done() }
    }
}

/// The server's open connections, and the shutdowns waiting for there to be none.
private struct ConnectionRegistry {
    var open: [UInt64: WebSocketServerConnection] = [:]
    var drainWaiters: [CheckedContinuation<Void, Never>] = []

    /// Forgets a connection; returns the waiters to resume (outside the lock) when it was the last.
    mutating func remove(_ key: UInt64) -> [CheckedContinuation<Void, Never>] {
        open[key] = nil
        guard open.isEmpty else { return [] }
        defer { drainWaiters = [] }
        return drainWaiters
    }
}

/// Everything needed to turn an accepted socket into a connection. Sendable, shared by the listener.
private struct Acceptor: Sendable {
    let group: EventLoopGroup
    let configuration: WebSocketServer.Configuration
    let tlsContext: TLSContext?
    let shouldUpgrade: WebSocketServer.UpgradeDecider
    let handler: WebSocketServer.Handler
    let registry: Locked<ConnectionRegistry>

    func adopt(_ fd: Int32) {
        let loop = group.next()
        let token = loop.makeToken()
        let outbox = ConnectionOutbox(maximumBufferedBytes: configuration.maximumBufferedBytes)
        let connection = WebSocketServerConnection(loop: loop, token: token, outbox: outbox)
        let key = UInt64(loop.index) << 56 | token
        registry.withLock { $0.open[key] = connection }
        let options = ChannelOptions(limits: configuration.limits, closeTimeout: configuration.closeTimeout,
                                     pingTimeout: .seconds(10))
        let started = loop.execute { [self] context in
            var handshake = WebSocketServerHandshake(maximumRequestSize: configuration.maximumRequestSize)
            let upgrader: ServerUpgrader = { bytes in
                do throws(RealtimeError) {
                    guard let (request, leftover) = try handshake.receive(bytes) else { return .needMoreBytes }
                    switch shouldUpgrade(request) {
                    case .accept(let subprotocol, let headers):
                        connection.upgraded(request, subprotocol: subprotocol)
                        let response = WebSocketServerHandshake.acceptResponse(for: request, subprotocol: subprotocol,
                                                                               headers: headers)
                        return .accept(response: response,
                                       info: TransportOpenInfo(subprotocol: subprotocol, headers: request.headers),
                                       leftover: leftover)
                    case .reject(let status, let reason):
                        let response = WebSocketServerHandshake.rejectionResponse(status: status, reason: reason,
                                                                                  body: reason + "\n")
                        return .reject(response: response,
                                       error: RealtimeError(.handshakeRejected, "upgrade rejected: \(status) \(reason)",
                                                            context: .init(httpStatus: status)))
                    }
                } catch {
                    return .reject(response: WebSocketServerHandshake.rejectionResponse(for: error), error: error)
                }
            }
            var didOpen = false
            let channel = WebSocketChannel(
                token: token,
                setup: .server(upgrader: upgrader, tlsContext: tlsContext, handshakeTimeout: configuration.handshakeTimeout),
                options: options, outbox: outbox,
                deliver: { event in
                    switch event {
                    case .opened:
                        didOpen = true
                        handler(connection, .opened)
                    case .received(let frames):
                        handler(connection, .received(frames))
                    case .closed(let closure):
                        let drainWaiters = registry.withLock { $0.remove(key) }
                        if didOpen { handler(connection, .closed(closure)) }
                        for waiter in drainWaiters { waiter.resume() }
                    }
                })
            context.attach(channel, token: token)
            channel.startServer(fd: fd, in: context)
        }
        if !started {
            SocketIO.closeFD(fd)
            for waiter in registry.withLock({ $0.remove(key) }) { waiter.resume() }
        }
    }
}

/// The listening socket on its loop.
private final class Listener: LoopHandler {
    private var fd: Int32
    private let token: UInt64
    private let acceptor: Acceptor

    init(fd: Int32, token: UInt64, acceptor: Acceptor) {
        self.fd = fd
        self.token = token
        self.acceptor = acceptor
    }

    func handle(_ event: SelectorEvent, in context: LoopContext) {
        // Bounded per wake-up so a connection storm cannot starve the loop's other sockets.
        for _ in 0..<256 {
            guard fd >= 0 else { return }
            let (accepted, error) = SocketIO.accept(fd)
            guard let accepted else {
                if error == EMFILE || error == ENFILE {
                    // Out of descriptors: the pending connection waits in the backlog; retry shortly.
                    context.setInterest(fd: fd, token: token, SelectorInterest(read: false, write: false))
                    _ = context.schedule(after: .milliseconds(50)) { [weak self] in
                        guard let self, self.fd >= 0 else { return }
                        context.setInterest(fd: self.fd, token: self.token, SelectorInterest(read: true, write: false))
                    }
                }
                return
            }
            acceptor.adopt(accepted)
        }
    }

    func close(in context: LoopContext) {
        guard fd >= 0 else { return }
        context.unwatch(fd: fd)
        context.detach(token)
        SocketIO.closeFD(fd)
        fd = -1
    }

    func loopStopping(in context: LoopContext) {
        close(in: context)
    }
}
