import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``HTTPClient`` over one ephemeral `URLSession` (no cookies, cache or credentials kept), verifying
/// `https` servers with an ``HTTPTrustPolicy``. ``finish()`` invalidates the session once its requests end.
package final class URLSessionHTTPClient: HTTPClient {
    private let session: URLSession
    private let trust: HTTPTrustPolicy
    private let trustDelegate: HTTPTrustDelegate?
    /// Set by `finish()`; guards task creation, which an invalidated session does not allow.
    private let finished = Locked(false)

    /// - Parameters:
    ///   - trust: how `https` servers are verified.
    ///   - maximumConnectionsPerHost: the session's limit; nil keeps the platform's.
    ///   - configure: changes the session's configuration before the session is made (a proxy route, which
    ///     only Network.framework's `proxyConfigurations` can express).
    package init(trust: HTTPTrustPolicy = .platformDefault, maximumConnectionsPerHost: Int? = nil,
                 configure: (URLSessionConfiguration) -> Void = { _ in }) {
        self.trust = trust
        var delegate: HTTPTrustDelegate?
        #if canImport(Security)
        if case .evaluator(let evaluator) = trust { delegate = HTTPTrustDelegate(evaluator) }
        #endif
        trustDelegate = delegate
        let configuration = URLSessionConfiguration.ephemeral
        if let maximumConnectionsPerHost { configuration.httpMaximumConnectionsPerHost = maximumConnectionsPerHost }
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configure(configuration)
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    package func refusal(for url: URL) -> RealtimeError? {
        guard case .refusesHTTPS = trust, url.scheme?.lowercased() == "https" else { return nil }
        return RealtimeError(.unsupported, "URLSession cannot apply the transport's TLS pins or roots",
                             context: .init(detail: url.host))
    }

    package func start(_ request: HTTPRequest,
                       completion: @escaping @Sendable (Result<HTTPResponse, RealtimeError>) -> Void) {
        if let refusal = refusal(for: request.url) {
            completion(.failure(refusal))
            return
        }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = request.timeout.seconds
        for header in request.headers { urlRequest.addValue(header.value, forHTTPHeaderField: header.name) }
        urlRequest.httpBody = request.body
        let trustDelegate = self.trustDelegate
        let started = finished.withLock { finished -> Bool in
            guard !finished else { return false }
            session.dataTask(with: urlRequest) { data, response, error in
                completion(Self.result(data: data, response: response, error: error, trustDelegate: trustDelegate))
            }.resume()
            return true
        }
        if !started {
            completion(.failure(RealtimeError(.transportFailed, "the HTTP client is finished",
                                              context: .init(detail: request.url.host))))
        }
    }

    package func finish() {
        finished.withLock { finished in
            guard !finished else { return }
            finished = true
            session.finishTasksAndInvalidate()
        }
    }

    private static func result(data: Data?, response: URLResponse?, error: (any Error)?,
                               trustDelegate: HTTPTrustDelegate?) -> Result<HTTPResponse, RealtimeError> {
        if error != nil, let refusal = trustDelegate?.refusal.withLock({ $0 }) {
            return .failure(refusal)  // the delegate's reason, not URLSession's "cancelled"
        }
        if let error {
            let nsError = error as NSError
            let code: RealtimeError.Code = nsError.code == NSURLErrorTimedOut ? .timedOut : .transportFailed
            return .failure(RealtimeError(code, error.localizedDescription,
                                          context: .init(detail: "\(nsError.domain) \(nsError.code)")))
        }
        let http = response as? HTTPURLResponse
        var headers: [HTTPHeader] = []
        for (name, value) in http?.allHeaderFields ?? [:] {
            headers.append(HTTPHeader(String(describing: name).lowercased(), String(describing: value)))
        }
        headers.sort { $0.name < $1.name }
        return .success(HTTPResponse(status: http?.statusCode ?? 0, headers: headers, body: data ?? Data()))
    }
}
