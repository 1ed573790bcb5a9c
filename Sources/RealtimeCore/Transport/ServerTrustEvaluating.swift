#if canImport(Security)
import Security

/// A transport whose TLS trust policy (extra roots, public-key pins, no system roots) can judge a server
/// trust met outside it: Socket.IO's long-polling over `URLSession` asks it, through a session delegate,
/// instead of letting `URLSession`'s default evaluation bypass that policy. Apple platforms only.
public protocol ServerTrustEvaluating: Sendable {
    /// Nil when `trust` (which carries the host name to check) satisfies the policy, else why not. May
    /// block while it evaluates: never call it on the main thread.
    func evaluateServerTrust(_ trust: SecTrust) -> RealtimeError?
}
#endif
