import Foundation

/// The session engine's logic as a value: inputs in, effects out, no I/O and no clock of its own.
///
/// `SessionEngine` feeds it one input at a time (serialized by its mailbox) and carries out the effects.

typealias Completion<Value: Sendable> = @Sendable (Result<Value, RealtimeError>) -> Void

enum EngineInput: Sendable {
    /// `timeout`: how long the caller waits for `.connected` (nil: no bound). `operation` names the call
    /// for `.cancel` (0 when nobody waits).
    case connect(Completion<Void>?, timeout: Duration?, operation: UInt64)
    case disconnect
    case subscribe(ChannelID)
    case awaitSubscription(ChannelID, operation: UInt64, Completion<Bool?>)
    case unsubscribe(ChannelID)
    case send(OutgoingMessage, operation: UInt64, Completion<Void>)
    case request(OutgoingMessage, timeout: Duration, operation: UInt64, Completion<[JSONValue]>)
    case custom(name: String, payload: JSONValue, timeout: Duration, operation: UInt64, Completion<[JSONValue]>)
    /// The task waiting for `operation` (a connect, send, request, custom command or subscription wait)
    /// was cancelled: withdraw what has not happened yet and answer it with `.cancelled`.
    case cancel(operation: UInt64)
    case acknowledge(connection: UInt64, AckToken, [JSONValue])
    case requestPrepared(connection: UInt64, Result<ConnectionRequest, RealtimeError>)
    case transport(connection: UInt64, TransportEvent)
    case timer(EngineTimer, serial: UInt64)
    case workFinished(connection: UInt64, WorkID, Result<JSONValue, RealtimeError>)
    /// The device's network path went away (`false`) or is usable, possibly through a new interface (`true`).
    case networkPath(available: Bool)
    /// Retry at once with a fresh backoff if waiting to reconnect.
    case reconnectNow
    /// Check at once that an open connection is alive (the app came back to the foreground).
    case checkLink
}

enum EngineTimer: Hashable, Sendable {
    case reconnect
    case handshake
    case liveness
    /// The connection has stayed up long enough to count as healthy.
    case stability
    case sendDeadline(UInt64)
    case requestDeadline(RequestID)
    /// A `connect()` caller has waited as long as it allowed.
    case connectDeadline(UInt64)
    case dialect(TimerKey)
}

enum Delivery: Sendable {
    /// `bytes`: the received frames behind the event, counted against the delivery byte budget.
    case event(RealtimeEvent, connection: UInt64, bytes: Int)
    case state(ConnectionState, ConnectionState)
    case error(RealtimeError)
    case lifecycle(ChannelLifecycleEvent)
}

enum EngineEffect: Sendable {
    case prepareRequest(connection: UInt64, @Sendable () async throws -> ConnectionRequest)
    case open(connection: UInt64, ConnectionRequest)
    /// `compress: false` for frames the transport must send uncompressed.
    case send(connection: UInt64, [TransportFrame], compress: Bool)
    case close(connection: UInt64, code: Int, reason: String)
    case abort(connection: UInt64)
    case schedule(EngineTimer, serial: UInt64, after: Duration)
    case cancel(EngineTimer)
    case work(connection: UInt64, DialectWork)
    case deliver(Delivery)
    case complete(@Sendable () -> Void)
    case log(LogLevel, String)
}

struct SessionCore: Sendable {
    private enum Phase: Equatable {
        case idle
        case preparing(UInt64)
        case opening(UInt64)
        case open(UInt64, handshakeDone: Bool)
    }

    // Configuration
    private let connectTimeout: Duration
    private let sendTimeout: Duration

