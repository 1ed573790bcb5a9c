import Foundation

/// A connection to a realtime server in one dialect (Pusher/Bird, Socket.IO, Action Cable).
///
/// The session owns the connection, reconnects by its ``ReconnectPolicy``, re-joins channels after every
/// reconnect, buffers sends while it cannot send, and calls handlers in wire order on its delivery target.
/// Its type does not depend on the dialect, so moving to another backend changes only the initializer.
///
/// ```swift
/// let session = RealtimeSession(dialect: .socketIO(url: url), transport: WebSocketTransport())
/// let chat = session.channel("/chat")
/// let id = chat.on("message") { event in print(event.data) }
/// try await session.connect()
/// try await chat.send("message", "hello")
/// chat.off(id: id)
/// ```
///
/// Every method is safe to call from any thread. Releasing the session closes its connection.
public final class RealtimeSession: Sendable {
    let engine: SessionEngine

    /// Makes a session; it does not connect until ``connect(timeout:)`` or ``start()``.
    ///
    /// `dialect` is an existential on purpose: with an opaque parameter, the compiler type-checks a
    /// trailing closure inside `.socketIO(url:auth: .provider { … })` without its `@Sendable` context.
    public init(dialect: any RealtimeDialect, transport: any RealtimeTransport, options: SessionOptions = .init()) {
        engine = SessionEngine(dialect: dialect, transport: transport, options: options)
    }

    deinit {
        engine.shutdown()
    }

    /// The current connection state.
    public var state: ConnectionState { engine.state }

    /// The server's id for the current connection (Pusher socket id, Engine.IO sid), when connected.
    public var connectionID: String? { engine.connectionID }

    /// Sends and requests waiting for the connection or for their channel.
    public var bufferedSendCount: Int { engine.bufferedSendCount }

    /// Events received and waiting for their handlers, and the bytes behind them. Reading from the socket
    /// pauses while this exceeds `SessionOptions.deliveryHighWatermark` or `deliveryByteBudget`. With
    /// `.inline` delivery only events waiting in ``events(_:)`` streams count.
    public var deliveryBacklog: DeliveryBacklog { engine.deliveryBacklog }

    /// The dialect's short name.
    public var dialectName: String { engine.dialectName }

    /// What the session has done so far: attempts, connections (so reconnections), frames, bytes and
    /// events each way, and how long the current connection has been up.
    public var statistics: SessionStatistics { engine.statistics }

    /// Connects and waits until the dialect's handshake completes. Failed attempts are retried by the
    /// reconnect policy while this waits, and each failure also reaches ``onError(id:_:)`` and
    /// ``errors`` as it happens.
    ///
    /// - Parameter timeout: how long to wait over all attempts; `nil` uses
    ///   `SessionOptions.connectCallTimeout` (30 s by default).
    /// - Throws: `.connectTimedOut` when the time runs out, with the last attempt's failure in
    ///   `context.detail` (the session keeps trying; `disconnect()` stops it); the session's error when
    ///   it fails (a terminal error, or the policy's limits reached); `.disconnected` when the app
    ///   disconnects meanwhile; `CancellationError` when the calling task is cancelled, which also stops
    ///   connecting (as `disconnect()` would) unless the session is already connected.
    public func connect(timeout: Duration? = nil) async throws {
        let timeout = timeout ?? engine.connectCallTimeout
        try await engine.cancellable(\.done) { .connect(timeout: timeout, operation: $0) }
    }

    /// Starts connecting without waiting.
    public func start() {
        engine.submit(.connect(timeout: nil, operation: nil))
    }

    /// Closes the connection and stays disconnected: no reconnect fires until ``connect(timeout:)`` is
    /// called again. Buffered sends and pending requests fail with `.disconnected`.
    public func disconnect() {
        engine.submit(.disconnect())
    }

    /// Disconnects as ``disconnect()`` does, then returns once the connection has closed and the handlers
    /// have run for everything that came before (the state change to ``ConnectionState/disconnected``
    /// included). Closed means the close handshake finished, or the transport stopped waiting for the
    /// server's answer (the WebSocket transport's `closeTimeout`, 5 s by default, which Socket.IO's
    /// long-polling applies to its last POSTs too), and the socket is shut.
    ///
    /// Call it before a process exits, so that what was sent before it, and the close itself, reach the
    /// server instead of dying with the process. Returns as soon as the handlers have run when no
    /// connection is open, and early when the calling task is cancelled (the connection still closes).
    public func disconnectAndWait() async {
        await engine.disconnectAndWait()
    }

