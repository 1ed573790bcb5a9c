/// The transport's events, the end of a connection, and the dialect machine's transitions and actions.
extension SessionCore {
    // MARK: Transport

    mutating func transportEvent(_ event: TransportEvent, connection: UInt64, effects: inout [EngineEffect]) {
        guard currentConnection == connection else { return }
        switch event {
        case .opened(let info):
            guard phase == .opening(connection) else { return }
            phase = .open(connection, handshakeDone: false)
            liveness.received(at: now)
            runMachine(effects: &effects) { $0.connectionOpened(info, actions: &$1) }
        case .received(let frames):
            guard case .open = phase else { return }
            liveness.received(at: now)
            counters.framesReceived += frames.count
            for frame in frames {
                let bytes = frame.byteCount
                unchargedBytes += bytes
                counters.bytesReceived += bytes
                runMachine(effects: &effects) { $0.received(frame, actions: &$1) }
                // A dialect may close, or the machine may have failed the session, mid-batch.
                guard currentConnection == connection else { return }
            }
        case .closed(let closure):
            connectionEnded(closure, effects: &effects)
        }
    }

    /// Failures no retry can cure, wherever they happen (preparing the request or on the connection): the
    /// session fails instead of reconnecting. A server's refusal for good or the app's auth refusing is
    /// an answer, not an outage; a request that cannot be made or a setup the transport cannot honour
    /// fails the same way next time. (Dialects classify their own close codes in `connectionEnded`.)
    static let terminalCodes: Set<RealtimeError.Code> = [.connectionRefused, .authorizationFailed, .invalidArgument,
                                                          .unsupported]

    mutating func connectionEnded(_ closure: TransportClosure, effects: inout [EngineEffect]) {
        var end = machine.connectionEnded(closure)
        if case .failed(let error) = closure.kind, Self.terminalCodes.contains(error.code) {
            end = .terminal(error)
        }
        lastEndDescription = Self.describe(closure)
        lastEndReason = serverAskedReason ?? Self.reason(for: closure)
        serverAskedReason = nil
        effects.append(.log(.info, "connection ended: \(lastEndDescription)"))
        if case .terminal = end {
            // fail(_:) reports the terminal error itself.
        } else if case .failed(let error) = closure.kind {
            reportFailure(error, effects: &effects)
        } else if case .livenessTimeout = closure.kind {
            reportFailure(RealtimeError(.livenessTimeout, "the link went silent: no sign of life from the server in time"),
                          effects: &effects)
        } else if let error = Self.faultCloseError(closure) {
            reportFailure(error, effects: &effects)
        }
        phase = .idle
        resetConnectionState(effects: &effects)
        proceed(after: end, effects: &effects)
    }

    /// Server close codes (RFC 6455 §7.4.1) that say something went wrong rather than that the server is
    /// going away or restarting: the app hears of them, as of a failed attempt, or a server that keeps
    /// refusing what this client sends (a protocol error) would look like an ordinary reconnect loop.
    static let faultCloseCodes: [Int: String] = [
        1002: "protocol error", 1003: "unsupported data", 1007: "invalid payload data", 1008: "policy violation",
        1009: "message too big", 1010: "missing extension", 1011: "internal server error",
    ]

    /// The error reported for a server close with one of the ``faultCloseCodes``; `nil` for any other end.
    static func faultCloseError(_ closure: TransportClosure) -> RealtimeError? {
        guard case .closedByPeer(let code?, let reason) = closure.kind, let meaning = faultCloseCodes[code] else {
            return nil
        }
        return RealtimeError(.connectionClosed,
                             "the server closed the connection with code \(code) (\(meaning))"
                                + (reason.isEmpty ? "" : ": \(reason)"),
                             context: .init(closeCode: code, detail: reason.isEmpty ? nil : reason))
    }

    private static func reason(for closure: TransportClosure) -> DisconnectReason {
        switch closure.kind {
        case .closedByPeer(let code, let reason): .closedByServer(code: code, reason: reason)
        case .closedLocally(let code, let reason): .closedByClient(code: code, reason: reason)
        case .failed(let error) where error.code == .livenessTimeout: .livenessTimeout
        case .failed(let error): .failure(error)
        case .livenessTimeout: .livenessTimeout
        }
    }

    private static func describe(_ closure: TransportClosure) -> String {
        switch closure.kind {
        case .closedByPeer(let code, let reason):
            return "closed by the server" + (code.map { " with code \($0)" } ?? "") + (reason.isEmpty ? "" : " (\(reason))")
        case .closedLocally(let code, let reason):
            return "closed locally with code \(code)" + (reason.isEmpty ? "" : " (\(reason))")
        case .failed(let error):
            return error.description
        case .livenessTimeout:
            return "the link went silent (liveness timeout)"
        }
    }

    /// Forgets everything tied to the connection that just ended.
    mutating func resetConnectionState(effects: inout [EngineEffect]) {
        cancel(.handshake, effects: &effects)
        cancel(.liveness, effects: &effects)
        cancelDialectTimers(effects: &effects)
        cancel(.stability, effects: &effects)
        liveness.stop()
        unchargedBytes = 0
        connectionID = nil
        channels.connectionLost(at: now)
        failWrittenRequests(effects: &effects)
    }

    // MARK: Dialect machine

