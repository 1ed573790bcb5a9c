/// The channels the app joined, in join order: each one's state, its `subscribed()` waiters and the sends
/// buffered for it, with one bound on the buffer across all channels.
///
/// A value owned by `SessionCore`. It hands back what a channel leaves behind (waiters, buffered sends)
/// instead of answering them, because answering a request is the core's business. It holds operations by
/// id; their callers wait in the engine.
struct ChannelTable: Sendable {
    /// A send or request waiting for its channel to be subscribed.
    struct BufferedSend: Hashable, Sendable {
        enum Kind: Hashable, Sendable {
            case send(OperationID)
            /// The rest of the request is in `PendingRequests`.
            case request(RequestID)
        }
        var message: OutgoingMessage
        var kind: Kind
    }

    /// What a channel held when it changed state: callers to answer and sends to send or fail.
    struct Leftovers: Sendable {
        /// The `subscribed()` callers.
        var waiters: [OperationID] = []
        var queue: [BufferedSend] = []
    }

    /// What `withdraw(_:)` took out.
    enum Withdrawn: Hashable, Sendable {
        case waiter(OperationID)
        case buffered(BufferedSend)
    }

    /// A joined channel: a few bytes, because a session may hold tens of thousands. What most channels
    /// never have (an error, waiters, buffered sends) lives in side tables keyed by channel.
    private struct Record: Sendable {
        enum Status: Sendable {
            case pending
            case subscribed(recovered: Bool?)
            /// Failed or ended: the state, with its error, is in `stopped`.
            case stopped
        }

        var status: Status = .pending
        /// Confirmed at least once: the next confirmation is a resubscription.
        var everSubscribed = false
        /// When it was joined, relative to the others: `order` sorts by it.
        var serial: UInt32
    }

    /// The bytes one joined channel's record takes in `records` (for the test that keeps it small).
    static var recordStride: Int { MemoryLayout<Record>.stride }

    private let sendBufferLimit: Int
    private var records: [ChannelID: Record] = [:]
    /// The state of every failed or ended channel (it carries the error).
    private var stopped: [ChannelID: ChannelState] = [:]
    /// The waiters and buffered sends of the channels that have any.
    private var held: [ChannelID: Leftovers] = [:]
    private var nextSerial: UInt32 = 0
    /// Sends and requests buffered across all channels.
    private(set) var bufferedCount = 0
    /// When each channel whose subscription lapsed (the connection ended, or the server dropped it) lost it,
    /// until it is confirmed again, for that confirmation's `gap`: empty while every channel is subscribed.
    private var lapses: [ChannelID: Duration] = [:]
    /// What the server sent with a confirmation that is about to be reported (`.subscriptionPayload`).
    private var subscriptionPayloads: [ChannelID: JSONValue] = [:]

    /// `firstSerial` is for tests of the renumbering after four billion joins.
    init(joined channels: [ChannelID], sendBufferLimit: Int, firstSerial: UInt32 = 0) {
        self.sendBufferLimit = sendBufferLimit
        nextSerial = firstSerial
        for channel in channels where records[channel] == nil { add(channel) }
    }

    /// Channels in the order they were joined. Sorted on each call: it is read once per connection.
    var order: [ChannelID] {
        records.sorted { $0.value.serial < $1.value.serial }.map(\.key)
    }

    /// The state of `channel`, or `nil` when it is not joined.
    func state(of channel: ChannelID) -> ChannelState? {
        guard let record = records[channel] else { return nil }
        switch record.status {
        case .pending: return .pending
        case .subscribed(let recovered): return .subscribed(recovered: recovered)
        case .stopped: return stopped[channel]
        }
    }

    func isSubscribed(_ channel: ChannelID) -> Bool {
        if case .subscribed = records[channel]?.status { return true }
        return false
    }

    private mutating func add(_ channel: ChannelID) {
        if nextSerial == .max {
            // Four billion joins: number the channels afresh, keeping their order.
            for (index, channel) in order.enumerated() { records[channel]?.serial = UInt32(index) }
            nextSerial = UInt32(records.count)
        }
        records[channel] = Record(serial: nextSerial)
        nextSerial += 1
    }

    // MARK: Joining and leaving

    /// Joins `channel`, or joins again one that failed, ended or was left. Returns whether the server must
    /// be asked (false when it is pending or subscribed already).
    mutating func join(_ channel: ChannelID) -> Bool {
        guard let status = records[channel]?.status else {
            add(channel)
            return true
        }
        switch status {
        case .pending, .subscribed:
            return false
        case .stopped:
            records[channel]?.status = .pending
            stopped[channel] = nil
            return true
        }
    }

    /// Forgets `channel`; returns the state it was in and what it held, or `nil` when it was not joined.
    mutating func leave(_ channel: ChannelID) -> (state: ChannelState, leftovers: Leftovers)? {
        guard let state = state(of: channel) else { return nil }
        records[channel] = nil
        stopped[channel] = nil
        lapses[channel] = nil
        let leftovers = held.removeValue(forKey: channel) ?? Leftovers()
        bufferedCount -= leftovers.queue.count
        return (state, leftovers)
    }

    /// Adds a `subscribed()` caller to a joined channel.
    mutating func addWaiter(_ operation: OperationID, to channel: ChannelID) {
        guard records[channel] != nil else { return }
        held[channel, default: Leftovers()].waiters.append(operation)
    }

    // MARK: The send buffer

    /// Why a send on `channel` cannot even be buffered (not joined, failed, ended), if it cannot.
    func unavailability(of channel: ChannelID) -> RealtimeError? {
        switch state(of: channel) {
        case nil:
            return RealtimeError(.channelUnavailable, "the channel was not joined", context: .init(channel: channel))
        case .rejected(let error)?, .endedByServer(let error)?:
            return RealtimeError(.channelUnavailable, "the channel is unavailable: \(error.message)",
                                 context: .init(channel: channel, detail: error.description))
        default:
            return nil
        }
    }

