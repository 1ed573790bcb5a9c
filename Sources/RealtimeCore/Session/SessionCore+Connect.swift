import Foundation

/// Connecting, reconnecting, the network path and liveness.
extension SessionCore {
    // MARK: connect() callers

    mutating func connect(timeout: Duration?, operation: OperationID?, effects: inout [EngineEffect]) {
        switch state {
        case .connected:
            if let operation { effects.append(.answer(.done(operation))) }
        case .connecting, .reconnecting, .waitingForNetwork:
            if let operation { addConnectWaiter(operation, timeout: timeout, effects: &effects) }
        case .initialized, .suspended, .disconnected, .failed:
            if let operation { addConnectWaiter(operation, timeout: timeout, effects: &effects) }
            startOver(effects: &effects)
        }
    }

    /// A fresh backoff, and an attempt now, or a wait for the network path when it is down.
    private mutating func startOver(effects: inout [EngineEffect]) {
        reconnect.startOver()
        if networkAvailable {
            startAttempt(effects: &effects)
        } else {
            setState(.waitingForNetwork, effects: &effects)
        }
    }

    private mutating func addConnectWaiter(_ operation: OperationID, timeout: Duration?,
                                           effects: inout [EngineEffect]) {
        if connectWaiters.isEmpty { failedAttemptsWhileWaiting = 0 }
        connectWaiters.append(operation)
        if let timeout { schedule(.connectDeadline(operation), after: timeout, effects: &effects) }
    }

    /// Answers every waiting `connect()` caller with `result` and stops their deadlines.
    mutating func answerConnectWaiters(_ result: Result<Void, RealtimeError>, effects: inout [EngineEffect]) {
        let waiters = connectWaiters
        connectWaiters = []
        for operation in waiters {
            cancel(.connectDeadline(operation), effects: &effects)
            effects.append(.answer(OperationAnswer(operation, result)))
        }
    }

    /// One waiting `connect()` call ran out of time. The session keeps trying by its policy.
    mutating func connectDeadlinePassed(_ operation: OperationID, effects: inout [EngineEffect]) {
        guard let index = connectWaiters.firstIndex(of: operation) else { return }
        connectWaiters.remove(at: index)
        var message = switch state {
        case .waitingForNetwork: "not connected in time: no network path"
        case .suspended: "not connected in time: suspended in the background"
        default: "not connected in time"
        }
        if failedAttemptsWhileWaiting > 0 {
            message += " after \(failedAttemptsWhileWaiting) failed attempt\(failedAttemptsWhileWaiting == 1 ? "" : "s")"
        }
        let error = RealtimeError(.connectTimedOut, message,
                                  context: .init(detail: lastEndDescription.isEmpty ? nil : "last: " + lastEndDescription))
        effects.append(.answer(.failed(operation, error)))
    }

    /// Withdraws a cancelled `connect()` caller; the last one to go stops connecting unless connected.
    /// False when `operation` is no `connect()` caller.
    mutating func withdrawConnectWaiter(_ operation: OperationID, with error: RealtimeError,
                                        effects: inout [EngineEffect]) -> Bool {
        guard let index = connectWaiters.firstIndex(of: operation) else { return false }
        connectWaiters.remove(at: index)
        cancel(.connectDeadline(operation), effects: &effects)
        effects.append(.answer(.failed(operation, error)))
        if connectWaiters.isEmpty, !state.isConnected, state != .disconnected {
            if case .failed = state {} else { disconnect(effects: &effects) }
        }
        return true
    }

    /// A connection attempt, or a connection, failed: the app hears why through `onError`/`errors`,
    /// not only the log.
    mutating func reportFailure(_ error: RealtimeError, effects: inout [EngineEffect]) {
        failedAttemptsWhileWaiting += 1
        deliveries.append(.error(error))
    }

    // MARK: Attempts

