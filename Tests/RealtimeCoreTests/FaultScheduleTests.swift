import RealtimeTesting
import Testing

/// What one direction of a schedule did when driven to the end of its bytes.
private struct Transcript: Equatable {
    var writes: [Range<Int>] = []
    /// Every deadline waited for, in order.
    var waits: [Duration] = []
    /// The action it stopped at: `.read` when the bytes ran out, or a hold, reset or close.
    var end: FaultSchedule.Action = .hold

    var forwarded: Int { writes.last?.upperBound ?? 0 }
}

/// Drives `direction` of `schedule` as the proxy does, with `available` bytes at its source (read at most
/// `readSize` at a time) and a manual clock moved to each deadline it asks to wait for.
private func drive(_ schedule: inout FaultSchedule, _ direction: FaultDirection, available: Int,
                   readSize: Int = .max, clock: ManualClock = ManualClock()) -> Transcript {
    var transcript = Transcript()
    var remaining = available
    for _ in 0..<100_000 {
        let action = schedule.next(direction, at: clock.now())
        switch action {
        case .read(let limit) where remaining > 0:
            let count = min(remaining, limit, readSize)
            remaining -= count
            schedule.received(count, direction, at: clock.now())
        case .write(let range):
            transcript.writes.append(range)
            schedule.wrote(range.count, direction, at: clock.now())
        case .wait(let deadline):
            transcript.waits.append(deadline)
            clock.advance(by: deadline - clock.now())
        case .read, .hold, .reset, .close:
            transcript.end = action
            return transcript
        }
    }
    Issue.record("the schedule never settled")
    return transcript
}

@Suite("FaultSchedule: a fault as bytes and deadlines, without sockets or sleeps")
struct FaultScheduleTests {
    @Test("pass: unlimited reads, each written whole in one write, both directions alike")
    func passForwardsEverything() {
        var schedule = FaultSchedule(.pass)
        #expect(schedule.next(.upstream, at: .zero) == .read(upTo: .max))
        schedule.received(1_000, .upstream, at: .zero)
        #expect(schedule.next(.upstream, at: .zero) == .write(0..<1_000))
        #expect(schedule.next(.downstream, at: .zero) == .read(upTo: .max))  // one read in flight per direction
        schedule.wrote(400, .upstream, at: .zero)  // a short write: the rest comes next
        #expect(schedule.next(.upstream, at: .zero) == .write(400..<1_000))
        schedule.wrote(600, .upstream, at: .zero)
        #expect(schedule.next(.upstream, at: .zero) == .read(upTo: .max))
        #expect(schedule.forwarded(.upstream) == 1_000 && schedule.read(.upstream) == 1_000)
        let transcript = drive(&schedule, .downstream, available: 5_000, readSize: 2_048)
        #expect(transcript.writes == [0..<2_048, 2_048..<4_096, 4_096..<5_000])
        #expect(transcript.waits.isEmpty && transcript.end == .read(upTo: .max))
    }

    @Test("refuse: refuses, and a live connection given it closes at once")
    func refuseCloses() {
        var schedule = FaultSchedule(.refuse)
        #expect(schedule.refuses)
        #expect(schedule.next(.upstream, at: .zero) == .close)
        var live = FaultSchedule(.pass)
        live.apply(.refuse)
        #expect(live.next(.downstream, at: .zero) == .close)
    }

    @Test("reset, close and stall(afterBytes:) cut after exactly that many bytes in their direction",
          arguments: [0, 1, 99, 100, 4_095])
    func cutsAreByteExact(offset: Int) {
        for direction in [FaultDirection.upstream, .downstream] {
            var reset = FaultSchedule(.reset(afterBytes: offset, direction: direction))
            let resetRun = drive(&reset, direction, available: 10_000, readSize: 64)
            #expect(resetRun.forwarded == offset && resetRun.end == .reset(drain: direction))
            #expect(reset.read(direction) == offset)  // nothing read past the cut
            #expect(reset.next(direction == .upstream ? .downstream : .upstream, at: .zero) == .reset(drain: direction))

            var close = FaultSchedule(.close(afterBytes: offset, direction: direction))
            let closeRun = drive(&close, direction, available: 10_000, readSize: 64)
            #expect(closeRun.forwarded == offset && closeRun.end == .close)

            var stall = FaultSchedule(.stall(afterBytes: offset, direction: direction))
            let stallRun = drive(&stall, direction, available: 10_000, readSize: 64)
            #expect(stallRun.forwarded == offset && stallRun.end == .hold && stall.isStalled)
        }
    }

