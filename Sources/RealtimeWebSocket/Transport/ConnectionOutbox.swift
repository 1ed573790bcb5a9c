import RealtimeCore

/// The cross-thread half of a connection: what other threads asked for (frames to send, close, abort,
/// pause, pings), read by the loop thread in one lock per wake-up.
final class ConnectionOutbox: Sendable {
    struct CloseRequest: Sendable {
        var code: Int
        var reason: String
    }

    struct State: Sendable {
        var frames: [QueuedFrame] = []
        /// Payload bytes of `frames`.
        var queuedBytes = 0
        /// Encoded bytes the socket has not taken yet (kept by the loop).
        var unsentBytes = 0
        /// A loop task is already posted to service this outbox.
        var serviceScheduled = false
        var closeRequest: CloseRequest?
        var abortRequested = false
        var readingPaused = false
        var overflowed = false
        var finished = false
        var pings = PendingPings()
        var pingsToSend: [UInt64] = []
    }

    let state = Locked(State())
    let maximumBufferedBytes: Int

    init(maximumBufferedBytes: Int) {
        self.maximumBufferedBytes = maximumBufferedBytes
    }

    /// Bytes waiting to be written: queued frames plus encoded bytes the socket has not taken.
    var bufferedAmount: Int {
        state.withLock { $0.queuedBytes + $0.unsentBytes }
    }

    /// Applies `change`; returns true when the loop must be woken to act on it.
    func update(_ change: (inout State) -> Void) -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            change(&state)
            if state.serviceScheduled { return false }
            state.serviceScheduled = true
            return true
        }
    }

    /// Queues frames, enforcing the limit; ignored once a close or abort was requested. Returns true when
    /// the loop must be woken.
    func enqueue(_ frames: [TransportFrame], compress: Bool = true) -> Bool {
        var size = 0
        for frame in frames { size += frame.payloadCount }
        return update { state in
            // Frames sent after close() would follow our close frame: dropped, like after the end.
            guard !state.overflowed, state.closeRequest == nil, !state.abortRequested else { return }
            if state.queuedBytes + state.unsentBytes + size > maximumBufferedBytes {
                state.overflowed = true
                return
            }
            state.frames += frames.map { QueuedFrame(frame: $0, compress: compress) }
            state.queuedBytes += size
        }
    }
}

extension TransportFrame {
    /// Payload bytes on the wire.
    var payloadCount: Int {
        switch self {
        case .text(let text): text.utf8.count
        case .binary(let data): data.count
        }
    }
}