    mutating func startAttempt(effects: inout [EngineEffect]) {
        counters.attempts += 1
        connectionCounter += 1
        phase = .preparing(connectionCounter)
        setState(.connecting, effects: &effects)
        schedule(.handshake, after: connectTimeout, effects: &effects)
        switch dialect.connectionRequest(attempt: reconnect.attempt) {
        case .ready(let request):
            handle(.requestPrepared(connection: connectionCounter, .success(request)), effects: &effects)
        case .deferred(let prepare):
            effects.append(.prepareRequest(connection: connectionCounter, prepare))
        }
    }

    /// The connection request is ready (open it) or could not be made (the attempt fails).
    mutating func requestPrepared(_ result: Result<ConnectionRequest, RealtimeError>, for connection: UInt64,
                                  effects: inout [EngineEffect]) {
        guard phase == .preparing(connection) else { return }
        switch result {
        case .success(var request):
            request.connectTimeout = connectTimeout
            machine.willOpen(&request)
            phase = .opening(connection)
            effects.append(.log(.debug, "opening \(request.url.absoluteString)"))
            effects.append(.open(connection: connection, request))
        case .failure(let error):
            let end: ConnectionEnd = Self.terminalCodes.contains(error.code) ? .terminal(error) : .backoff(minimum: .zero)
            lastEndDescription = error.description
            lastEndReason = .failure(error)
            if case .backoff = end { reportFailure(error, effects: &effects) }
            phase = .idle
            cancel(.handshake, effects: &effects)
            proceed(after: end, effects: &effects)
        }
    }

    /// No connection within `connectTimeout`: the attempt fails like one the transport gave up on.
    mutating func handshakeTimedOut(effects: inout [EngineEffect]) {
        let error = RealtimeError(.connectTimedOut, "no connection within \(connectTimeout.secondsText)")
        switch phase {
        case .idle, .open(_, true):
            return
        case .preparing:
            lastEndDescription = error.description
            lastEndReason = .failure(error)
            reportFailure(error, effects: &effects)
            phase = .idle
            resetConnectionState(effects: &effects)
            proceed(after: .backoff(minimum: .zero), effects: &effects)
        case .opening(let connection), .open(let connection, false):
            effects.append(.abort(connection: connection))
            connectionEnded(TransportClosure(.failed(error), duringOpen: true), effects: &effects)
        }
    }

    /// The dialect's handshake completed on `connection`: the session is connected.
    mutating func markConnected(_ connection: UInt64, id: String?, effects: inout [EngineEffect]) {
        guard case .open(connection, false) = phase else { return }
        phase = .open(connection, handshakeDone: true)
        cancel(.handshake, effects: &effects)
        // A handshake alone proves little: a server that welcomes and then breaks the link must still
        // run into the policy's limits, so the count starts over only once the connection proves stable.
        if let window = reconnect.stabilityWindow {
            schedule(.stability, after: window, effects: &effects)
        } else {
            reconnect.startOver()
        }
        connectionID = id
        counters.connections += 1
        connectedAt = now
        setState(.connected, effects: &effects)
        answerConnectWaiters(.success(()), effects: &effects)
        for channel in channels.order {
            if case .pending = channels.state(of: channel) {
                runMachine(effects: &effects) { $0.handle(.subscribe(channel), actions: &$1) }
            }
        }
        for id in requests.takeCustomQueue() {
            guard let command = requests.writeCustom(id, on: connection) else { continue }
            runMachine(effects: &effects) {
                $0.handle(.custom(name: command.name, payload: command.payload, id), actions: &$1)
            }
        }
    }

    // MARK: Disconnecting

    mutating func disconnect(effects: inout [EngineEffect]) {
        if case .disconnected = state { return }
        endConnectionLocally(TransportClosure(.closedLocally(code: 1000, reason: "client disconnect")),
                             effects: &effects)
        cancel(.reconnect, effects: &effects)
        setState(.disconnected, effects: &effects)
        let error = RealtimeError(.disconnected, "the app disconnected the session")
        abandonPendingWork(with: error, effects: &effects)
    }