    /// Tells the session whether the device has a usable network path (feed it from `NWPathMonitor` or
    /// the platform's equivalent; the session never guesses).
    ///
    /// - `false`: the connection is dropped at once (its socket cannot outlive the path) and the session
    ///   waits in ``ConnectionState/waitingForNetwork`` without spending reconnect attempts; sends stay
    ///   buffered within their timeouts.
    /// - `true`: a waiting or reconnecting session connects now with a fresh backoff; a connected session
    ///   checks its link at once (a change of interface often kills a socket silently).
    public func networkPathChanged(isAvailable: Bool) {
        engine.submit(.networkPath(available: isAvailable))
    }

    /// Skips the rest of the reconnect delay: a reconnecting (or network-waiting) session tries now with a
    /// fresh backoff. Does nothing in any other state.
    public func reconnectNow() {
        engine.submit(.reconnectNow)
    }

    /// Call when the app returns to the foreground. A connected session checks its link at once (the
    /// dialect's ping, or the server's last sign of life against its deadline) instead of waiting for the
    /// next liveness deadline; a reconnecting session tries now; a ``ConnectionState/suspended`` one
    /// connects now with a fresh backoff and re-joins its channels.
    public func applicationWillEnterForeground() {
        engine.submit(.background(false))
    }

    /// Call when the app goes to the background. Nothing happens unless ``SessionOptions/backgroundGrace``
    /// is set: then, if the app is still in the background when it has passed (counted from this call),
    /// the connection is closed (code 1001) and the session is ``ConnectionState/suspended`` until
    /// ``applicationWillEnterForeground()``, so a backgrounded app neither holds a connection nor spends
    /// reconnect attempts. A `connect()` made while suspended connects, and keeps the connection until
    /// this is called again.
    public func applicationDidEnterBackground() {
        engine.submit(.background(true))
    }

    /// Measures the round trip to the server now, the same way on every dialect: a WebSocket ping on the
    /// open connection and the time until its pong (which the server's WebSocket layer sends, so no dialect
    /// message is involved and no handler sees it).
    ///
    /// Throws `.connectionClosed` unless the session is connected (or when the connection ends before the
    /// pong), `.disconnected` or `.sessionFailed` after ``disconnect()`` or a failure, `.timedOut` when no
    /// pong comes within the transport's ping timeout (10 s by default), and `.unsupported` on a connection
    /// that cannot ping (Socket.IO long-polling before it upgrades). Cancelling the calling task throws
    /// `CancellationError` at once. The connection's liveness does not depend on it: each dialect keeps its
    /// own heartbeat.
    public func ping() async throws -> Duration {
        try Task.checkCancellation()
        let connection = try engine.roundTripConnection()
        return try await abandoningOnCancel { try await connection.ping() }
    }

    /// The channel `id`, joined now and re-joined after every reconnect until ``RealtimeChannel/leave()``.
    /// The result may be ignored: the channel stays joined either way.
    /// Calling it again for the same id returns an equivalent handle (and re-joins a failed channel).
    /// The dialect settles the spelling first: on Socket.IO `channel("chat")` is `channel("/chat")` and
    /// `channel("")` is `channel("/")`, and the handle's ``RealtimeChannel/id`` shows the settled form.
    @discardableResult
    public func channel(_ id: ChannelID) -> RealtimeChannel {
        let id = engine.canonicalChannel(id)
        engine.submit(.subscribe(id))
        return RealtimeChannel(id: id, engine: engine)
    }

    // MARK: Handlers

    /// Calls `handler` for every event named `event`, on any channel.
    ///
    /// - Parameter id: an id you chose, to register one handler set under the same ids on sessions of
    ///   several backends (``off(id:)`` with it then means the same everywhere). Registering an id again
    ///   in the same session replaces its earlier handler. `nil` makes a fresh id.
    @discardableResult
    public func on(_ event: String, id: HandlerID? = nil,
                   perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        engine.registry.add(channel: nil, event: event, id: id, handler)
    }

    /// Calls `handler` for the next event named `event` only, on any channel. `id`: as in ``on(_:id:perform:)``.
    @discardableResult
    public func once(_ event: String, id: HandlerID? = nil,
                     perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        engine.registry.add(channel: nil, event: event, once: true, id: id, handler)
    }

