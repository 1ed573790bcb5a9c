import Foundation
import RealtimeCore

/// An ``HTTPClient`` with no network: it keeps every request, and answers it with `answering`'s result at
/// once or, without `answering`, when the test calls ``answer(_:with:)`` (on the answering thread, before
/// that returns), so tests that build requests and read answers stay synchronous.
package final class ScriptedHTTPClient: HTTPClient {
    package typealias Completion = @Sendable (Result<HTTPResponse, RealtimeError>) -> Void

    private struct State {
        var requests: [HTTPRequest] = []
        var waiting: [Int: Completion] = [:]
        var isFinished = false
    }

    private let state = Locked(State())
    private let refusedScheme: String?
    private let answering: (@Sendable (HTTPRequest) -> Result<HTTPResponse, RealtimeError>)?

    /// - Parameters:
    ///   - refusedScheme: a URL scheme (`https`) whose requests ``refusal(for:)`` refuses, as a client with
    ///     a TLS policy it cannot apply does.
    ///   - answering: the answer to each request, given as it starts; nil leaves requests waiting.
    package init(refusedScheme: String? = nil,
                 answering: (@Sendable (HTTPRequest) -> Result<HTTPResponse, RealtimeError>)? = nil) {
        self.refusedScheme = refusedScheme
        self.answering = answering
    }

    /// Every request started so far, oldest first.
    package var requests: [HTTPRequest] { state.withLock { $0.requests } }

    /// The indices in ``requests`` of the requests not answered yet.
    package var unanswered: [Int] { state.withLock { $0.waiting.keys.sorted() } }

    /// Whether ``finish()`` was called.
    package var isFinished: Bool { state.withLock { $0.isFinished } }

    package func start(_ request: HTTPRequest, completion: @escaping Completion) {
        state.withLock { state in
            if answering == nil { state.waiting[state.requests.count] = completion }
            state.requests.append(request)
        }
        if let answering { completion(answering(request)) }
    }

    package func refusal(for url: URL) -> RealtimeError? {
        guard let refusedScheme, url.scheme?.lowercased() == refusedScheme else { return nil }
        return RealtimeError(.unsupported, "refused by the scripted client", context: .init(detail: url.host))
    }

    package func finish() {
        state.withLock { $0.isFinished = true }
    }

    /// Answers the request at `index` of ``requests``; false when it is unknown or answered already.
    @discardableResult
    package func answer(_ index: Int, with result: Result<HTTPResponse, RealtimeError>) -> Bool {
        guard let completion = state.withLock({ $0.waiting.removeValue(forKey: index) }) else { return false }
        completion(result)
        return true
    }
}
