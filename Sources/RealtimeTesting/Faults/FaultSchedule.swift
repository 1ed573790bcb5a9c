/// The ``Fault`` of one proxied connection as a pure schedule: no sockets and no clock. Told what was read and
/// written in each direction and what time it is, it answers what that direction does next: read (at most up
/// to the next cut), write which bytes in one write, wait until a deadline, hold, reset or close.
///
/// Offsets count the bytes of one direction from the start of the connection. Times are `Duration`s on the
/// caller's clock (the proxy passes its loop's monotonic time; tests pass a manual clock's).
package struct FaultSchedule: Sendable, Hashable {
    /// What one direction does next.
    package enum Action: Sendable, Hashable {
        /// Nothing waits to be written: read at most this many bytes (`Int.max` when no cut is ahead).
        case read(upTo: Int)
        /// Write these bytes of the direction's stream now, in one write.
        case write(Range<Int>)
        /// Bytes wait, but none may be written before this deadline (latency, or a dribble pause).
        case wait(until: Duration)
        /// Stalled: neither read nor write; the sockets stay open.
        case hold
        /// Reset both sides, once the bytes written in `drain` (when set) have left.
        case reset(drain: FaultDirection?)
        /// Close both sides with a FIN.
        case close
    }

    /// An end asked for by a live control rather than reached at an offset.
    package enum Ending: Sendable, Hashable { case reset, close }

    /// A reset, close or stall once `offset` bytes have been written in `direction`.
    private struct Cut: Sendable, Hashable {
        enum Kind: Sendable, Hashable { case reset, close, stall }
        var kind: Kind
        var direction: FaultDirection
        var offset: Int
    }

    /// One direction's counts and deadlines.
    private struct Flow: Sendable, Hashable {
        var read = 0
        var forwarded = 0
        /// Latency: what was read waits until then.
        var heldUntil: Duration?
        /// Dribble: the next write waits until then.
        var nextWriteAt: Duration?
    }

    /// True once a ``Fault/refuse`` applied: the proxy closes a new connection without connecting upstream,
    /// and an open one at once.
    package private(set) var refuses = false
    /// True while a stall (reached or asked for) holds both directions.
    package private(set) var isStalled = false
    private var ending: Ending?
    private var cuts: [Cut] = []
    private var chunk: Int?
    private var pause: Duration = .zero
    private var latency: Duration = .zero
    private var flows = [Flow(), Flow()]

    /// The schedule of a new connection.
    package init(_ fault: Fault) {
        apply(fault)
    }

    /// Bytes read from the source of `direction` so far.
    package func read(_ direction: FaultDirection) -> Int { flows[direction.index].read }
    /// Bytes written to the destination of `direction` so far.
    package func forwarded(_ direction: FaultDirection) -> Int { flows[direction.index].forwarded }

    /// Adds `fault` to what applies now, cut offsets counted from the bytes forwarded so far. `.pass` lifts the
    /// cuts not reached yet, dribble and latency (a stall reached stays until ``resume()``); `.refuse` closes.
    package mutating func apply(_ fault: Fault) {
        switch fault {
        case .pass:
            cuts = []
            chunk = nil
            latency = .zero
            for index in flows.indices {
                flows[index].heldUntil = nil
                flows[index].nextWriteAt = nil
            }
        case .refuse:
            refuses = true
            end(.close)
        case .reset(let bytes, let direction): addCut(.reset, bytes, direction)
        case .close(let bytes, let direction): addCut(.close, bytes, direction)
        case .stall(let bytes, let direction): addCut(.stall, bytes, direction)
        case .dribble(let size, let pause):
            chunk = max(1, size)
            self.pause = max(.zero, pause)
        case .latency(let latency):
            self.latency = max(.zero, latency)
        case .combined(let faults):
            // A pass inside a combination adds nothing; it must not lift its siblings.
            for fault in faults where fault != .pass { apply(fault) }
        }
    }

    private mutating func addCut(_ kind: Cut.Kind, _ bytes: Int, _ direction: FaultDirection) {
        cuts.append(Cut(kind: kind, direction: direction, offset: forwarded(direction) + max(0, bytes)))
    }

    /// Holds both directions until ``resume()``.
    package mutating func stall() { isStalled = true }
    /// Lifts a stall; what waited moves again.
    package mutating func resume() { isStalled = false }
    /// Ends the connection at once; an end asked for earlier wins.
    package mutating func end(_ ending: Ending) {
        if self.ending == nil { self.ending = ending }
    }

    /// What `direction` does next at `now`. Reaching a stall's offset starts the stall (and drops the cuts
    /// tied with it), so this is mutating; asking again without reading or writing gives the same answer.
    package mutating func next(_ direction: FaultDirection, at now: Duration) -> Action {
        switch ending {
        case .reset?: return .reset(drain: nil)
        case .close?: return .close
        case nil: break
        }
        // Reads and writes stop at the nearest cut of their direction, so at most one cut is newly reached
        // at a time; a tie (cuts at one offset, or several at offset 0) goes to the one listed first.
        while let cut = cuts.first(where: { forwarded($0.direction) >= $0.offset }) {
            switch cut.kind {
            case .reset: return .reset(drain: cut.direction)
            case .close: return .close
            case .stall:
                cuts.removeAll { $0.direction == cut.direction && $0.offset == cut.offset }
                isStalled = true
            }
        }
        if isStalled { return .hold }
        let flow = flows[direction.index]
        let cutAhead = nearestCut(direction)
        let waiting = flow.read - flow.forwarded
        guard waiting > 0 else { return .read(upTo: cutAhead.map { $0 - flow.read } ?? .max) }
        if let heldUntil = flow.heldUntil, now < heldUntil { return .wait(until: heldUntil) }
        if let nextWriteAt = flow.nextWriteAt, now < nextWriteAt { return .wait(until: nextWriteAt) }
        var count = min(waiting, chunk ?? waiting)
        if let cutAhead { count = min(count, cutAhead - flow.forwarded) }
        return .write(flow.forwarded..<flow.forwarded + count)
    }

    /// `count` bytes were read from the source of `direction` at `now` (latency holds them from then on).
    package mutating func received(_ count: Int, _ direction: FaultDirection, at now: Duration) {
        flows[direction.index].read += count
        flows[direction.index].heldUntil = latency > .zero ? now + latency : nil
    }

    /// `count` bytes were written to the destination of `direction` at `now` (a dribble pauses after it).
    package mutating func wrote(_ count: Int, _ direction: FaultDirection, at now: Duration) {
        flows[direction.index].forwarded += count
        flows[direction.index].nextWriteAt = chunk != nil && pause > .zero ? now + pause : nil
    }

    /// The offset of the nearest cut ahead in `direction`.
    private func nearestCut(_ direction: FaultDirection) -> Int? {
        cuts.lazy.filter { $0.direction == direction }.map(\.offset).min()
    }
}

extension FaultDirection {
    /// Both directions, upstream first.
    static let both: [FaultDirection] = [.upstream, .downstream]

    /// 0 upstream, 1 downstream: the index of per-direction arrays.
    var index: Int { self == .upstream ? 0 : 1 }
}
