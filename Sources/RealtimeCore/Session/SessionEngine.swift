import Foundation

/// Carries out what `SessionCore` decides: opens transports, writes frames, runs timers and async work,
/// and hands batches of deliveries to the delivery target.
///
/// Inputs from any thread go through a ``SerialMailbox``: the thread that finds it idle drains it, so
/// inputs are handled one at a time and in order without a dedicated thread, and a transport or handler
/// that calls back into the session while it is draining only queues its input.
final class SessionEngine: Sendable {
    private struct IO {
        var connections: [UInt64: any TransportConnection] = [:]
        var closedBeforeStored: Set<UInt64> = []
        /// The core's timers, behind ``armedTimer``: one clock timer for the earliest deadline.
        var timers = EngineTimerQueue()
        var armedTimer: (any ScheduledTimer)?
        /// Counts armings of the clock timer: a callback of an earlier one (cancelled too late) is ignored.
        var timerGeneration: UInt64 = 0
        var current: UInt64?
        var backlog = DeliveryBacklog()
        var readingPaused = false
        /// `disconnectAndWait()` callers, each with the connections it still waits for (nil until the
        /// engine has handled its disconnect).
        var closeWaiters: [OperationID: (pending: Set<UInt64>?, resume: @Sendable () -> Void)] = [:]

        /// Takes the armed clock timer, for the caller to cancel outside the lock, and makes any callback of
        /// it (or of an arming still on its way) stale.
        mutating func disarmTimer() -> (any ScheduledTimer)? {
            timerGeneration += 1
            defer { armedTimer = nil }
            return armedTimer
        }

        /// Forgets `connection` for the close waiters; returns those it was the last one for.
        mutating func connectionClosed(_ connection: UInt64) -> [@Sendable () -> Void] {
            guard !closeWaiters.isEmpty else { return [] }
            var ready: [@Sendable () -> Void] = []
            for (operation, waiter) in closeWaiters {
                guard var pending = waiter.pending, pending.remove(connection) != nil else { continue }
                if pending.isEmpty {
                    closeWaiters[operation] = nil
                    ready.append(waiter.resume)
                } else {
                    closeWaiters[operation]?.pending = pending
                }
            }
            return ready
        }
    }

    let registry = HandlerRegistry()
    /// Delivered batches waiting for the socket's thread to release them.
    let deliveredBatches: DeliveredBatches
    let dialectName: String
    let dialect: any RealtimeDialect
    private let transport: any RealtimeTransport
    /// What dialect work runs with: the route of the app's transport, not of its dialect wrapping.
    private let workContext: DialectWorkContext
    private let clock: any RealtimeClock
    private let delivery: DeliveryTarget
    /// The loop of the transport's group whose thread owns `delivery`; every connection opens there.
    private let loopAffinity: Int?
    private let logHandler: LogHandler?
    private let logLevel: LogLevel
    private let highWatermark: Int
    private let byteBudget: Int
    let requestTimeout: Duration
    let connectCallTimeout: Duration?
    private let mailbox = SerialMailbox<EngineInput>()
    /// Names app operations for `.cancel`; starts high so it never meets the core's own serials.
    private let operationCounter = Locked<UInt64>(1 << 48)
    private let core: Locked<SessionCore>
    /// The callers waiting for an answer, by operation: the core holds only their ids.
    private let completions = Locked(CompletionTable())
    private let io = Locked(IO())
    /// What the dialect was last told about payloads being read, and which delivery batch to watch next.
    private let payloadHint = Locked(PayloadHint())
    /// Where watched events report whether their deferred payload was read.
    private let payloadWatch = PayloadReadWatch()

    private struct PayloadHint {
        /// What the dialect was last told (`nil`: nothing yet; machines start by deferring).
        var told: Bool?
        /// Delivery batches with a deferred payload so far.
        var deferredBatches = 0

        /// Whether to watch the next batch with a deferred payload. While payloads are not read, every
        /// event is deferred and a watch in each batch would cost a copy of the event; one in 8 batches
        /// (the first included) finds out soon enough. While they are read, only the dialect's probe
        /// events are deferred, and each is watched.
        mutating func watchesNextDeferredBatch() -> Bool {
            deferredBatches += 1
            return told == true || deferredBatches % 8 == 1
        }
    }

