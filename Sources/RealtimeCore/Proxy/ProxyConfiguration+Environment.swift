import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ProxyConfiguration {
    /// The proxy the environment names for `url`, or nil when it names none for it. Read only when you call
    /// this; the package never reads proxy variables on its own.
    ///
    /// - `wss`/`https` URLs use `https_proxy`, else `HTTPS_PROXY`. `ws`/`http` URLs use `http_proxy`, else
    ///   `HTTP_PROXY`, except when `REQUEST_METHOD` is set: in a CGI program `HTTP_PROXY` can come from a
    ///   request's `Proxy:` header ("httpoxy"), so it is not trusted there. Both are tunnelled with `CONNECT`.
    ///   `ALL_PROXY` and the other protocols' variables are not read.
    /// - A value is `http://[user:password@]host[:port]` (percent-encoded credentials) or `host[:port]`;
    ///   the port defaults to 80. An `https://` (TLS to the proxy itself) or `socks` proxy throws
    ///   `.unsupported`; a value that is not a URL throws `.invalidArgument`. An empty value counts as unset.
    /// - `no_proxy`, else `NO_PROXY`, lists hosts reached directly, separated by commas or spaces: `*` (every
    ///   host); a name, which also matches the names under it (`example.com` and `.example.com` both match
    ///   `example.com` and `api.example.com`, as in curl; a leading `*.` is read as `.`); an IP address
    ///   (compared as an address, so `::1` matches `[0::1]`); a CIDR range (`10.0.0.0/8`, `fd00::/8`); any of
    ///   these with `:port` to match that port only (`[::1]:8080` for IPv6). Case and one trailing dot are
    ///   ignored.
    /// - Loopback hosts (``Loopback``) are always reached directly: a proxy elsewhere cannot reach this
    ///   machine's loopback.
    ///
    /// - Parameters:
    ///   - url: the server the session connects to (`ws`, `wss`, `http` or `https`).
    ///   - environment: the variables to read; the process's by default.
    public static func fromEnvironment(
        for url: URL, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(RealtimeError) -> ProxyConfiguration? {
        guard let scheme = url.scheme?.lowercased(), ["ws", "wss", "http", "https"].contains(scheme) else {
            throw RealtimeError(.invalidArgument, "a proxy is chosen for ws, wss, http or https URLs only",
                                context: .init(detail: url.absoluteString))
        }
        guard var host = url.host?.lowercased(), !host.isEmpty else {
            throw RealtimeError(.invalidArgument, "the URL \(url.absoluteString) has no host")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix("."), host.count > 1 { host.removeLast() }
        let secure = scheme == "wss" || scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        if Loopback.contains(host: host) { return nil }

        func variable(_ name: String) -> String? {
            guard let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }
        let value = secure
            ? variable("https_proxy") ?? variable("HTTPS_PROXY")
            : variable("http_proxy") ?? (environment["REQUEST_METHOD"] == nil ? variable("HTTP_PROXY") : nil)
        guard let value else { return nil }
        if let noProxy = variable("no_proxy") ?? variable("NO_PROXY"),
           NoProxyList(noProxy).matches(host: host, port: port) {
            return nil
        }
        return try parse(value)
    }

    /// A proxy variable's value: `[http://][user:password@]host[:port]`.
    static func parse(_ value: String) throws(RealtimeError) -> ProxyConfiguration {
        let text = value.contains("://") ? value : "http://" + value
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              var host = components.host, !host.isEmpty else {
            throw RealtimeError(.invalidArgument, "the proxy variable is not a URL",
                                context: .init(detail: Self.withoutUserInfo(value)))
        }
        guard scheme == "http" else {
            throw RealtimeError(.unsupported,
                                "only http:// proxies (HTTP CONNECT) are supported, not \(scheme)://",
                                context: .init(detail: Self.withoutUserInfo(value)))
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var credentials: Credentials?
        if let user = components.user, !user.isEmpty {
            credentials = Credentials(username: user, password: components.password ?? "")
        }
        let proxy = ProxyConfiguration(host: host, port: components.port ?? 80, credentials: credentials)
        try proxy.validate()
        return proxy
    }

    /// `value` with anything before an `@` in its authority replaced, for error messages.
    private static func withoutUserInfo(_ value: String) -> String {
        guard let at = value.lastIndex(of: "@") else { return value }
        let start = value.range(of: "://")?.upperBound ?? value.startIndex
        guard start <= at else { return value }
        return String(value[..<start]) + Redaction.placeholder + String(value[at...])
    }
}

/// A parsed `NO_PROXY` list.
struct NoProxyList {
    private enum Pattern {
        case everything
        /// A name and the names under it.
        case domain(String)
        case address([UInt8])
        case range(network: [UInt8], prefixLength: Int)
    }

    private var entries: [(pattern: Pattern, port: Int?)] = []

    init(_ text: String) {
        let items = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map { $0.lowercased() }
        for item in items {
            if item == "*" {
                entries.append((.everything, nil))
                continue
            }
            let (name, port) = Self.splitPort(item)
            if let slash = name.firstIndex(of: "/") {
                if let address = Self.address(String(name[..<slash])), let length = Int(name[name.index(after: slash)...]),
                   (0...address.count * 8).contains(length) {
                    entries.append((.range(network: address, prefixLength: length), port))
                }
                continue
            }
            if let address = Self.address(name) {
                entries.append((.address(address), port))
                continue
            }
            var domain = Substring(name)
            if domain.hasPrefix("*.") { domain = domain.dropFirst(2) }
            while domain.hasPrefix(".") { domain = domain.dropFirst() }
            if domain.hasSuffix(".") { domain = domain.dropLast() }
            if !domain.isEmpty { entries.append((.domain(String(domain)), port)) }
        }
    }

    /// True when `host` (lower-case, without brackets or a trailing dot) at `port` is to be reached directly.
    func matches(host: String, port: Int) -> Bool {
        let address = Self.address(host)
        return entries.contains { entry in
            if let wanted = entry.port, wanted != port { return false }
            switch entry.pattern {
            case .everything:
                return true
            case .domain(let domain):
                return address == nil && (host == domain || host.hasSuffix("." + domain))
            case .address(let bytes):
                return address == bytes
            case .range(let network, let prefixLength):
                guard let address, address.count == network.count else { return false }
                return Self.prefix(of: address, length: prefixLength) == Self.prefix(of: network, length: prefixLength)
            }
        }
    }

    /// `name:port`, `[v6]:port`, `[v6]` or a bare name or address (an IPv6 address has several colons).
    private static func splitPort(_ item: String) -> (String, Int?) {
        if item.hasPrefix("["), let close = item.firstIndex(of: "]") {
            let name = String(item[item.index(after: item.startIndex)..<close])
            let rest = item[item.index(after: close)...]
            return (name, rest.hasPrefix(":") ? Int(rest.dropFirst()) : nil)
        }
        let colons = item.filter { $0 == ":" }.count
        guard colons == 1, let colon = item.firstIndex(of: ":"), let port = Int(item[item.index(after: colon)...]) else {
            return (item, nil)
        }
        return (String(item[..<colon]), port)
    }

    /// The bytes of an IPv4 or IPv6 literal, or nil for a name.
    static func address(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }

    private static func prefix(of bytes: [UInt8], length: Int) -> [UInt8] {
        var result = Array(bytes.prefix((length + 7) / 8))
        if length % 8 != 0, !result.isEmpty { result[result.count - 1] &= UInt8(0xFF << (8 - length % 8) & 0xFF) }
        return result
    }
}
