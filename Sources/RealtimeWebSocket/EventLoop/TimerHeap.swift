/// Loop-confined timers: a binary min-heap of deadlines with lazy cancellation.
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }

    private var heap: [Entry] = []
    private var actions: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    var isEmpty: Bool { actions.isEmpty }

    /// Adds `action` to run at `deadline` (monotonic nanoseconds) and returns its id.
    mutating func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> UInt64 {
        let id = nextID
        nextID += 1
        actions[id] = action
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(heap.count - 1)
        return id
    }

    mutating func cancel(_ id: UInt64) {
        actions[id] = nil
        // Keep the heap from filling with cancelled entries when many timers are cancelled early.
        if heap.count > 64, heap.count > actions.count * 4 {
            heap.removeAll { actions[$0.id] == nil }
            heap.sort { $0.deadline < $1.deadline }  // a sorted array is a valid heap
        }
    }

    /// The earliest live deadline.
    mutating func nextDeadline() -> UInt64? {
        while let top = heap.first {
            if actions[top.id] != nil { return top.deadline }
            popTop()
        }
        return nil
    }

    /// Removes and returns the actions due at `now`, earliest first.
    mutating func popDue(now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            popTop()
            if let action = actions.removeValue(forKey: top.id) { due.append(action) }
        }
        return due
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = parent * 2 + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