    mutating func acknowledge(_ token: AckToken, _ arguments: [JSONValue], on connection: UInt64,
                              effects: inout [EngineEffect]) {
        guard case .open(connection, true) = phase else { return }
        runMachine(effects: &effects) { $0.handle(.acknowledge(token, arguments), actions: &$1) }
    }

    mutating func workFinished(_ id: WorkID, _ result: Result<JSONValue, RealtimeError>, on connection: UInt64,
                               effects: inout [EngineEffect]) {
        guard case .open(connection, _) = phase else { return }
        runMachine(effects: &effects) { $0.workFinished(id, result: result, actions: &$1) }
    }

    mutating func dialectTimerFired(_ key: TimerKey, effects: inout [EngineEffect]) {
        guard case .open = phase else { return }
        runMachine(effects: &effects) { $0.timerFired(key, actions: &$1) }
    }

    /// Runs one machine transition and carries out the actions it produced.
    mutating func runMachine(effects: inout [EngineEffect],
                             _ step: (inout any DialectMachine, inout [DialectAction]) -> Void) {
        var produced = actions
        actions = []
        produced.removeAll(keepingCapacity: true)
        step(&machine, &produced)
        apply(&produced, effects: &effects)
        produced.removeAll(keepingCapacity: true)
        if actions.capacity < produced.capacity { actions = produced }
    }

    /// Carries out `produced` in order; once one leaves no connection (`.fail`), the rest are dropped.
    private mutating func apply(_ produced: inout [DialectAction], effects: inout [EngineEffect]) {
        // Each action is moved out of the list (popLast after a reverse), not copied out and destroyed with
        // the list afterwards: an event passes on without a retain and a release here.
        produced.reverse()
        while let action = produced.popLast() {
            guard let connection = currentConnection else { return }
            apply(action, on: connection, effects: &effects)
        }
    }

    private mutating func apply(_ action: DialectAction, on connection: UInt64, effects: inout [EngineEffect]) {
        switch action {
        case .send(let frame): write(frame, compress: true, on: connection, effects: &effects)
        case .sendUncompressed(let frame): write(frame, compress: false, on: connection, effects: &effects)
        case .deliver(let event): deliver(event, on: connection)
        case .connected(let id): markConnected(connection, id: id, effects: &effects)
        case .subscribed(let channel, let recovered):
            channelSubscribed(channel, recovered: recovered, effects: &effects)
        case .subscriptionPayload(let channel, let payload): channels.storePayload(payload, for: channel)
        case .subscriptionFailed(let channel, let error):
            channelStopped(channel, .rejected(error), effects: &effects)
        case .channelEnded(let channel, let error):
            channelStopped(channel, .endedByServer(error), effects: &effects)
        case .channelPending(let channel): channels.markPending(channel, at: now)
        case .resolveRequest(let id, let result): resolveRequest(id, result, effects: &effects)
        case .liveness(let rule): adoptLiveness(rule, effects: &effects)
        case .startTimer(let key, let delay): schedule(.dialect(key), after: delay, effects: &effects)
        case .cancelTimer(let key): cancel(.dialect(key), effects: &effects)
        case .perform(let work): effects.append(.work(connection: connection, work))
        case .close(let code, let reason): effects.append(.close(connection: connection, code: code, reason: reason))
        case .closeAsServerAsked(let code, let reason):
            closeAsServerAsked(code, reason, on: connection, effects: &effects)
        case .fail(let error): machineFailed(error, effects: &effects)
        case .refuseSend(let error): sendRefusal = error
        case .reportError(let error): deliveries.append(.error(error))
        case .log(let level, let message): effects.append(.log(level, message))
        }
    }

    /// Writes `frame`, in the same batch as the frames just before it when they go the same way, so one
    /// machine step becomes one transport call.
    private mutating func write(_ frame: TransportFrame, compress: Bool, on connection: UInt64,
                                effects: inout [EngineEffect]) {
        counters.framesSent += 1
        counters.bytesSent += frame.byteCount
        if case .send(connection, var frames, compress)? = effects.last {
            effects.removeLast()
            frames.append(frame)
            effects.append(.send(connection: connection, frames, compress: compress))
        } else {
            effects.append(.send(connection: connection, [frame], compress: compress))
        }
    }

    /// Delivers `event`, charged with the bytes received since the last one.
    private mutating func deliver(_ event: RealtimeEvent, on connection: UInt64) {
        deliveries.append(.event(event, connection: connection, bytes: unchargedBytes))
        counters.eventsReceived += 1
        unchargedBytes = 0
    }

    private mutating func adoptLiveness(_ rule: LivenessRule, effects: inout [EngineEffect]) {
        liveness.adopt(rule)
        if rule == .none {
            cancel(.liveness, effects: &effects)
        } else {
            checkLiveness(effects: &effects)
        }
    }

    private mutating func closeAsServerAsked(_ code: Int, _ reason: DisconnectReason, on connection: UInt64,
                                             effects: inout [EngineEffect]) {
        serverAskedReason = reason
        effects.append(.close(connection: connection, code: code, reason: reason.description))
    }

    /// The machine gave up for good: the connection ends and the session fails.
    private mutating func machineFailed(_ error: RealtimeError, effects: inout [EngineEffect]) {
        lastEndDescription = error.description
        endConnectionLocally(TransportClosure(.closedLocally(code: 1000, reason: "")), effects: &effects)
        fail(error, effects: &effects)
    }
}