    /// The error for a send on `channel` that does not fit the bounded buffer, or `nil` when it fits.
    func overflow(for channel: ChannelID) -> RealtimeError? {
        guard bufferedCount >= sendBufferLimit else { return nil }
        return RealtimeError(.bufferFull, "the send buffer holds \(sendBufferLimit) messages already",
                             context: .init(channel: channel))
    }

    /// Buffers `message` on its channel until the channel is subscribed.
    mutating func buffer(_ message: OutgoingMessage, as kind: BufferedSend.Kind) {
        guard records[message.channel] != nil else { return }
        held[message.channel, default: Leftovers()].queue.append(BufferedSend(message: message, kind: kind))
        bufferedCount += 1
    }

    /// Takes out the waiter or buffered send behind `operation` (operation ids are unique, so the order the
    /// channels are searched in does not matter).
    mutating func withdraw(_ operation: OperationID) -> Withdrawn? {
        if let channel = held.first(where: { $0.value.waiters.contains(operation) })?.key {
            held[channel]!.waiters.removeAll { $0 == operation }
            dropIfEmpty(channel)
            return .waiter(operation)
        }
        return removeBuffered { $0 == .send(operation) || $0 == .request(RequestID(operation)) }
            .map { .buffered($0.item) }
    }

    /// Takes out the buffered send of `operation`; returns its channel.
    mutating func removeBufferedSend(_ operation: OperationID) -> ChannelID? {
        removeBuffered { $0 == .send(operation) }?.channel
    }

    /// Takes the buffered request `id` out of the buffer, if it is there.
    mutating func removeBufferedRequest(_ id: RequestID) {
        _ = removeBuffered { $0 == .request(id) }
    }

    /// Takes out the first buffered send that `matches`, searching every channel that holds any.
    private mutating func removeBuffered(where matches: (BufferedSend.Kind) -> Bool)
        -> (item: BufferedSend, channel: ChannelID)? {
        var found: (channel: ChannelID, index: Int)?
        for (channel, leftovers) in held {
            if let index = leftovers.queue.firstIndex(where: { matches($0.kind) }) {
                found = (channel, index)
                break
            }
        }
        guard let (channel, index) = found else { return nil }
        bufferedCount -= 1
        let item = held[channel]!.queue.remove(at: index)
        dropIfEmpty(channel)
        return (item, channel)
    }

    private mutating func dropIfEmpty(_ channel: ChannelID) {
        if let leftovers = held[channel], leftovers.waiters.isEmpty, leftovers.queue.isEmpty { held[channel] = nil }
    }

    // MARK: What the server says

    /// Keeps what the server sent with the confirmation about to be reported for `channel`.
    mutating func storePayload(_ payload: JSONValue, for channel: ChannelID) {
        subscriptionPayloads[channel] = payload
    }

    /// The server confirmed `channel`: returns what to report and what it held (waiters to answer, sends to
    /// write now), or `nil` when the channel is not joined.
    mutating func markSubscribed(_ channel: ChannelID, recovered: Bool?,
                                 at now: Duration) -> (info: SubscriptionInfo, leftovers: Leftovers)? {
        guard var record = records[channel] else { return nil }
        let info = SubscriptionInfo(isResubscription: record.everSubscribed, recovered: recovered,
                                    serverPayload: subscriptionPayloads.removeValue(forKey: channel),
                                    gap: lapses.removeValue(forKey: channel).map { now - $0 })
        record.everSubscribed = true
        record.status = .subscribed(recovered: recovered)
        records[channel] = record
        stopped[channel] = nil
        return (info, takeLeftovers(of: channel))
    }

    /// The server refused or ended `channel` (`state` says which); returns what it held, to be failed.
    mutating func markStopped(_ channel: ChannelID, as state: ChannelState) -> Leftovers? {
        guard records[channel] != nil else { return nil }
        switch state {
        case .pending:
            records[channel]?.status = .pending
            stopped[channel] = nil
        case .subscribed(let recovered):
            records[channel]?.status = .subscribed(recovered: recovered)
            stopped[channel] = nil
        case .rejected, .endedByServer, .unsubscribed:
            records[channel]?.status = .stopped
            stopped[channel] = state
        }
        return takeLeftovers(of: channel)
    }

    /// The dialect will confirm `channel` again (its server resubscribes on its own).
    mutating func markPending(_ channel: ChannelID, at now: Duration) {
        guard let record = records[channel] else { return }
        if case .subscribed = record.status { lapses[channel] = now }
        records[channel]?.status = .pending
        stopped[channel] = nil
    }

    /// The connection ended: subscriptions lapse with it, and so do payloads not yet reported.
    mutating func connectionLost(at now: Duration) {
        subscriptionPayloads = [:]
        for index in records.values.indices {
            if case .subscribed = records.values[index].status {
                records.values[index].status = .pending
                lapses[records.keys[index]] = now
            }
        }
    }

    /// Everything the channels held, in join order (channels that held nothing are left out), for a session
    /// that gives up on its pending work.
    mutating func takeAllLeftovers() -> [Leftovers] {
        let taken = held.sorted { (records[$0.key]?.serial ?? 0) < (records[$1.key]?.serial ?? 0) }.map(\.value)
        held = [:]
        bufferedCount = 0
        return taken
    }

    private mutating func takeLeftovers(of channel: ChannelID) -> Leftovers {
        guard let leftovers = held.removeValue(forKey: channel) else { return Leftovers() }
        bufferedCount -= leftovers.queue.count
        return leftovers
    }
}
