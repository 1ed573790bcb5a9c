import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) @testable import RealtimeSocketIO
import RealtimeTesting
import Testing

/// A polling connection over a scripted HTTP client: every request it builds, and every answer fed back.
private struct PollingConnectionHarness {
    let client: ScriptedHTTPClient
    let events = Locked<[TransportEvent]>([])
    let connection: any TransportConnection

    init(_ request: ConnectionRequest, client: ScriptedHTTPClient = ScriptedHTTPClient()) {
        self.client = client
        let events = self.events
        connection = EngineIOPollingTransport(upgradeTransport: nil) { client }.open(request) { event in
            events.withLock { $0.append(event) }
        }
    }

    static let open = TransportFrame.text(#"0{"sid":"S1","upgrades":[],"pingInterval":1000,"pingTimeout":2000}"#)

    func answer(_ index: Int, status: Int = 200, _ frames: [TransportFrame]) {
        client.answer(index, with: .success(HTTPResponse(status: status, body: PollingPayload.encode(frames).body)))
    }
}

@Suite("Socket.IO polling transport over an HTTP client")
struct PollingTransportTests {
    static let url = URL(string: "http://127.0.0.1:3000/socket.io/?EIO=4&transport=polling")!

    @Test("GETs carry the session's headers (repeats kept) and its Origin alone, with the machine's timeout")
    func getRequests() {
        let request = ConnectionRequest(url: Self.url,
                                        headers: [HTTPHeader("Authorization", "Bearer t"), HTTPHeader("X-Twice", "1"),
                                                  HTTPHeader("X-Twice", "2"), HTTPHeader("origin", "http://spoof")],
                                        origin: "http://app.example", connectTimeout: .seconds(7))
        let harness = PollingConnectionHarness(request)
        guard let handshake = harness.client.requests.first else {
            Issue.record("no handshake GET")
            return
        }
        #expect(handshake.method == "GET")
        #expect(handshake.body == nil)
        #expect(handshake.timeout == .seconds(7))
        #expect(handshake.url.absoluteString.hasPrefix("http://127.0.0.1:3000/socket.io/?EIO=4&transport=polling&t="))
        #expect(handshake.headers == [HTTPHeader("Authorization", "Bearer t"), HTTPHeader("X-Twice", "1"),
                                      HTTPHeader("X-Twice", "2"), HTTPHeader("Origin", "http://app.example")])
        harness.answer(0, [PollingConnectionHarness.open])
        guard case .opened? = harness.events.withLock({ $0.first }) else {
            Issue.record("expected opened")
            return
        }
        // The long poll waits pingInterval + pingTimeout + 5 s, and names the sid.
        let poll = harness.client.requests[1]
        #expect(poll.timeout == .seconds(8))
        #expect(poll.url.query?.contains("sid=S1") == true)
    }

    @Test("POSTs carry the payload with its content type, replacing the session's; the close POST goes out")
    func postRequests() {
        let request = ConnectionRequest(url: Self.url, headers: [HTTPHeader("Content-Type", "application/json")],
                                        connectTimeout: .milliseconds(100))
        let harness = PollingConnectionHarness(request)
        #expect(harness.client.requests.first?.timeout == .seconds(1))  // never under a second
        harness.answer(0, [PollingConnectionHarness.open])
        harness.connection.send([.text("4hello")])
        let post = harness.client.requests[2]
        #expect(post.method == "POST")
        #expect(post.body == PollingPayload.encode([.text("4hello")]).body)
        #expect(post.headers == [HTTPHeader("Content-Type", "text/plain;charset=UTF-8")])
        harness.client.answer(2, with: .success(HTTPResponse(status: 200, body: Data("ok".utf8))))
        harness.connection.send([.binary(Data([1, 2]))])
        #expect(harness.client.requests[3].headers.last == HTTPHeader("Content-Type", "application/octet-stream"))
        harness.client.answer(3, with: .success(HTTPResponse(status: 200, body: Data("ok".utf8))))
        #expect(!harness.client.isFinished)
        harness.connection.close(code: 1000, reason: "bye")
        #expect(harness.client.requests.last?.body == PollingPayload.encode([.text("1")]).body)
        #expect(!harness.client.isFinished, "the client was torn down before the close POST was answered")
        harness.client.answer(harness.client.requests.count - 1,
                              with: .success(HTTPResponse(status: 200, body: Data("ok".utf8))))
        #expect(harness.client.isFinished)
        guard case .closed(let closure)? = harness.events.withLock({ $0.last }),
              case .closedLocally(1000, "bye") = closure.kind else {
            Issue.record("expected closed locally")
            return
        }
    }

    @Test("a connection let go of while its close POST is in flight still finishes its HTTP client")
    func releasedWhileClosing() {
        let client = ScriptedHTTPClient()
        var connection: (any TransportConnection)? = EngineIOPollingTransport(upgradeTransport: nil) { client }
            .open(ConnectionRequest(url: Self.url)) { _ in }
        client.answer(0, with: .success(HTTPResponse(status: 200,
                                                     body: PollingPayload.encode([PollingConnectionHarness.open]).body)))
        connection?.close(code: 1000, reason: "bye")
        #expect(client.requests.last?.body == PollingPayload.encode([.text("1")]).body)
        #expect(!client.isFinished)
        connection = nil
        #expect(client.isFinished)
    }

    @Test("a close POST that gets no answer ends the connection at the close timeout and finishes the client")
    func unansweredCloseTimesOut() async {
        let client = ScriptedHTTPClient()
        let (closures, continuation) = AsyncStream.makeStream(of: TransportClosure.self)
        let connection = EngineIOPollingTransport(upgradeTransport: nil, closeTimeout: .milliseconds(20)) { client }
            .open(ConnectionRequest(url: Self.url)) { event in
                if case .closed(let closure) = event { continuation.yield(closure) }
            }
        client.answer(0, with: .success(HTTPResponse(status: 200,
                                                     body: PollingPayload.encode([PollingConnectionHarness.open]).body)))
        connection.close(code: 1000, reason: "bye")
        #expect(client.requests.last?.body == PollingPayload.encode([.text("1")]).body)
        // Bounded so that a missing timer fails the test instead of hanging it.
        let closure = await withTaskGroup(of: TransportClosure?.self) { group in
            group.addTask { await closures.first { _ in true } }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        #expect(closure?.kind == .closedLocally(code: 1000, reason: "bye"))
        #expect(client.isFinished)
        withExtendedLifetime(connection) {}
    }

    @Test("a request that gets no answer closes the connection with the request named; a policy refusal stays as it is")
    func failures() {
        let harness = PollingConnectionHarness(ConnectionRequest(url: Self.url))
        harness.client.answer(0, with: .failure(RealtimeError(.timedOut, "The request timed out.",
                                                              context: .init(detail: "NSURLErrorDomain -1001"))))
        guard case .closed(let closure)? = harness.events.withLock({ $0.last }), case .failed(let error) = closure.kind else {
            Issue.record("expected a failure")
            return
        }
        #expect(closure.duringOpen)
        #expect(error == RealtimeError(.timedOut, "polling GET failed: The request timed out.",
                                       context: .init(detail: "NSURLErrorDomain -1001")))
        #expect(harness.client.isFinished)

        let refused = PollingConnectionHarness(ConnectionRequest(url: Self.url))
        let policy = RealtimeError(.tlsFailed, "TLS handshake failed: the server certificate could not be verified")
        refused.client.answer(0, with: .failure(policy))
        guard case .closed(let refusal)? = refused.events.withLock({ $0.last }), case .failed(policy) = refusal.kind else {
            Issue.record("expected the policy's own error")
            return
        }
    }

    @Test("a client that refuses the URL fails the connection before any request, naming the way out")
    func refusedBeforeAnyRequest() {
        let client = ScriptedHTTPClient(refusedScheme: "https")
        let url = URL(string: "https://chat.example.com/socket.io/?EIO=4&transport=polling")!
        let harness = PollingConnectionHarness(ConnectionRequest(url: url), client: client)
        #expect(client.requests.isEmpty)
        #expect(client.isFinished)
        guard case .closed(let closure)? = harness.events.withLock({ $0.first }), case .failed(let error) = closure.kind else {
            Issue.record("expected an immediate failure")
            return
        }
        #expect(closure.duringOpen)
        #expect(error.code == .unsupported)
        #expect(error.message.contains("transports: [.websocket]"))
        #expect(error.context.detail == "chat.example.com")
    }
}
