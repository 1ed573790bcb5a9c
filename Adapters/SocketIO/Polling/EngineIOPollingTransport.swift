import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(DialectAuthoring) import RealtimeCore
#if canImport(Security)
import Security
#endif

/// Engine.IO long-polling over `URLSession`, optionally upgrading to the session's WebSocket transport.
///
/// The protocol lives in ``EngineIOPolling``; this type only runs its HTTP requests and forwards the
/// WebSocket probe's events. Each connection owns one `URLSession`, invalidated when it closes.
struct EngineIOPollingTransport: RealtimeTransport {
    /// The WebSocket transport to upgrade to; `nil` stays on polling.
    var upgradeTransport: (any RealtimeTransport)?
    /// The session's transport verifies servers its own way (pins, extra roots) and cannot lend that
    /// policy to `URLSession` here: `https` polling is refused rather than let it bypass that.
    var refusesHTTPS = false
    #if canImport(Security)
    /// The session's transport's own trust policy, applied to `https` polling through the `URLSession`
    /// delegate (Apple platforms).
    var trustEvaluator: (any ServerTrustEvaluating)?
    #endif

    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        var trustDelegate: PollingTrustDelegate?
        #if canImport(Security)
        trustDelegate = trustEvaluator.map(PollingTrustDelegate.init)
        #endif
        let connection = PollingConnection(request: request, upgradeTransport: upgradeTransport,
                                           refusesHTTPS: refusesHTTPS, trustDelegate: trustDelegate, handler: handler)
        connection.start()
        return connection
    }
}

/// One Engine.IO polling connection. Inputs from any thread go through a ``SerialMailbox``: the thread
/// that finds it idle drains it, so the state machine sees one input at a time and the handler is never
/// re-entered.
private final class PollingConnection: TransportConnection {
    private struct IO {
        var probe: (any TransportConnection)?
        var finished = false
    }

    private let request: ConnectionRequest
    private let upgradeTransport: (any RealtimeTransport)?
    private let refusesHTTPS: Bool
    private let handler: @Sendable (TransportEvent) -> Void
    private let machine: Locked<EngineIOPolling>
    private let mailbox = SerialMailbox<EngineIOPolling.Input>()
    private let io = Locked(IO())
    private let session: URLSession
    private let trustDelegate: PollingTrustDelegate?

    init(request: ConnectionRequest, upgradeTransport: (any RealtimeTransport)?, refusesHTTPS: Bool,
         trustDelegate: PollingTrustDelegate?, handler: @escaping @Sendable (TransportEvent) -> Void) {
        self.request = request
        self.upgradeTransport = upgradeTransport
        self.refusesHTTPS = refusesHTTPS
        self.handler = handler
        machine = Locked(EngineIOPolling(request: request, upgrade: upgradeTransport != nil))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 2  // one GET and one POST
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.trustDelegate = trustDelegate
        session = URLSession(configuration: configuration, delegate: trustDelegate, delegateQueue: nil)
    }

    func start() {
        if let error = Self.insecureTransportError(request) ?? tlsPolicyError() {
            io.withLock { $0.finished = true }
            session.finishTasksAndInvalidate()
            handler(.closed(TransportClosure(.failed(error), duringOpen: true)))
            return
        }
        submit(.start)
    }

    func send(_ frames: [TransportFrame]) { submit(.send(frames)) }
    func close(code: Int, reason: String) { submit(.close(code: code, reason: reason)) }
    func abort() { submit(.abort) }
    func setReadingPaused(_ paused: Bool) { submit(.setReadingPaused(paused)) }

    private func tlsPolicyError() -> RealtimeError? {
        guard refusesHTTPS, request.url.scheme?.lowercased() == "https" else { return nil }
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
                io.withLock { $0.finished = true }
                // Let a final close POST go out before the session is torn down.
                session.finishTasksAndInvalidate()
            }
            handler(event)
        case .openProbe(let probeRequest):
            guard let upgradeTransport else { return }
            let connection = upgradeTransport.open(probeRequest) { [weak self] event in
                self?.submit(.probe(event))
            }
            io.withLock { $0.probe = connection }
        case .probeSend(let frames):
            io.withLock { $0.probe }?.send(frames)
        case .probeClose(let code, let reason):
            io.withLock { $0.probe }?.close(code: code, reason: reason)
        case .probeAbort:
            io.withLock { io -> (any TransportConnection)? in
                defer { io.probe = nil }
                return io.probe
            }?.abort()
        case .probeReadingPaused(let paused):
            io.withLock { $0.probe }?.setReadingPaused(paused)
        }
    }

    private func startRequest(url: URL, method: String, body: Data?, binary: Bool, timeout: Duration,
                              input: @escaping @Sendable (Result<EngineIOPolling.HTTPResponse, RealtimeError>)
                                  -> EngineIOPolling.Input) {
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = method
        urlRequest.timeoutInterval = max(1, timeout.seconds)
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        if let origin = request.origin { urlRequest.setValue(origin, forHTTPHeaderField: "Origin") }
        if let body {
            urlRequest.httpBody = body
            urlRequest.setValue(binary ? "application/octet-stream" : "text/plain;charset=UTF-8",
                                forHTTPHeaderField: "Content-Type")
        }
        // The close POST is created before `closed` is reported; nothing starts after the session is invalidated.
        guard io.withLock({ !$0.finished }) else { return }
        let task = session.dataTask(with: urlRequest) { [weak self] data, response, error in
            guard let self else { return }
            let result: Result<EngineIOPolling.HTTPResponse, RealtimeError>
            if error != nil, let refusal = self.trustDelegate?.refusal.withLock({ $0 }) {
                result = .failure(refusal)  // the delegate's reason, not URLSession's "cancelled"
            } else if let error {
                let nsError = error as NSError
                let code: RealtimeError.Code = nsError.code == NSURLErrorTimedOut ? .timedOut : .transportFailed
                result = .failure(RealtimeError(code, "polling \(method) failed: \(error.localizedDescription)",
                                                context: .init(detail: "\(nsError.domain) \(nsError.code)")))
            } else {
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                result = .success(.init(status: status, body: data ?? Data()))
            }
            self.submit(input(result))
        }
        task.resume()
    }
}

/// Answers `https` server-trust challenges of a polling connection's `URLSession` with the session
/// transport's own trust policy, so polling reaches exactly the servers the WebSocket may reach; the
/// reason for a refusal is kept for the request that fails because of it.
final class PollingTrustDelegate: NSObject, URLSessionDelegate, Sendable {
    let refusal = Locked<RealtimeError?>(nil)
    #if canImport(Security)
    private let evaluator: any ServerTrustEvaluating

    init(_ evaluator: any ServerTrustEvaluating) {
        self.evaluator = evaluator
    }

    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        guard let trust = challenge.protectionSpace.serverTrust else {
            completionHandler(.performDefaultHandling, nil)  // not a server-trust challenge
            return
        }
        if let failure = evaluator.evaluateServerTrust(trust) {
            refusal.withLock { $0 = failure }
            completionHandler(.cancelAuthenticationChallenge, nil)
        } else {
            completionHandler(.useCredential, URLCredential(trust: trust))
        }
    }
    #endif
}
