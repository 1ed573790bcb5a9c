import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// A connection's subscriptions by identifier literal, without keeping the literals.
///
/// Each entry is keyed by a hash of its identifier literal, and a lookup checks the whole literal, so a
/// subscription costs no string of its own (an Action Cable app may hold thousands). At most
/// ``hotCapacity`` literals are kept to compare; any other is written again from its channel, and then
/// kept in the place of an arbitrary kept one. A session with up to a thousand subscriptions keeps every
/// literal; one with ten thousand keeps about a thousand of them. Identifiers whose hashes are equal take
/// the next free keys; every lookup tries each key up to the longest such run since the table was last
/// empty.
///
/// Broadcasts are routed through a cache of a few identifier texts the server wrote and their channels,
/// compared byte for byte, so that a stream on a few channels needs no lookup per frame. Once it is full, a
/// new text replaces the oldest only as `RouteAdmission` allows (after a hit or ``admitAfterMisses`` misses
/// in a row), so that a stream spread over many channels does not rewrite it on every frame.
struct ActionCableSubscriptionTable {
    enum Phase: Equatable {
        /// Waiting for the settle delay after an `unsubscribe` of the same identifier.
        case settling
        /// `subscribe` sent `attempts` times, no answer yet; the last one went out after guarantor tick
        /// `sentAfterTick`.
        case pending(attempts: Int32, sentAfterTick: UInt32)
        case confirmed
    }

    struct Subscription {
        var channel: ChannelID
        var phase: Phase
    }

    /// How literals are hashed: `.standard` is FNV-1a over their bytes. For tests of the collision path,
    /// `.fixed` gives every literal one hash, and `.lowBits` keeps that many bits of the standard hash, so
    /// that runs of different hashes overlap.
    enum Hashing: Sendable {
        case standard
        case fixed(Int)
        case lowBits(Int)
    }

    /// Where a subscription is: its key does not change while it is held.
    typealias Key = Int

    private(set) var entries: [Key: Subscription] = [:]
    /// Kept literals by key, at most ``keptLiterals``: lookups of these compare bytes instead of writing
    /// the literal again.
    private var hotLiterals: [Key: [UInt8]] = [:]
    /// How many literals a table keeps unless told otherwise: about 120 KiB at most for literals of 64
    /// bytes, and no literal written per lookup while at most this many subscriptions are held.
    static let hotCapacity = 1024
    /// How many literals this table keeps.
    private let keptLiterals: Int
    /// Where entries' literals are written to compare them.
    private var buffers = LiteralBuffers()
    /// Identifier texts as the server wrote them, each with the channel it routes to; forgotten whenever
    /// an entry is removed or replaced.
    private var routes: [(text: [UInt8], channel: ChannelID)] = []
    /// The route ``remember(_:routesTo:)`` replaces next once ``routes`` is full.
    private var nextRoute = 0
    /// How many routes are kept: a few, since each costs a comparison on a miss.
    static let routeCapacity = 4
    /// When a new text replaces a route.
    private var admission = RouteAdmission()
    /// How many missed texts in a row let a new one replace a route that is never used.
    static let admitAfterMisses = RouteAdmission.missesToAdmit
    /// How far past its hash the farthest entry went since the table was last empty.
    private var longestRun = 0
    private let hashing: Hashing

    /// A table hashing as `hashing` says and keeping at most `keptLiterals` literals (tests keep fewer).
    init(hashing: Hashing = .standard, keptLiterals: Int = Self.hotCapacity) {
        precondition(keptLiterals > 0, "a table keeps at least one literal")
        self.hashing = hashing
        self.keptLiterals = keptLiterals
    }

    var isEmpty: Bool { entries.isEmpty }

    subscript(key: Key) -> Subscription { entries[key]! }

    /// Moves the subscription at `key` to `phase`.
    mutating func setPhase(_ phase: Phase, at key: Key) {
        entries[key]?.phase = phase
    }

    /// The key of the subscription whose identifier literal is `literal`, if the table holds one.
    mutating func key(of literal: Substring) -> Key? {
        var literal = literal
        return literal.withUTF8 { bytes in key(of: UnsafeRawBufferPointer(bytes)) }
    }

    /// The key of the subscription whose literal is `literal`, whose hash is `hash`.
    private mutating func key(of literal: UnsafeRawBufferPointer, hash: Int? = nil) -> Key? {
        let hash = hash ?? self.hash(literal)
        for offset in 0...longestRun {
            let key = hash &+ offset
            guard let entry = entries[key] else { continue }
            if let hot = hotLiterals[key] {
                if hot.withUnsafeBytes({ LiteralBuffers.equal($0, literal) }) { return key }
            } else if buffers.literal(of: entry.channel, equals: literal) {
                keepHot(literal, at: key)
                return key
            }
        }
        return nil
    }

