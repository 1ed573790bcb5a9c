import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Security)
import Security
#endif

/// Answers `https` server-trust challenges of a ``URLSessionHTTPClient``'s session with the session
/// transport's own trust policy, so HTTP reaches exactly the servers the transport may reach; the reason
/// for a refusal is kept for the request that fails because of it. Apple platforms only: elsewhere the
/// client has no delegate.
final class HTTPTrustDelegate: NSObject, URLSessionDelegate, Sendable {
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
