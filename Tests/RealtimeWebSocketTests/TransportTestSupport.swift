import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@testable import RealtimeWebSocket

/// Collects events from any thread and hands them to a test in order, with a deadline instead of sleeps.
final class EventQueue<Event: Sendable>: Sendable {
    private struct State {
        var events: [Event] = []
        var waiter: (id: Int, continuation: CheckedContinuation<Event?, Never>)?
        var nextWaiter = 0
    }

    private let state = Locked(State())

    init() {}

    func push(_ event: Event) {
        let waiter = state.withLock { state -> CheckedContinuation<Event?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.events.append(event)
            return nil
        }
        waiter?.resume(returning: event)
    }

    /// The next event, or nil when none came within `timeout` seconds.
    func next(timeout: Double = 10) async -> Event? {
        await withCheckedContinuation { continuation in
            let id: Int? = state.withLock { state in
                if !state.events.isEmpty {
                    continuation.resume(returning: state.events.removeFirst())
                    return nil
                }
                state.nextWaiter += 1
                state.waiter = (state.nextWaiter, continuation)
                return state.nextWaiter
            }
            guard let id else { return }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                let expired = state.withLock { state -> CheckedContinuation<Event?, Never>? in
                    guard let waiter = state.waiter, waiter.id == id else { return nil }
                    state.waiter = nil
                    return waiter.continuation
                }
                expired?.resume(returning: nil)
            }
        }
    }

    /// Events received so far and not yet taken.
    var pending: [Event] { state.withLock { $0.events } }
}

extension TransportEvent {
    var closure: TransportClosure? {
        if case .closed(let closure) = self { return closure }
        return nil
    }

    var frames: [TransportFrame]? {
        if case .received(let frames) = self { return frames }
        return nil
    }

    var isOpened: Bool {
        if case .opened = self { return true }
        return false
    }
}

extension TransportClosure {
    var error: RealtimeError? {
        if case .failed(let error) = kind { return error }
        return nil
    }
}

/// Reads events until `closed`, collecting the frames on the way.
func drainUntilClosed(_ events: EventQueue<TransportEvent>, timeout: Double = 10) async -> (frames: [TransportFrame], closure: TransportClosure?) {
    var frames: [TransportFrame] = []
    while let event = await events.next(timeout: timeout) {
        switch event {
        case .opened: continue
        case .received(let batch): frames += batch
        case .closed(let closure): return (frames, closure)
        }
    }
    return (frames, nil)
}

/// An echo server on an ephemeral loopback port; `react` may answer some messages differently.
func makeEchoServer(group: EventLoopGroup? = nil, configuration: WebSocketServer.Configuration = .init(),
                    shouldUpgrade: @escaping WebSocketServer.UpgradeDecider = { _ in .accept() },
                    react: @escaping @Sendable (WebSocketServerConnection, TransportFrame) -> Bool = { _, _ in false })
    throws -> WebSocketServer {
    try WebSocketServer(configuration: configuration, group: group, shouldUpgrade: shouldUpgrade) { connection, event in
        guard case .received(let frames) = event else { return }
        // Frame by frame, so a reaction that closes comes after the echoes before it.
        for frame in frames where !react(connection, frame) { connection.send([frame]) }
    }
}

/// A one-connection blocking TCP server on a thread, for peers that misbehave on purpose.
final class RawServer: Sendable {
    let port: Int
    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)

    /// `script` gets the accepted, blocking socket; the socket is closed when it returns.
    init(script: @escaping @Sendable (RawPeer) -> Void) throws {
        let (fd, address) = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 4)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        listener = fd
        port = address.port
        let thread = Thread { [listener, done, release] in
            let client = accept(listener, nil, nil)
            if client >= 0 {
                _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) & ~O_NONBLOCK)
                script(RawPeer(fd: client, release: release))
                SocketIO.closeFD(client)
            }
            done.signal()
        }
        thread.start()
    }

    var url: URL { URL(string: "ws://127.0.0.1:\(port)/")! }

    /// Lets a script blocked in ``RawPeer/waitForRelease()`` finish, then waits for the thread.
    func stop() {
        release.signal()
        shutdown(listener, Int32(SHUT_RDWR))
        SocketIO.closeFD(listener)
        done.wait()
    }
}

/// The accepted socket of a ``RawServer``.
struct RawPeer: Sendable {
    let fd: Int32
    let release: DispatchSemaphore

    /// Reads until the end of an HTTP head (or EOF) and returns it.
    func readHead() -> [UInt8] {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            head.append(byte)
            if head.count >= 4, Array(head.suffix(4)) == [13, 10, 13, 10] { break }
        }
        return head
    }

    /// Reads the upgrade request and answers 101.
    func acceptUpgrade() {
        var handshake = WebSocketServerHandshake()
        let head = readHead()
        guard let (request, _) = head.withUnsafeBytes({ try? handshake.receive($0) }) else { return }
        write(WebSocketServerHandshake.acceptResponse(for: request))
    }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the peer closes.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(fd, &buffer, buffer.count) > 0 {}
    }

    func waitForRelease() { release.wait() }
}
