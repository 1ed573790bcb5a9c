/// Whether an open connection still shows signs of life, by the dialect's `LivenessRule`.
///
/// A value owned by `SessionCore`: it records when something last arrived and when the client last pinged,
/// and says what to do next; the core sends the ping, arms the timer or drops the connection.
struct LivenessMonitor: Sendable {
    /// What a check concluded.
    enum Step: Equatable, Sendable {
        /// Nothing to do now: no rule, or a ping is already in flight.
        case nothingToDo
        /// The link went silent past its deadline.
        case dead
        /// Send `frame` now and check again after `checkAfter`.
        case ping(TransportFrame, checkAfter: Duration)
        /// Alive so far; check again after the delay.
        case checkAfter(Duration)
    }

    private(set) var rule: LivenessRule = .none
    /// When anything last arrived on the connection.
    private(set) var lastReceivedAt: Duration = .zero
    /// When the unanswered ping went out; `nil` when none is in flight.
    private(set) var pingSentAt: Duration?

    /// The dialect announced how to watch the link; a ping in flight under the old rule no longer counts.
    mutating func adopt(_ rule: LivenessRule) {
        self.rule = rule
        pingSentAt = nil
    }

    /// The connection ended: nothing to watch until the next one sets a rule.
    mutating func stop() {
        adopt(.none)
    }

    /// A sign of life (a connection opening, frames arriving) at `now`.
    mutating func received(at now: Duration) {
        lastReceivedAt = now
    }

    /// The check the liveness timer runs at `now`.
    mutating func check(at now: Duration) -> Step {
        switch rule {
        case .none:
            return .nothingToDo
        case .serverPings(let interval, let grace):
            let deadline = lastReceivedAt + interval + grace
            return now >= deadline ? .dead : .checkAfter(deadline - now)
        case .clientPings(let idle, let timeout, let ping):
            if let sentAt = pingSentAt {
                if lastReceivedAt >= sentAt {
                    pingSentAt = nil  // answered: the next ping is due after a quiet `idle`
                    return .checkAfter(max(.zero, lastReceivedAt + idle - now))
                }
                return now >= sentAt + timeout ? .dead : .checkAfter(sentAt + timeout - now)
            }
            if now >= lastReceivedAt + idle { return sendPing(ping, at: now, timeout: timeout) }
            return .checkAfter(lastReceivedAt + idle - now)
        }
    }

    /// An out-of-turn check (the app came back to the foreground, the network changed): client-ping
    /// dialects ping at once unless a ping is already in flight; server-ping dialects check the deadline.
    mutating func probe(at now: Duration) -> Step {
        switch rule {
        case .none:
            return .nothingToDo
        case .serverPings:
            return check(at: now)
        case .clientPings(_, let timeout, let ping):
            guard pingSentAt == nil else { return .nothingToDo }
            return sendPing(ping, at: now, timeout: timeout)
        }
    }

    private mutating func sendPing(_ ping: TransportFrame, at now: Duration, timeout: Duration) -> Step {
        pingSentAt = now
        return .ping(ping, checkAfter: timeout)
    }
}
