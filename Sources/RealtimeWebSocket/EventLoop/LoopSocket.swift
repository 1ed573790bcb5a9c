#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import RealtimeCore

/// A channel's non-blocking stream socket, watched by its loop: dialing a host's addresses one after
/// another (the next when one fails), then the selector interest it is watched with. Every method runs on
/// the loop thread.
struct LoopSocket {
    /// What dialing came to.
    enum Dialing {
        /// Waiting for the connect of the current address (the selector reports it writable).
        case inProgress
        case connected
        /// Every address failed (the error is the last one's), or the loop could not watch the socket.
        case failed(RealtimeError)
    }

    /// The loop token the socket is watched under.
    let token: UInt64
    /// The socket, or `-1`.
    private(set) var fd: Int32 = -1
    private var isWatched = false
    private var interest = SelectorInterest(read: false, write: false)
    private var addresses: [SocketAddress] = []
    private var addressIndex = 0
    private var lastConnectError: RealtimeError?

    init(token: UInt64) {
        self.token = token
    }

    /// Takes over a connected socket (a server's accepted one) and watches it for `interest`.
    mutating func adopt(_ fd: Int32, interest: SelectorInterest, in context: LoopContext) throws(RealtimeError) {
        self.fd = fd
        try watch(interest, in: context)
    }

    /// Starts connecting to the first of `addresses` that takes a connect attempt.
    mutating func dial(_ addresses: [SocketAddress], in context: LoopContext) -> Dialing {
        self.addresses = addresses
        addressIndex = 0
        lastConnectError = nil
        return dialCurrentAddress(in: context)
    }

    /// A selector event while dialing: the connect finished, or failed and the next address is being tried.
    mutating func dialingEvent(_ event: SelectorEvent, in context: LoopContext) -> Dialing {
        guard event.writable || event.hangup else { return .inProgress }
        let status = SocketIO.pendingError(fd)
        if status == 0 { return .connected }
        lastConnectError = SocketError.connectFailed(address: addresses[addressIndex], code: status)
        close(in: context)
        addressIndex += 1
        return dialCurrentAddress(in: context)
    }

    private mutating func dialCurrentAddress(in context: LoopContext) -> Dialing {
        while addressIndex < addresses.count {
            let address = addresses[addressIndex]
            do throws(RealtimeError) {
                fd = try SocketIO.makeStreamSocket(family: address.family)
            } catch {
                lastConnectError = error
                addressIndex += 1
                continue
            }
            let status = SocketIO.startConnect(fd, to: address)
            guard status == 0 || status == EINPROGRESS else {
                lastConnectError = SocketError.connectFailed(address: address, code: status)
                close(in: context)
                addressIndex += 1
                continue
            }
            do throws(RealtimeError) {
                // Even a connect that finished at once is reported through the selector, as usual.
                try watch(SelectorInterest(read: false, write: true), in: context)
            } catch {
                close(in: context)
                return .failed(error)
            }
            return .inProgress
        }
        return .failed(lastConnectError ?? RealtimeError(.transportFailed, "no address to connect to"))
    }

    private mutating func watch(_ interest: SelectorInterest, in context: LoopContext) throws(RealtimeError) {
        self.interest = interest
        try context.watch(fd: fd, token: token, interest: interest)
        isWatched = true
    }

    /// Asks the selector for `wanted`, when the socket is watched and that changes anything.
    mutating func setInterest(_ wanted: SelectorInterest, in context: LoopContext) {
        guard isWatched, fd >= 0, wanted != interest else { return }
        interest = wanted
        context.setInterest(fd: fd, token: token, wanted)
    }

    /// Stops watching and closes the socket; nothing when there is none.
    mutating func close(in context: LoopContext) {
        if isWatched {
            context.unwatch(fd: fd)
            isWatched = false
        }
        if fd >= 0 {
            _ = SocketIO.closeFD(fd)
            fd = -1
        }
        interest = SelectorInterest(read: false, write: false)
    }
}
