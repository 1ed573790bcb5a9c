import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The Socket.IO v5 / Engine.IO v4 state machine for one session: frames and commands in, actions out.
///
/// Per connection it tracks the Engine.IO handshake, each namespace's join (auth, CONNECT, ack), the ack
/// ids it handed out and the server's unanswered ack requests. Across connections it keeps only the
/// connection-state-recovery session (`pid` and last offset) of each namespace.
@_spi(DialectAuthoring) public struct SocketIOMachine: DialectMachine {
    private let auth: SocketIOAuth?
    private let limits: SocketIODialect.Limits
    private let liveness: Liveness

    // Per connection.
    private var handshake: EngineIOHandshake? {
        didSet { isOpen = handshake != nil }
    }
    /// `handshake != nil`, read on every frame and send without copying the handshake out to test it.
    private var isOpen = false
    private var decoder: SocketIOPacketDecoder
    private var namespaces: [String: Namespace] = [:]
    /// Channels asked for before the Engine.IO handshake finished.
    private var subscribesBeforeOpen: [ChannelID] = []
    private var requests: [RequestID: (namespace: String, ackID: Int64)] = [:]
    private var closeReason: String?

    // Across connections.
    private var recovery: [String: RecoverySession] = [:]
    private var workSerial: UInt64 = 0
    /// The engine's hint that handlers read event payloads: events are then parsed as they arrive, but for
    /// a probe.
    private var payloadParsing = PayloadParsing()

    private struct RecoverySession {
        var pid: String
        var offset: String?
    }

    private enum JoinState {
        /// Waiting for the auth provider (`WorkID.serial`).
        case authorizing(UInt64)
        /// CONNECT sent with this recovery pid (if any); waiting for the ack.
        case connecting(sentPID: String?)
        case connected
    }

    private struct Namespace {
        var channel: ChannelID
        var state: JoinState
        /// Packets that arrived before the CONNECT ack, delivered right after it.
        var early: [SocketIOPacket] = []
        var nextAckID: Int64 = 0
        var pendingRequests: [Int64: RequestID] = [:]
        var unansweredServerAcks: Set<Int64> = []

        var isConnected: Bool {
            if case .connected = state { return true }
            return false
        }

        /// The channel, once the namespace is connected.
        var connectedChannel: ChannelID? { isConnected ? channel : nil }
    }

    init(auth: SocketIOAuth?, limits: SocketIODialect.Limits, liveness: Liveness) {
        self.auth = auth
        self.limits = limits
        self.liveness = liveness
        self.decoder = SocketIOPacketDecoder(maximumAttachments: limits.maximumAttachments,
                                             maximumAttachmentBytes: limits.maximumAttachmentBytes)
    }

    /// The wire name of a channel's namespace: always starts with `/`.
    static func namespaceName(_ channel: ChannelID) -> String {
        if channel.name.isEmpty { return "/" }
        return channel.name.hasPrefix("/") ? channel.name : "/" + channel.name
    }

    // MARK: - Connection

    /// The Engine.IO open packet is awaited within the session's connect timeout
    /// (`SessionOptions.connectTimeout`), which runs until the machine reports `.connected`.
    public mutating func connectionOpened(_ info: TransportOpenInfo, actions: inout [DialectAction]) {
        resetConnection()
    }

    public mutating func connectionEnded(_ closure: TransportClosure) -> ConnectionEnd {
        resetConnection()
        return Self.classify(closure)
    }

    /// The JS client reconnects after every way a connection ends except its own or a namespace
    /// DISCONNECT; an Engine.IO CLOSE from the server surfaces as "transport close" and reconnects. A 4xx
    /// answer to the upgrade or the polling handshake (no Engine.IO server at that path, a refused
    /// request) ends the session instead, as for the other dialects: the next attempt would get the same.
    static func classify(_ closure: TransportClosure) -> ConnectionEnd {
        if case .failed(let error) = closure.kind, error.isLastingHTTPRefusal { return .terminal(error) }
        return .backoff(minimum: .zero)
    }

    private mutating func resetConnection() {
        handshake = nil
        decoder.reset()
        namespaces = [:]
        subscribesBeforeOpen = []
        requests = [:]
        closeReason = nil
    }

