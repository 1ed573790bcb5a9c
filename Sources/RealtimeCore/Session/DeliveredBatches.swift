/// Delivered batches that the socket's thread releases, so that their events are freed by the thread that
/// allocated them.
///
/// glibc's `free` returns a chunk to the arena of the thread that allocated it, under that arena's lock.
/// Events are built on the socket's thread; freed on the delivery thread while the socket's thread
/// allocates the next ones, the two threads contend for one arena lock when they run on different cores:
/// in an unpinned bulk run the delivery thread slept on it about once per 30 events. The delivery target
/// leaves each batch of events here once its handlers have run, and the socket's thread releases what is
/// here when it brings its next input (a frame, a ping, the close). Held batches are bounded: a batch that
/// would take the held frames' bytes above ``byteLimit`` is released where it is, and what no input comes
/// for is released by a timer ``idleRelease`` after it was left, when the socket is quiet. An `events()`
/// consumer leaves the events it took here too (``hold(taken:bytes:)``), for the same reason.
final class DeliveredBatches: Sendable {
    private struct Held {
        var batches: [[Delivery]] = []
        var taken: [[RealtimeEvent]] = []
        var bytes = 0
        var timerPending = false
        /// The list of batches last released, emptied: the next `batches`, so that holding allocates none.
        var spareBatches: [[Delivery]] = []
    }

    /// The most batches an emptied list keeps room for.
    private static let keptBatches = 64

    /// Most bytes of received frames held; beyond it batches are released on the delivery thread. With
    /// 64 KiB, too many bulk batches went past it and the contention came back.
    static let byteLimit = 256 * 1_024
    /// How long held batches wait for the socket's next input before a timer releases them.
    static let idleRelease = Duration.milliseconds(250)

    private let held = Locked(Held())
    /// Runs the idle release (the session's clock).
    private let clock: any RealtimeClock

    init(clock: any RealtimeClock) {
        self.clock = clock
    }

    /// Keeps `batch`, whose frames were `bytes` long, for the socket's thread, unless that takes the held
    /// bytes over the limit (the caller's reference then is the last one).
    func hold(_ batch: [Delivery], bytes: Int) {
        hold(bytes: bytes) { $0.batches.append(batch) }
    }

    /// Keeps events that an event stream's consumer took and is done with, like ``hold(_:bytes:)``.
    func hold(taken events: [RealtimeEvent], bytes: Int) {
        hold(bytes: bytes) { $0.taken.append(events) }
    }

    /// Keeps what `keep` adds, and arms the idle release unless it is pending already.
    private func hold(bytes: Int, _ keep: (inout Held) -> Void) {
        let armsTimer = held.withLock { held in
            guard held.bytes + bytes <= Self.byteLimit else { return false }
            keep(&held)
            held.bytes += bytes
            guard !held.timerPending else { return false }
            held.timerPending = true
            return true
        }
        guard armsTimer else { return }
        _ = clock.schedule(after: Self.idleRelease) { [weak self] in self?.releaseWhenIdle() }
    }

    /// The idle release: frees what is held, on the timer's thread.
    private func releaseWhenIdle() {
        held.withLock { $0.timerPending = false }
        release()
    }

    /// Releases the held batches on the calling thread.
    func release() {
        var batches: [[Delivery]] = []
        var taken: [[RealtimeEvent]] = []
        let released = held.withLock { held -> Bool in
            guard !held.batches.isEmpty || !held.taken.isEmpty else { return false }
            swap(&batches, &held.batches)
            swap(&held.batches, &held.spareBatches)  // emptied, with room: the next batches go there
            swap(&taken, &held.taken)
            held.bytes = 0
            return true
        }
        guard released else { return }
        // The events are freed here, when the last reference goes; the emptied list is the next spare.
        taken = []
        batches.removeAll(keepingRoomUpTo: Self.keptBatches)
        held.withLock { held in
            if held.spareBatches.capacity < batches.capacity { swap(&held.spareBatches, &batches) }
        }
    }

    /// Batches, and groups of taken events, held now (for tests).
    var count: Int { held.withLock { $0.batches.count + $0.taken.count } }
}
