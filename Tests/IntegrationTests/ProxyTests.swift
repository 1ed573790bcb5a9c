import Foundation
import Realtime
import RealtimeSocketIOTesting
import RealtimeTesting
import Testing

// Sessions through a real HTTP CONNECT proxy (tinyproxy, started per test on 127.0.0.1) for each dialect
// against its real server, ws and wss; Socket.IO's long-polling through it; every proxy failure typed; and
// the same through a FaultProxy in front of tinyproxy. tinyproxy's own log says which tunnels it carried.

/// A transport through `proxy` that trusts the throwaway CA of `certificates` (for wss).
func proxiedTransport(_ proxy: ProxyConfiguration, trusting certificates: ChaosCertificates? = nil) -> WebSocketTransport {
    let tls = certificates.map { TLSConfiguration(additionalTrustRoots: [.file($0.ca)]) } ?? TLSConfiguration()
    return WebSocketTransport(configuration: .init(tls: tls, proxy: proxy))
}

/// Runs `body` with throwaway certificates for 127.0.0.1 when `tls`, and removes them after.
func withCertificates<T>(_ tls: Bool, subjectAltName: String = "DNS:localhost,IP:127.0.0.1",
                         _ body: (ChaosCertificates?) async throws -> T) async throws -> T {
    guard tls else { return try await body(nil) }
    let certificates = try await ChaosCertificates.make(subjectAltName: subjectAltName)
    defer { certificates.remove() }
    return try await body(certificates)
}

/// The error a closure failed with, or an issue.
func failure(of closure: TransportClosure?, sourceLocation: SourceLocation = #_sourceLocation) -> RealtimeError? {
    guard case .failed(let error)? = closure?.kind else {
        Issue.record("expected a failed open, got \(String(describing: closure))", sourceLocation: sourceLocation)
        return nil
    }
    #expect(closure?.duringOpen == true, sourceLocation: sourceLocation)
    return error
}

let proxyTestOptions = SessionOptions(reconnectPolicy: ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2,
                                                                       maximumDelay: .seconds(1), jitter: .none),
                                      connectTimeout: .seconds(10))

@Suite("HTTP CONNECT proxy: tinyproxy, every dialect, ws and wss; typed failures", .serialized, .timeLimit(.minutes(5)),
       .enabled(if: TinyProxy.unavailableReason == nil || PeerRequirement.required,
                Comment(rawValue: TinyProxy.unavailableReason ?? "")))
struct ProxyTests {
    // MARK: Each dialect against its real server

    @Test("Socket.IO (python-socketio) through tinyproxy, WebSocket, ws and wss: tinyproxy logs the tunnel",
          .enabled(if: FileManager.default.isExecutableFile(atPath: SocketIOPeer.python.path) || PeerRequirement.required,
                   "python-socketio peer not provisioned: run Tests/Fixtures/socketio/provision.sh"),
          arguments: [false, true])
    func socketIO(tls: Bool) async throws {
        try await withCertificates(tls) { certificates in
            let peer = try await SocketIOPeer.start(tls: certificates)
            defer { peer.stop() }
            let tinyproxy = try await TinyProxy.start(connectPorts: [peer.port])
            defer { tinyproxy.stop() }
            let url = URL(string: "\(tls ? "https" : "http")://127.0.0.1:\(peer.port)")!
            let session = RealtimeSession(dialect: .socketIO(url: url, auth: ["token": "secret"]),
                                          transport: proxiedTransport(tinyproxy.configuration(), trusting: certificates),
                                          options: proxyTestOptions)
            defer { session.disconnect() }
            let chat = session.channel("/chat")
            try await session.connect()
            try await chat.subscribed()
            #expect(try await chat.request("sum", [1, 2, 3], timeout: .seconds(10)) == [["sum": 6]])
            #expect(tinyproxy.connectRequests(to: peer.port) == 1, "\(tinyproxy.log)")
            #expect(tinyproxy.establishedTunnels == 1)
        }
    }

