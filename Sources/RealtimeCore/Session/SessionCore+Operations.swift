/// Channels, sends, requests and dialect commands, their deadlines and their cancellation. Every caller is
/// held by its operation id and answered with an `.answer` effect.
extension SessionCore {
    // MARK: Channels

    mutating func subscribe(_ channel: ChannelID, effects: inout [EngineEffect]) {
        if channels.join(channel), handshakeDone {
            runMachine(effects: &effects) { $0.handle(.subscribe(channel), actions: &$1) }
        }
    }

    mutating func awaitSubscription(_ channel: ChannelID, _ operation: OperationID, effects: inout [EngineEffect]) {
        guard let channelState = channels.state(of: channel) else {
            let error = RealtimeError(.channelUnavailable, "the channel was not joined",
                                      context: .init(channel: channel))
            effects.append(.answer(.failed(operation, error)))
            return
        }
        switch channelState {
        case .subscribed(let recovered):
            effects.append(.answer(.subscribed(operation, recovered: recovered)))
        case .rejected(let error), .endedByServer(let error):
            effects.append(.answer(.failed(operation, error)))
        case .unsubscribed:
            let error = RealtimeError(.channelUnavailable, "the channel was left", context: .init(channel: channel))
            effects.append(.answer(.failed(operation, error)))
        case .pending:
            if case .failed(let error) = state {
                effects.append(.answer(.failed(operation, error)))
            } else {
                channels.addWaiter(operation, to: channel)
            }
        }
    }

    mutating func unsubscribe(_ channel: ChannelID, effects: inout [EngineEffect]) {
        guard let (lastState, leftovers) = channels.leave(channel) else { return }
        deliveries.append(.lifecycle(ChannelLifecycleEvent(channel: channel, kind: .unsubscribed)))
        let error = RealtimeError(.channelUnavailable, "the channel was left", context: .init(channel: channel))
        failWaitersAndQueue(leftovers, with: error, effects: &effects)
        switch lastState {
        case .pending, .subscribed:
            if handshakeDone {
                runMachine(effects: &effects) { $0.handle(.unsubscribe(channel), actions: &$1) }
            }
        case .rejected, .endedByServer, .unsubscribed:
            break
        }
    }

    /// The server confirmed `channel`: its waiters are answered and what it buffered is written.
    mutating func channelSubscribed(_ channel: ChannelID, recovered: Bool?, effects: inout [EngineEffect]) {
        guard let (info, leftovers) = channels.markSubscribed(channel, recovered: recovered, at: now) else { return }
        for operation in leftovers.waiters { effects.append(.answer(.subscribed(operation, recovered: recovered))) }
        deliveries.append(.lifecycle(ChannelLifecycleEvent(channel: channel, kind: .subscribed(info))))
        for item in leftovers.queue {
            switch item.kind {
            case .send(let operation):
                cancel(.sendDeadline(operation), effects: &effects)
                sendNow(item.message, operation, effects: &effects)
            case .request(let id):
                guard requests.markWritten(id, on: currentConnection) else { continue }
                runMachine(effects: &effects) { $0.handle(.request(item.message, id), actions: &$1) }
            }
        }
    }

    /// How the server stopped a channel; the state, the error and the lifecycle event all follow from it.
    enum ChannelStop {
        case rejected(RealtimeError)
        case endedByServer(RealtimeError)

        var error: RealtimeError {
            switch self {
            case .rejected(let error), .endedByServer(let error): error
            }
        }

        var state: ChannelState {
            switch self {
            case .rejected(let error): .rejected(error)
            case .endedByServer(let error): .endedByServer(error)
            }
        }

        var lifecycle: ChannelLifecycleEvent.Kind {
            switch self {
            case .rejected(let error): .rejected(error)
            case .endedByServer(let error): .endedByServer(error)
            }
        }
    }

    mutating func channelStopped(_ channel: ChannelID, _ stop: ChannelStop, effects: inout [EngineEffect]) {
        guard let leftovers = channels.markStopped(channel, as: stop.state) else { return }
        failWaitersAndQueue(leftovers, with: stop.error, effects: &effects)
        deliveries.append(.error(stop.error))
        deliveries.append(.lifecycle(ChannelLifecycleEvent(channel: channel, kind: stop.lifecycle)))
    }

    // MARK: Sends and requests

