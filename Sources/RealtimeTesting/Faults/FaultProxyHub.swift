#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import RealtimeCore
import RealtimeWebSocket

/// A ``FaultProxy``'s listening socket and open connections. Lives on the proxy's loop thread only.
final class ProxyHub: LoopHandler {
    let shared: ProxyShared
    let loop: EventLoop
    private let token: UInt64
    private var listener: Int32
    private var connections: [Int: ProxyConnection] = [:]
    /// Set by ``stop(in:whenClosed:)``: runs once the last connection has closed.
    private var whenClosed: (() -> Void)?
    /// getaddrinfo blocks, so upstream names resolve here, never on the loop.
    private let resolver = DispatchQueue(label: "realtime.fault-proxy.resolver")

    private init(listener: Int32, token: UInt64, shared: ProxyShared, loop: EventLoop) {
        self.listener = listener
        self.token = token
        self.shared = shared
        self.loop = loop
    }

    /// Attaches a hub for `fd` under `token` and starts accepting.
    static func start(listener fd: Int32, token: UInt64, shared: ProxyShared, in context: LoopContext) {
        let hub = ProxyHub(listener: fd, token: token, shared: shared, loop: context.loop)
        context.attach(hub, token: token)
        do {
            try context.watch(fd: fd, token: token, interest: SelectorInterest(read: true, write: false))
        } catch {
            hub.closeListener(in: context)  // connects are refused; the controls and stop() still work
        }
    }

    func handle(_ event: SelectorEvent, in context: LoopContext) {
        // Bounded per wake-up so that a burst of connects cannot starve the open connections.
        for _ in 0..<64 {
            guard listener >= 0 else { return }
            let (accepted, error) = SocketIO.accept(listener)
            guard let client = accepted else {
                if error == EMFILE || error == ENFILE { pauseAccepting(in: context) }
                return
            }
            guard let index = shared.admit() else {
                SocketIO.closeFD(client)  // refused: closed before any byte, never connected upstream
                continue
            }
            let connection = ProxyConnection(index: index, client: client, hub: self, context: context)
            connections[index] = connection
            connection.start(in: context)
        }
    }

    /// Out of descriptors: the pending connection waits in the backlog; accept again shortly (a listener
    /// left readable would wake the loop without end).
    private func pauseAccepting(in context: LoopContext) {
        context.setInterest(fd: listener, token: token, SelectorInterest(read: false, write: false))
        _ = context.schedule(after: .milliseconds(50)) { [weak self] in
            guard let self, self.listener >= 0 else { return }
            context.setInterest(fd: self.listener, token: self.token, SelectorInterest(read: true, write: false))
        }
    }

    /// Resolves `host` off the loop, then hands the addresses (none when it failed) to the connection
    /// attached under `token`, if it is still there.
    func resolve(_ host: String, port: Int, for token: UInt64) {
        resolver.async { [loop] in
            let addresses = (try? SocketIO.resolve(host: host, port: port)) ?? []
            loop.execute { context in
                (context.handler(token) as? ProxyConnection)?.connect(to: addresses, in: context)
            }
        }
    }

    /// Every connection looks at its schedule again (a live control changed it).
    func refreshAll(in context: LoopContext) {
        for connection in Array(connections.values) { connection.refresh(in: context) }
    }

    /// Stops accepting and closes every connection; `whenClosed` runs once none is left.
    func stop(in context: LoopContext, whenClosed: @escaping () -> Void) {
        closeListener(in: context)
        self.whenClosed = whenClosed
        for connection in Array(connections.values) { connection.stop(in: context) }
        reportClosedIfEmpty()
    }

    /// A connection closed its sockets and detached.
    func ended(_ index: Int) {
        connections[index] = nil
        shared.state.withLock { _ = $0.open.removeValue(forKey: index) }
        reportClosedIfEmpty()
    }

    private func reportClosedIfEmpty() {
        guard connections.isEmpty, let whenClosed else { return }
        self.whenClosed = nil
        whenClosed()
    }

    private func closeListener(in context: LoopContext) {
        guard listener >= 0 else { return }
        context.unwatch(fd: listener)
        SocketIO.closeFD(listener)
        listener = -1
    }

    func loopStopping(in context: LoopContext) {
        closeListener(in: context)
        for connection in Array(connections.values) { connection.abort(in: context) }
    }
}
