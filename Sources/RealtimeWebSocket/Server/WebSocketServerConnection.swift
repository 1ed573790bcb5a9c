import Foundation
import RealtimeCore

/// One accepted connection of a ``WebSocketServer``. Every method is non-blocking and thread-safe.
public final class WebSocketServerConnection: Sendable, Hashable {
    private let loop: EventLoop
    private let token: UInt64
    private let outbox: ConnectionOutbox
    private let upgrade = Locked<(request: WebSocketServerHandshake.Request, subprotocol: String?)?>(nil)

    init(loop: EventLoop, token: UInt64, outbox: ConnectionOutbox) {
        self.loop = loop
        self.token = token
        self.outbox = outbox
    }

    func upgraded(_ request: WebSocketServerHandshake.Request, subprotocol: String?) {
        upgrade.withLock { $0 = (request, subprotocol) }
    }

    /// The upgrade request (path, headers, offered subprotocols); set from `.opened` on.
    public var request: WebSocketServerHandshake.Request? { upgrade.withLock { $0?.request } }

    /// The subprotocol the server selected.
    public var subprotocol: String? { upgrade.withLock { $0?.subprotocol } }

    private func wakeLoop() {
        loop.execute { [token] context in
            (context.handler(token) as? WebSocketChannel)?.serviceOutbox(in: context)
        }
    }

    /// Queues frames for the client, in order.
    public func send(_ frames: [TransportFrame]) {
        if outbox.enqueue(frames) { wakeLoop() }
    }

    /// Queues one text frame.
    public func send(text: String) { send([.text(text)]) }

    /// Queues one binary frame.
    public func send(binary: Data) { send([.binary(binary)]) }

    /// Starts the close handshake.
    public func close(code: Int = 1000, reason: String = "") {
        if outbox.update({ state in
            if state.closeRequest == nil { state.closeRequest = .init(code: code, reason: reason) }
        }) { wakeLoop() }
    }

    /// Drops the connection without a close handshake.
    public func abort() {
        if outbox.update({ $0.abortRequested = true }) { wakeLoop() }
    }

    /// Stops (or resumes) reading from this client.
    public func setReadingPaused(_ paused: Bool) {
        if outbox.update({ $0.readingPaused = paused }) { wakeLoop() }
    }

    /// Bytes queued or encoded but not yet taken by the socket.
    public var bufferedAmount: Int { outbox.bufferedAmount }

    public static func == (lhs: WebSocketServerConnection, rhs: WebSocketServerConnection) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
