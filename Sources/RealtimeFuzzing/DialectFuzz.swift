import Foundation
@_spi(DialectAuthoring) import RealtimeActionCable
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) import RealtimePusher
@_spi(DialectAuthoring) import RealtimeSocketIO

/// Each dialect's sans-I/O machine after its handshake, fed what a hostile server may send: text and
/// binary messages, interleaved with what the engine would do meanwhile (fire the timers the machine
/// started, finish its work, pass on app commands, end and reopen the connection).
///
/// Input: a list of steps, each an opcode byte and its operands (see ``Driver/step(_:)``).
///
/// Properties: no crash or hang; a request is resolved only if the app made it, once, and not after the
/// app cancelled it; subscription outcomes name only channels the app asked for; and the machine's
/// state stays bounded: no collection in it outgrows the dialect's configured limits (plus what the
/// app itself asked for), and its bytes stay within a fixed multiple of one message.
enum DialectFuzz {
    static func checkSocketIO(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let limits = SocketIODialect.Limits(maximumAttachments: 4, maximumAttachmentBytes: 4_096,
                                            maximumEventsBeforeConnect: 8, maximumUnansweredServerAcks: 16)
        let dialect = SocketIODialect(url: URL(string: "http://127.0.0.1:3000")!, auth: ["token": "t"], limits: limits)
        var driver = Driver(machine: dialect.makeMachine(), input: FuzzInput(bytes),
                            channels: ["/", "/chat", "/admin"],
                            handshake: [#"0{"sid":"eio","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#],
                            joined: ["/": #"40{"sid":"a"}"#, "/chat": #"40/chat,{"sid":"b"}"#],
                            // early events, attachments and unanswered acks per namespace, and the namespaces
                            collectionLimit: 16 + 3,
                            workResult: { _ in .object([:]) })
        try driver.run()
    }

    static func checkPusher(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let dialect = PusherDialect(vendor: .pusher, key: "app-key", host: "127.0.0.1",
                                    auth: .inline(secret: "secret", presenceData: #"{"user_id":"7"}"#))
        let established = #"{"event":"pusher:connection_established","data":"{\"socket_id\":\"1234.1234\",\"activity_timeout\":120}"}"#
        var driver = Driver(machine: dialect.makeMachine(), input: FuzzInput(bytes),
                            channels: ["room", "private-room", "presence-room", "private-encrypted-room"],
                            handshake: [established],
                            joined: [:],
                            // events held while an encrypted channel fetches its key
                            collectionLimit: 256 + 4,
                            workResult: { choice in
                                let secret = Data(repeating: choice, count: 32).base64EncodedString()
                                return .object([
                                    "connection_id": .string(choice & 1 == 0 ? "1234.1234" : "other"),
                                    "auth": "app-key:signature",
                                    "channel_data": #"{"user_id":"7"}"#,
                                    "shared_secret": .string(secret),
                                ])
                            })
        try driver.run()
    }

    static func checkActionCable(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        let dialect = ActionCableDialect(url: URL(string: "ws://127.0.0.1:3000/cable")!)
        var driver = Driver(machine: dialect.makeMachine(), input: FuzzInput(bytes),
                            channels: [ChannelID("ChatChannel", params: ["room": "1"]), "NotificationsChannel",
                                       ChannelID("ChatChannel", params: ["room": 2])],
                            handshake: [#"{"type":"welcome"}"#],
                            joined: [:],
                            collectionLimit: 8,
                            openInfo: TransportOpenInfo(subprotocol: "actioncable-v1-json"),
                            workResult: { _ in .object([:]) })
        try driver.run()
    }

    /// Plays the engine around one machine.
    struct Driver {
        var machine: any DialectMachine
        var input: FuzzInput
        let channels: [ChannelID]
        /// Frames that complete the dialect's handshake after the transport opens.
        let handshake: [String]
        /// Frames that acknowledge a join, by channel name, sent right after the handshake's subscribes.
        let joined: [String: String]
        /// No collection in the machine may hold more than this plus what the app has outstanding.
        let collectionLimit: Int
        var openInfo = TransportOpenInfo()
        /// The result the engine hands back for work (an authorization), given a choice byte.
        let workResult: @Sendable (UInt8) -> JSONValue

        private var timers: [TimerKey] = []
        private var work: [WorkID] = []
        private var asked: Set<ChannelID> = []
        private var requests: Set<RequestID> = []
        private var finishedRequests: Set<RequestID> = []
        private var nextRequest: UInt64 = 1
        private var ackTokens: [AckToken] = []
        private var largestMessage = 0
        private var reopenings = 0
        private var steps = 0
        private var closing = false

        init(machine: any DialectMachine, input: FuzzInput, channels: [ChannelID], handshake: [String], joined: [String: String],
             collectionLimit: Int, openInfo: TransportOpenInfo = TransportOpenInfo(),
             workResult: @escaping @Sendable (UInt8) -> JSONValue) {
            self.machine = machine
            self.input = input
            self.channels = channels
            self.handshake = handshake
            self.joined = joined
            self.collectionLimit = collectionLimit
            self.openInfo = openInfo
            self.workResult = workResult
        }

        mutating func run() throws(FuzzFailure) {
            try open()
            // Bounded even for inputs that repeat cheap steps: libFuzzer's own limits are on bytes.
            while !input.isAtEnd, steps < 2_000 {
                steps += 1
                try step(input.byte())
                // Reflection is most of the cost of a step: measure every 8th step, before a reconnect
                // resets the machine, and at the end.
                if steps % 8 == 0 || closing || input.isAtEnd || steps == 2_000 { try checkState() }
                if closing {
                    guard reopenings < 8 else { return }
                    try reopen(.closedLocally(code: 1000, reason: ""))
                }
            }
        }

        /// Opens a connection, completes the handshake and joins the first two channels.
        private mutating func open() throws(FuzzFailure) {
            timers = []
            work = []
            let info = openInfo
            try act { $0.connectionOpened(info, actions: &$1) }
            for frame in handshake { try act { $0.received(.text(frame), actions: &$1) } }
            for channel in channels.prefix(2) {
                asked.insert(channel)
                try act { $0.handle(.subscribe(channel), actions: &$1) }
                if let ack = joined[channel.name] { try act { $0.received(.text(ack), actions: &$1) } }
            }
        }

        /// One step: `0…2` a text message, `3` a binary message (each a 2-byte length, then its bytes),
        /// `4` a timer fires (index), `5` work finishes (index, outcome), `6` an app command (channel and
        /// command nibbles), `7` the connection ends and reopens.
        mutating func step(_ opcode: UInt8) throws(FuzzFailure) {
            switch opcode % 8 {
            case 0, 1, 2:
                let bytes = input.bytes(upTo: 2_048)
                largestMessage = max(largestMessage, bytes.count)
                try act { $0.received(.text(String(decoding: bytes, as: UTF8.self)), actions: &$1) }
            case 3:
                let bytes = input.bytes(upTo: 2_048)
                largestMessage = max(largestMessage, bytes.count)
                try act { $0.received(.binary(Data(bytes)), actions: &$1) }
            case 4:
                guard !timers.isEmpty else { return }
                let key = timers.remove(at: input.int(below: timers.count))
                try act { $0.timerFired(key, actions: &$1) }
            case 5:
                guard !work.isEmpty else { return }
                let id = work.remove(at: input.int(below: work.count))
                let choice = input.byte()
                let result: Result<JSONValue, RealtimeError> = choice & 0x80 == 0
                    ? .success(workResult(choice))
                    : .failure(RealtimeError(.authorizationFailed, "refused"))
                try act { $0.workFinished(id, result: result, actions: &$1) }
            case 6:
                try command(input.byte())
            default:
                guard reopenings < 8 else { return }
                try reopen(.closedByPeer(code: 1006, reason: ""))
            }
        }

        private mutating func reopen(_ end: TransportClosure.Kind) throws(FuzzFailure) {
            reopenings += 1
            closing = false
            _ = machine.connectionEnded(TransportClosure(end))
            try open()
        }

        private mutating func command(_ choice: UInt8) throws(FuzzFailure) {
            // High nibble: the channel; low nibble: the command.
            let channel = channels[Int(choice >> 4) % channels.count]
            switch (choice & 0x0F) % 6 {
            case 0:
                asked.insert(channel)
                try act { $0.handle(.subscribe(channel), actions: &$1) }
            case 1:
                try act { $0.handle(.unsubscribe(channel), actions: &$1) }
            case 2:
                let message = OutgoingMessage(channel: channel, event: "client-event", arguments: ["x"])
                try act { $0.handle(.send(message), actions: &$1) }
            case 3:
                let id = RequestID(nextRequest)
                nextRequest += 1
                requests.insert(id)
                let message = OutgoingMessage(channel: channel, event: "ask", arguments: [1])
                try act { $0.handle(.request(message, id), actions: &$1) }
            case 4:
                guard let id = requests.subtracting(finishedRequests).min(by: { $0.rawValue < $1.rawValue }) else { return }
                finishedRequests.insert(id)
                try act { $0.handle(.cancelRequest(id), actions: &$1) }
            default:
                guard !ackTokens.isEmpty else { return }
                let token = ackTokens.removeFirst()
                try act { $0.handle(.acknowledge(token, ["ok"]), actions: &$1) }
            }
        }

        /// Runs one machine call and checks and records the actions it produced.
        private mutating func act(_ body: (inout any DialectMachine, inout [DialectAction]) -> Void) throws(FuzzFailure) {
            var actions: [DialectAction] = []
            body(&machine, &actions)
            for action in actions {
                switch action {
                case .startTimer(let key, _):
                    timers.removeAll { $0 == key }
                    timers.append(key)
                case .cancelTimer(let key):
                    timers.removeAll { $0 == key }
                case .perform(let job):
                    work.append(job.id)
                case .deliver(let event):
                    if let token = event.ackToken, ackTokens.count < 64 { ackTokens.append(token) }
                case .resolveRequest(let id, _):
                    try require(requests.contains(id), "resolved request \(id), which the app never made")
                    try require(!finishedRequests.contains(id), "resolved request \(id) again or after it was cancelled")
                    finishedRequests.insert(id)
                case .subscribed(let channel, _), .subscriptionFailed(let channel, _), .channelEnded(let channel, _),
                     .channelPending(let channel):
                    try require(asked.contains(channel), "a subscription outcome for \(channel), never asked for")
                case .close, .fail:
                    // The engine closes, tells the machine, and reconnects before the next step.
                    closing = true
                default:
                    break
                }
            }
        }

        private func checkState() throws(FuzzFailure) {
            var size = StateSize()
            size.measure(machine)
            let outstanding = requests.count - finishedRequests.count
            try require(size.largestCollection <= collectionLimit + outstanding,
                        "a collection of \(size.largestCollection) in the machine after \(steps) steps (limit \(collectionLimit) + \(outstanding) open requests)")
            // Whatever the machine keeps was sent in at most this many messages (held events, attachments).
            let byteLimit = 64 * 1_024 + (collectionLimit + outstanding + 2) * 2 * largestMessage
            try require(size.bytes <= byteLimit, "the machine holds \(size.bytes) bytes after \(steps) steps (limit \(byteLimit))")
        }
    }
}

/// A rough size of a value's state found by reflection: the largest collection anywhere inside it, and
/// the bytes of its strings and data. Reflection sees private stored properties, so a machine needs no
/// hook of its own.
struct StateSize {
    var largestCollection = 0
    var bytes = 0
    private var seenObjects: Set<ObjectIdentifier> = []

    mutating func measure(_ value: Any) {
        switch value {
        case let text as String: bytes += text.utf8.count; return
        case let text as Substring: bytes += text.utf8.count; return
        case let data as Data: bytes += data.count; return
        case let array as [UInt8]: bytes += array.count; return
        default: break
        }
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .collection?, .dictionary?, .set?:
            largestCollection = max(largestCollection, mirror.children.count)
        case .class?:
            // Shared objects (and cycles) count once.
            guard seenObjects.insert(ObjectIdentifier(value as AnyObject)).inserted else { return }
        default:
            break
        }
        for child in mirror.children { measure(child.value) }
        var superclass = mirror.superclassMirror
        while let parent = superclass {
            for child in parent.children { measure(child.value) }
            superclass = parent.superclassMirror
        }
    }
}