    // State
    private var machine: any DialectMachine
    private(set) var state: ConnectionState = .initialized
    private(set) var connectionID: String?
    private var phase: Phase = .idle
    private var connectionCounter: UInt64 = 0
    private var reconnect: ReconnectAccounting
    /// `connect()` callers waiting for `.connected`, each with the serial of its deadline timer.
    private var connectWaiters: [(serial: UInt64, completion: Completion<Void>)] = []
    /// Attempts that failed since the oldest waiting `connect()` call began, for its timeout message.
    private var failedAttemptsWhileWaiting = 0
    private var channels: ChannelTable
    private var requests = PendingRequests()
    private var nextSerial: UInt64 = 0
    private var timerSerials: [EngineTimer: UInt64] = [:]
    private var liveness = LivenessMonitor()
    /// Bytes of frames received since the last delivered event, charged to the next one.
    private var unchargedBytes = 0
    /// Set when the machine refuses the `.send` it is handling.
    private var sendRefusal: RealtimeError?
    private var actions: [DialectAction] = []
    private var lastEndDescription = ""
    /// Why the last connection or attempt ended, for `.reconnecting`.
    private var lastEndReason: DisconnectReason = .closedByClient(code: 1000, reason: "")
    /// Set when the machine closes because the server asked; wins over what the transport reports.
    private var serverAskedReason: DisconnectReason?
    /// What the app last reported of the network path; attempts wait while it is `false`.
    private var networkAvailable = true

    /// Set by the engine before each round of inputs.
    var now: Duration = .zero

    private let dialect: any RealtimeDialect

    init(dialect: any RealtimeDialect, machine: any DialectMachine, policy: ReconnectPolicy, options: SessionOptions,
         defaultChannels: [ChannelID]) {
        self.dialect = dialect
        self.machine = machine
        reconnect = ReconnectAccounting(policy: policy, random: options.randomSource)
        connectTimeout = options.connectTimeout
        sendTimeout = options.sendTimeout
        channels = ChannelTable(joined: defaultChannels, sendBufferLimit: options.sendBufferLimit)
    }

    /// The current state of `channel`, or `nil` when the app never joined it.
    func channelState(_ channel: ChannelID) -> ChannelState? { channels.state(of: channel) }

    /// Channels the session holds, in the order they were joined.
    var joinedChannels: [ChannelID] { channels.order }

    /// Sends and requests waiting for the connection or their channel.
    var bufferedSendCount: Int { channels.bufferedCount }

    private var handshakeDone: Bool {
        if case .open(_, true) = phase { return true }
        return false
    }

    private var currentConnection: UInt64? {
        switch phase {
        case .idle: return nil
        case .preparing(let id), .opening(let id), .open(let id, _): return id
        }
    }

    // MARK: Inputs

    mutating func handle(_ input: EngineInput, effects: inout [EngineEffect]) {
        switch input {
        case .connect(let completion, let timeout, let operation):
            if let completion, takeEarlyCancellation(operation, effects: &effects, completion) { return }
            connect(completion, timeout: timeout, operation: operation, effects: &effects)
        case .disconnect:
            disconnect(effects: &effects)
        case .subscribe(let channel):
            subscribe(channel, effects: &effects)
        case .awaitSubscription(let channel, let operation, let completion):
            if takeEarlyCancellation(operation, effects: &effects, completion) { return }
            awaitSubscription(channel, operation: operation, completion, effects: &effects)
        case .unsubscribe(let channel):
            unsubscribe(channel, effects: &effects)
        case .send(let message, let operation, let completion):
            if takeEarlyCancellation(operation, effects: &effects, completion) { return }
            send(message, operation: operation, completion, effects: &effects)
        case .request(let message, let timeout, let operation, let completion):
            if takeEarlyCancellation(operation, effects: &effects, completion) { return }
            request(message, timeout: timeout, operation: operation, completion, effects: &effects)
        case .custom(let name, let payload, let timeout, let operation, let completion):
            if takeEarlyCancellation(operation, effects: &effects, completion) { return }
            custom(name: name, payload: payload, timeout: timeout, operation: operation, completion, effects: &effects)
        case .cancel(let operation):
            cancelOperation(operation, effects: &effects)
        case .acknowledge(let connection, let token, let arguments):
            guard case .open(connection, true) = phase else { return }
            runMachine(effects: &effects) { $0.handle(.acknowledge(token, arguments), actions: &$1) }
        case .requestPrepared(let connection, let result):
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
        case .transport(let connection, let event):
            guard currentConnection == connection else { return }
            transportEvent(event, connection: connection, effects: &effects)
        case .timer(let timer, let serial):
            guard timerSerials[timer] == serial else { return }
            timerSerials[timer] = nil
            timerFired(timer, effects: &effects)
        case .workFinished(let connection, let id, let result):
            guard case .open(connection, _) = phase else { return }
            runMachine(effects: &effects) { $0.workFinished(id, result: result, actions: &$1) }
        case .networkPath(let available):
            networkAvailable = available
            if !available {
                networkPathLost(effects: &effects)
            } else if case .connected = state {
                probeLink(effects: &effects)  // a change of interface often kills a socket silently
            } else {
                reconnectNow(effects: &effects)
            }
        case .reconnectNow:
            reconnectNow(effects: &effects)
        case .checkLink:
            if case .reconnecting = state { retryNow(effects: &effects) } else { probeLink(effects: &effects) }
        }
    }

