#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
#if os(Linux) || os(Android)
import COpenSSL  // exports epoll and eventfd (see shim.h)
#endif
import RealtimeCore

/// Which readiness a registration waits for.
struct SelectorInterest: Hashable {
    var read: Bool
    var write: Bool
}

/// One readiness report for a registration.
struct SelectorEvent {
    var id: UInt64
    var readable: Bool
    var writable: Bool
    /// The peer hung up or the socket has a pending error.
    var hangup: Bool
}

#if os(Linux) || os(Android)
/// epoll, level-triggered. Confined to its loop thread.
final class Selector {
    private let epollFD: Int32
    private var buffer: [epoll_event]

    init(capacity: Int = 256) throws(RealtimeError) {
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epollFD >= 0 else { throw SocketError.posix("epoll_create1", errno) }
        buffer = Array(repeating: epoll_event(), count: capacity)
    }

    deinit { Glibc.close(epollFD) }

    private static func mask(_ interest: SelectorInterest) -> UInt32 {
        var bits = EPOLLRDHUP.rawValue
        if interest.read { bits |= EPOLLIN.rawValue }
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

    /// Waits up to `timeoutMilliseconds` (-1: forever) and appends what is ready to `events`.
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
#else
/// `poll(2)`: portable and fine for the modest connection counts of Apple clients. Confined to its loop thread.
final class Selector {
    private var registrations: [Int32: (id: UInt64, interest: SelectorInterest)] = [:]
    private var pollFDs: [pollfd] = []

    init(capacity: Int = 256) throws(RealtimeError) {}

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
        var ids: [UInt64] = []
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
            events.append(SelectorEvent(
                id: ids[index],
                readable: raw & (Int32(POLLIN) | Int32(POLLHUP) | Int32(POLLERR)) != 0,
                writable: raw & (Int32(POLLOUT) | Int32(POLLERR)) != 0,
                hangup: raw & (Int32(POLLHUP) | Int32(POLLERR)) != 0))
        }
    }
}
#endif

/// Wakes a loop thread from another thread: an eventfd on Linux, a pipe elsewhere.
struct Waker: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init() throws(RealtimeError) {
        #if os(Linux) || os(Android)
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw SocketError.posix("eventfd", errno) }
        readFD = fd
        writeFD = fd
        #else
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SocketError.posix("pipe", errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readFD = fds[0]
        writeFD = fds[1]
        #endif
    }

    func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(writeFD, $0.baseAddress, $0.count) }
    }

    func drain() {
        var sink = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &sink, { read(readFD, $0.baseAddress, $0.count) }) > 0 {
            #if os(Linux) || os(Android)
            break  // one read empties an eventfd
            #endif
        }
    }

    func close() {
        _ = SocketIO.closeFD(readFD)
        if writeFD != readFD { _ = SocketIO.closeFD(writeFD) }
    }
}
