import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import RealtimeWebSocket
import Testing

/// An in-memory transport that makes HTTP clients as the package's own transports do (through their
/// proxy): every client it makes answers as the app's auth backend would, signing with ``FakePusher``'s
/// secret, and the trust each was asked for is recorded.
final class HTTPProvidingTransport: HTTPClientProviding {
    let base = InMemoryTransport(autoAccept: false)
    private let made = Locked<[(trust: HTTPClientTrust, client: ScriptedHTTPClient)]>([])

    init() {
        let server = FakePusher()
        base.onOpen { server.attach($0) }
    }

    /// The clients made so far, with the trust asked for each.
    var clients: [(trust: HTTPClientTrust, client: ScriptedHTTPClient)] { made.withLock { $0 } }

    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        base.open(request, handler: handler)
    }

    func makeHTTPClient(maximumConnectionsPerHost: Int?, trust: HTTPClientTrust) -> any HTTPClient {
        let client = ScriptedHTTPClient { .success(Self.backendAnswer($0)) }
        made.withLock { $0.append((trust, client)) }
        return client
    }

    /// The backend: signs the form's `socket_id` and `channel_name`, or a sign-in without a channel.
    static func backendAnswer(_ request: HTTPRequest) -> HTTPResponse {
        var form = URLComponents()
        form.percentEncodedQuery = String(decoding: request.body ?? Data(), as: UTF8.self)
        let fields = Dictionary((form.queryItems ?? []).map { ($0.name, $0.value ?? "") }) { $1 }
        let userData = #"{"id":"7"}"#
        let auth = PusherAuthRequest(connectionID: fields["socket_id"] ?? "", channel: fields["channel_name"],
                                     vendor: .pusher)
        guard let signed = try? PusherAuth.sign(auth, key: FakePusher.key, secret: FakePusher.secret,
                                                presenceData: nil, userData: userData) else {
            return HTTPResponse(status: 500, body: Data())
        }
        var answer: [String: JSONValue] = ["auth": .string(signed.auth)]
        if auth.channel == nil { answer["user_data"] = .string(userData) }
        return HTTPResponse(status: 200, body: Data(JSONValue.object(answer).serialized().utf8))
    }
}

@Suite("Pusher auth endpoint: the session transport's route")
struct PusherAuthRouteTests {
    @Test("channel auth and sign-in use clients the session's transport makes, asked for the platform's trust")
    func providedClients() async throws {
        let transport = HTTPProvidingTransport()
        let backend = URL(string: "https://backend.example/pusher/auth")!
        let users = URL(string: "https://backend.example/pusher/user-auth")!
        let session = RealtimeSession(dialect: PusherDialect.pusher(key: FakePusher.key, auth: .endpoint(backend, userURL: users),
                                                       host: "127.0.0.1", port: 6001),
                                      transport: transport, options: SessionOptions(delivery: .inline))
        defer { session.disconnect() }
        let room = session.channel("private-room")
        try await session.connect()
        _ = try await room.subscribed()
        #expect(try await session.signIn().id == "7")
        let clients = transport.clients
        #expect(clients.map(\.trust) == [.platformDefault, .platformDefault])
        #expect(clients.map { $0.client.requests.map(\.url) } == [[backend], [users]])
        #expect(clients.allSatisfy { $0.client.isFinished })
    }

    @Test("without a transport that makes HTTP clients, or without a proxy, the endpoint goes directly over URLSession")
    func directOtherwise() {
        #expect(DialectWorkContext().makeBackendHTTPClient() is URLSessionHTTPClient)
        #expect(DialectWorkContext(transport: InMemoryTransport()).makeBackendHTTPClient() is URLSessionHTTPClient)
        #expect(DialectWorkContext(transport: WebSocketTransport()).makeBackendHTTPClient() is URLSessionHTTPClient)
        let proxied = WebSocketTransport(configuration: .init(proxy: ProxyConfiguration(host: "127.0.0.1", port: 3128)))
        #expect(!(DialectWorkContext(transport: proxied).makeBackendHTTPClient() is URLSessionHTTPClient))
    }
}