    @Test("Socket.IO long-polling through tinyproxy, http and https, with and without the upgrade: every request tunnelled",
          .enabled(if: FileManager.default.isExecutableFile(atPath: SocketIOPeer.python.path) || PeerRequirement.required,
                   "python-socketio peer not provisioned: run Tests/Fixtures/socketio/provision.sh"),
          arguments: [false, true], [false, true])
    func socketIOPolling(tls: Bool, upgrade: Bool) async throws {
        try await withCertificates(tls) { certificates in
            let peer = try await SocketIOPeer.start(tls: certificates)
            defer { peer.stop() }
            let tinyproxy = try await TinyProxy.start(connectPorts: [peer.port])
            defer { tinyproxy.stop() }
            let url = URL(string: "\(tls ? "https" : "http")://127.0.0.1:\(peer.port)")!
            let session = RealtimeSession(dialect: .socketIO(url: url, auth: ["token": "secret"],
                                                             transports: upgrade ? [.polling, .websocket] : [.polling]),
                                          transport: proxiedTransport(tinyproxy.configuration(), trusting: certificates),
                                          options: proxyTestOptions)
            defer { session.disconnect() }
            let chat = session.channel("/chat")
            try await session.connect()
            try await chat.subscribed()
            #expect(try await chat.request("sum", [4, 5], timeout: .seconds(10)) == [["sum": 9]])
            // The handshake GET, the CONNECT POST and at least one more poll each came through a tunnel of their own.
            #expect(await eventually { tinyproxy.connectRequests(to: peer.port) >= 3 }, "\(tinyproxy.log)")
            print("proxy: polling over \(tls ? "https" : "http")\(upgrade ? " with the upgrade" : ""): "
                  + "\(tinyproxy.connectRequests(to: peer.port)) tunnels through tinyproxy")
        }
    }

    @Test("Action Cable (Rails/puma) through tinyproxy, ws and wss: tinyproxy logs the tunnel",
          .enabled(if: RailsCableServer.unavailableReason == nil || PeerRequirement.required,
                   Comment(rawValue: RailsCableServer.unavailableReason ?? "")),
          arguments: [false, true])
    func actionCable(tls: Bool) async throws {
        try await withCertificates(tls) { certificates in
            let server = try await RailsCableServer.start(tls: certificates)
            defer { server.stop() }
            let port = Int(tls ? server.tlsPort ?? 0 : server.port)
            let tinyproxy = try await TinyProxy.start(connectPorts: [port])
            defer { tinyproxy.stop() }
            let base = try #require(tls ? server.tlsURL : server.url)
            let url = URL(string: base.absoluteString + "?token=valid-alice")!
            let session = RealtimeSession(dialect: .actionCable(url: url),
                                          transport: proxiedTransport(tinyproxy.configuration(), trusting: certificates),
                                          options: proxyTestOptions)
            defer { session.disconnect() }
            let messages = Locked<[JSONValue]>([])
            session.onAny { event in messages.withLock { $0.append(event.data) } }
            try await session.connect()
            let room = session.channel(cableRoom42)
            try await room.subscribed()
            try await room.perform("whisper", ["text": "through the proxy"])
            try await cableWaitUntil("the whisper's answer") {
                messages.withLock { $0 }.contains { $0["whisper"]?["text"] == "through the proxy" }
            }
            #expect(tinyproxy.connectRequests(to: port) == 1, "\(tinyproxy.log)")
            #expect(tinyproxy.establishedTunnels == 1)
        }
    }

    @Test("Pusher (pusher-fake) through tinyproxy, ws and wss: a REST-triggered event arrives; tinyproxy logs the tunnel",
          .enabled(if: PusherFakeServer.unavailableReason == nil || PeerRequirement.required,
                   "run Tests/Fixtures/pusher-fake/provision.sh"),
          arguments: [false, true])
    func pusher(tls: Bool) async throws {
        try await withCertificates(tls) { certificates in
            let server = try await PusherFakeServer.start(tls: certificates)
            defer { server.stop() }
            let app = try await PusherFakeApp.start(for: server)
            defer { app.stop() }
            let tinyproxy = try await TinyProxy.start(connectPorts: [server.wsPort])
            defer { tinyproxy.stop() }
            let session = RealtimeSession(dialect: .pusher(key: PusherFakeServer.key, host: "127.0.0.1",
                                                           port: server.wsPort, useTLS: tls),
                                          transport: proxiedTransport(tinyproxy.configuration(), trusting: certificates),
                                          options: proxyTestOptions)
            defer { session.disconnect() }
            let news = session.channel("news")
            let log = FakeEventLog(news, "greet")
            try await session.connect()
            _ = try await news.subscribed()
            try await app.trigger("news", "greet", ["via": "proxy"])
            await pusherWait("the trigger", seconds: 20) { log.count == 1 }
            #expect(log.data() == [["via": "proxy"]])
            #expect(tinyproxy.connectRequests(to: server.wsPort) == 1, "\(tinyproxy.log)")
            #expect(tinyproxy.establishedTunnels == 1)
        }
    }

