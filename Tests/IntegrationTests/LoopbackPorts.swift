#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Ports for peer processes that bind 127.0.0.1 themselves (puma, pusher-fake, tinyproxy, openssl).
///
/// A port asked of the kernel with `bind(0)` comes from the ephemeral range, and is free again once the probe
/// closes: until the peer binds it, any outgoing connection of the parallel tests may be given it as its local
/// port (CI saw puma fail with EADDRINUSE that way). Ports are therefore drawn below the ephemeral range, where
/// the kernel never hands out ports on its own, and checked free with a bind.
enum LoopbackPorts {
    /// A port on 127.0.0.1 that nothing was bound to a moment ago, outside the kernel's ephemeral range.
    static func pick() throws -> UInt16 {
        let below = ephemeralRangeStart()
        if below > 20_001 {
            for _ in 0..<200 {
                let candidate = UInt16.random(in: 20_000..<below)
                if canBind(candidate) { return candidate }
            }
        }
        // A system whose ephemeral range leaves no room below it: fall back to the kernel's choice.
        guard let port = kernelChoice() else { throw LoopbackPortError("could not find a free port on 127.0.0.1") }
        return port
    }

    /// The first port of `net.ipv4.ip_local_port_range` (Linux), else IANA's 49152.
    private static func ephemeralRangeStart() -> UInt16 {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
              let first = text.split(whereSeparator: \.isWhitespace).first, let low = UInt16(first) else {
            return 49_152
        }
        return low
    }

    private static func canBind(_ port: UInt16) -> Bool { bound(port) != nil }

    private static func kernelChoice() -> UInt16? { bound(0) }

    /// Binds a probe socket to 127.0.0.1:`port` and returns the port it got, or nil.
    private static func bound(_ port: UInt16) -> UInt16? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return ok ? UInt16(bigEndian: address.sin_port) : nil
    }
}

struct LoopbackPortError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
