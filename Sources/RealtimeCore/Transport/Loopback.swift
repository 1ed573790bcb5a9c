#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one rule for "this host is this machine", used wherever plain `ws://`/`http://` is allowed without
/// asking and wherever TLS is assumed off (Pusher on loopback).
///
/// Loopback means `localhost` and names under `.localhost` (RFC 6761 keeps them on the machine), any
/// IPv4 address in 127.0.0.0/8 written as a dotted quad, `::1`, and `::ffff:127.x.y.z`. Brackets around an
/// IPv6 literal and one trailing dot are ignored. A name that merely starts with `127.` (`127.0.0.1.example`)
/// is not loopback: it is resolved by DNS like any other.
public enum Loopback {
    /// True when `host` always names this machine.
    public static func contains(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix("."), name.count > 1 { name.removeLast() }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }

        var ipv4 = in_addr()
        if inet_pton(AF_INET, name, &ipv4) == 1 {
            return UInt32(bigEndian: ipv4.s_addr) >> 24 == 127
        }
        var ipv6 = in6_addr()
        guard inet_pton(AF_INET6, name, &ipv6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: ipv6) { Array($0) }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        // An IPv4-mapped loopback address.
        return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
    }
}
