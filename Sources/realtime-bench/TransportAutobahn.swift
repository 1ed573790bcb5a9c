import Foundation
import RealtimeCore
import RealtimeWebSocket

/// `realtime-bench transport autobahn --port P [--agent A]`: the Autobahn|Testsuite echo client flow
/// driven through ``WebSocketTransport`` (event loop, write queue, close handshake), as a conformance
/// check of the driver on top of the codec. Start `wstest -m fuzzingserver` on 127.0.0.1:P first.
enum TransportAutobahn {
    static func run(arguments: [String]) throws {
        let port = TransportBenchmark.option("--port", in: arguments) ?? 9001
        let agent = arguments.firstIndex(of: "--agent").map { arguments[$0 + 1] } ?? "RealtimeTransport"
        let base = "ws://127.0.0.1:\(port)"
        // Group 9 echoes 16 MiB messages in one piece.
        let transport = WebSocketTransport(configuration: .init(
            limits: WebSocketLimits(maximumFrameSize: 16 << 20, maximumMessageSize: 16 << 20,
                                    maximumFragmentCount: 1 << 20),
            maximumBufferedBytes: 64 << 20))

        let caseCount = Locked(0)
        _ = session(transport, url: "\(base)/getCaseCount") { frames, _ in
            if case .text(let text)? = frames.first { caseCount.withLock { $0 = Int(text) ?? 0 } }
        }
        let count = caseCount.withLock { $0 }
        print("autobahn via WebSocketTransport: \(count) cases")
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 1...max(count, 1) where count > 0 {
            _ = session(transport, url: "\(base)/runCase?case=\(index)&agent=\(agent)") { frames, connection in
                connection.send(frames)
            }
        }
        _ = session(transport, url: "\(base)/updateReports?agent=\(agent)") { _, _ in }
        print(String(format: "autobahn via WebSocketTransport: ran %d cases in %.1f s", count,
                     Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9))
    }

    /// Opens `url`, hands each batch to `onFrames` (on the loop thread) and waits for the close.
    private static func session(_ transport: WebSocketTransport, url: String,
                                onFrames: @escaping ([TransportFrame], any TransportConnection) -> Void) -> TransportClosure? {
        let done = DispatchSemaphore(value: 0)
        let ending = Locked<TransportClosure?>(nil)
        let connectionBox = Locked<(any TransportConnection)?>(nil)
        let pending = Locked<[[TransportFrame]]>([])
        let handler = SerializedFrameHandler(onFrames)
        let connection = transport.open(ConnectionRequest(url: URL(string: url)!, connectTimeout: .seconds(30))) { event in
            switch event {
            case .opened:
                break
            case .received(let frames):
                // The handler may run before `open` returns: keep batches until the connection is known.
                if let connection = connectionBox.withLock({ $0 }) {
                    handler.call(frames, connection)
                } else {
                    pending.withLock { $0.append(frames) }
                }
            case .closed(let closure):
                ending.withLock { $0 = closure }
                done.signal()
            }
        }
        connectionBox.withLock { $0 = connection }
        for frames in pending.withLock({ state in defer { state = [] }; return state }) { handler.call(frames, connection) }
        done.wait()
        return ending.withLock { $0 }
    }
}

/// Carries a per-session frame callback into the transport's `@Sendable` handler; the lock serializes
/// every call.
private final class SerializedFrameHandler: Sendable {
    private let body: Locked<([TransportFrame], any TransportConnection) -> Void>
    init(_ body: @escaping ([TransportFrame], any TransportConnection) -> Void) { self.body = Locked(body) }
    func call(_ frames: [TransportFrame], _ connection: any TransportConnection) {
        body.withLock { $0(frames, connection) }
    }
}