    /// The machine starts no timers of its own.
    public mutating func timerFired(_ key: TimerKey, actions: inout [DialectAction]) {}

    // MARK: - Frames

    public mutating func received(_ frame: TransportFrame, actions: inout [DialectAction]) {
        guard closeReason == nil else { return }
        do throws(RealtimeError) {
            switch try EngineIOPacket(frame: frame) {
            case .binary(let data):
                guard isOpen else {
                    throw RealtimeError(.protocolViolation, "binary message before the Engine.IO open packet")
                }
                if let packet = try decoder.receive(binary: data) { handle(packet, actions: &actions) }
            case .text(let type, let payload):
                try receivedEngineIO(type, payload, actions: &actions)
            }
        } catch {
            actions.append(.reportError(error))
            close(reason: "parse error", code: error.code == .limitExceeded ? 1009 : 1002, actions: &actions)
        }
    }

    private mutating func receivedEngineIO(_ type: EngineIOPacketType, _ payload: Substring,
                                           actions: inout [DialectAction]) throws(RealtimeError) {
        if !isOpen, type != .open, type != .noop {
            throw RealtimeError(.protocolViolation, "Engine.IO packet \(type.rawValue) before the open packet")
        }
        switch type {
        case .open:
            guard !isOpen else {
                throw RealtimeError(.protocolViolation, "second Engine.IO open packet")
            }
            let opened = try EngineIOHandshake(json: String(payload))
            handshake = opened
            actions.append(.liveness(liveness.serverPings(defaultInterval: opened.pingInterval,
                                                          defaultTimeout: opened.pingTimeout)))
            actions.append(.connected(id: opened.sid))
            let early = subscribesBeforeOpen
            subscribesBeforeOpen = []
            for channel in early { join(channel, actions: &actions) }
        case .close:
            actions.append(.log(.info, "server closed the Engine.IO session"))
            if closeReason == nil {
                closeReason = "server close"
                actions.append(.closeAsServerAsked(code: 1000, reason: .serverRequest(reason: "Engine.IO close")))
            }
        case .ping:
            actions.append(.send(.text("3" + payload)))
        case .pong, .upgrade, .noop:
            // Probe replies and upgrade noops belong to the polling transport; python-engineio also sends a
            // stray noop over a fresh WebSocket.
            break
        case .message:
            // An event's arguments are parsed when a handler reads them, until the engine says handlers do.
            decoder.defersEventArguments = !payloadParsing.parsesNow()
            if let packet = try decoder.receive(text: payload) { handle(packet, actions: &actions) }
        }
    }

    public mutating func payloadsAreRead(_ read: Bool) {
        payloadParsing.update(payloadsRead: read)
    }

    private mutating func close(reason: String, code: Int, actions: inout [DialectAction]) {
        guard closeReason == nil else { return }
        closeReason = reason
        actions.append(.close(code: code, reason: reason))
    }

    // MARK: - Socket.IO packets

