#if canImport(Network)
import Dispatch
import Foundation
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
public final class NetworkWebSocketTransport: RealtimeTransport, ServerTrustEvaluating {
    public let configuration: WebSocketTransport.Configuration

    public init(configuration: WebSocketTransport.Configuration = WebSocketTransport.Configuration()) {
        self.configuration = configuration
    }

    /// True with pins or custom roots: long-polling must then apply them too (through
    /// ``evaluateServerTrust(_:)``) rather than bypass them.
    public var customizesTLSTrust: Bool { configuration.tls.customizesTrust }

    /// Judges a server trust met outside this transport (Socket.IO's long-polling over `URLSession`) with
    /// this transport's TLS configuration.
    public func evaluateServerTrust(_ trust: SecTrust) -> RealtimeError? {
        do {
            return try TLSTrustPolicy(configuration.tls).evaluate(trust)
        } catch {
            return error
        }
    }

    public func open(_ request: ConnectionRequest,
                     handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let connection = NetworkWebSocketConnection(configuration: configuration, handler: handler)
        connection.start(request)
        return connection
    }
}

/// One connection of ``NetworkWebSocketTransport``. Network.framework calls back on `queue` (serial), so
/// the handler is never called twice at once; state shared with callers' threads sits in `state`.
final class NetworkWebSocketConnection: TransportConnection {
    private struct State {
        var connection: NWConnection?
        var handshake: WebSocketClientHandshake?
        var codec: WebSocketCodec
        var isOpen = false
        var isFinished = false
        var isReading = false
        var readingPaused = false
        var pending: [TransportFrame] = []
        var localClose: (code: Int, reason: String)?
        /// Bytes handed to `send` whose completion has not come back yet.
        var unsentBytes = 0
        /// Why the verify block refused the server: reported instead of Network.framework's bare status.
        var trustFailure: RealtimeError?
    }

    private let configuration: WebSocketTransport.Configuration
    private let handler: @Sendable (TransportEvent) -> Void
    private let queue = DispatchQueue(label: "realtime.websocket.network")
    private let state: Locked<State>

    init(configuration: WebSocketTransport.Configuration, handler: @escaping @Sendable (TransportEvent) -> Void) {
        self.configuration = configuration
        self.handler = handler
        state = Locked(State(codec: WebSocketCodec(role: .client, limits: configuration.limits)))
    }