    /// Why a send cannot even be buffered, if it cannot.
    private func refusal(for channel: ChannelID) -> RealtimeError? {
        switch state {
        case .disconnected:
            return RealtimeError(.disconnected, "the session is disconnected", context: .init(channel: channel))
        case .failed(let error):
            return RealtimeError(.sessionFailed, "the session failed: \(error.message)",
                                 context: .init(channel: channel, detail: error.description))
        default:
            break
        }
        return channels.unavailability(of: channel)
    }

    private func canSendNow(on channel: ChannelID) -> Bool {
        handshakeDone && channels.isSubscribed(channel)
    }

    mutating func send(_ message: OutgoingMessage, operation: OperationID, effects: inout [EngineEffect]) {
        if let error = refusal(for: message.channel) {
            effects.append(.answer(.failed(operation, error)))
            return
        }
        if canSendNow(on: message.channel) {
            sendNow(message, operation, effects: &effects)
            return
        }
        if message.volatile {
            effects.append(.log(.debug, "dropped volatile \(message.event) on \(message.channel): not connected"))
            effects.append(.answer(.done(operation)))
            return
        }
        if let error = channels.overflow(for: message.channel) {
            effects.append(.answer(.failed(operation, error)))
            return
        }
        channels.buffer(message, as: .send(operation))
        schedule(.sendDeadline(operation), after: sendTimeout, effects: &effects)
    }

    /// Hands `message` to the machine and answers the send with what the machine made of it.
    private mutating func sendNow(_ message: OutgoingMessage, _ operation: OperationID, effects: inout [EngineEffect]) {
        sendRefusal = nil
        runMachine(effects: &effects) { $0.handle(.send(message), actions: &$1) }
        let result: Result<Void, RealtimeError> = sendRefusal.map { .failure($0) } ?? .success(())
        sendRefusal = nil
        effects.append(.answer(OperationAnswer(operation, result)))
    }

    mutating func request(_ message: OutgoingMessage, timeout: Duration, operation: OperationID,
                          effects: inout [EngineEffect]) {
        if let error = refusal(for: message.channel) {
            effects.append(.answer(.failed(operation, error)))
            return
        }
        let id = RequestID(operation)
        let subject = PendingRequests.Subject(name: message.event, channel: message.channel, timeout: timeout)
        if canSendNow(on: message.channel) {
            requests.add(id, sentOn: currentConnection, subject: subject)
            schedule(.requestDeadline(id), after: timeout, effects: &effects)
            runMachine(effects: &effects) { $0.handle(.request(message, id), actions: &$1) }
            return
        }
        if let error = channels.overflow(for: message.channel) {
            effects.append(.answer(.failed(operation, error)))
            return
        }
        requests.add(id, sentOn: nil, subject: subject)
        channels.buffer(message, as: .request(id))
        schedule(.requestDeadline(id), after: timeout, effects: &effects)
    }

    mutating func custom(name: String, payload: JSONValue, timeout: Duration, operation: OperationID,
                         effects: inout [EngineEffect]) {
        switch state {
        case .disconnected, .failed:
            let error = RealtimeError(state == .disconnected ? .disconnected : .sessionFailed,
                                      "the session is \(state)")
            effects.append(.answer(.failed(operation, error)))
            return
        default:
            break
        }
        let id = RequestID(operation)
        schedule(.requestDeadline(id), after: timeout, effects: &effects)
        if handshakeDone {
            requests.add(id, sentOn: currentConnection,
                         subject: PendingRequests.Subject(name: name, channel: nil, timeout: timeout))
            runMachine(effects: &effects) { $0.handle(.custom(name: name, payload: payload, id), actions: &$1) }
        } else {
            requests.addCustom(id, name: name, payload: payload, timeout: timeout)
        }
    }

    /// The dialect answered request `id` (or a dialect command).
    mutating func resolveRequest(_ id: RequestID, _ result: Result<[JSONValue], RealtimeError>,
                                 effects: inout [EngineEffect]) {
        guard requests.remove(id) != nil else { return }
        cancel(.requestDeadline(id), effects: &effects)
        effects.append(.answer(OperationAnswer(OperationID(id), result)))
    }

    // MARK: Deadlines

    mutating func sendDeadlinePassed(_ operation: OperationID, effects: inout [EngineEffect]) {
        guard let channel = channels.removeBufferedSend(operation) else { return }
        let error = RealtimeError(.timedOut, "the send waited \(sendTimeout.secondsText) without a connection",
                                  context: .init(channel: channel))
        effects.append(.answer(.failed(operation, error)))
    }