    @Test("Pusher (pusher-fake) through tinyproxy: a private channel's .endpoint auth goes through the proxy too",
          .enabled(if: PusherFakeServer.unavailableReason == nil || PeerRequirement.required,
                   "run Tests/Fixtures/pusher-fake/provision.sh"))
    func pusherEndpointAuth() async throws {
        let server = try await PusherFakeServer.start()
        defer { server.stop() }
        let app = try await PusherFakeApp.start(for: server)
        defer { app.stop() }
        let authPort = try #require(app.authURL.port)
        let tinyproxy = try await TinyProxy.start(connectPorts: [server.wsPort, authPort])
        defer { tinyproxy.stop() }
        let session = RealtimeSession(dialect: .pusher(key: PusherFakeServer.key, auth: .endpoint(app.authURL),
                                                       host: "127.0.0.1", port: server.wsPort),
                                      transport: proxiedTransport(tinyproxy.configuration()), options: proxyTestOptions)
        defer { session.disconnect() }
        let room = session.channel("private-proxied")
        let log = FakeEventLog(room, "greet")
        try await session.connect()
        _ = try await room.subscribed()
        // The endpoint's log line may reach the test after its answer reached the session.
        await pusherWait("the endpoint's log line", seconds: 20) { !app.authRequests.isEmpty }
        #expect(app.authRequests.map(\.channel) == ["private-proxied"])
        #expect(tinyproxy.connectRequests(to: authPort) == 1, "\(tinyproxy.log)")
        #expect(tinyproxy.connectRequests(to: server.wsPort) == 1, "\(tinyproxy.log)")
        try await app.trigger("private-proxied", "greet", ["via": "proxy"])
        await pusherWait("the trigger", seconds: 20) { log.count == 1 }
        #expect(log.data() == [["via": "proxy"]])
    }

    @Test("an https auth endpoint through tinyproxy gets the platform's trust, not the transport's extra root",
          .enabled(if: PusherFakeServer.unavailableReason == nil || PeerRequirement.required,
                   "run Tests/Fixtures/pusher-fake/provision.sh"))
    func pusherEndpointAuthTrust() async throws {
        try await withCertificates(true) { certificates in
            let certificates = try #require(certificates)
            let server = try await PusherFakeServer.start()
            defer { server.stop() }
            // A backend whose certificate only the throwaway CA, which the transport trusts, vouches for.
            let backend = try await startOpenSSLWebServer(certificates)
            defer { PusherFakeServer.killAndReap(backend.process) }
            let tinyproxy = try await TinyProxy.start(connectPorts: [server.wsPort, backend.port])
            defer { tinyproxy.stop() }
            let endpoint = URL(string: "https://127.0.0.1:\(backend.port)/pusher/auth")!
            let session = RealtimeSession(dialect: .pusher(key: PusherFakeServer.key, auth: .endpoint(endpoint),
                                                           host: "127.0.0.1", port: server.wsPort),
                                          transport: proxiedTransport(tinyproxy.configuration(), trusting: certificates),
                                          options: proxyTestOptions)
            defer { session.disconnect() }
            let room = session.channel("private-proxied")
            try await session.connect()
            let error = await #expect(throws: RealtimeError.self) { _ = try await room.subscribed() }
            #expect(error?.code == .authorizationFailed, "\(String(describing: error))")
            #expect(error?.context.detail?.contains("unknown certificate authority") == true, "\(String(describing: error))")
            #expect(tinyproxy.connectRequests(to: backend.port) == 1, "\(tinyproxy.log)")
            print("proxy: auth backend with the transport's extra root only: \(String(describing: error))")
        }
    }

    // MARK: Failures, typed

    @Test("407 without credentials, wrong credentials (tinyproxy answers 401): typed, saying what was sent; then the right ones connect")
    func authentication() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let credentials = ProxyConfiguration.Credentials(username: "alice", password: "s3cret-pass")
        let tinyproxy = try await TinyProxy.start(connectPorts: [server.port], basicAuth: credentials)
        defer { tinyproxy.stop() }
        let url = URL(string: "ws://127.0.0.1:\(server.port)/socket.io/?EIO=4&transport=websocket")!

