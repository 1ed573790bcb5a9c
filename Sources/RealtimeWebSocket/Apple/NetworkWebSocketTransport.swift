#if canImport(Network)
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking  // URLSessionConfiguration, when this file is type-checked on Linux
#endif
import Network
import RealtimeCore
#if canImport(Security)
import Security
#endif

/// The Apple-platform transport: `NWConnection` carries TCP and TLS as a byte stream; the package's own
/// handshake and codec speak WebSocket on top, exactly as on Linux.
///
/// TLS is TLS ≥ 1.2 (or 1.3 when configured) with the system trust store, or, when the configuration
/// has `additionalTrustRoots`, `pinnedPublicKeys` or `trustsSystemRoots = false`, with a verify block that
/// evaluates the server's `SecTrust` with those roots as anchors and then checks the pins against each
/// certificate of the evaluated chain; a refusal fails the open with `.tlsFailed` saying why. Not built
/// on Linux (no Network framework; CI type-checks it against a stub).
///
/// A ``WebSocketTransport/Configuration/proxy`` is handed to Network.framework (`ProxyConfiguration(httpCONNECTProxy:)`
/// in the connection's privacy context, and in `URLSessionConfiguration.proxyConfigurations` for Socket.IO's
/// long-polling and the Pusher auth endpoint), which needs macOS 14, iOS 17, tvOS 17 or watchOS 10; earlier systems fail such a connection
/// with `.unsupported` rather than connect around the proxy. Network.framework reports a proxy's refusal in
/// its own terms, so there is no 407 or status in the error here as there is on Linux.
public final class NetworkWebSocketTransport: RealtimeTransport, ServerTrustEvaluating, HTTPClientProviding,
    CloseTimeoutProviding {
    /// The settings every connection of this transport uses. `readCoalescing` has no effect here: there is
    /// no event-loop group.
    public let configuration: WebSocketTransport.Configuration

    /// A transport whose connections use `configuration`.
    public init(configuration: WebSocketTransport.Configuration = WebSocketTransport.Configuration()) {
        self.configuration = configuration
    }

    /// True with pins or custom roots: long-polling must then apply them too (through
    /// ``evaluateServerTrust(_:)``) rather than bypass them.
    public var customizesTLSTrust: Bool { configuration.tls.customizesTrust }

    package var closeTimeout: Duration { configuration.closeTimeout }

    /// Judges a server trust met outside this transport (Socket.IO's long-polling over `URLSession`) with
    /// this transport's TLS configuration.
    public func evaluateServerTrust(_ trust: SecTrust) -> RealtimeError? {
        do {
            return try TLSTrustPolicy(configuration.tls).evaluate(trust)
        } catch {
            return error
        }
    }

    /// Starts opening `request` over `NWConnection` (connect, TLS, upgrade within `request.connectTimeout`).
    /// Failures, including a refused `ws://` to a remote host, arrive as the handler's one `.closed`.
    public func open(_ request: ConnectionRequest,
                     handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let connection = NetworkWebSocketConnection(configuration: configuration, request: request, handler: handler)
        connection.start(request)
        return connection
    }

    /// An HTTP client (Socket.IO's long-polling, the Pusher auth endpoint): `URLSession` through this
    /// transport's proxy, verifying as `trust` says.
    package func makeHTTPClient(maximumConnectionsPerHost: Int?, trust: HTTPClientTrust) -> any HTTPClient {
        let trust = trust.policy(of: self)
        guard let proxy = configuration.proxy else {
            return URLSessionHTTPClient(trust: trust, maximumConnectionsPerHost: maximumConnectionsPerHost)
        }
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return FailingHTTPClient(error: Self.proxyUnsupported) }
        do {
            try proxy.validate()
        } catch {
            return FailingHTTPClient(error: error)
        }
        let route = Self.networkProxy(proxy)
        return URLSessionHTTPClient(trust: trust, maximumConnectionsPerHost: maximumConnectionsPerHost) {
            $0.proxyConfigurations = [route]
        }
    }

    static let proxyUnsupported = RealtimeError(
        .unsupported, "HTTP CONNECT proxies need macOS 14, iOS 17, tvOS 17 or watchOS 10 (Network.framework's ProxyConfiguration)")

    /// Network.framework's form of `proxy`.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    static func networkProxy(_ proxy: RealtimeCore.ProxyConfiguration) -> Network.ProxyConfiguration {
        let endpoint = NWEndpoint.hostPort(host: NWEndpoint.Host(proxy.host),
                                           port: NWEndpoint.Port(integerLiteral: UInt16(proxy.port)))
        let route = Network.ProxyConfiguration(httpCONNECTProxy: endpoint)
        if let credentials = proxy.credentials {
            route.applyCredential(username: credentials.username, password: credentials.password)
        }
        return route
    }
}

