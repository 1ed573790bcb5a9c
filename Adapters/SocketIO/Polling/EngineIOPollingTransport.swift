import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// Engine.IO long-polling over an ``HTTPClient``, optionally upgrading to the session's WebSocket transport.
///
/// The protocol lives in ``EngineIOPolling``; this type only runs its HTTP requests and forwards the
/// WebSocket probe's events. Each connection owns one client, finished when the connection closes.
struct EngineIOPollingTransport: RealtimeTransport {
    /// The WebSocket transport to upgrade to; `nil` stays on polling.
    var upgradeTransport: (any RealtimeTransport)?
    /// How long the app's close waits for the server to take the last POSTs.
    var closeTimeout: Duration
    /// Makes the HTTP client of one connection.
    var makeClient: @Sendable () -> any HTTPClient

    /// Polling over `URLSession`, verifying `https` servers with `trust`: the session's transport's policy,
    /// so polling reaches exactly the servers the WebSocket may reach.
    init(upgradeTransport: (any RealtimeTransport)?, trust: HTTPTrustPolicy = .platformDefault,
         closeTimeout: Duration = EngineIOPolling.defaultCloseTimeout) {
        // One long-polling GET beside one POST.
        self.init(upgradeTransport: upgradeTransport, closeTimeout: closeTimeout) {
            URLSessionHTTPClient(trust: trust, maximumConnectionsPerHost: 2)
        }
    }

    init(upgradeTransport: (any RealtimeTransport)?, closeTimeout: Duration = EngineIOPolling.defaultCloseTimeout,
         makeClient: @escaping @Sendable () -> any HTTPClient) {
        self.upgradeTransport = upgradeTransport
        self.closeTimeout = closeTimeout
        self.makeClient = makeClient
    }

    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let connection = PollingConnection(request: request, upgradeTransport: upgradeTransport,
                                           closeTimeout: closeTimeout, client: makeClient(), handler: handler)
        connection.start()
        return connection
    }
}

/// One Engine.IO polling connection. Inputs from any thread go through a ``SerialMailbox``: the thread
/// that finds it idle drains it, so the state machine sees one input at a time and the handler is never
/// re-entered.
private final class PollingConnection: RoundTripMeasuring {
    private struct IO {
        var probe: (any TransportConnection)?
        var closeTimer: Task<Void, Never>?
        var finished = false
    }

    private let request: ConnectionRequest
    private let upgradeTransport: (any RealtimeTransport)?
    private let handler: @Sendable (TransportEvent) -> Void
    private let machine: Locked<EngineIOPolling>
    private let mailbox = SerialMailbox<EngineIOPolling.Input>()
    private let io = Locked(IO())
    private let client: any HTTPClient

    init(request: ConnectionRequest, upgradeTransport: (any RealtimeTransport)?, closeTimeout: Duration,
         client: any HTTPClient, handler: @escaping @Sendable (TransportEvent) -> Void) {
        self.request = request
        self.upgradeTransport = upgradeTransport
        self.handler = handler
        machine = Locked(EngineIOPolling(request: request, upgrade: upgradeTransport != nil, closeTimeout: closeTimeout))
        self.client = client
    }

    /// Long-polling has no ping of its own: once upgraded, the WebSocket's ping measures the round trip.
    func ping() async throws -> Duration {
        guard machine.withLock({ $0.isUpgraded }),
              let webSocket = io.withLock({ $0.probe }) as? any RoundTripMeasuring else {
            throw RealtimeError.pingUnsupported("Socket.IO long-polling has no ping until it upgrades")
        }
        return try await webSocket.ping()
    }

    /// Let go of while its close POST was in flight (the session was released meanwhile): the POST may
    /// still finish, and then the client's resources go (an unfinished `URLSession` would stay forever).
    deinit {
        io.withLock { $0.closeTimer }?.cancel()
        client.finish()
    }

    func start() {
        if let error = Self.insecureTransportError(request) ?? tlsPolicyError() {
            io.withLock { $0.finished = true }
            client.finish()
            handler(.closed(TransportClosure(.failed(error), duringOpen: true)))
            return
        }
        submit(.start)
    }

    func send(_ frames: [TransportFrame]) { submit(.send(frames)) }
    func send(_ frames: [TransportFrame], compress: Bool) { submit(.send(frames, compress: compress)) }
    func close(code: Int, reason: String) { submit(.close(code: code, reason: reason)) }
    func abort() { submit(.abort) }
    func setReadingPaused(_ paused: Bool) { submit(.setReadingPaused(paused)) }