    init(dialect: some RealtimeDialect, transport: any RealtimeTransport, options: SessionOptions) {
        self.dialect = dialect
        dialectName = dialect.name
        self.transport = dialect.transport(wrapping: transport)
        workContext = DialectWorkContext(transport: transport)
        clock = options.clock
        deliveredBatches = DeliveredBatches(clock: options.clock)
        // The transport's delivery thread when it has one (WebSocketTransport: its group's). Otherwise a
        // queue on the default pool: one without a target lands on the overcommit pool, which starts a
        // thread whenever all of its threads are busy, and 10,000 sessions made hundreds of threads.
        let provided = options.delivery == nil ? (transport as? any DeliveryProviding)?.makeDefaultDelivery() : nil
        delivery = options.delivery ?? provided?.target
            ?? .queue(DispatchQueue(label: "realtime.delivery.\(dialect.name)", target: .global()))
        loopAffinity = provided?.loopAffinity
        logHandler = options.logHandler
        logLevel = options.logLevel
        highWatermark = max(1, options.deliveryHighWatermark)
        byteBudget = max(1, options.deliveryByteBudget)
        requestTimeout = options.requestTimeout
        connectCallTimeout = options.connectCallTimeout
        core = Locked(SessionCore(dialect: dialect, machine: dialect.makeMachine(),
                                  policy: options.reconnectPolicy ?? dialect.reconnectPolicy,
                                  options: options, defaultChannels: dialect.defaultChannels))
    }

    /// A fresh name for one app operation (a `connect`, `send`, `request`, … call).
    func nextOperation() -> OperationID {
        operationCounter.withLock { counter in
            counter += 1
            return OperationID(counter)
        }
    }

    /// Submits the input `start` makes for a fresh operation and waits for the core's answer, the caller
    /// held in `kind` (the table of callers waiting for a `Value`) until then. Cancelling the calling task
    /// submits `.cancel(operation)`; a `.cancelled` answer is thrown as `CancellationError`.
    func cancellable<Value: Sendable>(
        _ kind: WritableKeyPath<CompletionTable, [OperationID: Completion<Value>]>,
        _ start: (_ operation: OperationID) -> EngineInput
    ) async throws -> Value {
        switch await outcome(kind, start) {
        case .success(let value): return value
        case .failure(let error): throw Self.thrown(error)
        }
    }

    /// What an app operation throws for a failure the core answered: `CancellationError` for `.cancelled`,
    /// the error itself otherwise.
    static func thrown(_ error: RealtimeError) -> any Error {
        error.code == .cancelled ? CancellationError() : error
    }