    @Test("a cut limits reads in its own direction only")
    func cutLimitsItsDirection() {
        var schedule = FaultSchedule(.reset(afterBytes: 100, direction: .downstream))
        #expect(schedule.next(.downstream, at: .zero) == .read(upTo: 100))
        #expect(schedule.next(.upstream, at: .zero) == .read(upTo: .max))
        schedule.received(30, .downstream, at: .zero)
        schedule.wrote(30, .downstream, at: .zero)
        #expect(schedule.next(.downstream, at: .zero) == .read(upTo: 70))
        let upstream = drive(&schedule, .upstream, available: 1_000)
        #expect(upstream.forwarded == 1_000 && upstream.end == .read(upTo: .max))
    }

    @Test("stall holds both directions, bytes already read included, until resume; then all of it moves")
    func stallHoldsUntilResume() {
        var schedule = FaultSchedule(.stall(afterBytes: 10, direction: .upstream))
        schedule.received(50, .downstream, at: .zero)  // waiting downstream when the stall starts
        let first = drive(&schedule, .upstream, available: 30)
        #expect(first.forwarded == 10 && first.end == .hold)
        #expect(schedule.next(.downstream, at: .zero) == .hold)
        schedule.resume()
        #expect(schedule.next(.downstream, at: .zero) == .write(0..<50))
        let rest = drive(&schedule, .upstream, available: 20)
        #expect(rest.writes == [10..<30] && rest.end == .read(upTo: .max))  // the stall does not come back
        schedule.stall()
        #expect(schedule.next(.upstream, at: .zero) == .hold)
    }

    @Test("dribble: writes of at most `chunk` bytes, each after the previous one's pause")
    func dribbleChunksWithPauses() {
        let clock = ManualClock()
        var schedule = FaultSchedule(.dribble(chunk: 3, pause: .milliseconds(2)))
        let transcript = drive(&schedule, .downstream, available: 10, clock: clock)
        #expect(transcript.writes == [0..<3, 3..<6, 6..<9, 9..<10])
        #expect(transcript.waits == [.milliseconds(2), .milliseconds(4), .milliseconds(6)])
        #expect(clock.now() == .milliseconds(6))
        // The pause after the last write still holds the next read's first write.
        schedule.received(5, .downstream, at: clock.now())
        #expect(schedule.next(.downstream, at: clock.now()) == .wait(until: .milliseconds(8)))
        #expect(schedule.next(.downstream, at: .milliseconds(8)) == .write(10..<13))
    }

    @Test("dribble without a pause, and the default pause of 50 µs; a chunk under 1 counts as 1")
    func dribbleVariants() {
        var noPause = FaultSchedule(.dribble(chunk: 1, pause: .zero))
        let fast = drive(&noPause, .upstream, available: 4)
        #expect(fast.writes == [0..<1, 1..<2, 2..<3, 3..<4] && fast.waits.isEmpty)
        var standard = FaultSchedule(.dribble(chunk: 2))
        #expect(drive(&standard, .upstream, available: 5).waits == [.microseconds(50), .microseconds(100)])
        var tiny = FaultSchedule(.dribble(chunk: 0, pause: .zero))
        #expect(drive(&tiny, .upstream, available: 2).writes == [0..<1, 1..<2])
    }

    @Test("latency: each read is held until its deadline, then written whole")
    func latencyHoldsEachRead() {
        var schedule = FaultSchedule(.latency(.milliseconds(5)))
        schedule.received(100, .upstream, at: .milliseconds(10))
        #expect(schedule.next(.upstream, at: .milliseconds(10)) == .wait(until: .milliseconds(15)))
        #expect(schedule.next(.upstream, at: .microseconds(14_999)) == .wait(until: .milliseconds(15)))
        #expect(schedule.next(.upstream, at: .milliseconds(15)) == .write(0..<100))
        schedule.wrote(100, .upstream, at: .milliseconds(15))
        schedule.received(1, .upstream, at: .milliseconds(16))
        #expect(schedule.next(.upstream, at: .milliseconds(16)) == .wait(until: .milliseconds(21)))
        // Each direction has its own hold.
        #expect(schedule.next(.downstream, at: .milliseconds(16)) == .read(upTo: .max))
    }

    @Test("combined dribble and latency: the read waits out the latency, then dribbles")
    func dribbleWithLatency() {
        let clock = ManualClock()
        var schedule = FaultSchedule(.combined([.dribble(chunk: 4, pause: .milliseconds(1)), .latency(.milliseconds(5))]))
        let transcript = drive(&schedule, .upstream, available: 10, clock: clock)
        #expect(transcript.writes == [0..<4, 4..<8, 8..<10])
        #expect(transcript.waits == [.milliseconds(5), .milliseconds(6), .milliseconds(7)])
    }

