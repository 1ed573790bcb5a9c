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

    private struct Record: Sendable {
        var state: ChannelState = .pending
        var leftovers = Leftovers()
        /// Confirmed at least once: the next confirmation is a resubscription.
        var everSubscribed = false
    }

    private let sendBufferLimit: Int
    private var records: [ChannelID: Record] = [:]
    /// Channels in the order they were joined.
    private(set) var order: [ChannelID] = []
    /// Sends and requests buffered across all channels.
    private(set) var bufferedCount = 0
    /// What the server sent with a confirmation that is about to be reported (`.subscriptionPayload`).
    private var subscriptionPayloads: [ChannelID: JSONValue] = [:]

    init(joined channels: [ChannelID], sendBufferLimit: Int) {
        self.sendBufferLimit = sendBufferLimit
        for channel in channels where records[channel] == nil {
            records[channel] = Record()
            order.append(channel)
        }
    }

    /// The state of `channel`, or `nil` when it is not joined.
    func state(of channel: ChannelID) -> ChannelState? { records[channel]?.state }

    func isSubscribed(_ channel: ChannelID) -> Bool {
        if case .subscribed = records[channel]?.state { return true }
        return false
    }

    // MARK: Joining and leaving

    /// Joins `channel`, or joins again one that failed, ended or was left. Returns whether the server must
    /// be asked (false when it is pending or subscribed already).
    mutating func join(_ channel: ChannelID) -> Bool {
        guard let state = records[channel]?.state else {
            records[channel] = Record()
            order.append(channel)
            return true
        }
        switch state {
        case .pending, .subscribed:
            return false
        case .failed, .ended, .left:
            records[channel]?.state = .pending
            return true
        }
    }

    /// Forgets `channel`; returns the state it was in and what it held, or `nil` when it was not joined.
    mutating func leave(_ channel: ChannelID) -> (state: ChannelState, leftovers: Leftovers)? {
        guard let record = records.removeValue(forKey: channel) else { return nil }
        order.removeAll { $0 == channel }
        bufferedCount -= record.leftovers.queue.count
        return (record.state, record.leftovers)
    }

    /// Adds a `subscribed()` caller to a joined channel.
    mutating func addWaiter(_ operation: OperationID, to channel: ChannelID) {
        records[channel]?.leftovers.waiters.append(operation)
    }

    // MARK: The send buffer

    /// Why a send on `channel` cannot even be buffered (not joined, failed, ended), if it cannot.
    func unavailability(of channel: ChannelID) -> RealtimeError? {
        guard let record = records[channel] else {
            return RealtimeError(.channelUnavailable, "the channel was not joined", context: .init(channel: channel))
        }
        switch record.state {
        case .failed(let error), .ended(let error):
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
        records[message.channel]?.leftovers.queue.append(BufferedSend(message: message, kind: kind))
        bufferedCount += 1
    }

    /// Takes out the waiter or buffered send behind `operation`, looking channel by channel in join order.
    mutating func withdraw(_ operation: OperationID) -> Withdrawn? {
        for channel in order {
            if let index = records[channel]?.leftovers.waiters.firstIndex(of: operation) {
                return .waiter(records[channel]!.leftovers.waiters.remove(at: index))
            }
            if let item = removeBuffered(on: channel, where: { kind in
                kind == .send(operation) || kind == .request(RequestID(operation))
            }) {
                return .buffered(item)
            }
        }
        return nil
    }

    /// Takes out the buffered send of `operation`; returns its channel.
    mutating func removeBufferedSend(_ operation: OperationID) -> ChannelID? {
        for channel in order {
            if removeBuffered(on: channel, where: { $0 == .send(operation) }) != nil { return channel }
        }
        return nil
    }

    /// Takes the buffered request `id` out of the buffer, if it is there.
    mutating func removeBufferedRequest(_ id: RequestID) {
        for channel in order {
            if removeBuffered(on: channel, where: { $0 == .request(id) }) != nil { return }
        }
    }

    private mutating func removeBuffered(on channel: ChannelID,
                                         where matches: (BufferedSend.Kind) -> Bool) -> BufferedSend? {
        guard let index = records[channel]?.leftovers.queue.firstIndex(where: { matches($0.kind) }) else {
            return nil
        }
        bufferedCount -= 1
        return records[channel]!.leftovers.queue.remove(at: index)
    }

    // MARK: What the server says

    /// Keeps what the server sent with the confirmation about to be reported for `channel`.
    mutating func storePayload(_ payload: JSONValue, for channel: ChannelID) {
        subscriptionPayloads[channel] = payload
    }

    /// The server confirmed `channel`: returns what to report and what it held (waiters to answer, sends to
    /// write now), or `nil` when the channel is not joined.
    mutating func markSubscribed(_ channel: ChannelID,
                                 recovered: Bool?) -> (info: SubscriptionInfo, leftovers: Leftovers)? {
        guard var record = records[channel] else { return nil }
        let info = SubscriptionInfo(isResubscription: record.everSubscribed, recovered: recovered,
                                    serverPayload: subscriptionPayloads.removeValue(forKey: channel))
        record.everSubscribed = true
        record.state = .subscribed(recovered: recovered)
        let leftovers = takeLeftovers(of: &record)
        records[channel] = record
        return (info, leftovers)
    }

    /// The server refused or ended `channel` (`state` says which); returns what it held, to be failed.
    mutating func markStopped(_ channel: ChannelID, as state: ChannelState) -> Leftovers? {
        guard var record = records[channel] else { return nil }
        record.state = state
        let leftovers = takeLeftovers(of: &record)
        records[channel] = record
        return leftovers
    }

    /// The dialect will confirm `channel` again (its server resubscribes on its own).
    mutating func markPending(_ channel: ChannelID) {
        records[channel]?.state = .pending
    }

    /// The connection ended: subscriptions lapse with it, and so do payloads not yet reported.
    mutating func connectionLost() {
        subscriptionPayloads = [:]
        for channel in order where isSubscribed(channel) {
            records[channel]?.state = .pending
        }
    }

    /// Everything every channel held, in join order, for a session that gives up on its pending work.
    mutating func takeAllLeftovers() -> [Leftovers] {
        order.compactMap { channel in
            guard var record = records[channel] else { return nil }
            let leftovers = takeLeftovers(of: &record)
            records[channel] = record
            return leftovers
        }
    }

    private mutating func takeLeftovers(of record: inout Record) -> Leftovers {
        let leftovers = record.leftovers
        record.leftovers = Leftovers()
        bufferedCount -= leftovers.queue.count
        return leftovers
    }
}
