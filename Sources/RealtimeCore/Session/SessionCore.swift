/// The session engine's logic as a value: inputs in, effects out, no I/O and no clock of its own.
///
/// `SessionEngine` feeds it one input at a time (serialized by its mailbox) and carries out the effects.
/// The callers of app operations are not part of it: the core holds their ids and answers them with
/// `.answer` effects; the engine keeps each caller's completion by id (``CompletionTable``) and runs it.
///
/// Its methods are grouped by feature: connecting, reconnecting and liveness in `SessionCore+Connect`,
/// channels, sends, requests and cancellation in `SessionCore+Operations`, the transport's events and the
/// dialect's actions in `SessionCore+Transport`.
struct SessionCore: Sendable {
    enum Phase: Equatable {
        case idle
        case preparing(UInt64)
        case opening(UInt64)
        case open(UInt64, handshakeDone: Bool)
    }

    // Configuration
    let connectTimeout: Duration
    let sendTimeout: Duration
    let dialect: any RealtimeDialect

    // State. Internal rather than private only so that the extensions in the other SessionCore+ files reach
    // it; nothing outside SessionCore touches it.
    var machine: any DialectMachine
    private(set) var state: ConnectionState = .initialized
    var connectionID: String?
    var phase: Phase = .idle
    var connectionCounter: UInt64 = 0
    var reconnect: ReconnectAccounting
    /// `connect()` callers waiting for `.connected`; each one's deadline is `.connectDeadline(operation)`.
    var connectWaiters: [OperationID] = []
    /// Attempts that failed since the oldest waiting `connect()` call began, for its timeout message.
    var failedAttemptsWhileWaiting = 0
    var channels: ChannelTable
    var requests = PendingRequests()
    private var nextSerial: UInt64 = 0
    private var timerSerials: [EngineTimer: UInt64] = [:]
    var liveness = LivenessMonitor()
    /// Bytes of frames received since the last delivered event, charged to the next one.
    var unchargedBytes = 0
    /// Set when the machine refuses the `.send` it is handling.
    var sendRefusal: RealtimeError?
    /// The machine's action buffer, kept between transitions for its capacity.
    var actions: [DialectAction] = []
    /// What the handlers get, in the order it happened; the engine takes it after each batch of inputs and
    /// hands it to the delivery target after the batch's effects (kept apart from the effects, so an event
    /// is not wrapped and copied once more on its way).
    var deliveries: [Delivery] = []
    var lastEndDescription = ""
    /// Why the last connection or attempt ended, for `.reconnecting`.
    var lastEndReason: DisconnectReason = .closedByClient(code: 1000, reason: "")
    /// Set when the machine closes because the server asked; wins over what the transport reports.
    var serverAskedReason: DisconnectReason?
    /// What the app last reported of the network path; attempts wait while it is `false`.
    var networkAvailable = true
    /// How long a backgrounded app keeps its connection (``SessionOptions/backgroundGrace``); `nil`: always.
    let backgroundGrace: Duration?
    /// What the app last reported: in the background (`true`) or the foreground.
    var inBackground = false
    /// The counters of ``RealtimeSession/statistics``; `connectedFor` stays `nil` here.
    var counters = SessionStatistics()
    /// The clock's reading when the current connection completed its handshake.
    var connectedAt: Duration?

    /// Set by the engine before each round of inputs.
    var now: Duration = .zero

    init(dialect: any RealtimeDialect, machine: any DialectMachine, policy: ReconnectPolicy, options: SessionOptions,
         defaultChannels: [ChannelID]) {
        self.dialect = dialect
        self.machine = machine
        reconnect = ReconnectAccounting(policy: policy, random: options.randomSource)
        connectTimeout = options.connectTimeout
        sendTimeout = options.sendTimeout
        backgroundGrace = options.backgroundGrace.map { max($0, .zero) }
        channels = ChannelTable(joined: defaultChannels, sendBufferLimit: options.sendBufferLimit)
    }

    /// The current state of `channel`, or `nil` when the app never joined it.
    func channelState(_ channel: ChannelID) -> ChannelState? { channels.state(of: channel) }

    /// Channels the session holds, in the order they were joined.
    var joinedChannels: [ChannelID] { channels.order }

    /// Sends and requests waiting for the connection or their channel.
    var bufferedSendCount: Int { channels.bufferedCount }

    /// The counters, with the current connection's age at `now`.
    func statistics(at now: Duration) -> SessionStatistics {
        var statistics = counters
        if state.isConnected, let connectedAt { statistics.connectedFor = now - connectedAt }
        return statistics
    }