    /// Calls `handler` for every event. `id`: as in ``on(_:id:perform:)``.
    @discardableResult
    public func onAny(id: HandlerID? = nil, perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        engine.registry.add(channel: nil, event: nil, id: id, handler)
    }

    /// Removes the handler or observer `id`, wherever it was registered. Safe inside a handler; it takes
    /// effect from the next event.
    public func off(id: HandlerID) {
        engine.registry.remove(id: id)
    }

    /// Removes the session-scope handlers for `event`.
    public func off(_ event: String) {
        engine.registry.remove(event: event, channel: nil)
    }

    /// Removes every handler and observer, on the session and on every channel. Adapter bookkeeping
    /// registered with ``addPersistentHandler(channel:event:perform:)`` stays.
    public func removeAllHandlers() {
        engine.registry.removeEverything()
    }

    /// For adapters: calls `handler` for events named `event` (every event when `nil`) on `channel` (every
    /// channel when `nil`), and keeps it through ``removeAllHandlers()`` and `off(_:)`; only `off(id:)`
    /// removes it, so that an app clearing its own handlers does not silently stop an adapter's
    /// bookkeeping. Apps use ``on(_:id:perform:)``.
    @discardableResult
    public func addPersistentHandler(channel: ChannelID?, event: String?,
                                     perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        engine.registry.add(channel: channel, event: event, persistent: true, handler)
    }

    /// For adapters: a state observer kept through ``removeAllHandlers()``; only `off(id:)` removes it.
    @discardableResult
    public func addPersistentStateObserver(
        _ handler: @escaping @Sendable (ConnectionState, ConnectionState) -> Void) -> HandlerID {
        engine.registry.addStateObserver(persistent: true, handler)
    }

    /// Observes connection state transitions: `(old, new)`, each reported once, in order.
    @discardableResult
    public func onStateChange(_ handler: @escaping @Sendable (ConnectionState, ConnectionState) -> Void) -> HandlerID {
        engine.registry.addStateObserver(handler)
    }

    /// Observes errors: refused subscriptions, server error messages, the failure that ended the session.
    /// `id`: as in ``on(_:id:perform:)``.
    @discardableResult
    public func onError(id: HandlerID? = nil, _ handler: @escaping @Sendable (RealtimeError) -> Void) -> HandlerID {
        engine.registry.addErrorObserver(id: id, handler)
    }

    /// Observes every channel's subscription changes: confirmed (with whether it is a resubscription after
    /// a reconnect, Socket.IO's `recovered`, and what the server sent), rejected, left, ended by the server.
    /// Each is reported once, in order, on the delivery target, before the channel's buffered sends go out.
    @discardableResult
    public func onChannelEvent(perform handler: @escaping @Sendable (ChannelLifecycleEvent) -> Void) -> HandlerID {
        engine.registry.addLifecycleObserver(channel: nil, handler)
    }

    /// Every channel's subscription changes as an async sequence; see ``onChannelEvent(perform:)``.
    /// By default it holds at most 1,024 changes the consumer has not taken and drops later ones until it
    /// catches up.
    public func channelEvents(bufferingPolicy: AsyncStream<ChannelLifecycleEvent>.Continuation.BufferingPolicy
                                = .bufferingOldest(1_024)) -> AsyncStream<ChannelLifecycleEvent> {
        engine.lifecycleStream(channel: nil, bufferingPolicy: bufferingPolicy)
    }

    // MARK: Async sequences

    /// Every event named `name` (every event when `nil`), as an async sequence. The handler behind it is
    /// removed when the iteration ends.
    ///
    /// The sequence is back-pressured like handlers: events waiting in it count against
    /// `SessionOptions.deliveryHighWatermark` and `deliveryByteBudget`, so a consumer that falls behind
    /// pauses reading from the socket instead of growing a buffer; nothing is dropped. A stream that is
    /// kept but not iterated therefore holds the session's reading once its budget is reached: end the
    /// iteration (or release the stream) when you stop consuming.
    public func events(_ name: String? = nil) -> RealtimeEventStream {
        engine.stream(channel: nil, event: name)
    }

    /// The current state, then every new state.
    ///
    /// Bounded like every observer stream: it holds at most 1,024 states the consumer has not taken, and
    /// past that drops the oldest, so the latest state always arrives.
    public var states: AsyncStream<ConnectionState> {
        let registry = engine.registry
        let engine = self.engine
        return AsyncStream(bufferingPolicy: .bufferingNewest(observerStreamLimit)) { continuation in
            let id = registry.addStateObserver { _, new in continuation.yield(new) }
            continuation.yield(engine.state)
            continuation.onTermination = { _ in registry.remove(id: id) }
        }
    }