    /// Closes the current connection from this side and resets the machine at once, so that a later
    /// attempt starts clean whatever the old transport still reports.
    mutating func endConnectionLocally(_ closure: TransportClosure, effects: inout [EngineEffect]) {
        switch phase {
        case .idle:
            return
        case .preparing:
            break
        case .opening(let connection), .open(let connection, _):
            if case .closedLocally(let code, let reason) = closure.kind {
                effects.append(.close(connection: connection, code: code, reason: reason))
            } else {
                effects.append(.abort(connection: connection))
            }
            _ = machine.connectionEnded(closure)
        }
        phase = .idle
        resetConnectionState(effects: &effects)
    }

    // MARK: Reconnecting

    mutating func proceed(after end: ConnectionEnd, effects: inout [EngineEffect]) {
        switch end {
        case .terminal(let error):
            fail(error, effects: &effects)
        case .reconnectImmediately:
            scheduleReconnect(skipDelayWhenFresh: true, minimum: .zero, effects: &effects)
        case .backoff(let minimum):
            scheduleReconnect(skipDelayWhenFresh: false, minimum: minimum, effects: &effects)
        }
    }

    private mutating func scheduleReconnect(skipDelayWhenFresh: Bool, minimum: Duration,
                                            effects: inout [EngineEffect]) {
        switch reconnect.next(at: now, minimum: minimum, skipDelayWhenFresh: skipDelayWhenFresh,
                              networkAvailable: networkAvailable) {
        case .giveUp(let reason):
            fail(RealtimeError(.sessionFailed, "\(reason); last: \(lastEndDescription)"), effects: &effects)
        case .waitForNetwork:
            setState(.waitingForNetwork, effects: &effects)
        case .retry(let attempt, let delay):
            setState(.reconnecting(attempt: attempt, delay: delay, reason: lastEndReason), effects: &effects)
            effects.append(.log(.info, "reconnect attempt \(attempt) in \(delay)"))
            if delay <= .zero {
                startAttempt(effects: &effects)
            } else {
                schedule(.reconnect, after: delay, effects: &effects)
            }
        }
    }

    mutating func fail(_ error: RealtimeError, effects: inout [EngineEffect]) {
        cancel(.reconnect, effects: &effects)
        setState(.failed(error), effects: &effects)
        deliveries.append(.error(error))
        let abandoned = RealtimeError(.sessionFailed, "the session failed: \(error.message)",
                                      context: .init(detail: error.description))
        abandonPendingWork(with: abandoned, connectError: error, effects: &effects)
    }

    // MARK: Network path and app lifecycle

    mutating func networkPathChanged(available: Bool, effects: inout [EngineEffect]) {
        networkAvailable = available
        if !available {
            networkPathLost(effects: &effects)
        } else if case .connected = state {
            probeLink(effects: &effects)  // a change of interface often kills a socket silently
        } else {
            reconnectNow(effects: &effects)
        }
    }

    /// Drops the connection (its socket cannot outlive the path) and waits for the path to return,
    /// without spending reconnect attempts meanwhile.
    private mutating func networkPathLost(effects: inout [EngineEffect]) {
        switch state {
        case .connecting, .connected, .reconnecting:
            let error = RealtimeError(.transportFailed, "the device lost its network path")
            lastEndReason = .networkPathLost
            if currentConnection != nil {
                lastEndDescription = error.description
                effects.append(.log(.info, "connection dropped: the device lost its network path"))
                endConnectionLocally(TransportClosure(.failed(error)), effects: &effects)
            }
            cancel(.reconnect, effects: &effects)
            setState(.waitingForNetwork, effects: &effects)
        case .initialized, .waitingForNetwork, .suspended, .disconnected, .failed:
            break
        }
    }

    /// Retries at once while waiting to reconnect (or for the network); nothing otherwise.
    mutating func reconnectNow(effects: inout [EngineEffect]) {
        switch state {
        case .reconnecting, .waitingForNetwork:
            retryNow(effects: &effects)
        case .initialized, .connecting, .connected, .suspended, .disconnected, .failed:
            break
        }
    }

