@_spi(DialectAuthoring) import RealtimeCore

/// The Action Cable state machine for one session: frames and commands in, ``DialectAction``s out.
///
/// - `welcome` makes the session connected; the engine then subscribes every channel it holds.
/// - Every subscription is keyed by its identifier as a JSON string literal, built from the channel: the
///   text the commands carry and Rails echoes back unchanged, so incoming frames are routed by their own
///   text, without decoding it (``ActionCableSubscriptionTable``, which keeps at most 1,024 of the
///   literals and writes any other again to compare). Broadcasts are delivered while the subscription is
///   still pending.
/// - A broadcast is delivered under the name read from its message (``ActionCableDialect/eventNameKeys``),
///   `"message"` when none names it; its `data` is the whole message, kept as text (checked) until read.
/// - Unanswered `subscribe`s are resent (the guarantor) up to a cap, then fail with `.timedOut`. One
///   timer serves every channel, as in Rails' own client: it ticks once per interval while any subscribe is
///   unanswered, and a tick resends those that have waited a whole interval (a subscribe sent between two
///   ticks is first resent at the second), so a reconnect arms one timer, not one per channel.
/// - A `subscribe` right after an `unsubscribe` of the same identifier waits one guarantor interval,
///   because Rails may run the two out of order and lose the subscribe.
@_spi(DialectAuthoring) public struct ActionCableMachine: DialectMachine {
    private typealias Subscription = ActionCableSubscriptionTable.Subscription

    private let guarantor: ActionCableDialect.SubscriptionGuarantor
    private let liveness: LivenessRule
    private let restartDelay: Duration
    /// Reads a broadcast's event name while its message is checked, so the message itself is not parsed.
    private let eventNamePick: JSONEnvelope.Pick?
    /// Members kept as text: the message is parsed only if a handler reads it, and the identifier is
    /// decoded only when the server escaped it otherwise than this client (``subscription(_:in:)``).
    private static let deferredMembers = ["message", "identifier"]
    /// What stays text when the message is parsed with the frame.
    private static let deferredIdentifier = ["identifier"]
    /// While handlers read payloads (the engine's hint), the message is parsed with the frame, but for a probe.
    private var payloadParsing = PayloadParsing()

    /// Subscriptions of the current connection, by identifier literal, and the routes of recent broadcasts.
    private var subscriptions: ActionCableSubscriptionTable
    /// The JSON parser's stacks, kept from frame to frame.
    private var scratch = JSONParseScratch()
    /// The last identifier literal built, and its channel: a run of performs on one channel builds it once.
    /// The literals of subscriptions are the keys of ``subscriptions``; no table by channel is kept.
    private var lastIdentifier: (channel: ChannelID, literal: Substring)?
    /// Identifier literals unsubscribed on this connection less than one guarantor interval ago.
    private var settling: Set<Substring> = []
    private var welcomed = false
    /// Guarantor ticks so far (starts at 1, so that "sent at the tick before" can be written).
    private var guarantorTicks: UInt32 = 1
    /// Whether the guarantor's timer runs (``guarantorTimer``): while any subscribe is unanswered.
    private var guarantorArmed = false
    /// How the connection must end, decided by a frame (`disconnect`) or the handshake (subprotocol).
    private var decidedEnd: ConnectionEnd?

    /// The mount path and `Origin` of the upgrade, which a 404 refusal is about.
    private let mountPath: String
    private let origin: String?

    init(guarantor: ActionCableDialect.SubscriptionGuarantor, liveness: LivenessRule, restartDelay: Duration,
         eventNameKeys: [String], mountPath: String, origin: String?,
         identifierHashing: ActionCableSubscriptionTable.Hashing = .standard) {
        subscriptions = ActionCableSubscriptionTable(hashing: identifierHashing)
        self.mountPath = mountPath
        self.origin = origin
        self.guarantor = guarantor
        self.liveness = liveness
        self.restartDelay = restartDelay
        self.eventNamePick = eventNameKeys.isEmpty ? nil : JSONEnvelope.Pick(member: "message", keys: eventNameKeys)
    }

    // MARK: Connection