    @Test("combined dribble and reset: the chunk that reaches the cut is shortened to it")
    func dribbleThenReset() {
        var schedule = FaultSchedule(.combined([.dribble(chunk: 4, pause: .zero),
                                                .reset(afterBytes: 10, direction: .downstream)]))
        let transcript = drive(&schedule, .downstream, available: 100)
        #expect(transcript.writes == [0..<4, 4..<8, 8..<10] && transcript.end == .reset(drain: .downstream))
    }

    @Test("combined cuts: the first reached wins, whatever the order listed; a tie goes to the one listed first")
    func combinedOrdering() {
        var nearest = FaultSchedule(.combined([.close(afterBytes: 10, direction: .upstream),
                                               .reset(afterBytes: 5, direction: .upstream)]))
        #expect(drive(&nearest, .upstream, available: 100) == Transcript(writes: [0..<5], end: .reset(drain: .upstream)))

        var resetFirst = FaultSchedule(.combined([.reset(afterBytes: 5, direction: .downstream),
                                                  .close(afterBytes: 5, direction: .downstream)]))
        #expect(drive(&resetFirst, .downstream, available: 100).end == .reset(drain: .downstream))
        var closeFirst = FaultSchedule(.combined([.close(afterBytes: 5, direction: .downstream),
                                                  .reset(afterBytes: 5, direction: .downstream)]))
        #expect(drive(&closeFirst, .downstream, available: 100).end == .close)

        // A stall that wins a tie drops the cut tied with it: after resume, forwarding goes on.
        var stallFirst = FaultSchedule(.combined([.stall(afterBytes: 5, direction: .upstream),
                                                  .reset(afterBytes: 5, direction: .upstream)]))
        #expect(drive(&stallFirst, .upstream, available: 8).end == .hold)
        stallFirst.resume()
        #expect(drive(&stallFirst, .upstream, available: 3) == Transcript(writes: [5..<8], end: .read(upTo: .max)))

        // Cuts in both directions: the one whose bytes flow first.
        var both = FaultSchedule(.combined([.reset(afterBytes: 10, direction: .upstream),
                                            .close(afterBytes: 3, direction: .downstream)]))
        #expect(drive(&both, .upstream, available: 6).end == .read(upTo: 4))
        #expect(drive(&both, .downstream, available: 6) == Transcript(writes: [0..<3], end: .close))
        #expect(both.next(.upstream, at: .zero) == .close)

        // A pass inside a combination lifts nothing.
        var withPass = FaultSchedule(.combined([.reset(afterBytes: 2, direction: .upstream), .pass]))
        #expect(drive(&withPass, .upstream, available: 9).end == .reset(drain: .upstream))
    }

    @Test("apply counts offsets from the bytes forwarded so far; pass lifts cuts, dribble and latency")
    func applyCountsFromNow() {
        var schedule = FaultSchedule(.pass)
        _ = drive(&schedule, .downstream, available: 500)
        schedule.apply(.reset(afterBytes: 100, direction: .downstream))
        #expect(schedule.next(.downstream, at: .zero) == .read(upTo: 100))
        #expect(drive(&schedule, .downstream, available: 1_000).forwarded == 600)

        var lifted = FaultSchedule(.combined([.dribble(chunk: 1), .latency(.seconds(1)),
                                              .close(afterBytes: 3, direction: .upstream)]))
        lifted.received(2, .upstream, at: .zero)
        #expect(lifted.next(.upstream, at: .zero) == .wait(until: .seconds(1)))
        lifted.apply(.pass)
        #expect(lifted.next(.upstream, at: .zero) == .write(0..<2))  // the hold is lifted too
        #expect(drive(&lifted, .upstream, available: 10).forwarded == 12)
    }

    @Test("live ends: the first asked for wins and outranks a stall; a stall asked for holds everything")
    func liveEnds() {
        var schedule = FaultSchedule(.pass)
        schedule.stall()
        #expect(schedule.next(.upstream, at: .zero) == .hold)
        schedule.end(.reset)
        schedule.end(.close)
        #expect(schedule.next(.upstream, at: .zero) == .reset(drain: nil))
        #expect(schedule.next(.downstream, at: .zero) == .reset(drain: nil))

        var closing = FaultSchedule(.reset(afterBytes: 50, direction: .upstream))
        closing.end(.close)
        #expect(closing.next(.upstream, at: .zero) == .close)
    }

    @Test("a stall reached while the other direction waits out its latency holds that too")
    func stallOutranksWaits() {
        var schedule = FaultSchedule(.combined([.latency(.milliseconds(3)), .stall(afterBytes: 0, direction: .downstream)]))
        schedule.received(4, .upstream, at: .zero)
        #expect(schedule.next(.upstream, at: .zero) == .hold)
        schedule.resume()
        #expect(schedule.next(.upstream, at: .zero) == .wait(until: .milliseconds(3)))
    }
}