    /// The app went to the background: with a grace period set, the connection is closed when it ends.
    mutating func enteredBackground(effects: inout [EngineEffect]) {
        inBackground = true
        guard let backgroundGrace, isActive else { return }
        if backgroundGrace == .zero {
            backgroundGraceEnded(effects: &effects)
        } else {
            schedule(.backgroundGrace, after: backgroundGrace, effects: &effects)
        }
    }

    /// The app came back to the foreground: connect now if suspended, try now if reconnecting, else check
    /// the link.
    mutating func enteredForeground(effects: inout [EngineEffect]) {
        inBackground = false
        cancel(.backgroundGrace, effects: &effects)
        switch state {
        case .suspended:
            effects.append(.log(.info, "back in the foreground: connecting"))
            startOver(effects: &effects)
        case .reconnecting:
            retryNow(effects: &effects)
        case .initialized, .connecting, .connected, .waitingForNetwork, .disconnected, .failed:
            probeLink(effects: &effects)
        }
    }

    /// The grace period ran out in the background: close the connection (or stop trying) and wait for the
    /// foreground without attempts.
    mutating func backgroundGraceEnded(effects: inout [EngineEffect]) {
        guard inBackground, isActive, let backgroundGrace else { return }
        lastEndReason = .closedByClient(code: 1001, reason: "going away")
        if currentConnection != nil {
            lastEndDescription = "closed after \(backgroundGrace.secondsText) in the background"
            endConnectionLocally(TransportClosure(.closedLocally(code: 1001, reason: "going away")), effects: &effects)
        }
        effects.append(.log(.info, "suspended: the app has been in the background for \(backgroundGrace.secondsText)"))
        cancel(.reconnect, effects: &effects)
        setState(.suspended, effects: &effects)
    }

    /// Connected, or on the way to it: what a background grace period ends.
    private var isActive: Bool {
        switch state {
        case .connecting, .connected, .reconnecting, .waitingForNetwork: true
        case .initialized, .suspended, .disconnected, .failed: false
        }
    }

    /// A fresh backoff and an attempt at once.
    private mutating func retryNow(effects: inout [EngineEffect]) {
        cancel(.reconnect, effects: &effects)
        reconnect.startOver()
        effects.append(.log(.info, "reconnecting now"))
        startAttempt(effects: &effects)
    }

    // MARK: Liveness

    /// Sends the dialect's ping now (client-ping dialects) or checks the server's last sign of life
    /// against its deadline (server-ping dialects); a dead link ends as a liveness timeout.
    private mutating func probeLink(effects: inout [EngineEffect]) {
        guard case .open(let connection, true) = phase else { return }
        follow(liveness.probe(at: now), on: connection, effects: &effects)
    }

    mutating func checkLiveness(effects: inout [EngineEffect]) {
        guard case .open(let connection, _) = phase else { return }
        follow(liveness.check(at: now), on: connection, effects: &effects)
    }

    /// Carries out what the liveness monitor concluded.
    private mutating func follow(_ step: LivenessMonitor.Step, on connection: UInt64, effects: inout [EngineEffect]) {
        switch step {
        case .nothingToDo:
            return
        case .dead:
            declareDead(connection, effects: &effects)
        case .ping(let frame, let checkAfter):
            effects.append(.send(connection: connection, [frame], compress: true))
            schedule(.liveness, after: checkAfter, effects: &effects)
        case .checkAfter(let delay):
            schedule(.liveness, after: delay, effects: &effects)
        }
    }

    private mutating func declareDead(_ connection: UInt64, effects: inout [EngineEffect]) {
        effects.append(.log(.warning, "no sign of life from the server; dropping the connection"))
        effects.append(.abort(connection: connection))
        connectionEnded(TransportClosure(.livenessTimeout), effects: &effects)
    }
}
