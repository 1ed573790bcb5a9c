/// How an ``HTTPClient`` verifies `https` servers: as the session's transport does, so that HTTP reaches
/// exactly the servers the transport may reach.
package enum HTTPTrustPolicy: Sendable {
    /// The platform's own evaluation: the system roots and the host name.
    case platformDefault
    /// The transport verifies servers its own way (extra roots, pins, no system roots) and cannot lend that
    /// policy to `URLSession` (Linux): `https` is refused rather than verified around it.
    case refusesHTTPS
    #if canImport(Security)
    /// The transport's own evaluation, applied to `URLSession`'s server-trust challenges (Apple platforms).
    case evaluator(any ServerTrustEvaluating)
    #endif

    /// The policy `transport` verifies servers with: its own evaluation where it has a policy of its own
    /// and can judge a `SecTrust`, a refusal where it has one and cannot, else the platform's.
    package init(of transport: any RealtimeTransport) {
        guard transport.customizesTLSTrust else {
            self = .platformDefault
            return
        }
        #if canImport(Security)
        if let evaluator = transport as? any ServerTrustEvaluating {
            self = .evaluator(evaluator)
            return
        }
        #endif
        self = .refusesHTTPS
    }
}