    private mutating func connect(_ completion: Completion<Void>?, timeout: Duration?, operation: UInt64,
                                  effects: inout [EngineEffect]) {
        switch state {
        case .connected:
            if let completion { effects.append(.complete { completion(.success(())) }) }
        case .connecting, .reconnecting, .waitingForNetwork:
            if let completion { addConnectWaiter(completion, timeout: timeout, operation: operation, effects: &effects) }
        case .initialized, .disconnected, .failed:
            if let completion { addConnectWaiter(completion, timeout: timeout, operation: operation, effects: &effects) }
            reconnect.startOver()
            if networkAvailable {
                startAttempt(effects: &effects)
            } else {
                setState(.waitingForNetwork, effects: &effects)
            }
        }
    }

    private mutating func addConnectWaiter(_ completion: @escaping Completion<Void>, timeout: Duration?,
                                           operation: UInt64, effects: inout [EngineEffect]) {
        if connectWaiters.isEmpty { failedAttemptsWhileWaiting = 0 }
        connectWaiters.append((operation, completion))
        if let timeout { schedule(.connectDeadline(operation), after: timeout, effects: &effects) }
    }

    /// Hands every waiting `connect()` caller `result` and stops their deadlines.
    private mutating func completeConnectWaiters(_ result: Result<Void, RealtimeError>, effects: inout [EngineEffect]) {
        let waiters = connectWaiters
        connectWaiters = []
        for waiter in waiters {
            cancel(.connectDeadline(waiter.serial), effects: &effects)
            effects.append(.complete { waiter.completion(result) })
        }
    }

    /// One waiting `connect()` call ran out of time. The session keeps trying by its policy.
    private mutating func connectDeadlinePassed(_ serial: UInt64, effects: inout [EngineEffect]) {
        guard let index = connectWaiters.firstIndex(where: { $0.serial == serial }) else { return }
        let waiter = connectWaiters.remove(at: index)
        var message = state == .waitingForNetwork ? "not connected in time: no network path" : "not connected in time"
        if failedAttemptsWhileWaiting > 0 {
            message += " after \(failedAttemptsWhileWaiting) failed attempt\(failedAttemptsWhileWaiting == 1 ? "" : "s")"
        }
        let error = RealtimeError(.connectTimedOut, message,
                                  context: .init(detail: lastEndDescription.isEmpty ? nil : "last: " + lastEndDescription))
        effects.append(.complete { waiter.completion(.failure(error)) })
    }

    /// A connection attempt, or a connection, failed: the app hears why through `onError`/`errors`,
    /// not only the log.
    private mutating func reportFailure(_ error: RealtimeError, effects: inout [EngineEffect]) {
        failedAttemptsWhileWaiting += 1
        effects.append(.deliver(.error(error)))
    }

