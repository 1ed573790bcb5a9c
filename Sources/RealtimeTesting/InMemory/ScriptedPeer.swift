@_spi(DialectAuthoring) import RealtimeCore

/// A server script for one in-memory connection: "expect frame X, reply with Y".
///
/// Attach it to an ``InMemoryPeer`` (typically from ``InMemoryTransport/onOpen(_:)``). Leading `send` and
/// `close` steps run as soon as the connection is accepted; each `expect` waits for the client's next
/// frame, records a mismatch if it differs, and sends its reply. Check ``mismatches`` and ``isComplete``
/// at the end of the test.
public final class ScriptedPeer: Sendable {
    /// One step of the script.
    public enum Step: Sendable {
        /// The client's next frame must equal `frame`; then `reply` is sent.
        case expect(TransportFrame, reply: [TransportFrame] = [])
        /// The client's next frame must satisfy `matches`; then `reply` is sent.
        case expectMatching(String, @Sendable (TransportFrame) -> Bool, reply: [TransportFrame] = [])
        /// Sends frames to the client.
        case send([TransportFrame])
        /// Closes with a close frame.
        case close(code: Int, reason: String)
        /// Drops the connection without a close frame.
        case drop
    }

    private struct State {
        var steps: [Step]
        var position = 0
        var mismatches: [String] = []
    }

    private let state: Locked<State>

    /// A script that runs `steps` in order.
    public init(_ steps: [Step]) {
        state = Locked(State(steps: steps))
    }

    /// Differences between what the client sent and what the script expected.
    public var mismatches: [String] { state.withLock { $0.mismatches } }

    /// `true` once every step has run.
    public var isComplete: Bool { state.withLock { $0.position >= $0.steps.count } }

    /// Accepts the connection (if still opening) and runs the script on it.
    public func attach(to peer: InMemoryPeer, subprotocol: String? = nil) {
        peer.onReceive { [self] frame, peer in
            self.received(frame, on: peer)
        }
        peer.accept(subprotocol: subprotocol)
        runActions(on: peer)
    }

    private func received(_ frame: TransportFrame, on peer: InMemoryPeer) {
        let reply = state.withLock { state -> [TransportFrame]? in
            guard state.position < state.steps.count else {
                state.mismatches.append("unexpected frame after the script ended: \(frame)")
                return nil
            }
            switch state.steps[state.position] {
            case .expect(let expected, let reply):
                state.position += 1
                if expected != frame { state.mismatches.append("expected \(expected), got \(frame)") }
                return reply
            case .expectMatching(let description, let matches, let reply):
                state.position += 1
                if !matches(frame) { state.mismatches.append("expected \(description), got \(frame)") }
                return reply
            case .send, .close, .drop:
                state.mismatches.append("unexpected frame while the script was sending: \(frame)")
                return nil
            }
        }
        if let reply, !reply.isEmpty { peer.send(reply) }
        runActions(on: peer)
    }

    /// Runs the `send`/`close`/`drop` steps up to the next `expect`.
    private func runActions(on peer: InMemoryPeer) {
        while true {
            let step = state.withLock { state -> Step? in
                guard state.position < state.steps.count else { return nil }
                switch state.steps[state.position] {
                case .expect, .expectMatching: return nil
                case .send, .close, .drop:
                    state.position += 1
                    return state.steps[state.position - 1]
                }
            }
            switch step {
            case .send(let frames)?: peer.send(frames)
            case .close(let code, let reason)?: peer.close(code: code, reason: reason)
            case .drop?: peer.drop()
            default: return
            }
        }
    }
}