    /// Errors as they are reported.
    ///
    /// Bounded like ``channelEvents(bufferingPolicy:)``: it holds at most 1,024 errors the consumer has not
    /// taken and drops later ones until it catches up. (The error that ends the session also arrives as
    /// ``ConnectionState/failed(_:)`` in ``states``, which always keeps the latest.)
    public var errors: AsyncStream<RealtimeError> {
        let registry = engine.registry
        return AsyncStream(bufferingPolicy: .bufferingOldest(observerStreamLimit)) { continuation in
            let id = registry.addErrorObserver { continuation.yield($0) }
            continuation.onTermination = { _ in registry.remove(id: id) }
        }
    }

    // MARK: Dialect extensions

    /// Runs a dialect-specific command (Pusher `signin`, …) once connected and waits for its answer.
    /// Adapters wrap this in typed methods; apps rarely call it directly.
    public func dialectCommand(_ name: String, payload: JSONValue = .null,
                               timeout: Duration? = nil) async throws -> [JSONValue] {
        let timeout = timeout ?? engine.requestTimeout
        return try await engine.cancellable(\.replies) {
            .custom(name: name, payload: payload, timeout: timeout, operation: $0)
        }
    }

    /// Logs through the session's hook (redacted). For adapters.
    public func log(_ level: LogLevel, _ message: String) {
        engine.log(level, message)
    }
}

/// A channel of a session: a Pusher channel, a Socket.IO namespace or an Action Cable subscription.
///
/// A lightweight handle: copies refer to the same channel. Handlers registered here only see events of
/// this channel and survive reconnects.
public struct RealtimeChannel: Sendable {
    /// The channel in the dialect's one spelling, which may differ from the one passed to
    /// ``RealtimeSession/channel(_:)`` (Socket.IO's `"chat"` is `"/chat"`).
    public let id: ChannelID
    let engine: SessionEngine

    /// The channel's current state.
    public var state: ChannelState { engine.channelState(id) ?? .unsubscribed }

    /// Waits until the server confirms the channel. Returns the dialect's `recovered` flag. Cancelling the
    /// calling task ends the wait with `CancellationError`; the channel stays joined.
    @discardableResult
    public func subscribed() async throws -> Bool? {
        try await engine.cancellable(\.subscriptions) { .awaitSubscription(id, operation: $0) }
    }

    /// Leaves the channel. Its handlers stay registered; buffered sends fail with `.channelUnavailable`.
    public func leave() {
        engine.submit(.unsubscribe(id))
    }

    // MARK: Sending

    /// Sends `event` with `arguments` (Pusher and Action Cable use the first as `data`). Returns once the
    /// message is written, or throws: buffered too long (`.timedOut`), buffer full, session disconnected or
    /// failed, channel unavailable, or refused by the dialect's rules (`.invalidArgument`, `.unsupported`).
    /// A `volatile` message is dropped instead of buffered when it cannot be sent right away.
    /// `compress: false` sends it uncompressed where the connection compresses (WebSocket
    /// permessage-deflate): for data that is already compressed, or secrets beside attacker-chosen text.
    /// Cancelling the calling task while the message is still buffered withdraws it and throws
    /// `CancellationError`; a message already written stays written.
    public func send(_ event: String, arguments: [JSONValue], volatile: Bool = false, compress: Bool = true) async throws {
        let message = OutgoingMessage(channel: id, event: event, arguments: arguments, volatile: volatile,
                                      compress: compress)
        if let error = engine.validate(message, expectsReply: false) { throw error }
        try await engine.cancellable(\.done) { .send(message, operation: $0) }
    }

    /// Sends `event` with the given arguments.
    public func send(_ event: String, _ arguments: JSONValue...) async throws {
        try await send(event, arguments: arguments)
    }

    /// Sends `event` with `value` encoded as JSON. A value `encoder` cannot encode throws
    /// `.invalidArgument` with the encoder's explanation in `context.detail`.
    public func send(_ event: String, encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) async throws {
        try await send(event, arguments: [encodedArgument(value, of: event, with: encoder)])
    }