    // MARK: Network path and app lifecycle

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
        case .initialized, .waitingForNetwork, .disconnected, .failed:
            break
        }
    }

    /// Retries at once while waiting to reconnect (or for the network); nothing otherwise.
    private mutating func reconnectNow(effects: inout [EngineEffect]) {
        switch state {
        case .reconnecting, .waitingForNetwork:
            retryNow(effects: &effects)
        case .initialized, .connecting, .connected, .disconnected, .failed:
            break
        }
    }

    /// A fresh backoff and an attempt at once.
    private mutating func retryNow(effects: inout [EngineEffect]) {
        cancel(.reconnect, effects: &effects)
        reconnect.startOver()
        effects.append(.log(.info, "reconnecting now"))
        startAttempt(effects: &effects)
    }

    /// Sends the dialect's ping now (client-ping dialects) or checks the server's last sign of life
    /// against its deadline (server-ping dialects); a dead link ends as a liveness timeout.
    private mutating func probeLink(effects: inout [EngineEffect]) {
        guard case .open(let connection, true) = phase else { return }
        follow(liveness.probe(at: now), on: connection, effects: &effects)
    }

    private mutating func startAttempt(effects: inout [EngineEffect]) {
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

    private mutating func disconnect(effects: inout [EngineEffect]) {
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
    private mutating func endConnectionLocally(_ closure: TransportClosure, effects: inout [EngineEffect]) {
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

    private mutating func subscribe(_ channel: ChannelID, effects: inout [EngineEffect]) {
        if channels.join(channel), handshakeDone {
            runMachine(effects: &effects) { $0.handle(.subscribe(channel), actions: &$1) }
        }
    }

    private mutating func awaitSubscription(_ channel: ChannelID, operation: UInt64,
                                            _ completion: @escaping Completion<Bool?>, effects: inout [EngineEffect]) {
        guard let channelState = channels.state(of: channel) else {
            let error = RealtimeError(.channelUnavailable, "the channel was not joined",
                                      context: .init(channel: channel))
            effects.append(.complete { completion(.failure(error)) })
            return
        }
        switch channelState {
        case .subscribed(let recovered):
            effects.append(.complete { completion(.success(recovered)) })
        case .failed(let error), .ended(let error):
            effects.append(.complete { completion(.failure(error)) })
        case .left:
            let error = RealtimeError(.channelUnavailable, "the channel was left", context: .init(channel: channel))
            effects.append(.complete { completion(.failure(error)) })
        case .pending:
            if case .failed(let error) = state {
                effects.append(.complete { completion(.failure(error)) })
            } else {
                channels.addWaiter(.init(operation: operation, completion: completion), to: channel)
            }
        }
    }

    private mutating func unsubscribe(_ channel: ChannelID, effects: inout [EngineEffect]) {
        guard let (lastState, leftovers) = channels.leave(channel) else { return }
        effects.append(.deliver(.lifecycle(ChannelLifecycleEvent(channel: channel, kind: .unsubscribed))))
        let error = RealtimeError(.channelUnavailable, "the channel was left", context: .init(channel: channel))
        failWaitersAndQueue(leftovers, with: error, effects: &effects)
        switch lastState {
        case .pending, .subscribed:
            if handshakeDone {
                runMachine(effects: &effects) { $0.handle(.unsubscribe(channel), actions: &$1) }
            }
        case .failed, .ended, .left:
            break
        }
    }

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

    private mutating func send(_ message: OutgoingMessage, operation: UInt64, _ completion: @escaping Completion<Void>,
                               effects: inout [EngineEffect]) {
        if let error = refusal(for: message.channel) {
            effects.append(.complete { completion(.failure(error)) })
            return
        }
        if canSendNow(on: message.channel) {
            sendNow(message, completion, effects: &effects)
            return
        }
        if message.volatile {
            effects.append(.log(.debug, "dropped volatile \(message.event) on \(message.channel): not connected"))
            effects.append(.complete { completion(.success(())) })
            return
        }
        if let error = channels.overflow(for: message.channel) {
            effects.append(.complete { completion(.failure(error)) })
            return
        }
        channels.buffer(message, as: .send(serial: operation, completion))
        schedule(.sendDeadline(operation), after: sendTimeout, effects: &effects)
    }

    /// Hands `message` to the machine and completes the send with what the machine made of it.
    private mutating func sendNow(_ message: OutgoingMessage, _ completion: @escaping Completion<Void>,
                                  effects: inout [EngineEffect]) {
        sendRefusal = nil
        runMachine(effects: &effects) { $0.handle(.send(message), actions: &$1) }
        let result: Result<Void, RealtimeError> = sendRefusal.map { .failure($0) } ?? .success(())
        sendRefusal = nil
        effects.append(.complete { completion(result) })
    }

    private mutating func request(_ message: OutgoingMessage, timeout: Duration, operation: UInt64,
                                  _ completion: @escaping Completion<[JSONValue]>, effects: inout [EngineEffect]) {
        if let error = refusal(for: message.channel) {
            effects.append(.complete { completion(.failure(error)) })
            return
        }
        let id = RequestID(operation)
        if canSendNow(on: message.channel) {
            requests.add(id, sentOn: currentConnection, completion)
            schedule(.requestDeadline(id), after: timeout, effects: &effects)
            runMachine(effects: &effects) { $0.handle(.request(message, id), actions: &$1) }
            return
        }
        if let error = channels.overflow(for: message.channel) {
            effects.append(.complete { completion(.failure(error)) })
            return
        }
        requests.add(id, sentOn: nil, completion)
        channels.buffer(message, as: .request(id))
        schedule(.requestDeadline(id), after: timeout, effects: &effects)
    }

    private mutating func custom(name: String, payload: JSONValue, timeout: Duration, operation: UInt64,
                                 _ completion: @escaping Completion<[JSONValue]>, effects: inout [EngineEffect]) {
        switch state {
        case .disconnected, .failed:
            let error = RealtimeError(state == .disconnected ? .disconnected : .sessionFailed,
                                      "the session is \(state)")
            effects.append(.complete { completion(.failure(error)) })
            return
        default:
            break
        }
        let id = RequestID(operation)
        schedule(.requestDeadline(id), after: timeout, effects: &effects)
        if handshakeDone {
            requests.add(id, sentOn: currentConnection, completion)
            runMachine(effects: &effects) { $0.handle(.custom(name: name, payload: payload, id), actions: &$1) }
        } else {
            requests.addCustom(id, name: name, payload: payload, completion)
        }
    }

    // MARK: Cancellation

    /// The task behind `operation` was cancelled. What has not happened yet is withdrawn: a buffered send
    /// or request leaves the buffer, a written request is forgotten by the dialect (its ack slot freed), a
    /// wait ends; a `connect()` that is not connected yet stops connecting. Something already written
    /// cannot be taken back and completes as it would have.
    private mutating func cancelOperation(_ operation: UInt64, effects: inout [EngineEffect]) {
        guard !withdraw(operation, effects: &effects) else { return }
        requests.rememberEarlyCancellation(operation)
    }

    /// Answers an operation whose cancellation arrived first, and reports whether it did.
    private mutating func takeEarlyCancellation<Value>(_ operation: UInt64, effects: inout [EngineEffect],
                                                       _ completion: @escaping Completion<Value>) -> Bool {
        guard requests.takeEarlyCancellation(operation) else { return false }
        effects.append(.complete { completion(.failure(RealtimeError(.cancelled, "the task was cancelled"))) })
        return true
    }

    /// Withdraws `operation` if it is still pending; false when it is unknown (finished, or not yet here).
    private mutating func withdraw(_ operation: UInt64, effects: inout [EngineEffect]) -> Bool {
        let cancelled = RealtimeError(.cancelled, "the task was cancelled")
        if let index = connectWaiters.firstIndex(where: { $0.serial == operation }) {
            let waiter = connectWaiters.remove(at: index)
            cancel(.connectDeadline(operation), effects: &effects)
            effects.append(.complete { waiter.completion(.failure(cancelled)) })
            if connectWaiters.isEmpty, !state.isConnected, state != .disconnected {
                if case .failed = state {} else { disconnect(effects: &effects) }
            }
            return true
        }
        switch channels.withdraw(operation) {
        case .waiter(let waiter):
            effects.append(.complete { waiter.completion(.failure(cancelled)) })
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
            effects.append(.complete { pending.completion(.failure(cancelled)) })
            return true
        }
        return false
    }

    // MARK: Transport

    private mutating func transportEvent(_ event: TransportEvent, connection: UInt64,
                                         effects: inout [EngineEffect]) {
        switch event {
        case .opened(let info):
            guard phase == .opening(connection) else { return }
            phase = .open(connection, handshakeDone: false)
            liveness.received(at: now)
            runMachine(effects: &effects) { $0.connectionOpened(info, actions: &$1) }
        case .received(let frames):
            guard case .open = phase else { return }
            liveness.received(at: now)
            for frame in frames {
                unchargedBytes += frame.byteCount
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

    private mutating func connectionEnded(_ closure: TransportClosure, effects: inout [EngineEffect]) {
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
        }
        phase = .idle
        resetConnectionState(effects: &effects)
        proceed(after: end, effects: &effects)
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
    private mutating func resetConnectionState(effects: inout [EngineEffect]) {
        cancel(.handshake, effects: &effects)
        cancel(.liveness, effects: &effects)
        for timer in timerSerials.keys {
            if case .dialect = timer { cancel(timer, effects: &effects) }
        }
        cancel(.stability, effects: &effects)
        liveness.stop()
        unchargedBytes = 0
        connectionID = nil
        channels.connectionLost()
        // Answers to requests written on the old connection can no longer arrive.
        for (id, pending) in requests.removeWritten() {
            cancel(.requestDeadline(id), effects: &effects)
            let error = RealtimeError(.connectionClosed, "the connection closed before the answer arrived")
            effects.append(.complete { pending.completion(.failure(error)) })
        }
    }

    private mutating func proceed(after end: ConnectionEnd, effects: inout [EngineEffect]) {
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

    private mutating func fail(_ error: RealtimeError, effects: inout [EngineEffect]) {
        cancel(.reconnect, effects: &effects)
        setState(.failed(error), effects: &effects)
        effects.append(.deliver(.error(error)))
        let abandoned = RealtimeError(.sessionFailed, "the session failed: \(error.message)",
                                      context: .init(detail: error.description))
        abandonPendingWork(with: abandoned, connectError: error, effects: &effects)
    }

    /// Fails every buffered send, request and waiter.
    private mutating func abandonPendingWork(with error: RealtimeError, connectError: RealtimeError? = nil,
                                             effects: inout [EngineEffect]) {
        for leftovers in channels.takeAllLeftovers() {
            failWaitersAndQueue(leftovers, with: error, effects: &effects)
        }
        for (id, pending) in requests.removeAll() {
            cancel(.requestDeadline(id), effects: &effects)
            effects.append(.complete { pending.completion(.failure(error)) })
        }
        completeConnectWaiters(.failure(connectError ?? error), effects: &effects)
    }

    /// Fails the buffered sends and the `subscribed()` waiters a channel held.
    private mutating func failWaitersAndQueue(_ leftovers: ChannelTable.Leftovers, with error: RealtimeError,
                                             effects: inout [EngineEffect]) {
        failQueue(leftovers.queue, with: error, effects: &effects)
        for waiter in leftovers.waiters { effects.append(.complete { waiter.completion(.failure(error)) }) }
    }

    private mutating func failQueue(_ queue: [ChannelTable.BufferedSend], with error: RealtimeError,
                                    effects: inout [EngineEffect]) {
        for item in queue {
            switch item.kind {
            case .send(let serial, let completion):
                cancel(.sendDeadline(serial), effects: &effects)
                effects.append(.complete { completion(.failure(error)) })
            case .request(let id):
                cancel(.requestDeadline(id), effects: &effects)
                if let pending = requests.remove(id) {
                    effects.append(.complete { pending.completion(.failure(error)) })
                }
            }
        }
    }

    // MARK: Timers

    private mutating func timerFired(_ timer: EngineTimer, effects: inout [EngineEffect]) {
        switch timer {
        case .reconnect:
            if case .reconnecting = state { startAttempt(effects: &effects) }
        case .handshake:
            let error = RealtimeError(.connectTimedOut, "no connection within \(connectTimeout)")
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
        case .liveness:
            checkLiveness(effects: &effects)
        case .connectDeadline(let serial):
            connectDeadlinePassed(serial, effects: &effects)
        case .stability:
            if handshakeDone { reconnect.startOver() }
        case .sendDeadline(let serial):
            guard let (channel, completion) = channels.removeBufferedSend(serial: serial) else { return }
            let error = RealtimeError(.timedOut, "the send waited \(sendTimeout) without a connection",
                                      context: .init(channel: channel))
            effects.append(.complete { completion(.failure(error)) })
        case .requestDeadline(let id):
            guard let pending = requests.remove(id) else { return }
            if pending.sentOn != nil, pending.sentOn == currentConnection {
                runMachine(effects: &effects) { $0.handle(.cancelRequest(id), actions: &$1) }
            }
            if pending.sentOn == nil { channels.removeBufferedRequest(id) }
            let error = RealtimeError(.timedOut, "no answer to request \(id) in time")
            effects.append(.complete { pending.completion(.failure(error)) })
        case .dialect(let key):
            guard case .open = phase else { return }
            runMachine(effects: &effects) { $0.timerFired(key, actions: &$1) }
        }
    }

    private mutating func checkLiveness(effects: inout [EngineEffect]) {
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

    private mutating func schedule(_ timer: EngineTimer, after delay: Duration, effects: inout [EngineEffect]) {
        nextSerial += 1
        timerSerials[timer] = nextSerial
        effects.append(.schedule(timer, serial: nextSerial, after: max(.zero, delay)))
    }

    private mutating func cancel(_ timer: EngineTimer, effects: inout [EngineEffect]) {
        if timerSerials.removeValue(forKey: timer) != nil { effects.append(.cancel(timer)) }
    }

    // MARK: Dialect actions

    /// Runs one machine transition and carries out the actions it produced.
    private mutating func runMachine(effects: inout [EngineEffect],
                                     _ step: (inout any DialectMachine, inout [DialectAction]) -> Void) {
        var produced = actions
        actions = []
        produced.removeAll(keepingCapacity: true)
        step(&machine, &produced)
        apply(produced, effects: &effects)
        produced.removeAll(keepingCapacity: true)
        if actions.capacity < produced.capacity { actions = produced }
    }

    /// Adds `frame` to the previous send effect when it goes to the same connection the same way, so one
    /// machine step becomes one transport call.
    private func appendSend(_ frame: TransportFrame, compress: Bool, on connection: UInt64, effects: inout [EngineEffect]) {
        if case .send(connection, var frames, compress)? = effects.last {
            effects.removeLast()
            frames.append(frame)
            effects.append(.send(connection: connection, frames, compress: compress))
        } else {
            effects.append(.send(connection: connection, [frame], compress: compress))
        }
    }

    private mutating func apply(_ produced: [DialectAction], effects: inout [EngineEffect]) {
        for action in produced {
            guard let connection = currentConnection else { return }
            switch action {
            case .send(let frame):
                appendSend(frame, compress: true, on: connection, effects: &effects)
            case .sendUncompressed(let frame):
                appendSend(frame, compress: false, on: connection, effects: &effects)
            case .deliver(let event):
                effects.append(.deliver(.event(event, connection: connection, bytes: unchargedBytes)))
                unchargedBytes = 0
            case .connected(let id):
                guard case .open(connection, false) = phase else { continue }
                markConnected(connection, id: id, effects: &effects)
            case .subscribed(let channel, let recovered):
                channelSubscribed(channel, recovered: recovered, effects: &effects)
            case .subscriptionPayload(let channel, let payload):
                channels.storePayload(payload, for: channel)
            case .subscriptionFailed(let channel, let error):
                channelStopped(channel, state: .failed(error), error: error, effects: &effects)
            case .channelEnded(let channel, let error):
                channelStopped(channel, state: .ended(error), error: error, effects: &effects)
            case .channelPending(let channel):
                channels.markPending(channel)
            case .resolveRequest(let id, let result):
                guard let pending = requests.remove(id) else { continue }
                cancel(.requestDeadline(id), effects: &effects)
                effects.append(.complete { pending.completion(result) })
            case .liveness(let rule):
                liveness.adopt(rule)
                if rule == .none {
                    cancel(.liveness, effects: &effects)
                } else {
                    checkLiveness(effects: &effects)
                }
            case .startTimer(let key, let delay):
                schedule(.dialect(key), after: delay, effects: &effects)
            case .cancelTimer(let key):
                cancel(.dialect(key), effects: &effects)
            case .perform(let work):
                effects.append(.work(connection: connection, work))
            case .close(let code, let reason):
                effects.append(.close(connection: connection, code: code, reason: reason))
            case .closeAsServerAsked(let code, let reason):
                serverAskedReason = reason
                effects.append(.close(connection: connection, code: code, reason: reason.description))
            case .fail(let error):
                lastEndDescription = error.description
                endConnectionLocally(TransportClosure(.closedLocally(code: 1000, reason: "")), effects: &effects)
                fail(error, effects: &effects)
                return
            case .refuseSend(let error):
                sendRefusal = error
            case .reportError(let error):
                effects.append(.deliver(.error(error)))
            case .log(let level, let message):
                effects.append(.log(level, message))
            }
        }
    }

    private mutating func markConnected(_ connection: UInt64, id: String?, effects: inout [EngineEffect]) {
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
        setState(.connected, effects: &effects)
        completeConnectWaiters(.success(()), effects: &effects)
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

    private mutating func channelSubscribed(_ channel: ChannelID, recovered: Bool?, effects: inout [EngineEffect]) {
        guard let (info, leftovers) = channels.markSubscribed(channel, recovered: recovered) else { return }
        for waiter in leftovers.waiters { effects.append(.complete { waiter.completion(.success(recovered)) }) }
        effects.append(.deliver(.lifecycle(ChannelLifecycleEvent(channel: channel, kind: .subscribed(info)))))
        for item in leftovers.queue {
            switch item.kind {
            case .send(let serial, let completion):
                cancel(.sendDeadline(serial), effects: &effects)
                sendNow(item.message, completion, effects: &effects)
            case .request(let id):
                guard requests.markWritten(id, on: currentConnection) else { continue }
                runMachine(effects: &effects) { $0.handle(.request(item.message, id), actions: &$1) }
            }
        }
    }

    private mutating func channelStopped(_ channel: ChannelID, state newState: ChannelState, error: RealtimeError,
                                         effects: inout [EngineEffect]) {
        guard let leftovers = channels.markStopped(channel, as: newState) else { return }
        failWaitersAndQueue(leftovers, with: error, effects: &effects)
        effects.append(.deliver(.error(error)))
        let kind: ChannelLifecycleEvent.Kind = if case .ended = newState { .endedByServer(error) } else { .rejected(error) }
        effects.append(.deliver(.lifecycle(ChannelLifecycleEvent(channel: channel, kind: kind))))
    }

    private mutating func setState(_ new: ConnectionState, effects: inout [EngineEffect]) {
        guard new != state else { return }
        let old = state
        state = new
        effects.append(.deliver(.state(old, new)))
    }
}