        let anonymous = try #require(failure(of: await openOutcome(proxiedTransport(tinyproxy.configuration()), url)))
        #expect(anonymous.code == .proxyFailed)
        #expect(anonymous.context.httpStatus == 407)
        #expect(anonymous.message.contains("no credentials were sent"), "\(anonymous)")
        #expect(anonymous.context.detail == "Proxy-Authenticate: Basic realm=\"Tinyproxy\"", "\(anonymous)")

        let wrong = ProxyConfiguration.Credentials(username: "alice", password: "not-it")
        let refused = try #require(failure(of: await openOutcome(proxiedTransport(tinyproxy.configuration(credentials: wrong)), url)))
        #expect(refused.code == .proxyFailed)
        #expect(refused.context.httpStatus == 401)
        #expect(refused.message.contains("the credentials sent were refused"), "\(refused)")
        #expect(!"\(refused)".contains("not-it"))
        print("proxy: no credentials: \(anonymous)")
        print("proxy: wrong credentials: \(refused)")

        // The session reports the same typed error to its observers while it retries.
        let session = RealtimeSession(dialect: .socketIO(url: server.url),
                                      transport: proxiedTransport(tinyproxy.configuration()), options: proxyTestOptions)
        let errors = Locked<[RealtimeError]>([])
        session.onError { error in errors.withLock { $0.append(error) } }
        let attempt = Task { try await session.connect(timeout: .seconds(20)) }
        #expect(await eventually { !errors.withLock { $0 }.isEmpty })
        #expect(errors.withLock { $0 }.first?.code == .proxyFailed)
        #expect(errors.withLock { $0 }.first?.context.httpStatus == 407)
        session.disconnect()
        _ = await attempt.result