    func start(_ request: ConnectionRequest) {
        let target: WebSocketTransport.Target
        let handshake = WebSocketClientHandshake(
            url: request.url, headers: request.headers, subprotocols: request.subprotocols, origin: request.origin,
            key: WebSocketClientHandshake.makeKey(), maximumResponseSize: configuration.maximumHandshakeResponseSize)
        do {
            target = try WebSocketTransport.target(of: request)
            try handshake.validate()
        } catch {
            queue.async { self.finish(.failed(error)) }
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
                    queue.async { self.finish(.failed(error)) }
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
        let connection = NWConnection(host: NWEndpoint.Host(target.host),
                                      port: NWEndpoint.Port(integerLiteral: UInt16(target.port)),
                                      using: parameters)
        state.withLock {
            $0.connection = connection
            $0.handshake = handshake
        }
        connection.stateUpdateHandler = { [weak self] update in self?.stateChanged(update) }
        connection.start(queue: queue)
        let seconds = Double(request.connectTimeout.nanoseconds) / 1e9
        queue.asyncAfter(deadline: .now() + seconds) { [weak self] in
            guard let self, !self.state.withLock({ $0.isOpen }) else { return }
            self.finish(.failed(RealtimeError(.connectTimedOut, "could not connect within \(seconds) s")))
        }
    }

    // MARK: Callbacks (on `queue`)

    private func stateChanged(_ update: NWConnection.State) {
        switch update {
        case .ready:
            let bytes = state.withLock { $0.handshake?.requestBytes() } ?? []
            write(bytes)
            readNext()
        case .failed(let error), .waiting(let error):
            finish(.failed(state.withLock { $0.trustFailure } ?? Self.realtimeError(error)))
        default:
            break
        }
    }

    private func readNext() {
        let connection: NWConnection? = state.withLock { state in
            guard !state.isFinished, !state.readingPaused, !state.isReading else { return nil }
            state.isReading = true
            return state.connection
        }
        connection?.receive(minimumIncompleteLength: 1, maximumLength: 256 * 1024) { [weak self] data, _, isComplete, error in
            guard let self else { return }
            self.state.withLock { $0.isReading = false }
            if let data, !data.isEmpty { self.received(data) }
            if let error {
                self.finish(.failed(Self.realtimeError(error)))
            } else if isComplete {
                self.endOfStream()
            } else {
                self.readNext()
            }
        }
    }

    private func received(_ data: Data) {
        var opened: TransportOpenInfo?
        var frames: [TransportFrame] = []
        var output: [UInt8] = []
        var ending: TransportClosure.Kind?
        state.withLock { state in
            guard !state.isFinished else { return }  // nothing is delivered after `.closed`
            var bytes = [UInt8](data)
            if var handshake = state.handshake {
                do {
                    guard let (info, leftover) = try bytes.withUnsafeBytes({ try handshake.receive($0) }) else {
                        state.handshake = handshake
                        return
                    }
                    state.handshake = nil
                    state.isOpen = true
                    opened = info
                    bytes = leftover
                    for frame in state.pending { state.codec.encode(frame, into: &output) }
                    state.pending = []
                } catch let error as RealtimeError {
                    ending = .failed(error)
                    return
                } catch {
                    return
                }
            }
            var events: [WebSocketEvent] = []
            bytes.withUnsafeBytes { state.codec.receive($0, events: &events, output: &output) }
            for event in events {
                switch event {
                case .message(let frame): frames.append(frame)
                case .closed(let code, let reason):
                    if let local = state.localClose {
                        ending = .closedLocally(code: local.code, reason: local.reason)
                    } else {
                        ending = .closedByPeer(code: code, reason: reason)
                    }
                case .failed(let error, _): ending = .failed(error)
                case .ping, .pong: break
                }
            }
        }
        if let opened { handler(.opened(opened)) }
        if !output.isEmpty { write(output) }
        if !frames.isEmpty { handler(.received(frames)) }
        if let ending { finish(ending) }
    }

    private func endOfStream() {
        let (open, local, handshake) = state.withLock { ($0.isOpen, $0.localClose, $0.handshake) }
        if !open, let handshake {
            finish(.failed(handshake.errorForClosedConnection()))
        } else if let local {
            finish(.closedLocally(code: local.code, reason: local.reason))
        } else {
            finish(.failed(RealtimeError(.transportFailed, "the connection closed without a close frame",
                                         context: .init(closeCode: 1006))))
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
            finish(.failed(RealtimeError(.limitExceeded, "more than \(limit) bytes were queued for sending")))
            return
        }
        let count = bytes.count
        connection?.send(content: Data(bytes), completion: .contentProcessed { [weak self] error in
            guard let self else { return }
            self.state.withLock { $0.unsentBytes -= count }
            if let error { self.queue.async { self.finish(.failed(Self.realtimeError(error))) } }
        })
    }

    private func finish(_ kind: TransportClosure.Kind) {
        let (first, wasOpen, connection) = state.withLock { state -> (Bool, Bool, NWConnection?) in
            defer {
                state.isFinished = true
                state.connection = nil
            }
            return (!state.isFinished, state.isOpen, state.connection)
        }
        guard first else { return }
        connection?.cancel()
        handler(.closed(TransportClosure(kind, duringOpen: !wasOpen)))
    }

    private static func realtimeError(_ error: NWError) -> RealtimeError {
        switch error {
        case .dns(let code):
            return RealtimeError(.transportFailed, "could not resolve the host", context: .init(detail: "dns: \(code)"))
        case .tls(let status):
            return RealtimeError(.tlsFailed, "TLS handshake failed: \(tlsFailureReason(status))",
                                 context: .init(detail: "OSStatus \(status)"))
        case .posix(let code):
            let name = code == .ECONNREFUSED ? "ECONNREFUSED" : "\(code)"
            return RealtimeError(.transportFailed, "connection failed: \(code)", context: .init(detail: "connect: \(name)"))
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

    func send(_ frames: [TransportFrame]) {
        var output: [UInt8] = []
        state.withLock { state in
            guard !state.isFinished, state.localClose == nil else { return }
            guard state.isOpen else {
                state.pending += frames
                return
            }
            for frame in frames { state.codec.encode(frame, into: &output) }
        }
        queue.async { [output] in self.write(output) }
    }

    func close(code: Int, reason: String) {
        var output: [UInt8] = []
        let open = state.withLock { state -> Bool? in
            guard !state.isFinished, state.localClose == nil else { return nil }
            state.localClose = (code, reason)
            if state.isOpen { state.codec.encodeClose(code: code, reason: reason, into: &output) }
            return state.isOpen
        }
        guard let open else { return }
        queue.async { [output] in
            guard open else {
                self.finish(.closedLocally(code: code, reason: reason))
                return
            }
            self.write(output)
            let seconds = Double(self.configuration.closeTimeout.nanoseconds) / 1e9
            self.queue.asyncAfter(deadline: .now() + seconds) { self.finish(.closedLocally(code: code, reason: reason)) }
        }
    }

    func abort() {
        queue.async { self.finish(.closedLocally(code: 1006, reason: "aborted")) }
    }

    func setReadingPaused(_ paused: Bool) {
        state.withLock { $0.readingPaused = paused }
        if !paused { queue.async { self.readNext() } }
    }
}
#endif