    private mutating func handle(_ packet: consuming SocketIOPacket, actions: inout [DialectAction]) {
        // The common case first, reading only the channel rather than copying the namespace's state out.
        if packet.kind == .event || packet.kind == .binaryEvent,
           let channel = namespaces[packet.namespace]?.connectedChannel {
            deliverEvent(packet, channel: channel, actions: &actions)
            return
        }
        guard var namespace = namespaces[packet.namespace] else {
            actions.append(.log(.debug, "packet type \(packet.kind.rawValue) for namespace \(packet.namespace) not joined; dropped"))
            return
        }
        switch packet.kind {
        case .connect:
            guard case .connecting(let sentPID) = namespace.state else {
                actions.append(.log(.debug, "unexpected CONNECT for \(packet.namespace); ignored"))
                return
            }
            let pid = packet.payload?["pid"]?.stringValue
            let recovered: Bool?
            if let pid {
                recovered = sentPID == pid
                if recovery[packet.namespace]?.pid != pid {
                    recovery[packet.namespace] = RecoverySession(pid: pid, offset: nil)
                }
            } else {
                recovered = sentPID == nil ? nil : false
                recovery[packet.namespace] = nil
            }
            namespace.state = .connected
            let early = namespace.early
            namespace.early = []
            namespaces[packet.namespace] = namespace
            if let payload = packet.payload { actions.append(.subscriptionPayload(namespace.channel, payload)) }
            actions.append(.subscribed(namespace.channel, recovered: recovered))
            for event in early { deliverEvent(event, channel: namespace.channel, actions: &actions) }

        case .connectError:
            namespaces[packet.namespace] = nil
            recovery[packet.namespace] = nil
            failRequests(of: namespace, code: .subscriptionRejected, actions: &actions)
            let message = packet.payload?["message"]?.stringValue ?? packet.payload?.stringValue
                ?? "connection refused"
            let error = RealtimeError(.subscriptionRejected, message,
                                      context: .init(serverPayload: packet.payload, channel: namespace.channel))
            actions.append(.subscriptionFailed(namespace.channel, error))

        case .disconnect:
            namespaces[packet.namespace] = nil
            recovery[packet.namespace] = nil
            failRequests(of: namespace, code: .channelUnavailable, actions: &actions)
            let error = RealtimeError(.channelUnavailable, "the server disconnected namespace \(packet.namespace)",
                                      context: .init(channel: namespace.channel))
            actions.append(.channelEnded(namespace.channel, error))

        case .event, .binaryEvent:
            if namespace.isConnected {
                deliverEvent(copy packet, channel: namespace.channel, actions: &actions)
            } else if namespace.early.count < limits.maximumEventsBeforeConnect {
                namespace.early.append(copy packet)
                namespaces[packet.namespace] = namespace
            } else {
                actions.append(.reportError(RealtimeError(
                    .bufferFull,
                    "more than \(limits.maximumEventsBeforeConnect) events before the CONNECT ack; event dropped",
                    context: .init(channel: namespace.channel))))
            }

        case .ack, .binaryAck:
            guard let id = packet.id, let request = namespace.pendingRequests.removeValue(forKey: id) else {
                actions.append(.log(.debug, "ACK \(packet.id.map(String.init) ?? "?") on \(packet.namespace) matches no request"))
                return
            }
            namespaces[packet.namespace] = namespace
            requests[request] = nil
            actions.append(.resolveRequest(request, .success(packet.payload?.arrayValue ?? [])))
        }
    }

    /// Delivers an event of a connected namespace (`channel`).
    private mutating func deliverEvent(_ packet: consuming SocketIOPacket, channel: ChannelID,
                                       actions: inout [DialectAction]) {
        // With connection state recovery the offset to take off the arguments is needed now.
        if packet.id == nil, !recovery.isEmpty, recovery[packet.namespace] != nil { packet.materializeDeferredArguments() }
        let name: String
        var arguments: [JSONValue]?  // `nil` while deferred: parsed from the packet's text when read
        if let deferred = packet.deferredEventName {
            name = deferred
        } else {
            guard let (decodedName, decodedArguments) = packet.takeEventNameAndArguments() else { return }
            name = decodedName
            arguments = decodedArguments
        }
        guard !SocketIODialect.isReserved(name) else {
            actions.append(.reportError(RealtimeError(.protocolViolation,
                                                      "server sent an event with the reserved name \"\(name)\"",
                                                      context: .init(channel: channel))))
            return
        }
        // With connection state recovery the server appends an offset to every event without an ack.
        if packet.id == nil, !recovery.isEmpty, recovery[packet.namespace] != nil,
           case .string(let offset)? = arguments?.last {
            arguments?.removeLast()
            recovery[packet.namespace]?.offset = offset
        }
        var token: AckToken?
        if let id = packet.id {
            let unanswered = namespaces[packet.namespace]?.unansweredServerAcks.count ?? 0
            if unanswered < limits.maximumUnansweredServerAcks {
                namespaces[packet.namespace]?.unansweredServerAcks.insert(id)
                token = AckToken(channel: channel, id: id)
            } else {
                actions.append(.reportError(RealtimeError(
                    .limitExceeded,
                    "more than \(limits.maximumUnansweredServerAcks) unanswered ack requests; \"\(name)\" delivered without one",
                    context: .init(channel: channel))))
            }
        }
        if let arguments {
            actions.append(.deliver(RealtimeEvent(channel: channel, name: name, data: arguments.first ?? .null,
                                                  arguments: arguments, rawSlice: packet.rawJSON, ackToken: token)))
        } else if let text = packet.rawJSON {
            actions.append(.deliver(RealtimeEvent(channel: channel, name: name, argumentsAfterNameIn: text,
                                                  ackToken: token)))
        }
    }