/// One connection of ``NetworkWebSocketTransport``: it executes the same ``WebSocketConnectionMachine`` as
/// the Linux `WebSocketChannel` (upgrade, frames queued before open, replies before our close frame, the
/// close handshake and its timeout, pings, the send limit). Network.framework only carries the bytes:
/// `NWProtocolWebSocket` is not used, because its framing, close and ping rules would be a second, untested
/// lifecycle. Network.framework calls back on `queue` (serial), so the handler is never called twice at
/// once; the machine and the state shared with callers' threads sit in `state`.
final class NetworkWebSocketConnection: WebSocketPinging {
    private struct State {
        var connection: NWConnection?
        var machine: WebSocketConnectionMachine
        var isReading = false
        var readingPaused = false
        /// Bytes handed to `send` whose completion has not come back yet.
        var unsentBytes = 0
        /// The deadline a `queue` timer is already armed for.
        var armedDeadline: UInt64?
        /// Why the verify block refused the server: reported instead of Network.framework's bare status.
        var trustFailure: RealtimeError?
        var pings = PendingPings()
    }

    private let configuration: WebSocketTransport.Configuration
    private let handler: @Sendable (TransportEvent) -> Void
    private let queue = DispatchQueue(label: "realtime.websocket.network")
    private let state: Locked<State>
    private let handshake: WebSocketClientHandshake
    private let connectTimeout: Duration
    /// The host a failed lookup or connect was for: the proxy's when there is one (it resolves the server).
    private let resolvedName: String

    init(configuration: WebSocketTransport.Configuration, request: ConnectionRequest,
         handler: @escaping @Sendable (TransportEvent) -> Void) {
        self.configuration = configuration
        self.handler = handler
        connectTimeout = request.connectTimeout
        resolvedName = configuration.proxy.map { "the proxy \($0.host)" } ?? request.url.host ?? "the host"
        handshake = WebSocketClientHandshake(
            url: request.url, headers: request.headers, subprotocols: request.subprotocols, origin: request.origin,
            key: WebSocketClientHandshake.makeKey(), maximumResponseSize: configuration.maximumHandshakeResponseSize,
            deflate: configuration.compression)
        let options = ChannelOptions(limits: configuration.limits, closeTimeout: configuration.closeTimeout,
                                     pingTimeout: configuration.pingTimeout)
        state = Locked(State(machine: WebSocketConnectionMachine(upgrade: .client(handshake), options: options)))
    }

    private static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    func start(_ request: ConnectionRequest) {
        let target: WebSocketTransport.Target
        do {
            target = try WebSocketTransport.target(of: request, proxy: configuration.proxy)
            try handshake.validate()
        } catch {
            queue.async { self.drive { $0.fail(error, into: &$1) } }
            return
        }
        let parameters: NWParameters
        if target.secure {
            let tls = NWProtocolTLS.Options()
            let options = tls.securityProtocolOptions
            sec_protocol_options_set_min_tls_protocol_version(
                options, configuration.tls.minimumVersion == .tls13 ? .TLSv13 : .TLSv12)
            for name in configuration.tls.applicationProtocols {
                sec_protocol_options_add_tls_application_protocol(options, name)
            }
            if configuration.tls.customizesTrust {
                let policy: TLSTrustPolicy
                do {
                    policy = try TLSTrustPolicy(configuration.tls)
                } catch {
                    queue.async { self.drive { $0.fail(error, into: &$1) } }
                    return
                }
                // Replaces the default evaluation, so it evaluates in full itself (see TLSTrustPolicy.evaluate).
                sec_protocol_options_set_verify_block(options, { [weak self] _, secTrust, complete in
                    let failure = policy.evaluate(sec_trust_copy_ref(secTrust).takeRetainedValue())
                    if let failure { self?.state.withLock { $0.trustFailure = failure } }
                    complete(failure == nil)
                }, queue)
            }
            parameters = NWParameters(tls: tls)
        } else {
            parameters = .tcp
        }
        if let proxy = configuration.proxy {
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else {
                queue.async { self.drive { $0.fail(NetworkWebSocketTransport.proxyUnsupported, into: &$1) } }
                return
            }
            // The tunnel is Network.framework's; TLS inside it still verifies the server's name.
            let context = NWParameters.PrivacyContext(description: "Realtime HTTP CONNECT proxy")
            context.proxyConfigurations = [NetworkWebSocketTransport.networkProxy(proxy)]
            parameters.setPrivacyContext(context)
        }
        let connection = NWConnection(host: NWEndpoint.Host(target.host),
                                      port: NWEndpoint.Port(integerLiteral: UInt16(target.port)),
                                      using: parameters)
        state.withLock { $0.connection = connection }
        connection.stateUpdateHandler = { [weak self] update in self?.stateChanged(update) }
        connection.start(queue: queue)
        let timeout = request.connectTimeout
        queue.async { self.drive { machine, _ in machine.start(now: Self.now, timeout: timeout) } }
    }

