/// The session's timers behind one clock timer, armed for the earliest deadline.
///
/// A clock timer is not free: a Dispatch timer's arming and its cancelling each write to Dispatch's
/// manager thread and wake it. Action Cable arms a guarantor timer per subscribe and cancels it at the
/// confirmation, so a re-subscription of 100 channels cost 200 of those. Here scheduling a timer that is
/// not the earliest, and cancelling one, only change this queue; the clock timer is re-armed when an
/// earlier deadline comes, and disarmed when no timer is left. A cancelled timer stays in the heap until
/// it reaches the top or the heap is compacted, so the clock timer may fire with nothing due: the engine
/// then arms it for the next deadline.
///
/// Sans-I/O: it is fed deadlines and times, and says when to arm the clock timer.
struct EngineTimerQueue {
    private struct Entry {
        var deadline: Duration
        /// Scheduling order: breaks ties between equal deadlines, and tells a live entry from a replaced
        /// or cancelled one.
        var order: UInt64
        var timer: EngineTimer
        var serial: UInt64

        func precedes(_ other: Entry) -> Bool { (deadline, order) < (other.deadline, other.order) }
    }

    /// A min-heap by deadline, then order; it holds stale entries too.
    private var heap: [Entry] = []
    /// The order of each scheduled timer's live entry.
    private var live: [EngineTimer: UInt64] = [:]
    private var nextOrder: UInt64 = 0
    /// The deadline the clock timer is armed for, if it is armed.
    private(set) var armedDeadline: Duration?

    /// Timers scheduled and neither fired nor cancelled.
    var count: Int { live.count }
    /// Entries in the heap, stale ones included (for tests of the compaction).
    var heapCount: Int { heap.count }

    /// Schedules `timer` for `deadline`, replacing its earlier schedule. Returns the deadline to arm the clock
    /// timer for when it must be armed (again), `nil` when the armed one comes first.
    mutating func schedule(_ timer: EngineTimer, serial: UInt64, at deadline: Duration) -> Duration? {
        nextOrder += 1
        live[timer] = nextOrder
        push(Entry(deadline: deadline, order: nextOrder, timer: timer, serial: serial))
        compactIfMostlyStale()
        if let armedDeadline, armedDeadline <= deadline { return nil }
        armedDeadline = deadline
        return deadline
    }

    /// Cancels `timer`. Returns `true` when no timer is left: the clock timer is then disarmed.
    mutating func cancel(_ timer: EngineTimer) -> Bool {
        guard live.removeValue(forKey: timer) != nil else { return false }
        live.releaseRoomIfSparse()
        guard live.isEmpty else {
            compactIfMostlyStale()
            return false
        }
        heap = []
        armedDeadline = nil
        return true
    }

    /// The clock timer fired at `now`: the timers due, in deadline order with their serials, and the
    /// deadline to arm the clock timer for next (`nil`: none is left).
    mutating func fire(at now: Duration) -> (due: [(timer: EngineTimer, serial: UInt64)], next: Duration?) {
        var due: [(timer: EngineTimer, serial: UInt64)] = []
        while let top = heap.first, top.deadline <= now {
            popTop()
            guard live[top.timer] == top.order else { continue }
            live[top.timer] = nil
            due.append((top.timer, top.serial))
        }
        dropStaleTop()
        live.releaseRoomIfSparse()
        armedDeadline = heap.first?.deadline
        return (due, armedDeadline)
    }

    /// Forgets every timer (the session is gone).
    mutating func removeAll() {
        self = EngineTimerQueue()
    }

    // MARK: Heap

    private mutating func dropStaleTop() {
        while let top = heap.first, live[top.timer] != top.order { popTop() }
    }

    /// Rebuilds the heap from the live entries once stale ones outnumber them, so that many cancelled
    /// timers (10,000 confirmed subscribes) do not stay in memory until their deadlines.
    private mutating func compactIfMostlyStale() {
        guard heap.count > 2 * live.count + 16 else { return }
        let kept = heap.filter { live[$0.timer] == $0.order }
        heap = []
        heap.reserveCapacity(kept.count)
        for entry in kept { push(entry) }
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { break }
            var smallest = left
            if left + 1 < heap.count, heap[left + 1].precedes(heap[left]) { smallest = left + 1 }
            guard heap[smallest].precedes(heap[parent]) else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