        let good = RealtimeSession(dialect: .socketIO(url: server.url, auth: ["token": "secret"]),
                                   transport: proxiedTransport(tinyproxy.configuration(credentials: credentials)),
                                   options: proxyTestOptions)
        defer { good.disconnect() }
        let chat = good.channel("/chat")
        try await good.connect()
        try await chat.subscribed()
        #expect(try await chat.request("sum", [2, 2], timeout: .seconds(5)) == [["sum": 4]])
        #expect(tinyproxy.connectRequests(to: server.port) >= 4, "\(tinyproxy.log)")
        #expect(!tinyproxy.log.contains("s3cret-pass"))
    }

    @Test("the proxy refuses the tunnel (tinyproxy's 403 for a port not in ConnectPort): status and reason phrase")
    func tunnelRefused() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let tinyproxy = try await TinyProxy.start(connectPorts: [server.port == 1 ? 2 : 1])
        defer { tinyproxy.stop() }
        let url = URL(string: "ws://127.0.0.1:\(server.port)/socket.io/?EIO=4&transport=websocket")!
        let error = try #require(failure(of: await openOutcome(proxiedTransport(tinyproxy.configuration()), url)))
        #expect(error.code == .proxyFailed)
        #expect(error.context.httpStatus == 403)
        #expect(error.context.detail == "Access violation")
        #expect(error.message == "the proxy 127.0.0.1:\(tinyproxy.port) refused the tunnel to 127.0.0.1:\(server.port): HTTP 403 Access violation")
        print("proxy: tunnel refused: \(error)")
    }

    @Test("nothing listens at the proxy's address: typed, connection refused; a proxy name that does not resolve: typed")
    func proxyUnreachable() async throws {
        let port = try PusherFakeServer.freePort()
        let url = URL(string: "wss://api.example.com/socket")!
        let refused = try #require(failure(of: await openOutcome(
            proxiedTransport(ProxyConfiguration(host: "127.0.0.1", port: port)), url)))
        #expect(refused.code == .proxyFailed)
        #expect(refused.message.hasPrefix("could not reach the proxy 127.0.0.1:\(port): connection refused"), "\(refused)")
        #expect(refused.context.detail == "connect: ECONNREFUSED")
        let unresolved = try #require(failure(of: await openOutcome(
            proxiedTransport(ProxyConfiguration(host: "proxy.realtime.invalid", port: 3128)), url)))
        #expect(unresolved.code == .proxyFailed)
        #expect(unresolved.message.hasPrefix("could not reach the proxy proxy.realtime.invalid:3128: could not resolve"),
                "\(unresolved)")
        print("proxy: nothing listening: \(refused)")
        print("proxy: name not resolved: \(unresolved)")
    }

    @Test("a proxy that answers garbage, cuts its answer short, or never answers: typed errors", arguments: [
        ("SSH-2.0-OpenSSH_9.2\r\n", "the proxy answered CONNECT with something that is not HTTP"),
        ("HTTP/1.1 200 Connection estab", "the proxy closed the connection in the middle of its answer to CONNECT"),
        ("", "the proxy closed the connection without answering CONNECT"),
    ])
    func badAnswers(answer: String, message: String) async throws {
        let proxy = try await ScriptedConnectProxy.start(.answer(answer))
        defer { proxy.stop() }
        let error = try #require(failure(of: await openOutcome(
            proxiedTransport(ProxyConfiguration(host: "127.0.0.1", port: proxy.port)), URL(string: "wss://api.example.com/")!)))
        #expect(error.code == .proxyFailed)
        #expect(error.message.hasPrefix(message), "\(error)")
        #expect(error.context.detail?.hasPrefix("bad answer") == true, "\(error)")
        _ = await fakeEventually(seconds: 5) { !proxy.requests.isEmpty }   // its report may trail its answer
        #expect(proxy.requests == ["CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n"])
        print("proxy: bad answer: \(error)")
    }

    @Test("bytes in the same answer after the proxy's 200 are the server's: they reach the upgrade (ws) and TLS (wss)")
    func bytesAfterTheAnswer() async throws {
        let established = "HTTP/1.1 200 Connection established\r\n\r\n"
        let plain = try await ScriptedConnectProxy.start(.answer(established + "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"))
        defer { plain.stop() }
        let upgrade = try #require(failure(of: await openOutcome(
            proxiedTransport(ProxyConfiguration(host: "127.0.0.1", port: plain.port)), URL(string: "ws://127.0.0.1:9/socket")!)))
        #expect(upgrade.code == .handshakeRejected && upgrade.context.httpStatus == 403, "\(upgrade)")
        let secure = try await ScriptedConnectProxy.start(.answer(established + "this is not a TLS record\r\n"))
        defer { secure.stop() }
        let tls = try #require(failure(of: await openOutcome(
            proxiedTransport(ProxyConfiguration(host: "127.0.0.1", port: secure.port)), URL(string: "wss://api.example.com/")!)))
        #expect(tls.code == .tlsFailed, "\(tls)")
        print("proxy: leftover to the upgrade: \(upgrade); to TLS: \(tls)")
    }

    @Test("a proxy that never answers CONNECT: the connect timeout, naming the proxy and the phase")
    func silentProxy() async throws {
        let proxy = try await ScriptedConnectProxy.start(.silent)
        defer { proxy.stop() }
        let error = try #require(failure(of: await openOutcome(
            proxiedTransport(ProxyConfiguration(host: "127.0.0.1", port: proxy.port)), URL(string: "wss://api.example.com/")!,
            timeout: .seconds(1))))
        #expect(error.code == .connectTimedOut)
        #expect(error.message == "the proxy 127.0.0.1:\(proxy.port) did not answer CONNECT to api.example.com:443 within 1.0 s")
        #expect(error.context.detail == "phase: proxy CONNECT")
        print("proxy: silent: \(error)")
    }

    // MARK: The origin's name, not the proxy's

    @Test("the origin's name is resolved by the proxy only, and TLS verifies it (a certificate for that name alone); from the environment",
          .enabled(if: FileManager.default.isExecutableFile(atPath: SocketIOPeer.python.path) || PeerRequirement.required,
                   "python-socketio peer not provisioned: run Tests/Fixtures/socketio/provision.sh"),
          arguments: [SocketIODialect.Transport.websocket, .polling])
    func originName(transport kind: SocketIODialect.Transport) async throws {
        try await withCertificates(true, subjectAltName: "DNS:origin.realtime.test") { certificates in
            let peer = try await SocketIOPeer.start(tls: certificates)
            defer { peer.stop() }
            let proxy = try await ScriptedConnectProxy.start(.tunnel(toPort: peer.port))
            defer { proxy.stop() }
            let url = URL(string: "https://origin.realtime.test:\(peer.port)")!
            let tls = TLSConfiguration(additionalTrustRoots: [.file(try #require(certificates).ca)])
            // Directly, the name does not resolve here.
            let direct = try #require(failure(of: await openOutcome(WebSocketTransport(configuration: .init(tls: tls)),
                                                                    URL(string: "wss://origin.realtime.test:\(peer.port)/")!)))
            #expect(direct.code == .transportFailed && direct.message.contains("could not resolve"), "\(direct)")

            let configuration = try #require(try ProxyConfiguration.fromEnvironment(
                for: url, environment: ["https_proxy": "http://127.0.0.1:\(proxy.port)", "NO_PROXY": "localhost,.internal"]))
            let session = RealtimeSession(dialect: .socketIO(url: url, auth: ["token": "secret"], transports: [kind]),
                                          transport: WebSocketTransport(configuration: .init(tls: tls, proxy: configuration)),
                                          options: proxyTestOptions)
            defer { session.disconnect() }
            let chat = session.channel("/chat")
            try await session.connect()
            try await chat.subscribed()
            #expect(try await chat.request("sum", [20, 22], timeout: .seconds(10)) == [["sum": 42]])
            // The proxy's report of a request may trail the tunnel it opened.
            _ = await fakeEventually(seconds: 20) { !proxy.requests.isEmpty }
            let requests = proxy.requests
            #expect(!requests.isEmpty)
            #expect(requests.allSatisfy {
                $0 == "CONNECT origin.realtime.test:\(peer.port) HTTP/1.1\r\nHost: origin.realtime.test:\(peer.port)\r\n\r\n"
            }, "\(requests)")
        }
    }

    // MARK: Through the FaultProxy in front of tinyproxy

    @Test("FaultProxy in front of tinyproxy: a reset inside the CONNECT answer is typed; dribbled byte by byte, wss still works")
    func faultProxyInFront() async throws {
        try await withCertificates(true) { certificates in
            let certificates = try #require(certificates)
            let server = try makeFixtureLikeServer()
            defer { server.stop() }
            let relay = try TLSRelay(certificates: certificates, upstreamPort: server.port)
            defer { relay.stop() }
            let tinyproxy = try await TinyProxy.start(connectPorts: [relay.port])
            defer { tinyproxy.stop() }
            let faults = try FaultProxy(upstreamPort: tinyproxy.port,
                                        plan: .sequence([.reset(afterBytes: 12, direction: .downstream)],
                                                        then: .dribble(chunk: 1)))
            defer { faults.stop() }
            let proxy = ProxyConfiguration(host: "127.0.0.1", port: faults.port)

            let url = URL(string: "wss://127.0.0.1:\(relay.port)/socket.io/?EIO=4&transport=websocket")!
            let reset = try #require(failure(of: await openOutcome(proxiedTransport(proxy, trusting: certificates), url)))
            #expect(reset.code == .proxyFailed, "\(reset)")
            #expect(reset.message.contains("127.0.0.1:\(faults.port)"), "\(reset)")
            print("proxy: reset inside the CONNECT answer: \(reset)")

            let session = RealtimeSession(dialect: .socketIO(url: URL(string: "https://127.0.0.1:\(relay.port)")!,
                                                             auth: ["token": "secret"]),
                                          transport: proxiedTransport(proxy, trusting: certificates),
                                          options: proxyTestOptions)
            defer { session.disconnect() }
            let chat = session.channel("/chat")
            try await session.connect()
            try await chat.subscribed()
            #expect(try await chat.request("sum", [1, 1], timeout: .seconds(10)) == [["sum": 2]])
            #expect(faults.records.prefix(2).map(\.fault) == [.reset(afterBytes: 12, direction: .downstream), .dribble(chunk: 1)],
                    "\(faults.records)")
            #expect(tinyproxy.connectRequests(to: relay.port) >= 2, "\(tinyproxy.log)")
        }
    }
}

/// Starts `openssl s_server -www` on 127.0.0.1 at a free port (an https server with the throwaway leaf of
/// `certificates`); stop it with `PusherFakeServer.killAndReap(_:)`.
func startOpenSSLWebServer(_ certificates: ChaosCertificates) async throws -> (port: Int, process: Process) {
    let port = try PusherFakeServer.freePort()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")  // env execs openssl: same pid
    process.arguments = ["openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificates.leaf,
                         "-key", certificates.key, "-www"]
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    guard await fakeEventually(seconds: 20, { !process.isRunning || TinyProxy.canConnect(port: port) }),
          process.isRunning else {
        PusherFakeServer.killAndReap(process)
        throw PusherFakeError("openssl s_server did not start on \(port)")
    }
    return (port, process)
}