    // MARK: Executing the machine (on `queue`)

    /// Feeds the machine one input under the lock, then carries out what it returned.
    private func drive(_ input: (inout WebSocketConnectionMachine, inout WebSocketConnectionMachine.Output) -> Void) {
        var output = WebSocketConnectionMachine.Output()
        state.withLock { input(&$0.machine, &output) }
        perform(output)
    }

    private func perform(_ output: WebSocketConnectionMachine.Output) {
        write(output.bytes)
        for action in output.actions {
            switch action {
            case .opened(let info):
                handler(.opened(info))
            case .deliver(let frames):
                handler(.received(frames))
            case .pauseReading(let paused):
                state.withLock { $0.readingPaused = paused }
                if !paused { readNext() }
            case .pongReceived(let id):
                let now = Self.now
                if let (waiter, roundTrip) = state.withLock({ $0.pings.answered(id, now: now) }) {
                    waiter.resume(returning: roundTrip)
                }
            case .pingTimedOut(let id):
                state.withLock { $0.pings.timedOut(id) }?.resume(throwing: PendingPings.timeoutError)
            case .startTimedOut:
                let seconds = Double(connectTimeout.nanoseconds) / 1e9
                drive { $0.fail(RealtimeError(.connectTimedOut, "could not connect within \(seconds) s"), into: &$1) }
            case .finish(let closure):
                let (connection, pings) = state.withLock { state in
                    defer { state.connection = nil }
                    return (state.connection, state.pings.removeAll())
                }
                connection?.cancel()
                for waiter in pings { waiter.resume(throwing: PendingPings.closedError(closure)) }
                handler(.closed(closure))
            }
        }
        armTimer()
    }