    public mutating func connectionOpened(_ info: TransportOpenInfo, actions: inout [DialectAction]) {
        guard info.subprotocol == ActionCableDialect.protocolName else {
            let selected = info.subprotocol.map { "'\($0)'" } ?? "none"
            let error = RealtimeError(.handshakeInvalid,
                                      "the server does not speak \(ActionCableDialect.protocolName) (selected: \(selected))",
                                      context: .init(detail: "subprotocol \(selected)"))
            decidedEnd = .terminal(error)
            actions.append(.log(.error, error.message))
            actions.append(.close(code: 1000, reason: "unsupported protocol"))
            return
        }
    }

    public mutating func connectionEnded(_ closure: TransportClosure) -> ConnectionEnd {
        let end = decidedEnd ?? classify(closure)
        subscriptions.removeAll()
        settling = []
        guarantorArmed = false  // the engine cancels a dialect's timers with its connection
        welcomed = false
        decidedEnd = nil
        return end
    }

    /// How a connection that ended without a `disconnect` frame goes on.
    func classify(_ closure: TransportClosure) -> ConnectionEnd {
        guard case .failed(let error) = closure.kind else {
            // A bare close (Rails 6.1/7.0 remote disconnect), a drop or a silent link: back off.
            return .backoff(minimum: .zero)
        }
        switch error.code {
        case .invalidArgument:
            return .terminal(error)
        case .handshakeRejected:
            guard error.isLastingHTTPRefusal else { return .backoff(minimum: .zero) }
            guard error.context.httpStatus == 404 else { return .terminal(error) }
            var explained = error
            let sent = origin.map { "the Origin \($0) is not in the server's allowed_request_origins" }
                ?? "the request carried no Origin"
            explained.message = "Action Cable refused the upgrade of \(mountPath) with HTTP 404: either \(sent), "
                + "or \(mountPath) is not where Action Cable is mounted"
            return .terminal(explained)
        default:
            return .backoff(minimum: .zero)
        }
    }

    // MARK: Frames

    public mutating func received(_ frame: TransportFrame, actions: inout [DialectAction]) {
        let defersMessage = !payloadParsing.parsesNow()
        var envelope: JSONEnvelope
        do {
            envelope = defersMessage
                ? try frame.jsonEnvelope(from: "Action Cable", deferring: Self.deferredMembers, pick: eventNamePick,
                                         scratch: &scratch)
                : try frame.jsonEnvelope(from: "Action Cable", deferring: Self.deferredIdentifier, scratch: &scratch)
        } catch {
            actions.append(.reportError(error))
            return
        }
        defer { envelope.recycle(into: &scratch) }
        guard envelope.isObject else {
            actions.append(.reportError(RealtimeError(.protocolViolation, "Action Cable sent a frame that is not an object",
                                                      context: .init(serverPayload: envelope.document))))
            return
        }
        // Frames are told apart by `type` alone: a broadcast's `message` may be a bare number, like a ping's.
        switch envelope["type"] {
        case .string("ping"):
            return
        case .string("welcome"):
            welcome(envelope, actions: &actions)
        case .string("confirm_subscription"):
            confirm(subscription(envelope.rawSlice(of: "identifier"), in: envelope), actions: &actions)
        case .string("reject_subscription"):
            reject(subscription(envelope.rawSlice(of: "identifier"), in: envelope), frame: envelope.document,
                   actions: &actions)
        case .string("disconnect"):
            disconnect(envelope, actions: &actions)
        case nil, .null?:
            broadcast(envelope, messageDeferred: defersMessage, actions: &actions)
        case let other?:
            actions.append(.log(.debug, "ignored an Action Cable frame of type \(other.serialized())"))
        }
    }

    private mutating func welcome(_ members: JSONEnvelope, actions: inout [DialectAction]) {
        guard !welcomed else { return }
        welcomed = true
        actions.append(.liveness(liveness))
        actions.append(.connected(id: members["sid"]?.stringValue))
    }

    private mutating func confirm(_ found: ActionCableSubscriptionTable.Key?, actions: inout [DialectAction]) {
        guard let found else {
            actions.append(.log(.debug, "confirm_subscription for an identifier this session does not hold"))
            return
        }
        let subscription = subscriptions[found]
        // A confirm while settling answers the subscribe that came before the unsubscribe: not ours.
        guard case .pending = subscription.phase else { return }
        subscriptions.setPhase(.confirmed, at: found)
        actions.append(.subscribed(subscription.channel, recovered: nil))
    }