    private mutating func failRequests(of namespace: Namespace, code: RealtimeError.Code,
                                       actions: inout [DialectAction]) {
        for (_, request) in namespace.pendingRequests.sorted(by: { $0.key < $1.key }) {
            requests[request] = nil
            actions.append(.resolveRequest(request, .failure(RealtimeError(
                code, "namespace \(Self.namespaceName(namespace.channel)) is no longer connected",
                context: .init(channel: namespace.channel)))))
        }
    }

    // MARK: - Commands

    public mutating func handle(_ command: DialectCommand, actions: inout [DialectAction]) {
        switch command {
        case .subscribe(let channel):
            guard isOpen else {
                if !subscribesBeforeOpen.contains(channel) { subscribesBeforeOpen.append(channel) }
                return
            }
            join(channel, actions: &actions)

        case .unsubscribe(let channel):
            subscribesBeforeOpen.removeAll { $0 == channel }
            let name = Self.namespaceName(channel)
            guard let namespace = namespaces.removeValue(forKey: name) else { return }
            recovery[name] = nil
            failRequests(of: namespace, code: .channelUnavailable, actions: &actions)
            if isOpen, closeReason == nil {
                send(SocketIOPacket(kind: .disconnect, namespace: name), actions: &actions)
            }

        case .send(let message):
            guard let name = connectedNamespace(message.channel) else {
                actions.append(.refuseSend(notConnected(message.channel)))
                return
            }
            let packet = SocketIOPacket(kind: .event, namespace: name,
                                        payload: .array([.string(message.event)] + message.arguments))
            if let error = sizeError(packet, channel: message.channel) {
                actions.append(.refuseSend(error))
                return
            }
            send(packet, compress: message.compress, actions: &actions)

        case .request(let message, let request):
            guard let name = connectedNamespace(message.channel), var namespace = namespaces[name] else {
                actions.append(.resolveRequest(request, .failure(notConnected(message.channel))))
                return
            }
            let ackID = namespace.nextAckID
            let packet = SocketIOPacket(kind: .event, namespace: name, id: ackID,
                                        payload: .array([.string(message.event)] + message.arguments))
            if let error = sizeError(packet, channel: message.channel) {
                actions.append(.resolveRequest(request, .failure(error)))
                return
            }
            namespace.nextAckID += 1
            namespace.pendingRequests[ackID] = request
            namespaces[name] = namespace
            requests[request] = (name, ackID)
            send(packet, compress: message.compress, actions: &actions)

        case .cancelRequest(let request):
            guard let (name, ackID) = requests.removeValue(forKey: request) else { return }
            namespaces[name]?.pendingRequests[ackID] = nil

        case .acknowledge(let token, let arguments):
            let name = Self.namespaceName(token.channel ?? "/")
            guard var namespace = namespaces[name], namespace.isConnected,
                  namespace.unansweredServerAcks.remove(token.id) != nil else {
                actions.append(.log(.debug, "ack \(token.id) on \(name) is stale or already answered; not sent"))
                return
            }
            namespaces[name] = namespace
            send(SocketIOPacket(kind: .ack, namespace: name, id: token.id, payload: .array(arguments)),
                 actions: &actions)

        case .custom(let name, _, let request):
            actions.append(.resolveRequest(request, .failure(.unsupported("the custom operation \"\(name)\""))))
        }
    }

    private func connectedNamespace(_ channel: ChannelID) -> String? {
        let name = Self.namespaceName(channel)
        guard isOpen, closeReason == nil, namespaces[name]?.isConnected == true else { return nil }
        return name
    }

    private func notConnected(_ channel: ChannelID) -> RealtimeError {
        RealtimeError(.channelUnavailable, "namespace \(Self.namespaceName(channel)) is not connected",
                      context: .init(channel: channel))
    }

