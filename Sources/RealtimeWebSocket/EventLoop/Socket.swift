#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import RealtimeCore

/// Typed errors for socket-level failures.
enum SocketError {
    /// A system call failed: `.transportFailed` saying the call and the errno text, with errno's name as
    /// detail (`bind 127.0.0.1:3000 failed: Address already in use; EADDRINUSE`).
    static func posix(_ call: String, _ code: Int32) -> RealtimeError {
        RealtimeError(.transportFailed, "\(call) failed: \(SocketIO.errorText(code))",
                      context: .init(detail: SocketIO.errorName(code)))
    }

    static func resolutionFailed(host: String, status: Int32) -> RealtimeError {
        let text = SocketIO.string(fromCString: gai_strerror(status))
        return RealtimeError(.transportFailed, "could not resolve host \(host): \(text)",
                             context: .init(detail: "dns: \(text)"))
    }

    static func connectFailed(address: SocketAddress, code: Int32) -> RealtimeError {
        if code == ECONNREFUSED {
            return RealtimeError(.transportFailed, "connection refused by \(address)",
                                 context: .init(detail: "connect: ECONNREFUSED"))
        }
        return RealtimeError(.transportFailed, "could not connect to \(address): \(SocketIO.errorText(code))",
                             context: .init(detail: "connect: \(SocketIO.errorName(code))"))
    }
}

/// An IPv4 or IPv6 socket address.
package struct SocketAddress: Sendable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    package var family: Int32 { Int32(storage.ss_family) }

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// Parses a numeric IPv4 or IPv6 address; nil for names.
    init?(numericHost host: String, port: Int) {
        var storage = sockaddr_storage()
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            address.sin_addr = v4
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: address) { target.copyMemory(from: $0) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        } else if inet_pton(AF_INET6, literal, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            address.sin6_addr = v6
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: address) { target.copyMemory(from: $0) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            return nil
        }
    }

    package var port: Int {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
            }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
        }
    }

    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        return withUnsafeBytes(of: storage) { raw -> String in
            if family == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))
                return "[\(SocketIO.string(fromCString: text))]:\(port)"
            }
            var address = raw.load(as: sockaddr_in.self).sin_addr
            inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
            return "\(SocketIO.string(fromCString: text)):\(port)"
        }
    }

    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}

/// Thin, non-blocking POSIX socket calls.
package enum SocketIO {
    static func errorText(_ code: Int32) -> String { string(fromCString: strerror(code)) }

    static func string(fromCString pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
    }

    static func string(fromCString buffer: [CChar]) -> String {
        buffer.withUnsafeBufferPointer { string(fromCString: $0.baseAddress) }
    }

    static func errorName(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "ECONNREFUSED"
        case ECONNRESET: "ECONNRESET"
        case ETIMEDOUT: "ETIMEDOUT"
        case EHOSTUNREACH: "EHOSTUNREACH"
        case ENETUNREACH: "ENETUNREACH"
        case EPIPE: "EPIPE"
        case EMFILE: "EMFILE"
        case EADDRINUSE: "EADDRINUSE"
        case EADDRNOTAVAIL: "EADDRNOTAVAIL"
        default: "errno \(code)"
        }
    }

    @discardableResult
    package static func closeFD(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(fd)
        #elseif canImport(Darwin)
        Darwin.close(fd)
        #else
        Musl.close(fd)
        #endif
    }

    /// Resolves `host` with getaddrinfo (blocking: call it off the loop threads). IPv4 and IPv6.
    package static func resolve(host: String, port: Int) throws(RealtimeError) -> [SocketAddress] {
        if let numeric = SocketAddress(numericHost: host, port: port) { return [numeric] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else { throw SocketError.resolutionFailed(host: host, status: status) }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr,
               entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6 {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(start: address,
                                                                   count: Int(entry.pointee.ai_addrlen)))
                }
                addresses.append(SocketAddress(storage: storage, length: entry.pointee.ai_addrlen))
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw SocketError.resolutionFailed(host: host, status: EAI_NONAME) }
        return addresses
    }

    /// A non-blocking, close-on-exec TCP socket with Nagle off.
    package static func makeStreamSocket(family: Int32) throws(RealtimeError) -> Int32 {
        #if canImport(Glibc)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError.posix("socket", errno) }
        #else
        let fd = socket(family, SOCK_STREAM, 0)
        guard fd >= 0 else { throw SocketError.posix("socket", errno) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var one: Int32 = 1
        // No SIGPIPE on Darwin (Linux uses MSG_NOSIGNAL per send).
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        setNoDelay(fd)
        return fd
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Starts a connect; returns 0 (connected), EINPROGRESS or the errno.
    package static func startConnect(_ fd: Int32, to address: SocketAddress) -> Int32 {
        let result = address.withSockAddr { connect(fd, $0, $1) }
        return result == 0 ? 0 : errno
    }

    /// The pending error of a socket (after a non-blocking connect completes).
    package static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// A listening, non-blocking socket bound to `host` (numeric) and `port` (0: ephemeral).
    package static func listen(host: String, port: Int, backlog: Int32) throws(RealtimeError) -> (fd: Int32, address: SocketAddress) {
        guard let address = SocketAddress(numericHost: host, port: port) else {
            throw RealtimeError(.invalidArgument, "listen address must be a numeric IP address, not \(host)")
        }
        let fd = try makeStreamSocket(family: address.family)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockAddr({ bind(fd, $0, $1) }) == 0 else {
            let code = errno
            closeFD(fd)
            throw SocketError.posix("bind \(address)", code)
        }
        #if canImport(Glibc)
        let listened = Glibc.listen(fd, backlog)
        #else
        let listened = Darwin.listen(fd, backlog)
        #endif
        guard listened == 0 else {
            let code = errno
            closeFD(fd)
            throw SocketError.posix("listen", code)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutableBytes(of: &storage) { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        return (fd, SocketAddress(storage: storage, length: length))
    }

    /// Accepts one pending connection as a non-blocking socket; nil when none is pending (or on error).
    package static func accept(_ listener: Int32) -> (fd: Int32?, error: Int32) {
        #if canImport(Glibc)
        let fd = Glibc.accept(listener, nil, nil)
        #else
        let fd = Darwin.accept(listener, nil, nil)
        #endif
        guard fd >= 0 else { return (nil, errno) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        #if !canImport(Glibc)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        setNoDelay(fd)
        return (fd, 0)
    }

    /// `send` without SIGPIPE. Returns bytes written, 0 when the socket would block, or -errno.
    package static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Glibc)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        while true {
            let written = systemSend(fd, bytes.baseAddress, bytes.count, flags)
            if written >= 0 { return written }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return 0 }
            return -Int(code)
        }
    }

    /// `recv`. Returns bytes read, 0 at end of stream, -EAGAIN when nothing is ready, or -errno.
    package static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            let code = errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK { return -Int(EAGAIN) }
            return -Int(code)
        }
    }

    /// True when `host` is an IPv4 or IPv6 literal (no SNI for those).
    package static func isIPLiteral(_ host: String) -> Bool {
        SocketAddress(numericHost: host, port: 0) != nil
    }
}

#if canImport(Glibc)
@inline(__always)
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    Glibc.send(fd, pointer, count, flags)
}
#else
@inline(__always)
private func systemSend(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    Darwin.send(fd, pointer, count, flags)
}
#endif
