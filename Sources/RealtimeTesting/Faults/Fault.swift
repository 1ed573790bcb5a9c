import RealtimeCore

/// Which way bytes travel through a ``FaultProxy``.
public enum FaultDirection: Sendable, Hashable, CustomStringConvertible {
    /// From the client (the side that connects to the proxy) to the upstream server.
    case upstream
    /// From the upstream server back to the client.
    case downstream

    /// `upstream` or `downstream`.
    public var description: String { self == .upstream ? "upstream" : "downstream" }
}

/// What a ``FaultProxy`` does to one connection.
///
/// Byte offsets count the bytes forwarded in one direction of that connection: `.reset(afterBytes: 100,
/// direction: .downstream)` delivers exactly 100 bytes of the server's answer to the client, then resets.
public indirect enum Fault: Sendable, Hashable, CustomStringConvertible {
    /// Forwards everything unchanged.
    case pass
    /// Accepts the connection, then closes it at once without connecting upstream.
    case refuse
    /// Forwards `afterBytes` bytes in `direction`, then resets both sides (RST, through `SO_LINGER` 0) once
    /// those bytes have left the proxy.
    case reset(afterBytes: Int, direction: FaultDirection)
    /// Forwards `afterBytes` bytes in `direction`, then closes both sides with a FIN.
    case close(afterBytes: Int, direction: FaultDirection)
    /// Forwards `afterBytes` bytes in `direction`, then stops forwarding both ways while keeping both sockets
    /// open: a dead link that only a liveness check can notice. ``FaultProxy/resumeAll()`` heals it.
    case stall(afterBytes: Int, direction: FaultDirection)
    /// Forwards in writes of at most `chunk` bytes each (sockets without Nagle), pausing `pause` between
    /// writes, so frames and TLS records arrive split at every point. A pause is at least the proxy loop's
    /// timer resolution, 1 ms (`epoll_wait`/`poll` count milliseconds); `.zero` writes back to back.
    case dribble(chunk: Int, pause: Duration = .microseconds(50))
    /// Holds every read for `latency` before writing it (in both directions). One read is in flight per
    /// direction, so throughput drops too: meant for tests.
    case latency(Duration)
    /// Several faults on the same connection (for example dribble and a reset); the first cut reached wins.
    case combined([Fault])

    /// The fault as written in Swift, for failure messages.
    public var description: String {
        switch self {
        case .pass: "pass"
        case .refuse: "refuse"
        case .reset(let bytes, let direction): "reset(afterBytes: \(bytes), \(direction))"
        case .close(let bytes, let direction): "close(afterBytes: \(bytes), \(direction))"
        case .stall(let bytes, let direction): "stall(afterBytes: \(bytes), \(direction))"
        case .dribble(let chunk, let pause): "dribble(chunk: \(chunk), pause: \(pause))"
        case .latency(let latency): "latency(\(latency))"
        case .combined(let faults): "combined(\(faults.map(\.description).joined(separator: ", ")))"
        }
    }
}

/// Chooses the ``Fault`` of each connection a ``FaultProxy`` accepts, given its index (0 for the first).
///
/// ```swift
/// let plan = FaultPlan.sequence([.pass, .refuse, .reset(afterBytes: 10, direction: .downstream)])
/// let chaos = FaultPlan.random(seed: 42, faultyConnections: 10)   // print `chaos` in failure messages
/// ```
public struct FaultPlan: Sendable, CustomStringConvertible {
    /// Names the plan in failure messages; a random plan names its seed.
    public let description: String
    /// The seed of a ``random(seed:faultyConnections:passRate:maximumOffset:)`` plan.
    public let seed: UInt64?
    private let choose: @Sendable (Int) -> Fault

    /// A plan from a closure of the connection index (0 for the first connection).
    public init(_ description: String = "custom plan", _ choose: @escaping @Sendable (_ index: Int) -> Fault) {
        self.description = description
        self.seed = nil
        self.choose = choose
    }

    private init(description: String, seed: UInt64?, choose: @escaping @Sendable (Int) -> Fault) {
        self.description = description
        self.seed = seed
        self.choose = choose
    }

    /// The fault for connection number `index` (0-based, in accept order).
    public func fault(forConnection index: Int) -> Fault { choose(index) }

    /// Every connection passes.
    public static var pass: FaultPlan { always(.pass) }

    /// Every connection gets `fault`.
    public static func always(_ fault: Fault) -> FaultPlan {
        FaultPlan(description: "always \(fault)", seed: nil) { _ in fault }
    }

    /// The n-th connection gets `faults[n]`; the ones after the list get `rest`.
    public static func sequence(_ faults: [Fault], then rest: Fault = .pass) -> FaultPlan {
        FaultPlan(description: "sequence \(faults) then \(rest)", seed: nil) { index in
            index < faults.count ? faults[index] : rest
        }
    }

    /// A reproducible random plan: the fault of each connection depends only on `seed` and its index.
    /// - Parameters:
    ///   - faultyConnections: connections from this index on pass (nil: every connection draws a fault).
    ///   - passRate: the share of faulty connections that pass anyway.
    ///   - maximumOffset: the largest byte offset of a cut.
    public static func random(seed: UInt64, faultyConnections: Int? = nil, passRate: Double = 0.25,
                              maximumOffset: Int = 2_048) -> FaultPlan {
        let limit = faultyConnections.map { " for the first \($0) connections" } ?? ""
        return FaultPlan(description: "FaultPlan.random(seed: \(seed))\(limit)", seed: seed) { index in
            if let faultyConnections, index >= faultyConnections { return .pass }
            var generator = SeededRandomNumberGenerator(seed: seed &+ UInt64(index) &* 0xD1B5_4A32_D192_ED03)
            if Double.random(in: 0..<1, using: &generator) < passRate { return .pass }
            let offset = Int.random(in: 0...max(0, maximumOffset), using: &generator)
            let direction: FaultDirection = Bool.random(using: &generator) ? .upstream : .downstream
            switch Int.random(in: 0..<7, using: &generator) {
            case 0: return .refuse
            case 1: return .reset(afterBytes: offset, direction: direction)
            case 2: return .close(afterBytes: offset, direction: direction)
            case 3: return .stall(afterBytes: offset, direction: direction)
            case 4: return .combined([.dribble(chunk: Int.random(in: 1...16, using: &generator)),
                                      .reset(afterBytes: offset, direction: direction)])
            case 5: return .latency(.milliseconds(Int.random(in: 1...40, using: &generator)))
            default: return .dribble(chunk: Int.random(in: 1...64, using: &generator))
            }
        }
    }
}
