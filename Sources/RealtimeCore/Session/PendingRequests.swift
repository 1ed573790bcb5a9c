/// Requests waiting for their answer, dialect commands waiting for the connection, and cancellations that
/// arrived before the operation they cancel.
///
/// A value owned by `SessionCore`, which arms and stops the deadlines and answers what it takes out. A
/// request's caller waits in the engine, under the operation the request is named after.
struct PendingRequests: Sendable {
    struct Request: Sendable {
        /// The connection the request was written on; `nil` while it waits.
        var sentOn: UInt64?
        /// A dialect-specific command waiting for the connection.
        var custom: (name: String, payload: JSONValue)?
        /// What was asked, for the message when no answer comes.
        var subject: Subject?
    }

    /// A request's event (or command) name, its channel and its timeout: what a timed-out caller is told,
    /// instead of the internal request id.
    struct Subject: Sendable {
        var name: String
        /// `nil` for a dialect command.
        var channel: ChannelID?
        var timeout: Duration

        var timeoutMessage: String {
            guard let channel else { return "no answer to \"\(name)\" within \(timeout.secondsText)" }
            return "no acknowledgement for \"\(name)\" on \(channel) within \(timeout.secondsText)"
        }
    }

    /// The newest early cancellations kept; older ones belong to operations that will not come.
    static let earlyCancellationLimit = 64

    private var requests: [RequestID: Request] = [:]
    /// Commands to write once connected, in the order they were made.
    private var customQueue: [RequestID] = []
    private var earlyCancellations: [OperationID] = []

    /// A request written on `connection`, or buffered with its channel when `sentOn` is `nil`.
    mutating func add(_ id: RequestID, sentOn connection: UInt64?, subject: Subject? = nil) {
        requests[id] = Request(sentOn: connection, subject: subject)
    }

    /// A dialect command to write once the session is connected.
    mutating func addCustom(_ id: RequestID, name: String, payload: JSONValue, timeout: Duration? = nil) {
        requests[id] = Request(sentOn: nil, custom: (name, payload),
                               subject: timeout.map { Subject(name: name, channel: nil, timeout: $0) })
        customQueue.append(id)
    }

    /// Takes out request `id` (answered, timed out, withdrawn or failed), if it is still pending.
    mutating func remove(_ id: RequestID) -> Request? {
        guard let request = requests.removeValue(forKey: id) else { return nil }
        if request.custom != nil { customQueue.removeAll { $0 == id } }
        return request
    }

    /// A buffered request is being written on `connection`; false when it is no longer pending.
    mutating func markWritten(_ id: RequestID, on connection: UInt64?) -> Bool {
        guard requests[id] != nil else { return false }
        requests[id]?.sentOn = connection
        return true
    }

    /// The commands waiting for the connection, in order; each is written with `writeCustom(_:on:)`.
    mutating func takeCustomQueue() -> [RequestID] {
        defer { customQueue = [] }
        return customQueue
    }

    /// Marks command `id` written on `connection` and returns it, or `nil` when it is no longer pending.
    mutating func writeCustom(_ id: RequestID, on connection: UInt64) -> (name: String, payload: JSONValue)? {
        guard var request = requests[id], let command = request.custom else { return nil }
        request.sentOn = connection
        request.custom = nil
        requests[id] = request
        return command
    }

    /// Takes out the requests written on a connection that ended: their answers can no longer arrive.
    mutating func removeWritten() -> [(id: RequestID, request: Request)] {
        let written = requests.filter { $0.value.sentOn != nil }
        for id in written.keys { requests[id] = nil }
        return written.map { ($0.key, $0.value) }
    }

    /// Takes out every request, for a session that gives up on its pending work.
    mutating func removeAll() -> [(id: RequestID, request: Request)] {
        defer {
            requests = [:]
            customQueue = []
        }
        return requests.map { ($0.key, $0.value) }
    }

    // MARK: Early cancellations

    /// The task behind `operation` (of any kind) was cancelled before the operation reached the session.
    mutating func rememberEarlyCancellation(_ operation: OperationID) {
        earlyCancellations.append(operation)
        if earlyCancellations.count > Self.earlyCancellationLimit { earlyCancellations.removeFirst() }
    }

    /// Whether `operation` was cancelled before it arrived; forgets the cancellation.
    mutating func takeEarlyCancellation(_ operation: OperationID) -> Bool {
        guard let index = earlyCancellations.firstIndex(of: operation) else { return false }
        earlyCancellations.remove(at: index)
        return true
    }
}
