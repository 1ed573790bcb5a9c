// The default echo client: every case runs through `WebSocketTransport` (event loop, TLS-free ws://,
// write queue, close handshake), the same path the product uses.
import Foundation
import RealtimeCore
import RealtimeWebSocket

/// Runs Autobahn sessions through one ``WebSocketTransport`` and its one-thread loop.
final class TransportEcho {
    private let transport: WebSocketTransport
    private let port: UInt16

    init(port: UInt16, limits: WebSocketLimits) {
        self.port = port
        // Group 9 echoes 16 MiB messages in one piece, so the write queue must hold a few of them. Groups
        // 12 and 13 (permessage-deflate) echo messages from 16 bytes up: compress them all, so that every
        // size goes through our deflater too, not only the inflater.
        transport = WebSocketTransport(configuration: .init(limits: limits, maximumBufferedBytes: 64 << 20,
                                                            compression: PerMessageDeflateOptions(minimumMessageSize: 0)))
    }

    /// Opens `path`, echoes every message back when `echo` is set (otherwise collects the text messages),
    /// and returns once the connection has closed. Throws when it ended in a failure before opening.
    @discardableResult
    func run(path: String, echo: Bool) throws -> [String] {
        let url = URL(string: "ws://127.0.0.1:\(port)\(path)")!
        let done = DispatchSemaphore(value: 0)
        let connectionKnown = DispatchSemaphore(value: 0)
        let connectionBox = Locked<(any TransportConnection)?>(nil)
        let texts = Locked<[String]>([])
        let ending = Locked<TransportClosure?>(nil)
        let connection = transport.open(ConnectionRequest(url: url, connectTimeout: .seconds(30))) { event in
            switch event {
            case .opened:
                // `open` may not have returned yet; frames come only after this event, so wait here once
                // and every batch can be echoed at once, before whatever the transport writes next.
                connectionKnown.wait()
            case .received(let frames):
                if echo {
                    connectionBox.withLock { $0 }?.send(frames)
                } else {
                    texts.withLock { texts in
                        for case .text(let text) in frames { texts.append(text) }
                    }
                }
            case .closed(let closure):
                ending.withLock { $0 = closure }
                done.signal()
            }
        }
        connectionBox.withLock { $0 = connection }
        connectionKnown.signal()
        done.wait()
        withExtendedLifetime(connection) {}
        if let closure = ending.withLock({ $0 }), closure.duringOpen, case .failed(let error) = closure.kind {
            throw error
        }
        return texts.withLock { $0 }
    }
}
