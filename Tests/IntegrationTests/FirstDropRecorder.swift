import Realtime

/// Watches a session for its first drop: the first `.reconnecting` state, and the errors reported before it
/// (retries after the drop may meet a closed port, and those errors are expected).
final class FirstDropRecorder: Sendable {
    private struct State {
        var drop: (delay: Duration, reason: DisconnectReason)?
        var errorsBefore: [RealtimeError] = []
    }

    private let state = Locked(State())

    init(_ session: RealtimeSession) {
        session.onStateChange { [state] _, new in
            guard case .reconnecting(_, let delay, let reason) = new else { return }
            state.withLock { if $0.drop == nil { $0.drop = (delay, reason) } }
        }
        session.onError { [state] error in
            state.withLock { if $0.drop == nil { $0.errorsBefore.append(error) } }
        }
    }

    /// The first drop's retry delay and reason, once it happened.
    var drop: (delay: Duration, reason: DisconnectReason)? { state.withLock { $0.drop } }
    var errorsBeforeDrop: [RealtimeError] { state.withLock { $0.errorsBefore } }
}