    /// `value` as the JSON argument of `event`, or `.invalidArgument` with the encoder's explanation.
    private func encodedArgument(_ value: some Encodable, of event: String, with encoder: JSONEncoder) throws -> JSONValue {
        do {
            return try JSONValue(encoding: value, encoder: encoder)
        } catch let error as RealtimeError {
            throw error
        } catch {
            throw RealtimeError(.invalidArgument, "could not encode the value of \(event) as JSON",
                                context: .init(channel: id, detail: String(describing: error)))
        }
    }

    /// Sends `event` and waits for the server's acknowledgement (Socket.IO). Throws `.timedOut` when no
    /// answer comes within `timeout`, `.connectionClosed` when the connection ends after the request was
    /// written, `.unsupported` on dialects without acknowledgements. Cancelling the calling task throws
    /// `CancellationError`: a buffered request is withdrawn, a written one is forgotten (its acknowledgement
    /// slot freed; a late answer is ignored). `compress: false`: as for `send`.
    ///
    /// `retries`: how many more times to send the request after one of those two failures, each time with
    /// the whole `timeout`; a retry made while the session reconnects waits in the send buffer like any
    /// request. The server may then receive the event more than once (at least once, as socket.io-client's
    /// `retries`), so it should be safe to repeat. Any other failure, and cancellation, ends the retries.
    public func request(_ event: String, arguments: [JSONValue], timeout: Duration? = nil, retries: Int = 0,
                        compress: Bool = true) async throws -> [JSONValue] {
        let message = OutgoingMessage(channel: id, event: event, arguments: arguments, compress: compress)
        if let error = engine.validate(message, expectsReply: true) { throw error }
        guard retries >= 0 else {
            throw RealtimeError(.invalidArgument, "retries must be 0 or more, not \(retries)",
                                context: .init(channel: id))
        }
        let timeout = timeout ?? engine.requestTimeout
        var retriesLeft = retries
        while true {
            switch await engine.outcome(\.replies, { .request(message, timeout: timeout, operation: $0) }) {
            case .success(let answer):
                return answer
            case .failure(let error) where retriesLeft > 0 && Self.retriedCodes.contains(error.code):
                retriesLeft -= 1
                engine.log(.info, "\(event) on \(id): \(error.message); sending it again (\(retriesLeft) retries left)")
            case .failure(let error):
                throw SessionEngine.thrown(error)
            }
        }
    }

    /// Failures after which ``request(_:arguments:timeout:retries:compress:)`` sends again: no answer in
    /// time, or no connection left to carry it.
    private static let retriedCodes: Set<RealtimeError.Code> = [.timedOut, .connectionClosed]

    /// Sends `event` with the given arguments and waits for the acknowledgement; `retries` as in
    /// ``request(_:arguments:timeout:retries:compress:)``.
    public func request(_ event: String, _ arguments: JSONValue..., timeout: Duration? = nil,
                        retries: Int = 0) async throws -> [JSONValue] {
        try await request(event, arguments: arguments, timeout: timeout, retries: retries)
    }

    /// Sends `event` with `value` encoded as JSON (by `encoder`), waits for the acknowledgement (Socket.IO) and
    /// returns its first argument decoded as `Reply` (by `decoder`); an acknowledgement without arguments
    /// decodes as `null`, so ask for an optional type when the server may answer with nothing. An answer
    /// that does not decode throws `.decodingFailed` (the answer in `context.serverPayload`, the decoder's
    /// explanation in `context.detail`); it came, so it is not retried. A value that does not encode throws
    /// `.invalidArgument`. `timeout`, `retries`, cancellation and the other failures: as in
    /// ``request(_:arguments:timeout:retries:compress:)``, which returns every argument of the answer.
    public func request<Reply: Decodable>(_ event: String, encoding value: some Encodable, as type: Reply.Type,
                                          encoder: JSONEncoder = JSONEncoder(), decoder: JSONDecoder = JSONDecoder(),
                                          timeout: Duration? = nil, retries: Int = 0) async throws -> Reply {
        let argument = try encodedArgument(value, of: event, with: encoder)
        let answer = try await request(event, arguments: [argument], timeout: timeout, retries: retries)
        let first = answer.first ?? .null
        do {
            return try first.decode(Reply.self, decoder: decoder)
        } catch {
            throw RealtimeError(.decodingFailed, "the answer to \"\(event)\" on \(id) is not a \(Reply.self)",
                                context: .init(serverPayload: first, channel: id, detail: String(describing: error)))
        }
    }

    // MARK: Handlers

    /// Calls `handler` for every event named `event` on this channel. `id`: as in
    /// ``RealtimeSession/on(_:id:perform:)``.
    @discardableResult
    public func on(_ event: String, id handlerID: HandlerID? = nil,
                   perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        engine.registry.add(channel: id, event: event, id: handlerID, handler)
    }

