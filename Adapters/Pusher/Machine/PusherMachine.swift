import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The Pusher / Bird state machine for one session: frames and commands in, ``DialectAction``s out.
///
/// - The session is connected only after `*:connection_established`; its id is the server's socket id.
/// - Private and presence channels are authorized through `.perform` before their `subscribe` goes out. An
///   answer for a channel that was left, re-requested, or asked on an older connection is dropped.
/// - A channel-less `*:error` without a code (how Pusher refuses a subscription) fails the oldest
///   subscription still waiting for an answer, so a later subscribe never wedges.
/// - Sign-in (`custom("signin")`) stays armed: it runs again after every reconnect, then joins
///   `#server-to-user-<id>`.
/// - Every `*:error` is also delivered as an event; every refused subscription gives its channel a
///   `*:subscription_error` event before it fails.
/// - A close 4000 over `ws` makes the next attempts use `wss` (Pusher only; one retry, then final).
@_spi(DialectAuthoring) public struct PusherMachine: DialectMachine {
    /// The `custom` command name of user sign-in.
    public static let signinCommand = "signin"
    /// Prefix of the per-user channel the server opens after sign-in.
    public static let userChannelPrefix = "#server-to-user-"

    private enum Phase: Equatable {
        /// Waiting for the authorizer's answer to request `serial`.
        case authorizing(serial: UInt64)
        /// `subscribe` sent, no answer yet; `asked` orders the subscribes of this connection.
        case subscribing(asked: UInt64)
        case subscribed

        /// The order of an unanswered `subscribe`, or nil.
        var asked: UInt64? {
            if case .subscribing(let asked) = self { return asked }
            return nil
        }
    }

    private struct Subscription {
        var channel: ChannelID
        var phase: Phase
        /// The presence identity sent with the subscribe, kept to tell the app who it is.
        var channelData: String?
    }

    private let vendor: PusherVendor
    private let key: String
    private let authorizer: PusherAuth?
    private let liveness: Liveness

    private var connectionID: String?
    /// Subscriptions of the current connection, by channel name.
    private var subscriptions: [String: Subscription] = [:]
    /// The JSON parser's stacks, kept from frame to frame.
    private var scratch = JSONParseScratch()
    /// While handlers read payloads (the engine's hint), an event's `data` is parsed as it arrives, but for
    /// a probe.
    private var payloadParsing = PayloadParsing()
    /// Kept as text while payloads are deferred: an app event's `data` literal is decoded only when read.
    private static let deferredMembers = ["data"]
    /// Counts the `subscribe` frames sent, to find the oldest unanswered one (``oldestAwaitingAnswer``).
    private var subscribesSent: UInt64 = 0
    /// The last serial given to authorization work (subscriptions, sign-in, fresh keys share it).
    private var serial: UInt64 = 0
    private var signIn: PusherSignInMachine
    /// Keys of the encrypted channels among `subscriptions`, which they never outlive.
    private var encrypted = PusherEncryptedChannels()
    /// How the connection must end, decided by a frame.
    private var decidedEnd: ConnectionEnd?
    /// Whether the connection being opened (or open) uses `wss`.
    private var currentUsesTLS = true
    /// A close 4000 over `ws` switched this session to `wss`, for good: a second 4000 is final.
    private var switchedToTLS = false

    init(vendor: PusherVendor, key: String, authorizer: PusherAuth?, liveness: Liveness) {
        self.vendor = vendor
        self.key = key
        self.authorizer = authorizer
        self.liveness = liveness
        signIn = PusherSignInMachine(vendor: vendor)
    }

    // MARK: Connection