    private mutating func reject(_ found: ActionCableSubscriptionTable.Key?, frame: JSONValue,
                                 actions: inout [DialectAction]) {
        guard let found, subscriptions[found].phase != .settling,
              let subscription = subscriptions.remove(found) else {
            actions.append(.log(.debug, "reject_subscription for an identifier this session does not hold"))
            return
        }
        actions.append(.subscriptionFailed(subscription.channel, RealtimeError(
            .subscriptionRejected, "the server rejected the subscription to \(subscription.channel)",
            context: .init(serverPayload: frame, channel: subscription.channel))))
    }

    private mutating func disconnect(_ members: JSONEnvelope, actions: inout [DialectAction]) {
        let frame = members.document
        let reason = members["reason"]?.stringValue
        let reconnect = members["reconnect"]?.boolValue
        let end: ConnectionEnd
        switch (reason, reconnect) {
        case ("unauthorized"?, _), ("invalid_request"?, _):
            end = .terminal(RealtimeError(.connectionRefused,
                                          "the server refused the connection (\(reason ?? ""))",
                                          context: .init(serverPayload: frame, detail: reason)))
        case (_, false?):
            end = .terminal(RealtimeError(.connectionClosed,
                                          "the server closed the connection and asked not to reconnect"
                                            + (reason.map { " (\($0))" } ?? ""),
                                          context: .init(serverPayload: frame, detail: reason)))
        default:
            // `reconnect: true` (server_restart, remote), or a reason this version does not know.
            end = .backoff(minimum: reason == "server_restart" ? restartDelay : .zero)
        }
        decidedEnd = end
        actions.append(.log(.info, "Action Cable disconnect: reason \(reason ?? "none"), reconnect \(reconnect.map(String.init) ?? "unset")"))
        actions.append(.closeAsServerAsked(code: 1000, reason: reason == "server_restart"
                                                ? .serverRestart : .serverRequest(reason: reason ?? "disconnect")))
    }

    public mutating func payloadsAreRead(_ read: Bool) {
        payloadParsing.update(payloadsRead: read)
    }

    private mutating func broadcast(_ members: JSONEnvelope, messageDeferred: Bool, actions: inout [DialectAction]) {
        guard let rawIdentifier = members.rawSlice(of: "identifier"), let message = members.rawSlice(of: "message") else {
            reportMalformedBroadcast(members, actions: &actions)
            return
        }
        let channel: ChannelID
        if let routed = subscriptions.routedChannel(rawIdentifier) {
            channel = routed
        } else {
            guard let found = subscription(rawIdentifier, in: members) else {
                if members["identifier"]?.stringValue == nil {
                    reportMalformedBroadcast(members, actions: &actions)
                } else {
                    actions.append(.log(.debug, "dropped a broadcast for an identifier this session does not hold"))
                }
                return
            }
            // The server's own text (not always the literal), so that the next frame compares equal.
            channel = subscriptions.remember(rawIdentifier, routesTo: found)
        }
        guard messageDeferred else {
            let value = members["message"] ?? .null
            actions.append(.deliver(RealtimeEvent(channel: channel,
                                                  name: Self.eventName(of: value, keys: eventNamePick?.keys ?? []),
                                                  data: value, arguments: nil, rawSlice: message, ackToken: nil)))
            return
        }
        // The message stays text, checked by the envelope: parsed if a handler reads `data`, copied if one
        // reads `rawData`.
        actions.append(.deliver(RealtimeEvent(channel: channel,
                                              name: members.picked ?? ActionCableDialect.fallbackEventName,
                                              jsonSlice: message)))
    }

    private func reportMalformedBroadcast(_ members: JSONEnvelope, actions: inout [DialectAction]) {
        actions.append(.reportError(RealtimeError(
            .protocolViolation, "Action Cable sent a frame with neither a type nor an identifier and message",
            context: .init(serverPayload: members.document))))
    }

