import Foundation

/// An HTTP proxy that connections reach their server through with `CONNECT` (RFC 9110 §9.3.6): the
/// client connects to the proxy, asks it for a tunnel to the server's host and port, and then speaks TLS
/// and WebSocket (or HTTP, for Socket.IO long-polling) through the tunnel exactly as it would directly.
/// TLS is end to end: the server's certificate is verified against the server's name, never the proxy's.
///
/// Set it on the transport, which every connection of the session then uses:
///
/// ```swift
/// let proxy = ProxyConfiguration(host: "proxy.corp.example", port: 3128,
///                                credentials: .init(username: "alice", password: "s3cret"))
/// let transport = WebSocketTransport.platformDefault(configuration: .init(proxy: proxy))
/// ```
///
/// Nothing reads the environment unless you ask: ``fromEnvironment(for:environment:)`` applies
/// `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` the way curl does. The credentials are never printed:
/// ``description`` and `dump` show ``Redaction/placeholder`` in their place. In a file that also imports
/// Network.framework (which has a type of the same name), write `Realtime.ProxyConfiguration`.
public struct ProxyConfiguration: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// A user name and password for the proxy, sent as `Proxy-Authorization: Basic …` (RFC 7617) with the
    /// `CONNECT` request. Basic sends them readable to anyone on the path to the proxy (the tunnel's TLS
    /// starts after it), so use them only on a network you trust up to the proxy.
    public struct Credentials: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
        /// The user name; it may not contain a colon (RFC 7617).
        public var username: String
        /// The password.
        public var password: String

        /// - Parameters:
        ///   - username: the user name, without a colon.
        ///   - password: the password.
        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }

        /// ``Redaction/placeholder``: neither the user name nor the password.
        public var description: String { Redaction.placeholder }

        /// A mirror without the secret, so that `dump` prints no more than ``description``.
        public var customMirror: Mirror { Mirror(self, children: ["credentials": Redaction.placeholder]) }
    }

    /// The proxy's host name or IP address (IPv6 without brackets).
    public var host: String
    /// The proxy's TCP port.
    public var port: Int
    /// Sent to the proxy with every `CONNECT` when set.
    public var credentials: Credentials?

    /// - Parameters:
    ///   - host: the proxy's host name or IP address.
    ///   - port: the proxy's port (3128 is the usual one for Squid and tinyproxy, 8080 for many others).
    ///   - credentials: basic credentials for the proxy, if it asks for them.
    public init(host: String, port: Int, credentials: Credentials? = nil) {
        if host.hasPrefix("["), host.hasSuffix("]") {
            self.host = String(host.dropFirst().dropLast())
        } else {
            self.host = host
        }
        self.port = port
        self.credentials = credentials
    }

    /// `proxy host:port`, plus `with credentials <redacted>` when there are some.
    public var description: String {
        "proxy \(authority)" + (credentials == nil ? "" : " with credentials \(Redaction.placeholder)")
    }

    /// A mirror that shows the credentials redacted.
    public var customMirror: Mirror {
        Mirror(self, children: ["host": host, "port": port,
                                "credentials": credentials.map { _ in Redaction.placeholder } as Any])
    }

    /// `host:port`, with an IPv6 host in brackets: the proxy's address as error messages name it.
    package var authority: String { Self.authority(host: host, port: port) }

    /// `host:port`, with an IPv6 host in brackets (the form of a `CONNECT` target and its `Host`).
    package static func authority(host: String, port: Int) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// The value of the `Proxy-Authorization` header, or nil without credentials.
    package var authorizationHeaderValue: String? {
        guard let credentials else { return nil }
        return "Basic " + Data("\(credentials.username):\(credentials.password)".utf8).base64EncodedString()
    }

    /// Throws `.invalidArgument` for a configuration no request can be made with: an empty host, a port out
    /// of range, a user name with a colon, or a line break in any field (it would end the header).
    package func validate() throws(RealtimeError) {
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "@" }) else {
            throw RealtimeError(.invalidArgument, "the proxy host is empty or malformed", context: .init(detail: host))
        }
        guard (1...65535).contains(port) else {
            throw RealtimeError(.invalidArgument, "the proxy port \(port) is out of range")
        }
        if let credentials {
            guard !credentials.username.contains(":") else {
                throw RealtimeError(.invalidArgument, "a proxy user name may not contain a colon (RFC 7617)")
            }
            let fields = credentials.username + credentials.password
            guard !fields.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw RealtimeError(.invalidArgument, "the proxy credentials contain a control character")
            }
        }
    }
}
