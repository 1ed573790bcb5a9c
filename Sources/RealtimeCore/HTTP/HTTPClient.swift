import Foundation

/// One HTTP request for an ``HTTPClient``.
package struct HTTPRequest: Sendable, Hashable {
    /// `GET`, `POST`, …
    package var method: String
    package var url: URL
    /// Sent in order; a name given twice is sent with both values (`setValue(_:forName:)` keeps one).
    package var headers: [HTTPHeader]
    package var body: Data?
    /// How long the request may wait for the server between bytes.
    package var timeout: Duration

    package init(method: String, url: URL, headers: [HTTPHeader] = [], body: Data? = nil,
                 timeout: Duration = .seconds(20)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// What the server answered, whatever the status.
package struct HTTPResponse: Sendable, Hashable {
    /// The status code; 0 when the answer was not HTTP.
    package var status: Int
    /// Names lower-cased.
    package var headers: [HTTPHeader]
    package var body: Data

    package init(status: Int, headers: [HTTPHeader] = [], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// The package's one way to make plain HTTP requests (Engine.IO long-polling, the Pusher auth endpoint),
/// so that every request goes through one implementation and one TLS policy (``URLSessionHTTPClient``),
/// and the code that builds requests can be tested with a fake.
package protocol HTTPClient: Sendable {
    /// Starts `request`. `completion` runs exactly once, on any thread, possibly before `start` returns: with
    /// the response whatever its status; `.timedOut` or `.transportFailed` when no response came (the
    /// platform's description as the message, its error domain and code as the detail); or the client's
    /// TLS policy's own error when it refused the server.
    func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, RealtimeError>) -> Void)

    /// Why this client will not send requests to `url` at all (its TLS policy), or nil; lets a caller fail
    /// before it starts anything.
    func refusal(for url: URL) -> RealtimeError?

    /// Lets the started requests finish and releases the client's resources; nothing starts after it.
    func finish()
}

/// A transport that makes the HTTP clients for requests that go beside its connections (Engine.IO
/// long-polling, the Pusher auth endpoint), so that they take the same route as its connections (its proxy).
package protocol HTTPClientProviding: RealtimeTransport {
    /// A new client on the transport's route, verifying `https` servers as `trust` says;
    /// `maximumConnectionsPerHost` bounds the requests it runs at once to one server (nil: the platform's).
    func makeHTTPClient(maximumConnectionsPerHost: Int?, trust: HTTPClientTrust) -> any HTTPClient
}

/// Whose verification an ``HTTPClientProviding`` client applies to `https` servers.
package enum HTTPClientTrust: Sendable, Hashable {
    /// The transport's own (its extra roots and pins): for the servers its connections go to (long-polling).
    case transport
    /// The platform's default (system roots, the server's name): for other servers, such as the app's own
    /// auth backend, which the transport's pins and roots do not describe.
    case platformDefault

    /// The ``HTTPTrustPolicy`` a `URLSession` client of `transport` applies for this trust.
    package func policy(of transport: any RealtimeTransport) -> HTTPTrustPolicy {
        switch self {
        case .transport: HTTPTrustPolicy(of: transport)
        case .platformDefault: .platformDefault
        }
    }
}

/// A client that fails every request with one error: for a route the platform cannot take (a proxy
/// Network.framework cannot apply before macOS 14), so that the failure is typed and not a bypass.
package struct FailingHTTPClient: HTTPClient {
    package let error: RealtimeError

    package init(error: RealtimeError) { self.error = error }

    package func start(_ request: HTTPRequest,
                       completion: @escaping @Sendable (Result<HTTPResponse, RealtimeError>) -> Void) {
        completion(.failure(error))
    }
}

extension HTTPClient {
    package func refusal(for url: URL) -> RealtimeError? { nil }
    package func finish() {}

    /// `start(_:completion:)` for async callers.
    package func send(_ request: HTTPRequest) async throws(RealtimeError) -> HTTPResponse {
        let result = await withCheckedContinuation { continuation in
            start(request) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }
}

extension [HTTPHeader] {
    /// Sets the header `name` to `value` alone: drops every header of that name (HTTP names compare
    /// case-insensitively) and appends it, as `URLRequest.setValue(_:forHTTPHeaderField:)` does.
    package mutating func setValue(_ value: String, forName name: String) {
        let lowered = name.lowercased()
        removeAll { $0.name.lowercased() == lowered }
        append(HTTPHeader(name, value))
    }
}