    /// A packet larger than the server's `maxPayload` makes the server drop the connection; refuse it here.
    private func sizeError(_ packet: SocketIOPacket, channel: ChannelID) -> RealtimeError? {
        guard let maximum = handshake?.maxPayload else { return nil }
        let size = packet.encoded().reduce(0) { $0 + PollingPayload.encodedSize(of: $1) + 1 }
        guard size > maximum else { return nil }
        return RealtimeError(.limitExceeded, "packet of \(size) bytes exceeds the server's maxPayload of \(maximum)",
                             context: .init(channel: channel))
    }

    private mutating func join(_ channel: ChannelID, actions: inout [DialectAction]) {
        let name = Self.namespaceName(channel)
        if let existing = namespaces[name] {
            if existing.isConnected {
                actions.append(.subscribed(existing.channel, recovered: nil))
            }
            return
        }
        switch auth {
        case .provider(let provider):
            workSerial += 1
            namespaces[name] = Namespace(channel: channel, state: .authorizing(workSerial))
            let id = WorkID(kind: .socketIOAuth, channel: channel, serial: workSerial)
            actions.append(.perform(DialectWork(id: id) {
                try await RealtimeError.runningAppClosure("the Socket.IO auth provider", channel: channel) {
                    try await provider(channel)
                }
            }))
        case .value(let value):
            // A CONNECT payload that is not an object makes the server drop the whole connection, and
            // the next connection the same way: refuse the namespace instead.
            if let error = SocketIOAuth.payloadError(value, channel: channel, fromProvider: false) {
                actions.append(.subscriptionFailed(channel, error))
                return
            }
            namespaces[name] = Namespace(channel: channel, state: .authorizing(0))
            sendConnect(name, auth: value, actions: &actions)
        case nil:
            namespaces[name] = Namespace(channel: channel, state: .authorizing(0))
            sendConnect(name, auth: nil, actions: &actions)
        }
    }

    private mutating func sendConnect(_ name: String, auth: JSONValue?, actions: inout [DialectAction]) {
        var payload = auth
        let session = recovery[name]
        if let session {
            // As the JS client does: the recovery fields first, the app's auth members on top.
            var members: [String: JSONValue] = ["pid": .string(session.pid)]
            if let offset = session.offset { members["offset"] = .string(offset) }
            if case .object(let authMembers)? = auth {
                members.merge(authMembers) { _, app in app }
            }
            payload = .object(members)
        }
        namespaces[name]?.state = .connecting(sentPID: session?.pid)
        send(SocketIOPacket(kind: .connect, namespace: name, payload: payload), actions: &actions)
    }

    public mutating func workFinished(_ id: WorkID, result: Result<JSONValue, RealtimeError>,
                                      actions: inout [DialectAction]) {
        guard id.kind == .socketIOAuth, let channel = id.channel else { return }
        let name = Self.namespaceName(channel)
        guard let namespace = namespaces[name], case .authorizing(let serial) = namespace.state,
              serial == id.serial else { return }
        switch result {
        case .success(let value):
            if let error = SocketIOAuth.payloadError(value, channel: channel, fromProvider: true) {
                namespaces[name] = nil
                actions.append(.subscriptionFailed(channel, error))
                return
            }
            sendConnect(name, auth: value, actions: &actions)
        case .failure(var error):
            namespaces[name] = nil
            error.context.channel = channel
            actions.append(.subscriptionFailed(channel, error))
        }
    }

    /// Writes `packet`'s frames; `compress: false` (socket.io-client's `compress(false)`) keeps the
    /// transport from compressing them.
    private func send(_ packet: SocketIOPacket, compress: Bool = true, actions: inout [DialectAction]) {
        for frame in packet.encoded() { actions.append(compress ? .send(frame) : .sendUncompressed(frame)) }
    }
}

/// The work the Socket.IO machine asks the engine to run; it comes back through `workFinished`.
extension DialectKey.Kind {
    /// Running the auth provider for a namespace's CONNECT payload.
    static let socketIOAuth = DialectKey.Kind("socket.io-auth")
}
