#if canImport(COpenSSL)
import COpenSSL
import RealtimeCore

/// Typed `.tlsFailed` errors with the OpenSSL reason.
enum TLSErrors {
    /// Pops OpenSSL's error queue into a `.tlsFailed` error.
    static func openSSL(_ step: String) -> RealtimeError {
        let reason = queuedReason()
        return RealtimeError(.tlsFailed, "TLS setup failed: \(step)", context: .init(detail: reason ?? step))
    }

    static func queuedReason() -> String? {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reasons.append(SocketIO.string(fromCString: text))
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    /// A handshake failure, explained from the certificate verification result when there is one.
    static func handshakeFailed(ssl: OpaquePointer, host: String?) -> RealtimeError {
        let verify = SSL_get_verify_result(ssl)
        let reason = queuedReason()
        guard verify != X509_V_OK else {
            return RealtimeError(.tlsFailed, "TLS handshake failed",
                                 context: .init(detail: reason ?? "the peer closed or sent an alert"))
        }
        let text = SocketIO.string(fromCString: X509_verify_cert_error_string(verify))
        let name = host.map { " \($0)" } ?? ""
        let message: String
        switch Int32(verify) {
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
             X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
             X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            message = "the server certificate was issued by an unknown certificate authority"
        case X509_V_ERR_HOSTNAME_MISMATCH:
            message = "the server certificate does not match the host name\(name)"
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            message = "the server certificate does not match the IP address\(name)"
        case X509_V_ERR_CERT_HAS_EXPIRED:
            message = "the server certificate has expired"
        case X509_V_ERR_CERT_NOT_YET_VALID:
            message = "the server certificate is not yet valid"
        case X509_V_ERR_CERT_REVOKED:
            message = "the server certificate was revoked"
        default:
            message = "the server certificate could not be verified"
        }
        return RealtimeError(.tlsFailed, "TLS handshake failed: \(message)",
                             context: .init(detail: "X509 verify result \(verify): \(text)"))
    }
}
#endif
