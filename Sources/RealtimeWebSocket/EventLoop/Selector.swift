#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
#if canImport(CRealtimeLinux)
import CRealtimeLinux  // epoll and eventfd (see its shim.h)
#endif
import RealtimeCore

/// Which readiness a registration waits for.
package struct SelectorInterest: Hashable {
    package var read: Bool
    package var write: Bool

    package init(read: Bool, write: Bool) {
        self.read = read
        self.write = write
    }
}

/// One readiness report for a registration.
package struct SelectorEvent {
    package var id: UInt64
    package var readable: Bool
    package var writable: Bool
    /// The peer hung up or the socket has a pending error.
    package var hangup: Bool
}

/// The readiness API a loop waits with.
enum ReadinessAPI: Sendable, Equatable {
    /// epoll (Linux and Android only): cost independent of the number of idle sockets.
    case epoll
    /// `poll(2)`: what Apple platforms use; selectable on Linux so that tests cover that path too.
    case poll

    static var platformDefault: ReadinessAPI {
        #if os(Linux) || os(Android)
        return .epoll
        #else
        return .poll
        #endif
    }
}

/// Waits for socket readiness. Confined to its loop thread.
protocol Selector: AnyObject {
    func add(fd: Int32, id: UInt64, interest: SelectorInterest) throws(RealtimeError)
    func modify(fd: Int32, id: UInt64, interest: SelectorInterest)
    func remove(fd: Int32)
    /// Waits up to `timeoutMilliseconds` (-1: forever) and appends what is ready to `events`.
    func wait(timeoutMilliseconds: Int32, into events: inout [SelectorEvent])
}

/// A selector using `api`, or `poll` where epoll does not exist.
func makeSelector(_ api: ReadinessAPI) throws(RealtimeError) -> any Selector {
    #if os(Linux) || os(Android)
    if api == .epoll { return try EpollSelector() }
    #endif
    return PollSelector()
}

#if os(Linux) || os(Android)
/// epoll, level-triggered.
final class EpollSelector: Selector {
    private let epollFD: Int32
    private var buffer: [epoll_event]

    init(capacity: Int = 256) throws(RealtimeError) {
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw SocketError.posix("epoll_create1", errno) }
        buffer = Array(repeating: epoll_event(), count: capacity)
    }

    deinit { Glibc.close(epollFD) }

    private static func mask(_ interest: SelectorInterest) -> UInt32 {
        // EPOLLHUP and EPOLLERR are always reported; RDHUP only while reading, or a paused socket whose
        // peer half-closed would wake the loop forever.
        var bits: UInt32 = 0
        if interest.read { bits |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if interest.write { bits |= EPOLLOUT.rawValue }
        return bits
    }

    func add(fd: Int32, id: UInt64, interest: SelectorInterest) throws(RealtimeError) {
        var event = epoll_event()
        event.events = Self.mask(interest)
        event.data.u64 = id
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else { throw SocketError.posix("epoll_ctl", errno) }
    }

    func modify(fd: Int32, id: UInt64, interest: SelectorInterest) {
        var event = epoll_event()
        event.events = Self.mask(interest)
        event.data.u64 = id
        _ = epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
    }

    func remove(fd: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    func wait(timeoutMilliseconds: Int32, into events: inout [SelectorEvent]) {
        let count = buffer.withUnsafeMutableBufferPointer { pointer in
            epoll_wait(epollFD, pointer.baseAddress, Int32(pointer.count), timeoutMilliseconds)
        }
        guard count > 0 else { return }
        for index in 0..<Int(count) {
            let raw = buffer[index].events
            events.append(SelectorEvent(
                id: buffer[index].data.u64,
                readable: raw & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0,
                writable: raw & (EPOLLOUT.rawValue | EPOLLERR.rawValue) != 0,
                hangup: raw & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0))
        }
    }
}
#endif

/// `poll(2)`: portable and fine for the modest connection counts of Apple clients; its cost grows with
/// the number of registrations, so Linux uses epoll unless told otherwise.
final class PollSelector: Selector {
    private var registrations: [Int32: (id: UInt64, interest: SelectorInterest)] = [:]
    private var pollFDs: [pollfd] = []
    private var ids: [UInt64] = []

    func add(fd: Int32, id: UInt64, interest: SelectorInterest) throws(RealtimeError) {
        registrations[fd] = (id, interest)
    }

    func modify(fd: Int32, id: UInt64, interest: SelectorInterest) {
        registrations[fd] = (id, interest)
    }

    func remove(fd: Int32) {
        registrations[fd] = nil
    }

    func wait(timeoutMilliseconds: Int32, into events: inout [SelectorEvent]) {
        pollFDs.removeAll(keepingCapacity: true)
        ids.removeAll(keepingCapacity: true)
        for (fd, registration) in registrations {
            var bits: Int16 = 0
            if registration.interest.read { bits |= Int16(POLLIN) }
            if registration.interest.write { bits |= Int16(POLLOUT) }
            pollFDs.append(pollfd(fd: fd, events: bits, revents: 0))
            ids.append(registration.id)
        }
        let count = pollFDs.withUnsafeMutableBufferPointer { pointer in
            poll(pointer.baseAddress, nfds_t(pointer.count), timeoutMilliseconds)
        }
        guard count > 0 else { return }
        for (index, entry) in pollFDs.enumerated() where entry.revents != 0 {
            let raw = Int32(entry.revents)
            let broken = Int32(POLLHUP) | Int32(POLLERR) | Int32(POLLNVAL)
            events.append(SelectorEvent(
                id: ids[index],
                readable: raw & (Int32(POLLIN) | broken) != 0,
                writable: raw & (Int32(POLLOUT) | Int32(POLLERR) | Int32(POLLNVAL)) != 0,
                hangup: raw & broken != 0))
        }
    }
}

/// Wakes a loop thread from another thread: an eventfd on Linux, a pipe elsewhere (or when asked for).
struct Waker: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init(usePipe: Bool = false) throws(RealtimeError) {
        #if os(Linux) || os(Android)
        if !usePipe {
            let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
            guard fd >= 0 else { throw SocketError.posix("eventfd", errno) }
            readFD = fd
            writeFD = fd
            return
        }
        #endif
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SocketError.posix("pipe", errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(writeFD, $0.baseAddress, $0.count) }
    }

    /// Waits up to `nanoseconds` for a wake (microsecond precision on Linux, milliseconds elsewhere);
    /// true when one came.
    func wait(nanoseconds: UInt64) -> Bool {
        #if os(Linux) || os(Android)
        return realtime_wait_readable(readFD, Int64(clamping: nanoseconds)) > 0
        #else
        var entry = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(clamping: (nanoseconds + 999_999) / 1_000_000)) > 0
        #endif
    }

    func drain() {
        var sink = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &sink, { read(readFD, $0.baseAddress, $0.count) }) > 0 {
            if readFD == writeFD { break }  // one read empties an eventfd
        }
    }

    func close() {
        _ = SocketIO.closeFD(readFD)
        if writeFD != readFD { _ = SocketIO.closeFD(writeFD) }
    }
}
