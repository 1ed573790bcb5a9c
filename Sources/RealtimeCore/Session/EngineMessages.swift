// What passes between `SessionEngine` and `SessionCore`: inputs in, effects out.

enum EngineInput: Sendable {
    /// `timeout`: how long the caller waits for `.connected` (nil: no bound). `operation` names the caller,
    /// or is `nil` when nobody waits (`start()`).
    case connect(timeout: Duration?, operation: OperationID?)
    /// `closeWaiter`: a `disconnectAndWait()` caller, told once the connections open now have closed.
    case disconnect(closeWaiter: OperationID? = nil)
    case subscribe(ChannelID)
    case awaitSubscription(ChannelID, operation: OperationID)
    case unsubscribe(ChannelID)
    case send(OutgoingMessage, operation: OperationID)
    case request(OutgoingMessage, timeout: Duration, operation: OperationID)
    case custom(name: String, payload: JSONValue, timeout: Duration, operation: OperationID)
    /// The task waiting for `operation` (a connect, send, request, custom command or subscription wait)
    /// was cancelled: withdraw what has not happened yet and answer it with `.cancelled`.
    case cancel(operation: OperationID)
    case acknowledge(connection: UInt64, AckToken, [JSONValue])
    case requestPrepared(connection: UInt64, Result<ConnectionRequest, RealtimeError>)
    case transport(connection: UInt64, TransportEvent)
    case timer(EngineTimer, serial: UInt64)
    case workFinished(connection: UInt64, WorkID, Result<JSONValue, RealtimeError>)
    /// The device's network path went away (`false`) or is usable, possibly through a new interface (`true`).
    case networkPath(available: Bool)
    /// Retry at once with a fresh backoff if waiting to reconnect.
    case reconnectNow
    /// The app went to the background (`true`) or came back to the foreground (`false`).
    case background(Bool)
    /// The handlers started (`true`) or stopped reading the payloads the dialect leaves as text.
    case payloadsRead(Bool)

    /// The operation this input starts, whose caller waits for an answer.
    var startedOperation: OperationID? {
        switch self {
        case .connect(_, let operation): operation
        case .awaitSubscription(_, let operation), .send(_, let operation), .request(_, _, let operation),
             .custom(_, _, _, let operation):
            operation
        case .disconnect, .subscribe, .unsubscribe, .cancel, .acknowledge, .requestPrepared, .transport, .timer,
             .workFinished, .networkPath, .reconnectNow, .background, .payloadsRead:
            nil
        }
    }
}

enum EngineTimer: Hashable, Sendable {
    case reconnect
    case handshake
    case liveness
    /// The connection has stayed up long enough to count as healthy.
    case stability
    case sendDeadline(OperationID)
    case requestDeadline(RequestID)
    /// A `connect()` caller has waited as long as it allowed.
    case connectDeadline(OperationID)
    /// The app has been in the background for ``SessionOptions/backgroundGrace``.
    case backgroundGrace
    case dialect(TimerKey)
}

enum Delivery: Sendable {
    /// `bytes`: the received frames behind the event, counted against the delivery byte budget.
    case event(RealtimeEvent, connection: UInt64, bytes: Int)
    /// Boxed: two states are 336 bytes, and every delivery in a batch would be that large.
    indirect case state(ConnectionState, ConnectionState)
    /// Boxed, as the lifecycle: an error is 144 bytes, and unboxed every event's delivery would be that large.
    indirect case error(RealtimeError)
    indirect case lifecycle(ChannelLifecycleEvent)
    /// What a tap asked to run in this place (`HandlerRegistry.tap(_:)`).
    case followUp(@Sendable () -> Void)
}

enum EngineEffect: Sendable {
    case prepareRequest(connection: UInt64, @Sendable () async throws -> ConnectionRequest)
    case open(connection: UInt64, ConnectionRequest)
    /// `compress: false` for frames the transport must send uncompressed.
    case send(connection: UInt64, [TransportFrame], compress: Bool)
    case close(connection: UInt64, code: Int, reason: String)
    case abort(connection: UInt64)
    case schedule(EngineTimer, serial: UInt64, after: Duration)
    /// Also follows a timer that fired, so that its handle is not kept.
    case cancel(EngineTimer)
    case work(connection: UInt64, DialectWork)
    /// Runs the completion the engine holds for the answered operation.
    case answer(OperationAnswer)
    /// Tells `waiter` once every connection open now has reported `closed` (at once if none is).
    case notifyWhenClosed(OperationID)
    case log(LogLevel, String)
}
