import Foundation
import RealtimeCore

/// A connection opened by ``WebSocketTransport``. Every method is non-blocking and thread-safe.
public final class WebSocketClientConnection: WebSocketPinging {
    private let loop: EventLoop?
    private let token: UInt64
    private let outbox: ConnectionOutbox
    /// Keeps a private group alive while the connection is.
    private let group: EventLoopGroup?

    private init(loop: EventLoop?, token: UInt64, outbox: ConnectionOutbox, group: EventLoopGroup?) {
        self.loop = loop
        self.token = token
        self.outbox = outbox
        self.group = group
    }

    /// A connection that failed before it started: `closed` is reported at once, on the caller's thread.
    static func failed(_ error: RealtimeError, handler: @escaping @Sendable (TransportEvent) -> Void,
                       maximumBufferedBytes: Int) -> WebSocketClientConnection {
        let outbox = ConnectionOutbox(maximumBufferedBytes: maximumBufferedBytes)
        outbox.state.withLock { $0.finished = true }
        handler(.closed(TransportClosure(.failed(error), duringOpen: true)))
        return WebSocketClientConnection(loop: nil, token: 0, outbox: outbox, group: nil)
    }

    static func start(_ client: ChannelSetup.Client, options: ChannelOptions, group: EventLoopGroup,
                      loop: EventLoop, maximumBufferedBytes: Int,
                      handler: @escaping @Sendable (TransportEvent) -> Void) -> WebSocketClientConnection {
        let token = loop.makeToken()
        let outbox = ConnectionOutbox(maximumBufferedBytes: maximumBufferedBytes)
        let connection = WebSocketClientConnection(loop: loop, token: token, outbox: outbox, group: group)
        // Through a proxy, only the proxy's name is resolved here; the proxy resolves the server's.
        let host = client.dialHost
        let port = client.dialPort
        let numeric = SocketAddress(numericHost: host, port: port)
        let accepted = loop.execute { context in
            let channel = WebSocketChannel(token: token, setup: .client(client), options: options, outbox: outbox,
                                           deliver: handler)
            context.attach(channel, token: token)
            channel.startClient(in: context)
            if let numeric {
                channel.resolved(.success([numeric]), in: context)
                return
            }
            group.resolverQueue.async {
                let result: Result<[SocketAddress], RealtimeError>
                do throws(RealtimeError) {
                    result = .success(try SocketIO.resolve(host: host, port: port))
                } catch {
                    result = .failure(error)
                }
                loop.execute { context in
                    (context.handler(token) as? WebSocketChannel)?.resolved(result, in: context)
                }
            }
        }
        if !accepted {
            outbox.state.withLock { $0.finished = true }
            handler(.closed(TransportClosure(.failed(RealtimeError(.transportFailed, "the event-loop group is shut down")),
                                             duringOpen: true)))
        }
        return connection
    }

    private func wakeLoop() {
        loop?.execute { [token] context in
            (context.handler(token) as? WebSocketChannel)?.serviceOutbox(in: context)
        }
    }

    /// Queues frames; they are written in order once the connection is open. Exceeding
    /// ``WebSocketTransport/Configuration/maximumBufferedBytes`` fails the connection with `.limitExceeded`.
    public func send(_ frames: [TransportFrame]) {
        if outbox.enqueue(frames) { wakeLoop() }
    }

    /// Like ``send(_:)``; `compress: false` sends the frames uncompressed when permessage-deflate is on.
    public func send(_ frames: [TransportFrame], compress: Bool) {
        if outbox.enqueue(frames, compress: compress) { wakeLoop() }
    }

    /// Sends a close frame with `code` and `reason` and waits (up to the close timeout) for the peer's.
    public func close(code: Int, reason: String) {
        let wake = outbox.update { state in
            if state.closeRequest == nil { state.closeRequest = .init(code: code, reason: reason) }
        }
        if wake { wakeLoop() }
    }

    /// Drops the connection without a close handshake.
    public func abort() {
        if outbox.update({ $0.abortRequested = true }) { wakeLoop() }
    }

    /// Stops reading from the socket (so TCP pushes back on the server) or resumes it.
    public func setReadingPaused(_ paused: Bool) {
        if outbox.update({ $0.readingPaused = paused }) { wakeLoop() }
    }

    /// Bytes queued or encoded but not yet taken by the socket.
    public var bufferedAmount: Int { outbox.bufferedAmount }

    /// Sends a ping and returns the time until its pong. Throws `.timedOut` after the configured ping
    /// timeout and `.connectionClosed` if the connection ends first. A ping sent before the upgrade
    /// completes goes out right after it.
    public func ping() async throws -> Duration {
        try await withCheckedThrowingContinuation { continuation in
            var closed = false
            let wake = outbox.state.withLock { state -> Bool in
                guard !state.finished else {
                    closed = true
                    return false
                }
                state.pingsToSend.append(state.pings.add(continuation, now: EventLoop.now()))
                if state.serviceScheduled { return false }
                state.serviceScheduled = true
                return true
            }
            if closed {
                continuation.resume(throwing: PendingPings.alreadyClosedError)
            } else if wake {
                wakeLoop()
            }
        }
    }
}