    private func tlsPolicyError() -> RealtimeError? {
        guard client.refusal(for: request.url) != nil else { return nil }
        return RealtimeError(.unsupported, "long-polling runs on URLSession, which cannot apply the transport's "
                             + "TLS pins or roots; use transports: [.websocket]", context: .init(detail: request.url.host))
    }

    private static func insecureTransportError(_ request: ConnectionRequest) -> RealtimeError? {
        guard request.url.scheme?.lowercased() == "http", !request.allowsInsecureTransportToRemoteHosts else { return nil }
        let host = request.url.host ?? ""
        if Loopback.contains(host: host) { return nil }
        return RealtimeError(.invalidArgument, "plain http to a remote host needs allowsInsecureTransportToRemoteHosts",
                             context: .init(detail: host))
    }

    private func submit(_ input: EngineIOPolling.Input) {
        mailbox.submit(input) { inputs in
            for next in inputs {
                let actions = machine.withLock { $0.handle(next) }
                for action in actions { perform(action) }
            }
        }
    }

    private func perform(_ action: EngineIOPolling.Action) {
        switch action {
        case .get(let url, let timeout):
            startRequest(url: url, method: "GET", body: nil, binary: false, timeout: timeout) { .getFinished($0) }
        case .post(let url, let body, let binary):
            startRequest(url: url, method: "POST", body: body, binary: binary, timeout: request.connectTimeout) {
                .postFinished($0)
            }
        case .abandonRequests:
            // Not `cancel()`: in swift-corelibs-foundation a cancel racing the task's completion can hit
            // "task that is not in the registry" and crash. The server answers the pending GET once it
            // sees the close (or within its ping interval); the machine ignores late answers.
            break
        case .event(let event):
            if case .closed = event {
                io.withLock { io -> Task<Void, Never>? in
                    io.finished = true
                    defer { io.closeTimer = nil }
                    return io.closeTimer
                }?.cancel()
                // After the close POST's answer (or the close timeout) when the app closed: nothing in flight
                // matters any more.
                client.finish()
            }
            handler(event)
        case .openProbe(let probeRequest):
            guard let upgradeTransport else { return }
            let connection = upgradeTransport.open(probeRequest) { [weak self] event in
                self?.submit(.probe(event))
            }
            io.withLock { $0.probe = connection }
        case .probeSend(let frames, let compress):
            let probe = io.withLock { $0.probe }
            if compress { probe?.send(frames) } else { probe?.send(frames, compress: false) }
        case .probeClose(let code, let reason):
            io.withLock { $0.probe }?.close(code: code, reason: reason)
        case .probeAbort:
            io.withLock { io -> (any TransportConnection)? in
                defer { io.probe = nil }
                return io.probe
            }?.abort()
        case .probeReadingPaused(let paused):
            io.withLock { $0.probe }?.setReadingPaused(paused)
        case .armCloseTimer(let timeout):
            let timer = Task { [weak self] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                self?.submit(.closeTimerExpired)
            }
            io.withLock { $0.closeTimer = timer }
        }
    }

    private func startRequest(url: URL, method: String, body: Data?, binary: Bool, timeout: Duration,
                              input: @escaping @Sendable (Result<HTTPResponse, RealtimeError>)
                                  -> EngineIOPolling.Input) {
        var httpRequest = HTTPRequest(method: method, url: url, headers: request.headers, body: body,
                                      timeout: max(.seconds(1), timeout))
        if let origin = request.origin { httpRequest.headers.setValue(origin, forName: "Origin") }
        if body != nil {
            httpRequest.headers.setValue(binary ? "application/octet-stream" : "text/plain;charset=UTF-8",
                                         forName: "Content-Type")
        }
        // The close POST is created before `closed` is reported; nothing starts after the client is finished.
        guard io.withLock({ !$0.finished }) else { return }
        client.start(httpRequest) { [weak self] result in
            self?.submit(input(result.mapError { error in
                // The client's own failures get the request named; a TLS policy's refusal stays as it is.
                guard error.code == .timedOut || error.code == .transportFailed else { return error }
                return RealtimeError(error.code, "polling \(method) failed: \(error.message)", context: error.context)
            }))
        }
    }
}