    /// Keeps `literal` as the literal of the entry at `key`, in the room of an arbitrary other's when full.
    private mutating func keepHot(_ literal: UnsafeRawBufferPointer, at key: Key) {
        guard hotLiterals.count >= keptLiterals else {
            hotLiterals[key] = Array(literal)
            return
        }
        var room = hotLiterals.remove(at: hotLiterals.startIndex).value
        room.removeAll(keepingCapacity: true)
        room.append(contentsOf: literal)
        hotLiterals[key] = room
    }

    /// Stores `subscription` under `literal` (its channel's identifier literal), replacing the one there.
    mutating func set(_ subscription: Subscription, literal: Substring) {
        var literal = literal
        literal.withUTF8 { bytes in
            let literal = UnsafeRawBufferPointer(bytes)
            let hash = hash(literal)
            if let key = key(of: literal, hash: hash) {
                entries[key] = subscription
                forgetRoutes()
                return
            }
            var offset = 0
            while entries[hash &+ offset] != nil { offset += 1 }
            entries[hash &+ offset] = subscription
            keepHot(literal, at: hash &+ offset)
            longestRun = max(longestRun, offset)
        }
    }

    @discardableResult
    mutating func remove(_ key: Key) -> Subscription? {
        let removed = entries.removeValue(forKey: key)
        hotLiterals.removeValue(forKey: key)
        if entries.isEmpty { longestRun = 0 }
        forgetRoutes()
        return removed
    }

    mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)  // the next connection subscribes as many again
        hotLiterals.removeAll()
        longestRun = 0
        forgetRoutes()
    }

    // MARK: Routes

    /// The channel a broadcast whose identifier the server wrote as `text` goes to, if a remembered
    /// broadcast had exactly that text and its subscription is still held.
    mutating func routedChannel(_ text: Substring) -> ChannelID? {
        guard !routes.isEmpty else { return nil }
        var text = text
        let hit = text.withUTF8 { utf8 in
            let text = UnsafeRawBufferPointer(utf8)
            return routes.firstIndex { $0.text.withUnsafeBytes { LiteralBuffers.equal($0, text) } }
        }
        guard let hit else { return nil }
        admission.noteHit()
        return routes[hit].channel
    }

    /// The channel of the subscription at `key`, to which broadcasts whose identifier the server writes as
    /// `text` go: remembered as a route unless the routes are full and the admission policy (see the
    /// type's documentation) says to wait.
    @discardableResult
    mutating func remember(_ text: Substring, routesTo key: Key) -> ChannelID {
        var text = text
        let channel = self[key].channel
        guard admission.admitsMiss(cacheFull: routes.count == Self.routeCapacity) else { return channel }
        text.withUTF8 { utf8 in
            guard routes.count == Self.routeCapacity else { return routes.append((Array(utf8), channel)) }
            // The oldest route's room is reused: a stream over many channels allocates nothing per frame.
            routes[nextRoute].text.removeAll(keepingCapacity: true)
            routes[nextRoute].text.append(contentsOf: utf8)
            routes[nextRoute].channel = channel
            nextRoute = (nextRoute + 1) % Self.routeCapacity
        }
        return channel
    }

    private mutating func forgetRoutes() {
        routes.removeAll(keepingCapacity: true)
        nextRoute = 0
    }

    private func hash(_ literal: UnsafeRawBufferPointer) -> Int {
        switch hashing {
        case .standard: Self.standardHash(literal)
        case .fixed(let value): value
        case .lowBits(let bits): Self.standardHash(literal) & (1 << bits - 1)
        }
    }

    /// FNV-1a over 8-byte words: the dictionary hashes the result again with its own seed, and a lookup
    /// checks the whole literal, so this only has to spread literals that differ in a few bytes.
    private static func standardHash(_ literal: UnsafeRawBufferPointer) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var offset = 0
        while offset + 8 <= literal.count {
            hash = (hash ^ literal.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x100_0000_01b3
            offset += 8
        }
        while offset < literal.count {
            hash = (hash ^ UInt64(literal[offset])) &* 0x100_0000_01b3
            offset += 1
        }
        return Int(truncatingIfNeeded: hash)
    }
}

/// Room to write identifier literals in, kept from lookup to lookup so that checking one allocates nothing.
struct LiteralBuffers {
    private var literal: [UInt8] = []
    private var identifier: [UInt8] = []

    /// Whether `channel`'s identifier literal is exactly `text`.
    mutating func literal(of channel: ChannelID, equals text: UnsafeRawBufferPointer) -> Bool {
        // A held channel was accepted when it subscribed, so its identifier can be written again.
        guard (try? ActionCableIdentifier.writeLiteral(of: channel, into: &literal, scratch: &identifier)) != nil
        else { return false }
        return literal.withUnsafeBytes { Self.equal($0, text) }
    }

    /// Whether `a` and `b` hold the same bytes.
    static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard let first = a.baseAddress, let second = b.baseAddress else { return true }
        return memcmp(first, second, a.count) == 0
    }
}