    /// ``cancellable(_:_:)``'s answer as a value: a cancelled task gives `.cancelled`, before the operation
    /// starts as well, so a caller can decide on a failure before anything is thrown.
    func outcome<Value: Sendable>(
        _ kind: WritableKeyPath<CompletionTable, [OperationID: Completion<Value>]>,
        _ start: (_ operation: OperationID) -> EngineInput
    ) async -> Result<Value, RealtimeError> {
        if Task.isCancelled { return .failure(RealtimeError(.cancelled, "the task was cancelled")) }
        let operation = nextOperation()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                completions.withLock { $0[keyPath: kind][operation] = { continuation.resume(returning: $0) } }
                submit(start(operation))
            }
        } onCancel: {
            self.submit(.cancel(operation: operation))
        }
    }

    /// The dialect's spelling of `channel`.
    func canonicalChannel(_ channel: ChannelID) -> ChannelID {
        dialect.canonicalChannel(channel)
    }

    /// Validates an outgoing message with the dialect's rules.
    func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError? {
        if let error = Self.unsendable(message.arguments) { return error }
        return dialect.validate(message, expectsReply: expectsReply)
    }

    /// Why `arguments` cannot be sent (too deep, NaN), checked before any dialect walks them.
    static func unsendable(_ arguments: [JSONValue]) -> RealtimeError? {
        do throws(RealtimeError) {
            for argument in arguments { try argument.validateForSending() }
            return nil
        } catch {
            return error
        }
    }

    /// The open connection, for ``RealtimeSession/ping()``; why there is none otherwise.
    func roundTripConnection() throws(RealtimeError) -> any RoundTripMeasuring {
        let context = RealtimeError.Context(detail: "ping")
        switch state {
        case .connected:
            break
        case .disconnected:
            throw RealtimeError(.disconnected, "ping needs an open connection; the session is disconnected",
                                context: context)
        case .failed(let error):
            throw RealtimeError(.sessionFailed, "ping needs an open connection; the session failed: \(error.message)",
                                context: context)
        case let other:
            throw RealtimeError(.connectionClosed, "ping needs an open connection; the session is \(other)",
                                context: context)
        }
        let connection = io.withLock { io in io.current.flatMap { io.connections[$0] } }
        guard let connection else {
            throw RealtimeError(.connectionClosed, "ping needs an open connection; the connection just closed",
                                context: context)
        }
        guard let pinging = connection as? any RoundTripMeasuring else { throw RealtimeError.pingUnsupported() }
        return pinging
    }

    var state: ConnectionState { core.withLock { $0.state } }
    var connectionID: String? { core.withLock { $0.connectionID } }
    var bufferedSendCount: Int { core.withLock { $0.bufferedSendCount } }
    var statistics: SessionStatistics {
        let now = clock.now()
        return core.withLock { $0.statistics(at: now) }
    }
    var deliveryBacklog: DeliveryBacklog { io.withLock { $0.backlog } }
    func channelState(_ channel: ChannelID) -> ChannelState? { core.withLock { $0.channelState(channel) } }

    func submit(_ input: EngineInput) {
        var effects: [EngineEffect] = []
        mailbox.submit(input) { inputs in
            let now = clock.now()
            // A fresh array each time: the taken one goes to the delivery queue with its batch.
            var deliveries: [Delivery] = []
            core.withLock { core in
                core.now = now
                for input in inputs { core.handle(input, effects: &effects) }
                swap(&deliveries, &core.deliveries)
            }
            // Before the answers among the effects resume their callers: an adapter's state that a tap
            // keeps (a presence roster) is current when `subscribed()` returns, whenever handlers run.
            if !deliveries.isEmpty { registry.tap(&deliveries) }
            execute(effects)
            effects.removeAll(keepingCapacity: true)
            if !deliveries.isEmpty { deliver(deliveries) }
        }
    }

    // MARK: Effects

    private func execute(_ effects: [EngineEffect]) {
        for effect in effects {
            switch effect {
            case .prepareRequest(let connection, let prepare):
                Task { [weak self] in
                    let result: Result<ConnectionRequest, RealtimeError>
                    do {
                        result = .success(try await prepare())
                    } catch {
                        result = .failure(Self.wrap(error, doing: "building the connection request"))
                    }
                    self?.submit(.requestPrepared(connection: connection, result))
                }
            case .open(let connection, let request):
                open(connection, request)
            case .send(let connection, let frames, let compress):
                if tracesFrames { for frame in frames { traceFrame("→", frame) } }
                let target = io.withLock { $0.connections[connection] }
                if compress {
                    target?.send(frames)
                } else {
                    target?.send(frames, compress: false)
                }
            case .close(let connection, let code, let reason):
                io.withLock { $0.connections[connection] }?.close(code: code, reason: reason)
            case .abort(let connection):
                io.withLock { $0.connections[connection] }?.abort()
            case .schedule(let timer, let serial, let delay):
                let deadline = clock.now() + delay
                let rearm = io.withLock { io -> (replaced: (any ScheduledTimer)?, generation: UInt64)? in
                    guard io.timers.schedule(timer, serial: serial, at: deadline) != nil else { return nil }
                    return (io.disarmTimer(), io.timerGeneration)
                }
                if let rearm {
                    rearm.replaced?.cancel()
                    armTimer(at: deadline, generation: rearm.generation)
                }
            case .cancel(let timer):
                let disarmed = io.withLock { io -> (any ScheduledTimer)? in
                    guard io.timers.cancel(timer) else { return nil }
                    return io.disarmTimer()
                }
                disarmed?.cancel()
            case .work(let connection, let work):
                let context = workContext
                Task { [weak self] in
                    let result: Result<JSONValue, RealtimeError>
                    do {
                        result = .success(try await work.run(context))
                    } catch {
                        result = .failure(Self.wrap(error, doing: work.id.kind.rawValue))
                    }
                    self?.submit(.workFinished(connection: connection, work.id, result))
                }
            case .answer(let answer):
                // Each operation is answered once, and its caller is registered before its input is submitted.
                let completion = completions.withLock { $0.take(answer) }
                assert(completion != nil, "no caller waits for \(answer.operation)")
                completion?()
            case .log(let level, let message):
                log(level, message)
            case .notifyWhenClosed(let operation):
                let resume = io.withLock { io -> (@Sendable () -> Void)? in
                    guard io.closeWaiters[operation] != nil else { return nil }  // cancelled meanwhile
                    let open = Set(io.connections.keys)
                    guard open.isEmpty else {
                        io.closeWaiters[operation]?.pending = open
                        return nil
                    }
                    return io.closeWaiters.removeValue(forKey: operation)?.resume
                }
                if let resume { delivery.enqueue(resume) }
            }
        }
    }

    private static func wrap(_ error: any Error, doing step: String) -> RealtimeError {
        if let error = error as? RealtimeError { return error }
        return RealtimeError(.operationFailed, "\(step) failed: \(error)")
    }

    private func open(_ connection: UInt64, _ request: ConnectionRequest) {
        var request = request
        request.loopAffinity = loopAffinity
        let handle = transport.open(request) { [weak self] event in
            guard let self else { return }
            self.deliveredBatches.release()  // on the socket's thread, which built their events
            if self.tracesFrames, case .received(let frames) = event {
                for frame in frames { self.traceFrame("←", frame) }
            }
            var closeWaitersDone: [@Sendable () -> Void] = []
            if case .closed = event {
                closeWaitersDone = self.io.withLock { io in
                    if io.connections.removeValue(forKey: connection) == nil {
                        io.closedBeforeStored.insert(connection)
                    }
                    if io.current == connection { io.current = nil }
                    return io.connectionClosed(connection)
                }
            }
            self.submit(.transport(connection: connection, event))
            // After the handler calls already queued, the state change to `.disconnected` among them.
            for resume in closeWaitersDone { self.delivery.enqueue(resume) }
        }
        io.withLock { io in
            if io.closedBeforeStored.remove(connection) == nil {
                io.connections[connection] = handle
                io.current = connection
                io.readingPaused = false
            }
        }
    }

    private func deliver(_ items: [Delivery]) {
        let registry = self.registry
        var queued = DeliveryBacklog()
        // Changed in place, and only where an acknowledgement is asked for: most batches are handed on as
        // they came, without copying an event.
        var changed = items
        var lastDeferred: Int?  // the last event whose payload the dialect left as text
        for index in changed.indices {
            guard case .event(let event, let connection, let bytes) = changed[index] else { continue }
            queued.events += 1
            queued.bytes += bytes
            if event.hasDeferredPayload { lastDeferred = index }
            guard let token = event.ackToken else { continue }
            var answerable = event
            answerable.ack = responder(for: token, on: connection)
            changed[index] = .event(answerable, connection: connection, bytes: bytes)
        }
        // The last deferred payload reports whether it is read, in a handler or wherever it goes next.
        if let lastDeferred, payloadHint.withLock({ $0.watchesNextDeferredBatch() }),
           case .event(let event, let connection, let bytes) = changed[lastDeferred] {
            changed[lastDeferred] = .event(event.watchingPayloadRead(with: payloadWatch), connection: connection,
                                           bytes: bytes)
        }
        let batch = changed
        let watch = payloadWatch
        let counted = !delivery.isInline && queued.events > 0
        let delivered = counted ? deliveredBatches : nil
        let backlog = queued
        if counted { noteQueued(backlog) }
        delivery.enqueue { [weak self] in
            for item in batch {
                switch item {
                case .event(let event, _, _): registry.dispatch(event)
                case .state(let old, let new): registry.dispatchState(from: old, to: new)
                case .error(let error): registry.dispatchError(error)
                case .lifecycle(let event): registry.dispatchLifecycle(event)
                case .followUp(let work): work()
                }
            }
            if counted { self?.noteDelivered(backlog) }
            // Freed by the socket's thread, or by a timer when it stays quiet (DeliveredBatches).
            delivered?.hold(batch, bytes: backlog.bytes)
            // Was a watched payload read, or dropped unread (this batch's, or an earlier one that an
            // `events()` loop or the app held on to)? The dialect then parses at once, or defers again.
            if let read = watch.take() { self?.notePayloadsRead(read) }
        }
    }

    /// Reports `error` to the error observers on the delivery target, for a failure found off it (a typed
    /// event stream decodes in its consumer's task), so that observers run where they always run.
    func reportOnDeliveryTarget(_ error: RealtimeError) {
        let registry = self.registry
        delivery.enqueue { registry.dispatchError(error) }
    }

    /// Tells the dialect when the handlers start or stop reading deferred payloads; nothing otherwise.
    private func notePayloadsRead(_ read: Bool) {
        let changed = payloadHint.withLock { hint in
            defer { hint.told = read }
            return hint.told != read
        }
        if changed { submit(.payloadsRead(read)) }
    }

    /// Answers the server's acknowledgement request `token` once, however often the app calls it.
    private func responder(for token: AckToken, on connection: UInt64) -> AckResponder {
        let answered = Locked(false)
        return AckResponder(token: token) { [weak self] token, arguments in
            let first = answered.withLock { flag -> Bool in
                defer { flag = true }
                return !flag
            }
            guard first else { return }
            if let error = Self.unsendable(arguments) {
                var error = error
                error.message = "acknowledgement not sent: " + error.message
                self?.deliver([.error(error)])
                return
            }
            self?.submit(.acknowledge(connection: connection, token, arguments))
        }
    }

    /// Stops reading when too many handler calls, or too many bytes behind them, are waiting, so TCP
    /// pushes back on the server and memory stays bounded whatever the server sends.
    /// An event waits in an app's event stream: it counts like a waiting handler call.
    func noteStreamBuffered(_ event: DeliveryBacklog) { noteQueued(event) }

    /// The app took an event out of its stream (or the stream ended with events still in it).
    func noteStreamConsumed(_ event: DeliveryBacklog) { noteDelivered(event) }

    private func noteQueued(_ queued: DeliveryBacklog) {
        let pause = io.withLock { io -> (any TransportConnection)? in
            io.backlog.events += queued.events
            io.backlog.bytes += queued.bytes
            guard io.backlog.events > highWatermark || io.backlog.bytes > byteBudget,
                  !io.readingPaused, let current = io.current else { return nil }
            io.readingPaused = true
            return io.connections[current]
        }
        pause?.setReadingPaused(true)
    }

    private func noteDelivered(_ delivered: DeliveryBacklog) {
        let resume = io.withLock { io -> (any TransportConnection)? in
            io.backlog.events -= delivered.events
            io.backlog.bytes -= delivered.bytes
            guard io.readingPaused, io.backlog.events <= highWatermark / 2, io.backlog.bytes <= byteBudget / 2,
                  let current = io.current else {
                return nil
            }
            io.readingPaused = false
            return io.connections[current]
        }
        resume?.setReadingPaused(false)
    }

    private var tracesFrames: Bool { logHandler != nil && logLevel <= .trace }

    func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard let logHandler, level >= logLevel else { return }
        logHandler(LogRecord(level: level, message: Redaction.redact(message()), source: dialectName))
    }

    /// A frame's trace line: the dialect's description is redacted already (whole, before the cut), so it
    /// is not redacted a second time.
    private func traceFrame(_ direction: String, _ frame: TransportFrame) {
        guard let logHandler else { return }
        logHandler(LogRecord(level: .trace, message: "\(direction) \(dialect.logDescription(of: frame))",
                             source: dialectName))
    }

    /// Disconnects, then waits until every connection open at that point has reported `closed` and the
    /// handler calls queued before then have run, or until the calling task is cancelled.
    func disconnectAndWait() async {
        let operation = nextOperation()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                io.withLock { $0.closeWaiters[operation] = (nil, { continuation.resume() }) }
                submit(.disconnect(closeWaiter: operation))
                // Cancelled before the waiter was in the table: the handler found nothing to resume.
                if Task.isCancelled { io.withLock { $0.closeWaiters.removeValue(forKey: operation) }?.resume() }
            }
        } onCancel: {
            io.withLock { $0.closeWaiters.removeValue(forKey: operation) }?.resume()
        }
    }

    /// Closes the connection and stops timers; used when the session is released.
    func shutdown() {
        submit(.disconnect())
        let armed = io.withLock { io -> (any ScheduledTimer)? in
            io.timers.removeAll()
            return io.disarmTimer()
        }
        armed?.cancel()
    }

    // MARK: Timers

    /// Arms the clock timer for `deadline`, unless a later arming (`generation` is no longer current) came first.
    private func armTimer(at deadline: Duration, generation: UInt64) {
        let handle = clock.schedule(after: deadline - clock.now()) { [weak self] in
            self?.timerFired(generation: generation)
        }
        let superseded = io.withLock { io -> Bool in
            guard io.timerGeneration == generation else { return true }
            io.armedTimer = handle
            return false
        }
        if superseded { handle.cancel() }
    }

    /// The clock timer fired: the core hears of every timer due, in deadline order, once the clock timer is
    /// armed for the next one.
    private func timerFired(generation: UInt64) {
        let now = clock.now()
        let fired = io.withLock { io -> (due: [(timer: EngineTimer, serial: UInt64)], next: (Duration, UInt64)?)? in
            guard io.timerGeneration == generation else { return nil }
            io.armedTimer = nil
            let fired = io.timers.fire(at: now)
            guard let next = fired.next else { return (fired.due, nil) }
            io.timerGeneration += 1
            return (fired.due, (next, io.timerGeneration))
        }
        guard let fired else { return }
        if let (deadline, generation) = fired.next { armTimer(at: deadline, generation: generation) }
        for (timer, serial) in fired.due { submit(.timer(timer, serial: serial)) }
    }
}