    /// Opens over `wss` once a close 4000 asked for TLS; remembers which scheme this attempt uses.
    public mutating func willOpen(_ request: inout ConnectionRequest) {
        if switchedToTLS, request.url.scheme == "ws",
           var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) {
            components.scheme = "wss"
            if let url = components.url { request.url = url }
        }
        currentUsesTLS = request.url.scheme == "wss"
    }

    public mutating func connectionOpened(_ info: TransportOpenInfo, actions: inout [DialectAction]) {}

    public mutating func connectionEnded(_ closure: TransportClosure) -> ConnectionEnd {
        var end = decidedEnd ?? Self.classify(closure, vendor: vendor)
        if decidedEnd == nil,
           Self.retriesOverTLS(closure, vendor: vendor, usedTLS: currentUsesTLS, switchedBefore: switchedToTLS) {
            switchedToTLS = true
            end = .reconnectImmediately
        }
        connectionID = nil
        // Kept allocated: the next connection re-joins as many channels.
        subscriptions.removeAll(keepingCapacity: true)
        encrypted.forgetAll()
        signIn.connectionEnded()
        decidedEnd = nil
        return end
    }

    // MARK: Frames

    public mutating func received(_ frame: TransportFrame, actions: inout [DialectAction]) {
        // An app event's `data` is kept as the literal it arrived as, unless handlers read payloads.
        let defersData = !payloadParsing.parsesNow()
        var envelope: JSONEnvelope
        do {
            envelope = defersData
                ? try frame.jsonEnvelope(from: vendor.displayName, deferring: Self.deferredMembers, scratch: &scratch)
                : try frame.jsonEnvelope(from: vendor.displayName, scratch: &scratch)
        } catch {
            actions.append(.reportError(error))
            return
        }
        defer { envelope.recycle(into: &scratch) }
        guard let event = envelope["event"]?.stringValue else {
            actions.append(.reportError(RealtimeError(.protocolViolation, "\(vendor.displayName) sent a frame without an event name",
                                                      context: .init(serverPayload: envelope.document))))
            return
        }
        let channel = envelope["channel"]?.stringValue

        if event.hasPrefix(vendor.systemPrefix) {
            let (data, rawData) = Self.decodeData(envelope["data"])
            system(String(event.dropFirst(vendor.systemPrefix.count)), channel: channel, data: data, raw: rawData,
                   actions: &actions)
        } else if event.hasPrefix(vendor.internalPrefix) {
            let (data, rawData) = Self.decodeData(envelope["data"])
            internalEvent(String(event.dropFirst(vendor.internalPrefix.count)), channel: channel, data: data,
                          raw: rawData, actions: &actions)
        } else if connectionID == nil, let other = vendor.otherVendor,
                  event == other.systemPrefix + "connection_established" {
            // The other half of the family answered: waiting for our own prefix would hang in `connecting`.
            actions.append(.fail(RealtimeError(
                .protocolViolation, "this server speaks \(other.displayName)'s protocol (\(event)), not \(vendor.displayName)'s: "
                    + "build the session with .\(other.name)(…)", context: .init(detail: event))))
        } else {
            // An app's event: its `data` string is decoded and parsed only if a handler reads it (see
            // `decodeData`), or at once while handlers do.
            var received: RealtimeEvent
            if defersData, let literal = envelope.rawSlice(of: "data"), literal.utf8.first == UInt8(ascii: "\"") {
                received = RealtimeEvent(channel: channel.map { ChannelID($0) }, name: event, jsonInStringLiteral: literal)
            } else {
                // Read once: a deferred member is parsed on every read.
                let dataField = envelope["data"]
                if case .string(let text)? = dataField {
                    let data = (try? JSONValue.parse(text[...].utf8, scratch: &scratch)) ?? .string(text)
                    received = RealtimeEvent(channel: channel.map { ChannelID($0) }, name: event, data: data, rawData: text)
                } else {
                    let (data, rawData) = Self.decodeData(dataField)
                    received = RealtimeEvent(channel: channel.map { ChannelID($0) }, name: event, data: data,
                                             rawData: rawData)
                }
            }
            if let userID = envelope["user_id"].flatMap(Self.idString) { received.userID = userID }
            if let channel, PusherEncryptedChannels.isEncrypted(channel), subscriptions[channel] != nil {
                receivedEncrypted(received, channel: channel, actions: &actions)
            } else {
                actions.append(.deliver(received))
            }
        }
    }

    public mutating func payloadsAreRead(_ read: Bool) {
        payloadParsing.update(payloadsRead: read)
    }

    /// `data` is usually a JSON string holding JSON: parse it, and keep the string when it is not JSON.
    static func decodeData(_ field: JSONValue?) -> (JSONValue, String?) {
        switch field {
        case nil:
            return (.null, nil)
        case .string(let text)?:
            if let parsed = try? JSONValue.parse(text) { return (parsed, text) }
            return (.string(text), text)
        case let value?:
            return (value, value.serialized())
        }
    }

    /// A member or user id as a string; servers may send numbers.
    static func idString(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .double(let number): return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        default: return nil
        }
    }

    private mutating func system(_ name: String, channel: String?, data: JSONValue, raw: String?,
                                 actions: inout [DialectAction]) {
        switch name {
        case "connection_established":
            established(data, actions: &actions)
        case "ping":
            actions.append(.send(vendor.control("pong")))
        case "pong":
            return
        case "error":
            serverError(channel: channel, data: data, raw: raw, actions: &actions)
        case "subscription_error":
            subscriptionError(channel: channel, data: data, raw: raw, actions: &actions)
        case "signin_success":
            signIn.succeeded(data, actions: &actions)
        default:
            if let channel, channel == signIn.userChannel, name == "subscription_succeeded" { return }
            actions.append(.deliver(RealtimeEvent(channel: channel.map { ChannelID($0) }, name: vendor.systemPrefix + name,
                                                  data: data, rawData: raw)))
        }
    }

    private mutating func internalEvent(_ name: String, channel: String?, data: JSONValue, raw: String?,
                                        actions: inout [DialectAction]) {
        switch name {
        case "subscription_succeeded":
            subscriptionSucceeded(channel, data: data, raw: raw, actions: &actions)
        case "subscription_error":
            subscriptionError(channel: channel, data: data, raw: raw, actions: &actions)
        case "member_added", "member_removed":
            var member = data.objectValue ?? [:]
            if let id = member[vendor.memberIDKey].flatMap(Self.idString) { member[vendor.memberIDKey] = .string(id) }
            actions.append(.deliver(RealtimeEvent(channel: channel.map { ChannelID($0) },
                                                  name: vendor.systemPrefix + name, data: .object(member),
                                                  rawData: raw)))
        default:
            if let channel, channel == signIn.userChannel, name == "subscription_succeeded" { return }
            actions.append(.deliver(RealtimeEvent(channel: channel.map { ChannelID($0) },
                                                  name: vendor.systemPrefix + name, data: data, rawData: raw)))
        }
    }

    private mutating func established(_ data: JSONValue, actions: inout [DialectAction]) {
        guard connectionID == nil else { return }
        guard let id = data[vendor.connectionIDKey]?.stringValue, !id.isEmpty else {
            let error = RealtimeError(.connectionRefused,
                                      "the handshake has no '\(vendor.connectionIDKey)': not a \(vendor.displayName) app?",
                                      context: .init(closeCode: 4001, serverPayload: data))
            decidedEnd = .terminal(error)
            actions.append(.log(.error, error.message))
            actions.append(.close(code: 4001, reason: "no \(vendor.connectionIDKey)"))
            return
        }
        connectionID = id
        if liveness.isEnabled {
            var idle = liveness.pingInterval ?? PusherDialect.defaultPingInterval
            if let seconds = data["activity_timeout"]?.doubleValue, seconds > 0 {
                let server = Duration.milliseconds(Int64(seconds * 1000))
                idle = vendor.serverActivityTimeoutOverrides ? server : min(idle, server)
            }
            let timeout = liveness.pingTimeout ?? PusherDialect.defaultPingTimeout
            actions.append(.liveness(.clientPings(idle: idle, timeout: timeout, ping: vendor.control("ping"))))
        } else {
            actions.append(.liveness(.none))
        }
        actions.append(.connected(id: id))
        if signIn.isArmed { startSignin(actions: &actions) }
    }

    private mutating func subscriptionSucceeded(_ name: String?, data: JSONValue, raw: String?,
                                                actions: inout [DialectAction]) {
        guard let name else { return }
        if name == signIn.userChannel { return }
        guard let index = subscriptions.index(forKey: name), subscriptions.values[index].phase.asked != nil else {
            actions.append(.log(.debug, "subscription_succeeded for \(name), which this session is not joining"))
            return
        }
        subscriptions.values[index].phase = .subscribed
        let subscription = subscriptions.values[index]
        var delivered = data
        if name.hasPrefix("presence-") {
            delivered = presenceSnapshot(data, channelData: subscription.channelData)
            actions.append(.subscriptionPayload(subscription.channel, delivered))
        }
        actions.append(.subscribed(subscription.channel, recovered: nil))
        actions.append(.deliver(RealtimeEvent(channel: subscription.channel,
                                              name: vendor.systemPrefix + "subscription_succeeded", data: delivered,
                                              rawData: raw)))
    }

    /// The subscription whose `subscribe` went out first and is still unanswered: the one a channel-less refusal
    /// is about. A scan, on that rare path only, so that answers cost no bookkeeping.
    private var oldestAwaitingAnswer: Subscription? {
        var oldest: (asked: UInt64, subscription: Subscription)?
        for subscription in subscriptions.values {
            guard let asked = subscription.phase.asked, asked < oldest?.asked ?? .max else { continue }
            oldest = (asked, subscription)
        }
        return oldest?.subscription
    }

    /// `{presence: {ids, hash, count}}` with ids as strings, plus `me`: this client's id from its identity.
    private func presenceSnapshot(_ data: JSONValue, channelData: String?) -> JSONValue {
        var presence = data["presence"]?.objectValue ?? [:]
        if let ids = presence["ids"]?.arrayValue {
            presence["ids"] = .array(ids.map { Self.idString($0).map(JSONValue.string) ?? $0 })
        }
        var out = data.objectValue ?? [:]
        out["presence"] = .object(presence)
        if let channelData, let identity = try? JSONValue.parse(channelData),
           let me = identity[vendor.memberIDKey].flatMap(Self.idString) {
            out["me"] = .string(me)
        }
        return .object(out)
    }

    /// `*:subscription_error` (soketi, Bird) or `*_internal:subscription_error` (pusher-fake): the channel it
    /// names fails; without a channel, the oldest subscription still waiting for an answer does.
    private mutating func subscriptionError(channel name: String?, data: JSONValue, raw: String?,
                                            actions: inout [DialectAction]) {
        let target = name.flatMap { subscriptions[$0] }
            ?? (name == nil ? oldestAwaitingAnswer : nil)
        let detail = data["error"]?.stringValue ?? data["message"]?.stringValue
        guard let subscription = target else {
            // Nothing of ours to fail (left meanwhile, or never asked): still an event and an error.
            let channel = name.map { ChannelID($0) }
            actions.append(.deliver(RealtimeEvent(channel: channel, name: vendor.systemPrefix + "subscription_error",
                                                  data: data, rawData: raw)))
            actions.append(.reportError(RealtimeError(
                .subscriptionRejected, "\(vendor.displayName) refused a subscription" + (name.map { " to \($0)" } ?? ""),
                context: .init(serverPayload: data, channel: channel, detail: detail))))
            return
        }
        let channel = subscription.channel
        fail(channel, RealtimeError(
            .subscriptionRejected, "\(vendor.displayName) refused the subscription to \(channel.name)"
                + (detail.map { ": \($0)" } ?? ""),
            context: .init(httpStatus: data["status"]?.integerValue.map(Int.init), serverPayload: data,
                           channel: channel, detail: detail)), serverData: data, actions: &actions)
    }

    /// `*:error`: always delivered as an event (apps bind to `pusher:error`), then attributed to what it
    /// refused (a subscription, a sign-in) or reported as a server error.
    private mutating func serverError(channel: String?, data: JSONValue, raw: String?, actions: inout [DialectAction]) {
        actions.append(.deliver(RealtimeEvent(channel: channel.map { ChannelID($0) }, name: vendor.systemPrefix + "error",
                                              data: data, rawData: raw)))
        let message = data["message"]?.stringValue ?? data.stringValue ?? "no message"
        let code = data["code"]?.integerValue.map(Int.init)
        if let channel, let subscription = subscriptions[channel], subscription.phase != .subscribed {
            fail(subscription.channel, RealtimeError(
                .subscriptionRejected, "\(vendor.displayName) refused the subscription to \(channel): \(message)",
                context: .init(closeCode: code, serverPayload: data, channel: subscription.channel)),
                 serverData: data, actions: &actions)
            return
        }
        // Pusher refuses a subscription with a channel-less error without a code: blame the oldest waiting one.
        if channel == nil, code == nil, let subscription = oldestAwaitingAnswer {
            fail(subscription.channel, RealtimeError(
                .subscriptionRejected,
                "\(vendor.displayName) refused the subscription to \(subscription.channel.name): \(message)",
                context: .init(serverPayload: data, channel: subscription.channel)), serverData: data, actions: &actions)
            return
        }
        if channel == nil, code == nil, signIn.awaitsServerAnswer {
            signIn.refused(message: message, data: data, actions: &actions)
            return
        }
        actions.append(.reportError(RealtimeError(.serverError, "\(vendor.displayName) error: \(message)",
                                                  context: .init(closeCode: code, serverPayload: data,
                                                                 channel: channel.map { ChannelID($0) }))))
    }

    /// Fails a subscription: the channel gets a `*:subscription_error` event (pusher-js's shape,
    /// `{type, error, status?}`, with the server's own fields kept), then the engine fails the channel and
    /// tells `onError`. The machine forgets the channel, so subscribing again starts afresh.
    private mutating func fail(_ channel: ChannelID, _ error: RealtimeError, serverData: JSONValue? = nil,
                               actions: inout [DialectAction]) {
        subscriptions[channel.name] = nil
        encrypted.forget(channel.name)
        var payload: [String: JSONValue] = [
            "type": .string(error.code == .subscriptionRejected ? "SubscriptionError" : "AuthError"),
            "error": .string(error.message),
        ]
        if let status = error.context.httpStatus { payload["status"] = .integer(Int64(status)) }
        for (key, value) in serverData?.objectValue ?? [:] { payload[key] = value }
        actions.append(.deliver(RealtimeEvent(channel: channel, name: vendor.systemPrefix + "subscription_error",
                                              data: .object(payload))))
        actions.append(.subscriptionFailed(channel, error))
    }

    // MARK: Commands

    public mutating func handle(_ command: DialectCommand, actions: inout [DialectAction]) {
        switch command {
        case .subscribe(let channel):
            subscribe(channel, actions: &actions)
        case .unsubscribe(let channel):
            unsubscribe(channel, actions: &actions)
        case .send(let message):
            var members: [String: JSONValue] = ["event": .string(message.event), "channel": .string(message.channel.name)]
            members["data"] = message.arguments.first ?? .object([:])
            let frame = TransportFrame.text(JSONValue.object(members).serialized())
            actions.append(message.compress ? .send(frame) : .sendUncompressed(frame))
        case .request(_, let id):
            actions.append(.resolveRequest(id, .failure(.unsupported("request", dialect: vendor.name,
                                                                     needs: "Socket.IO (acknowledgements)"))))
        case .custom(let name, _, let id):
            guard name == Self.signinCommand else {
                actions.append(.resolveRequest(id, .failure(.unsupported("the command '\(name)'"))))
                return
            }
            if signIn.requested(id, canSign: authorizer != nil, actions: &actions) { startSignin(actions: &actions) }
        case .cancelRequest(let id):
            signIn.cancel(id)
        case .acknowledge:
            return
        }
    }

    private mutating func subscribe(_ channel: ChannelID, actions: inout [DialectAction]) {
        let name = channel.name
        guard subscriptions[name] == nil else { return }
        if name.isEmpty || name.hasPrefix("#") || channel.hasParams {
            fail(channel, RealtimeError(
                .invalidArgument, "'\(name)' is not a channel name this client may subscribe to"
                    + (channel.hasParams ? " (\(vendor.displayName) channels take no params)" : ""),
                context: .init(channel: channel)), actions: &actions)
            return
        }
        if PusherEncryptedChannels.isEncrypted(name), !vendor.supportsEncryptedChannels {
            fail(channel, RealtimeError(.unsupported, "\(vendor.displayName) has no encrypted channels",
                                        context: .init(channel: channel)), actions: &actions)
            return
        }
        guard name.hasPrefix("private-") || name.hasPrefix("presence-") else {
            sendSubscribe(channel, auth: nil, channelData: nil, actions: &actions)
            return
        }
        guard let authorizer else {
            fail(channel, RealtimeError(.authorizationFailed,
                                        "\(name) needs a signature, and the dialect has no auth (PusherAuth)",
                                        context: .init(channel: channel)), actions: &actions)
            return
        }
        guard let connectionID else { return }
        let serial = authorize(.pusherAuth, channel: channel, authorizer: authorizer, connectionID: connectionID,
                               actions: &actions)
        subscriptions[name] = Subscription(channel: channel, phase: .authorizing(serial: serial))
    }

    /// Asks the engine to run the authorizer for `channel` (`nil`: the user) on this connection; returns the
    /// serial its answer comes back with, so a stale answer can be told apart.
    private mutating func authorize(_ kind: DialectKey.Kind, channel: ChannelID?, authorizer: PusherAuth,
                                    connectionID: String, actions: inout [DialectAction]) -> UInt64 {
        serial += 1
        let request = PusherAuthRequest(connectionID: connectionID, channel: channel?.name, vendor: vendor)
        actions.append(.perform(DialectWork(id: WorkID(kind: kind, channel: channel, serial: serial)) { [key] context in
            try await Self.authorizationJSON(authorizer, request, key: key, context: context)
        }))
        return serial
    }

    /// Runs the authorizer; the answer travels as JSON together with the connection id it was asked for.
    private static func authorizationJSON(_ authorizer: PusherAuth, _ request: PusherAuthRequest, key: String,
                                          context: DialectWorkContext) async throws(RealtimeError) -> JSONValue {
        let answer = try await authorizer.authorize(request, key: key, context: context)
        var members: [String: JSONValue] = ["auth": .string(answer.auth),
                                            "connection_id": .string(request.connectionID)]
        if let value = answer.channelData { members["channel_data"] = .string(value) }
        if let value = answer.sharedSecret { members["shared_secret"] = .string(value) }
        if let value = answer.userData { members["user_data"] = .string(value) }
        return .object(members)
    }

    private mutating func sendSubscribe(_ channel: ChannelID, auth: String?, channelData: String?,
                                        sharedKey: SecretBytes? = nil, actions: inout [DialectAction]) {
        subscribesSent += 1
        subscriptions[channel.name] = Subscription(channel: channel, phase: .subscribing(asked: subscribesSent),
                                                   channelData: channelData)
        if let sharedKey { encrypted.keyed(channel.name, key: sharedKey) }
        var data: [String: JSONValue] = ["channel": .string(channel.name)]
        if let auth { data["auth"] = .string(auth) }
        if let channelData { data[vendor.subscribeIdentityKey] = .string(channelData) }
        actions.append(.send(vendor.frame("subscribe", data: .object(data))))
    }

    private mutating func unsubscribe(_ channel: ChannelID, actions: inout [DialectAction]) {
        guard let subscription = subscriptions.removeValue(forKey: channel.name) else { return }
        encrypted.forget(channel.name)
        // Still authorizing: nothing reached the server; the late answer is dropped.
        if case .authorizing = subscription.phase { return }
        actions.append(.send(vendor.frame("unsubscribe", data: .object(["channel": .string(channel.name)]))))
    }

    // MARK: Sign-in

    private mutating func startSignin(actions: inout [DialectAction]) {
        guard let authorizer, let connectionID else { return }
        signIn.authorizing(serial: authorize(.pusherSignIn, channel: nil, authorizer: authorizer,
                                             connectionID: connectionID, actions: &actions))
    }

    /// Every sign-in failure carries `.signInFailed` (``PusherSignInMachine/failure(_:)``).
    static func signInError(_ cause: RealtimeError) -> RealtimeError {
        PusherSignInMachine.failure(cause)
    }

    // MARK: Work and timers

    public mutating func workFinished(_ id: WorkID, result: Result<JSONValue, RealtimeError>,
                                      actions: inout [DialectAction]) {
        // An answer asked on another connection signed the wrong socket id.
        if case .success(let json) = result, json["connection_id"]?.stringValue != connectionID {
            actions.append(.log(.debug, "dropped an authorization for an older connection"))
            return
        }
        switch id.kind {
        case .pusherAuth:
            guard let channel = id.channel, let subscription = subscriptions[channel.name],
                  subscription.phase == .authorizing(serial: id.serial) else {
                actions.append(.log(.debug, "dropped a stale authorization"))
                return
            }
            switch result {
            case .failure(var error):
                if error.context.channel == nil { error.context.channel = channel }
                fail(channel, error, actions: &actions)
            case .success(let json):
                guard let auth = json["auth"]?.stringValue else { return }
                let channelData = json["channel_data"]?.stringValue
                if channel.name.hasPrefix("presence-"), channelData == nil {
                    fail(channel, RealtimeError(.authorizationFailed,
                                                "the authorizer gave no \(vendor.subscribeIdentityKey) for \(channel.name)",
                                                context: .init(channel: channel)), actions: &actions)
                    return
                }
                var sharedKey: SecretBytes?
                if PusherEncryptedChannels.isEncrypted(channel.name) {
                    switch PusherEncryptedChannels.key(from: json, for: channel) {
                    case .success(let key): sharedKey = key
                    case .failure(let error):
                        fail(channel, error, actions: &actions)
                        return
                    }
                }
                sendSubscribe(channel, auth: auth, channelData: channelData, sharedKey: sharedKey, actions: &actions)
            }
        case .pusherRekey:
            guard let channel = id.channel else { return }
            encrypted.rekeyed(channel, serial: id.serial, result: result, actions: &actions)
        case .pusherSignIn:
            signIn.authorized(serial: id.serial, result: result, actions: &actions)
        default:
            return
        }
    }

    public mutating func timerFired(_ key: TimerKey, actions: inout [DialectAction]) {}

    // MARK: Encrypted channels

    /// An event on a subscribed encrypted channel; a box its key does not open fetches a fresh key once.
    private mutating func receivedEncrypted(_ event: RealtimeEvent, channel: String, actions: inout [DialectAction]) {
        guard encrypted.received(event, channel: channel, actions: &actions) == .needsFreshKey,
              let authorizer, let connectionID, let subscription = subscriptions[channel] else { return }
        let serial = authorize(.pusherRekey, channel: subscription.channel, authorizer: authorizer,
                               connectionID: connectionID, actions: &actions)
        encrypted.rekeying(channel, serial: serial, holding: event)
    }
}

/// The work the Pusher machine asks the engine to run; each comes back through `workFinished`.
extension DialectKey.Kind {
    /// Signing a private, presence or encrypted channel's subscription.
    static let pusherAuth = DialectKey.Kind("pusher.auth")
    /// Signing the user in (`pusher:signin` / `bird:signin`).
    static let pusherSignIn = DialectKey.Kind("pusher.signin")
    /// Fetching a fresh shared key for an encrypted channel whose event would not open.
    static let pusherRekey = DialectKey.Kind("pusher.rekey")
}

extension PusherVendor {
    /// The other member of the family (Pusher for Bird and the other way round), whose handshake tells a
    /// session built for the wrong one what went wrong; `nil` for a custom vendor.
    var otherVendor: PusherVendor? {
        switch self {
        case .pusher: .bird
        case .bird: .pusher
        default: nil
        }
    }
}