    /// Calls `handler` for the next event named `event` on this channel only.
    @discardableResult
    public func once(_ event: String, id handlerID: HandlerID? = nil,
                     perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        engine.registry.add(channel: id, event: event, once: true, id: handlerID, handler)
    }

    /// Calls `handler` for every event on this channel.
    @discardableResult
    public func onAny(id handlerID: HandlerID? = nil,
                      perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        engine.registry.add(channel: id, event: nil, id: handlerID, handler)
    }

    /// Removes the handler `id`.
    public func off(id handlerID: HandlerID) {
        engine.registry.remove(id: handlerID)
    }

    /// Removes this channel's handlers for `event`.
    public func off(_ event: String) {
        engine.registry.remove(event: event, channel: id)
    }

    /// Removes every handler of this channel.
    public func removeAllHandlers() {
        engine.registry.removeAll(channel: id)
    }

    /// Observes this channel's subscription changes; see ``RealtimeSession/onChannelEvent(perform:)``.
    /// Survives ``removeAllHandlers()`` (it is an observer); ``off(id:)`` removes it.
    @discardableResult
    public func onLifecycle(perform handler: @escaping @Sendable (ChannelLifecycleEvent) -> Void) -> HandlerID {
        engine.registry.addLifecycleObserver(channel: id, handler)
    }

    /// This channel's subscription changes as an async sequence. By default it holds at most 1,024 changes
    /// the consumer has not taken and drops later ones until it catches up.
    public func lifecycle(bufferingPolicy: AsyncStream<ChannelLifecycleEvent>.Continuation.BufferingPolicy
                            = .bufferingOldest(1_024)) -> AsyncStream<ChannelLifecycleEvent> {
        engine.lifecycleStream(channel: id, bufferingPolicy: bufferingPolicy)
    }

    /// Events of this channel named `name` (all when `nil`) as an async sequence, back-pressured like
    /// ``RealtimeSession/events(_:)``.
    public func events(_ name: String? = nil) -> RealtimeEventStream {
        engine.stream(channel: id, event: name)
    }
}

extension SessionEngine {
    func lifecycleStream(channel: ChannelID?,
                         bufferingPolicy: AsyncStream<ChannelLifecycleEvent>.Continuation.BufferingPolicy)
        -> AsyncStream<ChannelLifecycleEvent> {
        let registry = self.registry
        return AsyncStream(bufferingPolicy: bufferingPolicy) { continuation in
            let id = registry.addLifecycleObserver(channel: channel) { continuation.yield($0) }
            continuation.onTermination = { _ in registry.remove(id: id) }
        }
    }

    /// `include`, when given, picks the events the stream takes; the others cost it nothing.
    func stream(channel: ChannelID?, event: String?,
                where include: (@Sendable (RealtimeEvent) -> Bool)? = nil) -> RealtimeEventStream {
        let registry = self.registry
        // Unbounded on purpose: the session's delivery budget bounds it by pausing the socket instead.
        let buffer = EventStreamBuffer(buffered: { [weak self] in self?.noteStreamBuffered($0) },
                                       consumed: { [weak self] in self?.noteStreamConsumed($0) },
                                       retire: { [deliveredBatches] in deliveredBatches.hold(taken: $0, bytes: $1) })
        let id = registry.add(channel: channel, event: event) { [buffer] event in
            if let include, !include(event) { return }
            buffer.push(event)
        }
        buffer.onFinish { [weak self] left in
            registry.remove(id: id)
            // Events left in the buffer no longer hold the session's reading.
            if left.events > 0 { self?.noteStreamConsumed(left) }
        }
        return RealtimeEventStream(buffer: buffer)
    }
}

/// How many elements an observer stream (states, errors, lifecycle, a dialect's rosters and counts) holds
/// for a consumer that has not taken them. Event streams are bounded by the delivery budget instead.
package let observerStreamLimit = 1_024

extension RealtimeSession {
    /// Events named `name` (all when `nil`) that `include` accepts, as a stream back-pressured like
    /// ``events(_:)``: for a dialect's filtered views of the session's events (Pusher's user channel).
    package func events(_ name: String?,
                        where include: @escaping @Sendable (RealtimeEvent) -> Bool) -> RealtimeEventStream {
        engine.stream(channel: nil, event: name, where: include)
    }
}
