@_spi(DialectAuthoring) import RealtimeCore

/// How a Pusher / Bird connection's end is classified: pure functions of the closure and the vendor, kept
/// apart from the machine's state so the policy reads (and is tested) in one place.
extension PusherMachine {
    /// The close-code policy: 4000–4099 refused for good, 4100–4199 back off (at least the vendor's floor),
    /// 4200–4299 reconnect at once, anything else backs off.
    static func classify(_ closure: TransportClosure, vendor: PusherVendor) -> ConnectionEnd {
        switch closure.kind {
        case .failed(let error):
            if error.code == .invalidArgument { return .terminal(error) }
            if error.isLastingHTTPRefusal { return .terminal(error) }
            return .backoff(minimum: .zero)
        case .closedByPeer(nil, _), .livenessTimeout:
            return .backoff(minimum: .zero)
        case .closedByPeer(let code?, let reason), .closedLocally(let code, let reason):
            switch code {
            case 4000..<4100:
                return .terminal(RealtimeError(.connectionRefused,
                                               "\(vendor.displayName) refused the connection (close \(code))"
                                                + (reason.isEmpty ? "" : ": \(reason)"),
                                               context: .init(closeCode: code, detail: reason)))
            case 4100..<4200:
                return .backoff(minimum: vendor.backoffFloor41xx)
            case 4200..<4300:
                return .reconnectImmediately
            default:
                return .backoff(minimum: .zero)
            }
        }
    }

    /// Whether `closure` is a close 4000 "use TLS" that earns one more attempt over `wss` (pusher-js switches
    /// to TLS): only for a vendor that does so, over plain `ws`, and once per session (a 4000 after the
    /// switch stays final).
    static func retriesOverTLS(_ closure: TransportClosure, vendor: PusherVendor, usedTLS: Bool,
                               switchedBefore: Bool) -> Bool {
        guard case .closedByPeer(4000?, _) = closure.kind else { return false }
        return vendor.retriesOverTLSOn4000 && !usedTLS && !switchedBefore
    }
}