    var handshakeDone: Bool {
        if case .open(_, true) = phase { return true }
        return false
    }

    var currentConnection: UInt64? {
        switch phase {
        case .idle: return nil
        case .preparing(let id), .opening(let id), .open(let id, _): return id
        }
    }

    // MARK: Inputs

    mutating func handle(_ input: EngineInput, effects: inout [EngineEffect]) {
        // A call whose cancellation overtook it never starts; its caller hears `.cancelled`.
        if let operation = input.startedOperation, takeEarlyCancellation(operation, effects: &effects) { return }
        switch input {
        case .connect(let timeout, let operation): connect(timeout: timeout, operation: operation, effects: &effects)
        case .disconnect(let closeWaiter):
            disconnect(effects: &effects)
            // Even when already disconnected: a connection an earlier disconnect closed may still be closing.
            if let closeWaiter { effects.append(.notifyWhenClosed(closeWaiter)) }
        case .subscribe(let channel): subscribe(channel, effects: &effects)
        case .awaitSubscription(let channel, let operation): awaitSubscription(channel, operation, effects: &effects)
        case .unsubscribe(let channel): unsubscribe(channel, effects: &effects)
        case .send(let message, let operation): send(message, operation: operation, effects: &effects)
        case .request(let message, let timeout, let operation):
            request(message, timeout: timeout, operation: operation, effects: &effects)
        case .custom(let name, let payload, let timeout, let operation):
            custom(name: name, payload: payload, timeout: timeout, operation: operation, effects: &effects)
        case .cancel(let operation): cancelOperation(operation, effects: &effects)
        case .acknowledge(let connection, let token, let arguments):
            acknowledge(token, arguments, on: connection, effects: &effects)
        case .requestPrepared(let connection, let result): requestPrepared(result, for: connection, effects: &effects)
        case .transport(let connection, let event): transportEvent(event, connection: connection, effects: &effects)
        case .timer(let timer, let serial): timerFired(timer, serial: serial, effects: &effects)
        case .workFinished(let connection, let id, let result):
            workFinished(id, result, on: connection, effects: &effects)
        case .networkPath(let available): networkPathChanged(available: available, effects: &effects)
        case .reconnectNow: reconnectNow(effects: &effects)
        case .background(let inBackground):
            if inBackground { enteredBackground(effects: &effects) } else { enteredForeground(effects: &effects) }
        case .payloadsRead(let read): machine.payloadsAreRead(read)
        }
    }

    // MARK: Timers

    /// Runs what `timer` stands for, unless it was cancelled or scheduled again since `serial` was armed.
    private mutating func timerFired(_ timer: EngineTimer, serial: UInt64, effects: inout [EngineEffect]) {
        guard timerSerials[timer] == serial else { return }
        // Through `cancel`, so that the engine lets go of the fired timer's handle too.
        cancel(timer, effects: &effects)
        switch timer {
        case .reconnect: if case .reconnecting = state { startAttempt(effects: &effects) }
        case .handshake: handshakeTimedOut(effects: &effects)
        case .liveness: checkLiveness(effects: &effects)
        case .connectDeadline(let operation): connectDeadlinePassed(operation, effects: &effects)
        case .backgroundGrace: backgroundGraceEnded(effects: &effects)
        case .stability: if handshakeDone { reconnect.startOver() }
        case .sendDeadline(let operation): sendDeadlinePassed(operation, effects: &effects)
        case .requestDeadline(let id): requestDeadlinePassed(id, effects: &effects)
        case .dialect(let key): dialectTimerFired(key, effects: &effects)
        }
    }

    mutating func schedule(_ timer: EngineTimer, after delay: Duration, effects: inout [EngineEffect]) {
        nextSerial += 1
        timerSerials[timer] = nextSerial
        effects.append(.schedule(timer, serial: nextSerial, after: max(.zero, delay)))
    }

    mutating func cancel(_ timer: EngineTimer, effects: inout [EngineEffect]) {
        guard timerSerials.removeValue(forKey: timer) != nil else { return }
        timerSerials.releaseRoomIfSparse()
        effects.append(.cancel(timer))
    }

    /// Cancels every timer the dialect armed.
    mutating func cancelDialectTimers(effects: inout [EngineEffect]) {
        for timer in timerSerials.keys {
            if case .dialect = timer { cancel(timer, effects: &effects) }
        }
    }

    // MARK: State

    mutating func setState(_ new: ConnectionState, effects: inout [EngineEffect]) {
        guard new != state else { return }
        let old = state
        state = new
        deliveries.append(.state(old, new))
    }
}