    /// Keeps one `queue` timer at the machine's next deadline.
    private func armTimer() {
        let deadline = state.withLock { state -> UInt64? in
            guard let wanted = state.machine.nextDeadline, wanted != state.armedDeadline else { return nil }
            state.armedDeadline = wanted
            return wanted
        }
        guard let deadline else { return }
        queue.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: deadline)) { [weak self] in
            guard let self else { return }
            self.state.withLock { if $0.armedDeadline == deadline { $0.armedDeadline = nil } }
            self.drive { $0.timerFired(now: Self.now, into: &$1) }
        }
    }

    // MARK: Callbacks (on `queue`)

    private func stateChanged(_ update: NWConnection.State) {
        switch update {
        case .ready:
            drive { $0.streamReady(into: &$1) }
            readNext()
        case .failed(let error), .waiting(let error):
            let failure = state.withLock { $0.trustFailure } ?? realtimeError(error)
            drive { $0.fail(failure, into: &$1) }
        default:
            break
        }
    }

    private func readNext() {
        let connection: NWConnection? = state.withLock { state in
            guard !state.machine.isFinished, !state.readingPaused, !state.isReading else { return nil }
            state.isReading = true
            return state.connection
        }
        connection?.receive(minimumIncompleteLength: 1, maximumLength: 256 * 1024) { [weak self] data, _, isComplete, error in
            guard let self else { return }
            self.state.withLock { $0.isReading = false }
            if let data, !data.isEmpty { self.received(data) }
            if let error {
                self.drive { $0.fail(self.realtimeError(error), into: &$1) }
            } else if isComplete {
                self.drive { $0.streamEnded(into: &$1) }
            } else {
                self.readNext()
            }
        }
    }

    private func received(_ data: Data) {
        drive { machine, output in
            data.withUnsafeBytes { machine.receive($0, now: Self.now, into: &output) }
            machine.readFinished(into: &output)
        }
        // The read revealed the end: the app's replies to its messages, queued on `queue` behind this
        // block by `send`, go out before our close frame.
        if state.withLock({ $0.machine.isEnding }) {
            queue.async { self.drive { $0.finishEnding(after: [QueuedFrame](), into: &$1) } }
        }
    }

    /// Hands `bytes` to Network.framework, failing the connection with `.limitExceeded` when more than
    /// `maximumBufferedBytes` would be waiting to be sent.
    private func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        let limit = configuration.maximumBufferedBytes
        let (connection, overLimit) = state.withLock { state -> (NWConnection?, Bool) in
            guard let connection = state.connection else { return (nil, false) }
            guard state.unsentBytes + bytes.count <= limit else { return (nil, true) }
            state.unsentBytes += bytes.count
            return (connection, false)
        }
        if overLimit {
            drive { $0.sendLimitExceeded(limit: limit, into: &$1) }
            return
        }
        let count = bytes.count
        connection?.send(content: Data(bytes), completion: .contentProcessed { [weak self] error in
            guard let self else { return }
            self.state.withLock { $0.unsentBytes -= count }
            if let error { self.queue.async { self.drive { $0.fail(self.realtimeError(error), into: &$1) } } }
        })
    }

    private func realtimeError(_ error: NWError) -> RealtimeError {
        switch error {
        case .dns(let code):
            return RealtimeError(.transportFailed, "could not resolve \(resolvedName)", context: .init(detail: "dns: \(code)"))
        case .tls(let status):
            return RealtimeError(.tlsFailed, "TLS handshake failed: \(Self.tlsFailureReason(status))",
                                 context: .init(detail: "OSStatus \(status)"))
        case .posix(let code):
            let name = code == .ECONNREFUSED ? "ECONNREFUSED" : "\(code)"
            return RealtimeError(.transportFailed, "connection to \(resolvedName) failed: \(code)", context: .init(detail: "connect: \(name)"))
        default:
            return RealtimeError(.transportFailed, "connection failed: \(error)")
        }
    }

    /// Words for the Secure Transport codes a certificate check ends with (SecureTransport.h).
    private static func tlsFailureReason(_ status: OSStatus) -> String {
        switch status {
        case -9807: return "the certificate chain is not trusted"
        case -9808: return "the server's certificate is invalid"
        case -9812, -9813: return "the certificate was issued by an unknown certificate authority"
        case -9814: return "the certificate has expired"
        case -9815: return "the certificate is not yet valid"
        case -9843: return "the certificate does not match the host name"
        default: return "see the OSStatus"
        }
    }

    // MARK: TransportConnection (any thread)

    /// Encodes on the caller's thread (under the lock, so frames keep their order) and writes on `queue`.
    func send(_ frames: [TransportFrame]) {
        send(frames, compress: true)
    }

    /// `compress: false` sends the frames uncompressed when permessage-deflate is on.
    func send(_ frames: [TransportFrame], compress: Bool) {
        submit { $0.send(frames, compress: compress, into: &$1) }
    }

    /// Decided at once, so frames sent after it are dropped; carried out on `queue`.
    func close(code: Int, reason: String) {
        submit { $0.close(code: code, reason: reason, now: Self.now, into: &$1) }
    }

    func abort() {
        queue.async { self.drive { $0.abort(into: &$1) } }
    }

    func setReadingPaused(_ paused: Bool) {
        submit { $0.setReadingPaused(paused, into: &$1) }
    }

    /// Sends a ping and returns the time until its pong; the machine times it out (`pingTimeout`) and fails
    /// it when the connection ends, as on Linux.
    func ping() async throws -> Duration {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.machine.isFinished else { return false }
                let now = Self.now
                let id = state.pings.add(continuation, now: now)
                submitLocked(&state) { $0.ping(id: id, now: now, into: &$1) }
                return true
            }
            if !accepted { continuation.resume(throwing: PendingPings.alreadyClosedError) }
        }
    }

    private func submit(_ change: (inout WebSocketConnectionMachine, inout WebSocketConnectionMachine.Output) -> Void) {
        state.withLock { submitLocked(&$0, change) }
    }

    /// Feeds the machine on the caller's thread and queues its output from inside the lock, so outputs
    /// reach `queue` in the order the machine made them (two threads sending at once keep their order).
    private func submitLocked(_ state: inout State,
                              _ change: (inout WebSocketConnectionMachine, inout WebSocketConnectionMachine.Output) -> Void) {
        var output = WebSocketConnectionMachine.Output()
        change(&state.machine, &output)
        queue.async { [output] in self.perform(output) }
    }
}
#endif