    /// What the pick finds in a deferred message, for a parsed one: the first of `keys` that is a non-empty
    /// string member of `message`, else `"message"`. One pass over the message's few members, comparing
    /// names, instead of hashing every key to look it up (most broadcasts have none of them).
    static func eventName(of message: JSONValue, keys: [String]) -> String {
        guard case .object(let members) = message, !keys.isEmpty else { return ActionCableDialect.fallbackEventName }
        var best: (rank: Int, name: String)?
        for (key, value) in members {
            guard case .string(let name) = value, !name.isEmpty,
                  let rank = keys.firstIndex(of: key), rank < (best?.rank ?? keys.count) else { continue }
            best = (rank, name)
        }
        return best?.name ?? ActionCableDialect.fallbackEventName
    }

    /// Where in ``subscriptions`` a frame's `identifier` is, from its text as the server wrote it: that
    /// text itself when it is the literal this client sent (Rails echoes it), else the string decoded and
    /// written as this client writes it (a server that escapes `<`, `>`, `&` or `/` where this client does
    /// not). `nil` when the frame has no string identifier or this session holds no such subscription.
    private mutating func subscription(_ raw: Substring?, in members: JSONEnvelope) -> ActionCableSubscriptionTable.Key? {
        guard let raw else { return nil }
        if let key = subscriptions.key(of: raw) { return key }
        guard let identifier = members["identifier"]?.stringValue else { return nil }
        return subscriptions.key(of: ActionCableIdentifier.literal(identifier))
    }


    // MARK: Commands

    public mutating func handle(_ command: DialectCommand, actions: inout [DialectAction]) {
        switch command {
        case .subscribe(let channel):
            subscribe(channel, actions: &actions)
        case .unsubscribe(let channel):
            unsubscribe(channel, actions: &actions)
        case .send(let message):
            send(message, actions: &actions)
        case .request(_, let id):
            actions.append(.resolveRequest(id, .failure(.unsupported("request", dialect: "actioncable",
                                                                     needs: "Socket.IO (acknowledgements)"))))
        case .custom(let name, _, let id):
            actions.append(.resolveRequest(id, .failure(.unsupported("the command '\(name)'"))))
        case .cancelRequest, .acknowledge:
            return
        }
    }

    /// The identifier literal of `channel`, built again unless it was the last one asked for: a function of
    /// the channel, so building it twice gives the same key.
    private mutating func identifier(for channel: ChannelID) throws(RealtimeError) -> Substring {
        if let lastIdentifier, lastIdentifier.channel == channel { return lastIdentifier.literal }
        let made = ActionCableIdentifier.literal(try ActionCableIdentifier.make(for: channel))
        lastIdentifier = (channel, made)
        return made
    }

    private mutating func subscribe(_ channel: ChannelID, actions: inout [DialectAction]) {
        let identifier: Substring
        do {
            identifier = try self.identifier(for: channel)
        } catch {
            actions.append(.subscriptionFailed(channel, error))
            return
        }
        if subscriptions.key(of: identifier) != nil { return }
        if settling.contains(identifier) {
            subscriptions.set(Subscription(channel: channel, phase: .settling), literal: identifier)
            return
        }
        sendSubscribe(identifier, channel: channel, actions: &actions)
    }

    /// Sends a first `subscribe`; the guarantor resends it after one to two ticks (exactly one when this
    /// send starts the guarantor's timer).
    private mutating func sendSubscribe(_ identifier: Substring, channel: ChannelID, actions: inout [DialectAction]) {
        var sentAfterTick = guarantorTicks
        if !guarantorArmed {
            armGuarantor(actions: &actions)
            sentAfterTick &-= 1  // sent on a tick of its own: due at the next one
        }
        subscriptions.set(Subscription(channel: channel, phase: .pending(attempts: 1, sentAfterTick: sentAfterTick)),
                          literal: identifier)
        actions.append(.send(ActionCableCommand.subscribe(identifier)))
    }

    private mutating func unsubscribe(_ channel: ChannelID, actions: inout [DialectAction]) {
        guard let identifier = try? identifier(for: channel),
              let key = subscriptions.key(of: identifier),
              let subscription = subscriptions.remove(key) else { return }
        // Still settling: its subscribe never went out, so there is nothing to undo.
        guard subscription.phase != .settling else { return }
        actions.append(.send(ActionCableCommand.unsubscribe(identifier)))
        startSettling(identifier, channel: channel, actions: &actions)
    }

