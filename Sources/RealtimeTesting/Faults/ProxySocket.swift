#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import RealtimeWebSocket

/// The socket calls the loop's `SocketIO` has no use for.
enum ProxySocket {
    /// Sends a FIN; reading stays open.
    static func shutDownWriting(_ fd: Int32) {
        guard fd >= 0 else { return }
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes with `SO_LINGER` 0: the peer gets an RST, unsent data is dropped.
    static func reset(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        SocketIO.closeFD(fd)
    }

    /// Bytes written to `fd` that its peer has not acknowledged yet; nil where the system cannot tell.
    static func unacknowledgedBytes(_ fd: Int32) -> Int? {
        #if os(Linux)
        var unsent: Int32 = 0
        // TIOCOUTQ (SIOCOUTQ) counts unsent and unacknowledged bytes of a TCP socket.
        let status = withUnsafeMutablePointer(to: &unsent) { ioctl(fd, UInt(0x5411 /* TIOCOUTQ */), $0) }
        return status == 0 ? Int(unsent) : 0
        #else
        return nil
        #endif
    }
}