    mutating func requestDeadlinePassed(_ id: RequestID, effects: inout [EngineEffect]) {
        guard let pending = requests.remove(id) else { return }
        if pending.sentOn != nil, pending.sentOn == currentConnection {
            runMachine(effects: &effects) { $0.handle(.cancelRequest(id), actions: &$1) }
        }
        if pending.sentOn == nil { channels.removeBufferedRequest(id) }
        // Named by what was asked, not by the internal id the caller never saw.
        let error = RealtimeError(.timedOut, pending.subject?.timeoutMessage ?? "no answer in time",
                                  context: .init(channel: pending.subject?.channel))
        effects.append(.answer(.failed(OperationID(id), error)))
    }

    // MARK: Cancellation

    /// The task behind `operation` was cancelled. What has not happened yet is withdrawn: a buffered send
    /// or request leaves the buffer, a written request is forgotten by the dialect (its ack slot freed), a
    /// wait ends; a `connect()` that is not connected yet stops connecting. Something already written
    /// cannot be taken back and completes as it would have.
    mutating func cancelOperation(_ operation: OperationID, effects: inout [EngineEffect]) {
        guard !withdraw(operation, effects: &effects) else { return }
        requests.rememberEarlyCancellation(operation)
    }

    /// Answers an operation whose cancellation arrived first, and reports whether it did.
    mutating func takeEarlyCancellation(_ operation: OperationID, effects: inout [EngineEffect]) -> Bool {
        guard requests.takeEarlyCancellation(operation) else { return false }
        effects.append(.answer(.failed(operation, RealtimeError(.cancelled, "the task was cancelled"))))
        return true
    }

    /// Withdraws `operation` if it is still pending; false when it is unknown (finished, or not yet here).
    private mutating func withdraw(_ operation: OperationID, effects: inout [EngineEffect]) -> Bool {
        let cancelled = RealtimeError(.cancelled, "the task was cancelled")
        if withdrawConnectWaiter(operation, with: cancelled, effects: &effects) { return true }
        switch channels.withdraw(operation) {
        case .waiter(let waiter):
            effects.append(.answer(.failed(waiter, cancelled)))
            return true
        case .buffered(let item):
            failQueue([item], with: cancelled, effects: &effects)
            return true
        case nil:
            break
        }
        let id = RequestID(operation)
        if let pending = requests.remove(id) {
            cancel(.requestDeadline(id), effects: &effects)
            if pending.sentOn != nil, case .open(_, true) = phase {
                runMachine(effects: &effects) { $0.handle(.cancelRequest(id), actions: &$1) }
            }
            effects.append(.answer(.failed(operation, cancelled)))
            return true
        }
        return false
    }

    // MARK: Failing what waits

    /// Fails every buffered send, request and waiter.
    mutating func abandonPendingWork(with error: RealtimeError, connectError: RealtimeError? = nil,
                                     effects: inout [EngineEffect]) {
        for leftovers in channels.takeAllLeftovers() {
            failWaitersAndQueue(leftovers, with: error, effects: &effects)
        }
        for (id, _) in requests.removeAll() {
            cancel(.requestDeadline(id), effects: &effects)
            effects.append(.answer(.failed(OperationID(id), error)))
        }
        answerConnectWaiters(.failure(connectError ?? error), effects: &effects)
    }

    /// Fails the requests written on the connection that just ended: their answers can no longer arrive.
    mutating func failWrittenRequests(effects: inout [EngineEffect]) {
        for (id, _) in requests.removeWritten() {
            cancel(.requestDeadline(id), effects: &effects)
            let error = RealtimeError(.connectionClosed, "the connection closed before the answer arrived")
            effects.append(.answer(.failed(OperationID(id), error)))
        }
    }

    /// Fails the buffered sends and the `subscribed()` waiters a channel held.
    private mutating func failWaitersAndQueue(_ leftovers: ChannelTable.Leftovers, with error: RealtimeError,
                                              effects: inout [EngineEffect]) {
        failQueue(leftovers.queue, with: error, effects: &effects)
        for waiter in leftovers.waiters { effects.append(.answer(.failed(waiter, error))) }
    }

    private mutating func failQueue(_ queue: [ChannelTable.BufferedSend], with error: RealtimeError,
                                    effects: inout [EngineEffect]) {
        for item in queue {
            switch item.kind {
            case .send(let operation):
                cancel(.sendDeadline(operation), effects: &effects)
                effects.append(.answer(.failed(operation, error)))
            case .request(let id):
                cancel(.requestDeadline(id), effects: &effects)
                if requests.remove(id) != nil {
                    effects.append(.answer(.failed(OperationID(id), error)))
                }
            }
        }
    }
}