    private mutating func startSettling(_ identifier: Substring, channel: ChannelID, actions: inout [DialectAction]) {
        settling.insert(identifier)
        actions.append(.startTimer(Self.settleTimer(channel), after: guarantor.interval))
    }

    private mutating func send(_ message: OutgoingMessage, actions: inout [DialectAction]) {
        do {
            let identifier = try identifier(for: message.channel)
            let data = try ActionCableCommand.actionData(for: message)
            let frame = ActionCableCommand.message(identifier, data: data)
            actions.append(message.compress ? .send(frame) : .sendUncompressed(frame))
        } catch {
            // `validate` refuses these at the call site; this only guards direct use of the machine.
            actions.append(.refuseSend(error))
        }
    }

    // MARK: Timers

    static let guarantorTimer = TimerKey(kind: .actionCableGuarantor)
    static func settleTimer(_ channel: ChannelID) -> TimerKey { TimerKey(kind: .actionCableSettle, channel: channel) }

    public mutating func timerFired(_ key: TimerKey, actions: inout [DialectAction]) {
        switch key.kind {
        case .actionCableGuarantor:
            guarantorTick(actions: &actions)
        case .actionCableSettle:
            guard let channel = key.channel, let identifier = try? identifier(for: channel) else { return }
            settling.remove(identifier)
            if let key = subscriptions.key(of: identifier),
               subscriptions[key].phase == .settling {
                sendSubscribe(identifier, channel: subscriptions[key].channel, actions: &actions)
            }
        default:
            return
        }
    }

    /// Resends every `subscribe` that has waited a whole interval, fails those at the cap, and keeps ticking
    /// while any is unanswered. Resends go out in identifier order, so that a tick's frames are reproducible.
    private mutating func guarantorTick(actions: inout [DialectAction]) {
        guarantorArmed = false
        guarantorTicks &+= 1
        var due: [(key: ActionCableSubscriptionTable.Key, identifier: Substring, channel: ChannelID, attempts: Int32)] = []
        var stillPending = false
        for (key, subscription) in subscriptions.entries {
            guard case .pending(let attempts, let sentAfterTick) = subscription.phase else { continue }
            guard guarantorTicks &- sentAfterTick >= 2 else {
                stillPending = true
                continue
            }
            // Held channels were accepted when they subscribed, so their identifiers can be built again.
            guard let identifier = try? identifier(for: subscription.channel) else { continue }
            due.append((key, identifier, subscription.channel, attempts))
        }
        due.sort { $0.identifier < $1.identifier }
        for (key, identifier, channel, attempts) in due {
            if Int(attempts) >= guarantor.maximumAttempts {
                subscriptions.remove(key)
                // Take back the last subscribe in case the server handles it after all.
                actions.append(.send(ActionCableCommand.unsubscribe(identifier)))
                startSettling(identifier, channel: channel, actions: &actions)
                actions.append(.subscriptionFailed(channel, RealtimeError(
                    .timedOut, "no answer to \(attempts) subscribe commands for \(channel)",
                    context: .init(channel: channel, detail: ActionCableIdentifier.decoded(identifier)))))
            } else {
                // Sent on this tick: due at the next one.
                let sentAfterTick = guarantorTicks &- 1
                subscriptions.setPhase(.pending(attempts: attempts &+ 1, sentAfterTick: sentAfterTick), at: key)
                actions.append(.send(ActionCableCommand.subscribe(identifier)))
                stillPending = true
            }
        }
        if stillPending { armGuarantor(actions: &actions) }
    }

    private mutating func armGuarantor(actions: inout [DialectAction]) {
        guarantorArmed = true
        actions.append(.startTimer(Self.guarantorTimer, after: guarantor.interval))
    }

    public mutating func workFinished(_ id: WorkID, result: Result<JSONValue, RealtimeError>,
                                      actions: inout [DialectAction]) {}
}

/// The timers the Action Cable machine starts; each comes back through `timerFired`.
extension DialectKey.Kind {
    /// Sends the subscribe command again while the server has not confirmed it.
    static let actionCableGuarantor = DialectKey.Kind("actioncable.guarantor")
    /// Ends the wait after an unsubscribe before the same identifier may subscribe again.
    static let actionCableSettle = DialectKey.Kind("actioncable.settle")
}
