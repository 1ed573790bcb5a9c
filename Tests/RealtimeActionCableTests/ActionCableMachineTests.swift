import Foundation
@_spi(DialectAuthoring) @testable import RealtimeActionCable
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// The machine on its own: frames and commands in, actions out.
struct MachineDriver {
    var machine: any DialectMachine
    var actions: [DialectAction] = []

    init(guarantor: ActionCableDialect.SubscriptionGuarantor = .init(interval: .milliseconds(500), maximumAttempts: 3),
         eventNameKeys: [String] = ActionCableDialect.defaultEventNameKeys,
         identifierHashing: ActionCableSubscriptionTable.Hashing = .standard) {
        machine = ActionCableDialect(url: URL(string: "ws://127.0.0.1:3000/cable")!, guarantor: guarantor,
                                     eventNameKeys: eventNameKeys).makeMachine(identifierHashing: identifierHashing)
    }

    mutating func open(subprotocol: String? = "actioncable-v1-json") -> [DialectAction] {
        actions = []
        machine.connectionOpened(TransportOpenInfo(subprotocol: subprotocol), actions: &actions)
        return actions
    }

    @discardableResult
    mutating func receive(_ text: String) -> [DialectAction] {
        actions = []
        machine.received(.text(text), actions: &actions)
        return actions
    }

    @discardableResult
    mutating func command(_ command: DialectCommand) -> [DialectAction] {
        actions = []
        machine.handle(command, actions: &actions)
        return actions
    }

    @discardableResult
    mutating func fire(_ key: TimerKey) -> [DialectAction] {
        actions = []
        machine.timerFired(key, actions: &actions)
        return actions
    }

    /// Opened and welcomed.
    mutating func connected() {
        _ = open()
        receive(#"{"type":"welcome"}"#)
    }
}

extension Array where Element == DialectAction {
    var sentTexts: [String] {
        compactMap { if case .send(.text(let text)) = $0 { return text } else { return nil } }
    }
    var delivered: [RealtimeEvent] {
        compactMap { if case .deliver(let event) = $0 { return event } else { return nil } }
    }
    var subscribed: [ChannelID] {
        compactMap { if case .subscribed(let channel, _) = $0 { return channel } else { return nil } }
    }
    var failures: [(ChannelID, RealtimeError)] {
        compactMap { if case .subscriptionFailed(let channel, let error) = $0 { return (channel, error) } else { return nil } }
    }
    var reported: [RealtimeError] {
        compactMap { if case .reportError(let error) = $0 { return error } else { return nil } }
    }
    var refusedSends: [RealtimeError] {
        compactMap { if case .refuseSend(let error) = $0 { return error } else { return nil } }
    }
    var startedTimers: [TimerKey: Duration] {
        var timers: [TimerKey: Duration] = [:]
        for case .startTimer(let key, let delay) in self { timers[key] = delay }
        return timers
    }
    var cancelledTimers: [TimerKey] {
        compactMap { if case .cancelTimer(let key) = $0 { return key } else { return nil } }
    }
    var closes: [Int] {
        compactMap {
            switch $0 {
            case .close(let code, _), .closeAsServerAsked(let code, _): code
            default: nil
            }
        }
    }
    var isConnected: Bool {
        contains { if case .connected = $0 { return true } else { return false } }
    }
    var livenessRules: [LivenessRule] {
        compactMap { if case .liveness(let rule) = $0 { return rule } else { return nil } }
    }
}

/// Standard hashing, every identifier on one hash (at either end of `Int`, so that keys wrap), and one bit
/// of the standard hash (runs of two hashes overlap): tests of subscriptions run with each, so the
/// collision path is taken as often as the usual one.
let identifierHashings: [ActionCableSubscriptionTable.Hashing] = [.standard, .fixed(0), .fixed(.max), .lowBits(1)]

let echo42 = ChannelID("EchoChannel", params: ["room_id": 42])
let echo42ID = #"{"channel":"EchoChannel","room_id":42}"#
/// A JSON string literal holding `identifier`, as it appears inside a frame.
func quoted(_ identifier: String) -> String { JSONValue.string(identifier).serialized() }
let subscribeEcho42 = #"{"command":"subscribe","identifier":"{\"channel\":\"EchoChannel\",\"room_id\":42}"}"#
let unsubscribeEcho42 = #"{"command":"unsubscribe","identifier":"{\"channel\":\"EchoChannel\",\"room_id\":42}"}"#
let confirmEcho42 = #"{"identifier":"{\"channel\":\"EchoChannel\",\"room_id\":42}","type":"confirm_subscription"}"#
let guarantorEcho42 = TimerKey(kind: .actionCableGuarantor)  // one timer for every channel
let settleEcho42 = TimerKey(kind: .actionCableSettle, channel: echo42)

@Suite("Action Cable machine")
struct ActionCableMachineTests {
    @Test("welcome connects and sets server-ping liveness (3 s + 3 s); a second welcome is ignored")
    func welcome() {
        var driver = MachineDriver()
        #expect(driver.open().isEmpty)
        let actions = driver.receive(#"{"type":"welcome"}"#)
        #expect(actions.isConnected)
        #expect(actions.livenessRules == [.serverPings(interval: .seconds(3), grace: .seconds(3))])
        #expect(driver.receive(#"{"type":"welcome"}"#).isEmpty)
    }

    @Test("pings are liveness only, recognised by type; a numeric broadcast is still a broadcast")
    func pings() {
        var driver = MachineDriver()
        driver.connected()
        driver.command(.subscribe(echo42))
        #expect(driver.receive(#"{"type":"ping","message":1796219807}"#).isEmpty)
        let events = driver.receive(#"{"identifier":\#(quoted(echo42ID)),"message":1796219807}"#).delivered
        #expect(events.count == 1)
        #expect(events.first?.data == 1796219807)
        #expect(events.first?.rawData == "1796219807")
    }

    @Test("subscribe sends the canonical identifier and arms the guarantor")
    func subscribe() {
        var driver = MachineDriver()
        driver.connected()
        let actions = driver.command(.subscribe(echo42))
        #expect(actions.sentTexts == [subscribeEcho42])
        #expect(actions.startedTimers == [guarantorEcho42: .milliseconds(500)])
        // Asking again while pending sends nothing more.
        #expect(driver.command(.subscribe(echo42)).isEmpty)
    }

    @Test("confirm_subscription subscribes; the guarantor's next tick then resends nothing and stops; a duplicate or unknown confirm does nothing", arguments: identifierHashings)
    func confirm(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        driver.command(.subscribe(echo42))
        let actions = driver.receive(confirmEcho42)
        #expect(actions.subscribed == [echo42])
        #expect(actions.cancelledTimers.isEmpty)  // the shared timer is left to tick once more
        #expect(driver.receive(confirmEcho42).subscribed.isEmpty)
        #expect(driver.receive(#"{"identifier":"{\"channel\":\"Other\"}","type":"confirm_subscription"}"#).subscribed.isEmpty)
        let tick = driver.fire(guarantorEcho42)
        #expect(tick.sentTexts.isEmpty)
        #expect(tick.startedTimers.isEmpty)
    }

    @Test("frames are routed by the exact identifier string; other spellings are dropped", arguments: identifierHashings)
    func routingByExactIdentifier(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        let lobby = ChannelID("EchoChannel", params: ["room_id": 7])
        driver.command(.subscribe(echo42))
        driver.command(.subscribe(lobby))
        let reordered = #"{"room_id":42,"channel":"EchoChannel"}"#
        let spaced = #"{"channel": "EchoChannel", "room_id": 42}"#
        #expect(driver.receive(#"{"identifier":\#(quoted(reordered)),"message":"x"}"#).delivered.isEmpty)
        #expect(driver.receive(#"{"identifier":\#(quoted(spaced)),"message":"x"}"#).delivered.isEmpty)
        #expect(driver.receive(#"{"identifier":\#(quoted(reordered)),"type":"confirm_subscription"}"#).subscribed.isEmpty)
        let events = driver.receive(#"{"identifier":\#(quoted(echo42ID)),"message":{"text":"hi"}}"#).delivered
        #expect(events.map(\.channel) == [echo42])
        let lobbyEvents = driver.receive(#"{"identifier":"{\"channel\":\"EchoChannel\",\"room_id\":7}","message":[1]}"#).delivered
        #expect(lobbyEvents.map(\.channel) == [lobby])
    }

    @Test("consecutive broadcasts on one identifier keep their route only until a subscription changes", arguments: identifierHashings)
    func routeOfConsecutiveBroadcasts(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        let lobby = ChannelID("EchoChannel", params: ["room_id": 7])
        driver.command(.subscribe(echo42))
        driver.command(.subscribe(lobby))
        let toEcho42 = #"{"identifier":\#(quoted(echo42ID)),"message":1}"#
        let toLobby = #"{"identifier":"{\"channel\":\"EchoChannel\",\"room_id\":7}","message":2}"#
        let routed = [toEcho42, toEcho42, toLobby, toEcho42].flatMap { driver.receive($0).delivered.map(\.channel) }
        #expect(routed == [echo42, echo42, lobby, echo42])
        driver.command(.unsubscribe(echo42))
        #expect(driver.receive(toEcho42).delivered.isEmpty)
        #expect(driver.receive(toLobby).delivered.map(\.channel) == [lobby])
        _ = driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1000, reason: "")))
        driver.connected()
        #expect(driver.receive(toLobby).delivered.isEmpty)
    }

    @Test("broadcasts are delivered while the subscription is pending, with any JSON message and its raw text")
    func pendingBroadcasts() {
        var driver = MachineDriver()
        driver.connected()
        driver.command(.subscribe(echo42))
        let messages = [#"{"b": 2, "a":[1,2]}"#, #""plain""#, "12.5", "[true,null]", "null", "false"]
        for message in messages {
            let events = driver.receive(#"{"identifier":\#(quoted(echo42ID)),"message":\#(message)}"#).delivered
            #expect(events.count == 1)
            #expect(events.first?.name == "message")
            #expect(events.first?.channel == echo42)
            #expect(events.first?.rawData == message)
            #expect(events.first?.data == (try? JSONValue.parse(message)))
        }
        // Still pending: no confirm came, so nothing was marked subscribed.
        #expect(driver.fire(guarantorEcho42).sentTexts == [subscribeEcho42])
    }

    /// The events delivered for one broadcast of `message` (JSON text) on echo42; `payloadsRead` is the
    /// engine's hint that handlers read payloads (the message is then parsed with the frame).
    private static func broadcastEvents(_ message: String, keys: [String] = ActionCableDialect.defaultEventNameKeys,
                                        payloadsRead: Bool = false) -> [RealtimeEvent] {
        var driver = MachineDriver(eventNameKeys: keys)
        driver.machine.payloadsAreRead(payloadsRead)
        driver.connected()
        driver.command(.subscribe(echo42))
        return driver.receive(#"{"identifier":\#(quoted(echo42ID)),"message":\#(message)}"#).delivered
    }

    @Test("a broadcast is named by its event, type or action member, in that order, else \"message\"",
          arguments: [
              (#"{"event":"order-updated","id":7}"#, "order-updated"),
              (#"{"type":"typing"}"#, "typing"),
              (#"{"action":"speak","from":"alice"}"#, "speak"),
              (#"{"action":"a","type":"t","event":"e"}"#, "e"),
              (#"{"action":"a","type":"t"}"#, "t"),
              (#"{"event":1,"type":null,"action":"speak"}"#, "speak"),   // only string members name
              (#"{"event":"","action":"speak"}"#, "speak"),              // an empty name is no name
              (#"{"event":{"name":"x"}}"#, "message"),
              (#"{"data":{"event":"nested"}}"#, "message"),             // nested members do not count
              (#"{"text":"hi"}"#, "message"),
              (#"{"event":"a","event":"b"}"#, "b"),                      // a repeated name: the last one, as in data
              (#"{"event":"a","event":1,"type":"t"}"#, "t"),
              (#"{"\u0065vent":"escaped"}"#, "escaped"),                 // names are compared decoded
              (#"{"data":{"event":"n","x":[{"type":"m"}]},"type":"t"}"#, "t"),
              (#"{"event":"caf\u00e9 \"ok\""}"#, "café \"ok\""),
              (#""order-updated""#, "message"),                         // a string broadcast is not a name
              (#"[{"event":"x"}]"#, "message"),
              ("42", "message"),
              ("null", "message"),
          ])
    func eventNameFromMessage(message: String, name: String) throws {
        // The same whether the message is left as text (picked) or parsed with the frame (read).
        for payloadsRead in [false, true] {
            let events = Self.broadcastEvents(message, payloadsRead: payloadsRead)
            #expect(events.map(\.name) == [name])
            #expect(events.first?.isPayloadParsed == payloadsRead)
            // The whole broadcast stays the data, name member included, and rawData is the server's text.
            #expect(events.first?.data == (try JSONValue.parse(message)))
            #expect(events.first?.rawData == message)
            #expect(events.first?.channel == echo42)
        }
    }

    @Test("while handlers read payloads, messages are parsed with the frame, but for one probe frame in 256")
    func payloadsReadHint() {
        var driver = MachineDriver()
        driver.connected()
        driver.command(.subscribe(echo42))
        let frame = #"{"identifier":\#(quoted(echo42ID)),"message":{"event":"e","n":1}}"#
        #expect(driver.receive(frame).delivered.map(\.isPayloadParsed) == [false])
        driver.machine.payloadsAreRead(true)
        var parsed = 0
        var deferred = 0
        for _ in 0..<(2 * PayloadParsing.probeInterval) {
            for event in driver.receive(frame).delivered {
                if event.isPayloadParsed { parsed += 1 } else { deferred += 1 }
                #expect(event.name == "e" && event.data == ["event": "e", "n": 1])  // read after the count: reading parses
            }
        }
        #expect(deferred == 2 && parsed == 2 * PayloadParsing.probeInterval - 2)
        driver.machine.payloadsAreRead(false)
        #expect(driver.receive(frame).delivered.map(\.isPayloadParsed) == [false])
    }

    @Test("a broadcast's data is parsed only when read, once, and equals the server's message")
    func lazyMessage() {
        let events = Self.broadcastEvents(#"{"event":"e","n":[1,{"deep":true}]}"#)
        guard let event = events.first else {
            Issue.record("no event")
            return
        }
        #expect(!event.isPayloadParsed)
        #expect(event.name == "e")
        let copy = event
        #expect(copy.data == ["event": "e", "n": [1, ["deep": true]]])
        #expect(event.isPayloadParsed)  // the copies share one parse
        #expect(event.arguments == [event.data])
    }

    @Test("an identifier is recognised whichever way the server escapes it, before and after it is cached", arguments: identifierHashings)
    func identifierSpellings(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        driver.command(.subscribe(echo42))
        let plain = quoted(echo42ID)
        let escaped = #""{\u0022channel\u0022:\u0022EchoChannel\u0022,\u0022room_id\u0022:42}""#
        for identifier in [plain, escaped, plain, escaped] {
            let events = driver.receive(#"{"identifier":\#(identifier),"message":{"n":1}}"#).delivered
            #expect(events.map(\.channel) == [echo42])
        }
        driver.command(.unsubscribe(echo42))
        // Both spellings were seen; with the subscription gone, neither delivers.
        #expect(driver.receive(#"{"identifier":\#(plain),"message":1}"#).delivered.isEmpty)
        #expect(driver.receive(#"{"identifier":\#(escaped),"message":1}"#).delivered.isEmpty)
        // An identifier that is not a string is a malformed broadcast, reported.
        #expect(driver.receive(#"{"identifier":42,"message":1}"#).reported.map(\.code) == [.protocolViolation])
    }

    @Test("Rails' escapes of <, > and & in an identifier: the subscribe carries the literal as written, the echoes confirm, route and reject", arguments: identifierHashings)
    func htmlSafeEscapedIdentifiers(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        let tagged = ChannelID("EchoChannel", params: ["room": "<b>&"])
        let rejected = ChannelID("EchoChannel", params: ["room": "a/b"])
        let sent = driver.command(.subscribe(tagged)).sentTexts + driver.command(.subscribe(rejected)).sentTexts
        #expect(sent == [#"{"command":"subscribe","identifier":"{\"channel\":\"EchoChannel\",\"room\":\"<b>&\"}"}"#,
                         #"{"command":"subscribe","identifier":"{\"channel\":\"EchoChannel\",\"room\":\"a/b\"}"}"#])
        // ActiveSupport writes the echo HTML-safe; other servers escape "/".
        let railsEcho = #""{\"channel\":\"EchoChannel\",\"room\":\"\u003cb\u003e\u0026\"}""#
        let slashEcho = #""{\"channel\":\"EchoChannel\",\"room\":\"a\/b\"}""#
        #expect(driver.receive(#"{"identifier":\#(railsEcho),"type":"confirm_subscription"}"#).subscribed == [tagged])
        for _ in 0..<2 {  // the second frame is routed by the remembered text
            let events = driver.receive(#"{"identifier":\#(railsEcho),"message":{"n":1}}"#).delivered
            #expect(events.map(\.channel) == [tagged])
        }
        let failures = driver.receive(#"{"identifier":\#(slashEcho),"type":"reject_subscription"}"#).failures
        #expect(failures.map(\.0) == [rejected])
        #expect(driver.command(.unsubscribe(tagged)).sentTexts
                == [#"{"command":"unsubscribe","identifier":"{\"channel\":\"EchoChannel\",\"room\":\"<b>&\"}"}"#])
        #expect(driver.receive(#"{"identifier":\#(railsEcho),"message":1}"#).delivered.isEmpty)
    }

    @Test("eventNameKeys replaces the default order; [] names every broadcast \"message\"")
    func configuredEventNameKeys() {
        let both = #"{"kind":"k","event":"e","type":"t"}"#
        #expect(Self.broadcastEvents(both, keys: ["kind"]).map(\.name) == ["k"])
        #expect(Self.broadcastEvents(both, keys: ["type", "event"]).map(\.name) == ["t"])
        #expect(Self.broadcastEvents(#"{"event":"e"}"#, keys: ["kind"]).map(\.name) == ["message"])
        #expect(Self.broadcastEvents(both, keys: []).map(\.name) == ["message"])
        #expect(Self.broadcastEvents(both, keys: []).first?.data == ["kind": "k", "event": "e", "type": "t"])
    }

    @Test("the dialect's options reach the machine: default keys, and keys set on either constructor")
    func eventNameKeysOption() {
        let url = URL(string: "ws://127.0.0.1:3000/cable")!
        #expect(ActionCableDialect(url: url).eventNameKeys == ["event", "type", "action"])
        #expect(ActionCableDialect.actionCable(url: url).eventNameKeys == ActionCableDialect.defaultEventNameKeys)
        for dialect in [ActionCableDialect(url: url, eventNameKeys: ["kind"]),
                        .actionCable(url: url, eventNameKeys: ["kind"])] {
            var machine = dialect.makeMachine()
            var actions: [DialectAction] = []
            machine.connectionOpened(TransportOpenInfo(subprotocol: ActionCableDialect.protocolName), actions: &actions)
            machine.received(.text(#"{"type":"welcome"}"#), actions: &actions)
            machine.handle(.subscribe(echo42), actions: &actions)
            actions = []
            machine.received(.text(#"{"identifier":\#(quoted(echo42ID)),"message":{"kind":"k","event":"e"}}"#),
                             actions: &actions)
            #expect(actions.delivered.map(\.name) == ["k"])
        }
    }

    @Test("liveness: Rails' 3 s beat and 3 s of grace by default; set values replace them; .disabled checks nothing")
    func livenessOption() {
        let url = URL(string: "ws://127.0.0.1:3000/cable")!
        let cases: [(ActionCableDialect, LivenessRule)] = [
            (.actionCable(url: url), .serverPings(interval: .seconds(3), grace: .seconds(3))),
            (.actionCable(url: url, liveness: Liveness(pingTimeout: .seconds(10))),
             .serverPings(interval: .seconds(3), grace: .seconds(10))),
            (ActionCableDialect(url: url, liveness: Liveness(pingInterval: .seconds(5), pingTimeout: .seconds(1))),
             .serverPings(interval: .seconds(5), grace: .seconds(1))),
            (.actionCable(url: url, liveness: .disabled), LivenessRule.none),
            // Zero and negative durations are raised to Liveness.minimumDuration.
            (.actionCable(url: url, liveness: Liveness(pingInterval: .zero, pingTimeout: .seconds(-2))),
             .serverPings(interval: .milliseconds(100), grace: .milliseconds(100))),
        ]
        for (dialect, rule) in cases {
            var machine = dialect.makeMachine()
            var actions: [DialectAction] = []
            machine.connectionOpened(TransportOpenInfo(subprotocol: ActionCableDialect.protocolName), actions: &actions)
            machine.received(.text(#"{"type":"welcome"}"#), actions: &actions)
            #expect(actions.livenessRules == [rule])
        }
    }

    @Test("a message key spelled with escapes still delivers, with rawData as the server wrote it")
    func escapedMessageKey() {
        var driver = MachineDriver()
        driver.connected()
        driver.command(.subscribe(echo42))
        let events = driver.receive(#"{"identifier":\#(quoted(echo42ID)),"mess\u0061ge":{"b":1, "a":2}}"#).delivered
        #expect(events.first?.data == ["a": 2, "b": 1])
        #expect(events.first?.rawData == #"{"b":1, "a":2}"#)
    }

    @Test("broadcasts for identifiers the session does not hold are dropped", arguments: identifierHashings)
    func unknownBroadcast(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        let actions = driver.receive(#"{"identifier":\#(quoted(echo42ID)),"message":1}"#)
        #expect(actions.delivered.isEmpty)
        #expect(actions.reported.isEmpty)
    }

    @Test("reject_subscription fails the channel with .subscriptionRejected and never retries", arguments: identifierHashings)
    func reject(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        let reject = ChannelID("RejectChannel")
        driver.command(.subscribe(reject))
        let actions = driver.receive(#"{"identifier":"{\"channel\":\"RejectChannel\"}","type":"reject_subscription"}"#)
        #expect(actions.failures.map(\.0) == [reject])
        #expect(actions.failures.first?.1.code == .subscriptionRejected)
        #expect(actions.failures.first?.1.context.channel == reject)
        #expect(actions.sentTexts.isEmpty)
        #expect(driver.fire(guarantorEcho42).sentTexts.isEmpty)
    }

    @Test("the guarantor resends subscribe every interval and gives up with .timedOut at the cap", arguments: identifierHashings)
    func guarantor(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(guarantor: .init(interval: .milliseconds(800), maximumAttempts: 3), identifierHashing: hashing)
        driver.connected()
        #expect(driver.command(.subscribe(echo42)).sentTexts == [subscribeEcho42])
        for _ in 0..<2 {
            let retry = driver.fire(guarantorEcho42)
            #expect(retry.sentTexts == [subscribeEcho42])
            #expect(retry.startedTimers == [guarantorEcho42: .milliseconds(800)])
            #expect(retry.failures.isEmpty)
        }
        let last = driver.fire(guarantorEcho42)
        #expect(last.failures.map(\.0) == [echo42])
        #expect(last.failures.first?.1.code == .timedOut)
        #expect(last.sentTexts == [unsubscribeEcho42])
        // A confirm arriving after the timeout does not resurrect it.
        #expect(driver.receive(confirmEcho42).subscribed.isEmpty)
    }

    @Test("one guarantor timer for all channels: a subscribe sent between ticks is resent after a whole interval, in identifier order", arguments: identifierHashings)
    func guarantorSharedClock(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(guarantor: .init(interval: .milliseconds(500), maximumAttempts: 3), identifierHashing: hashing)
        driver.connected()
        let first = driver.command(.subscribe(echo42))
        #expect(first.startedTimers == [guarantorEcho42: .milliseconds(500)])
        let rooms = (1...3).map { ChannelID("RoomChannel", params: ["id": .integer(Int64($0))]) }
        let subscribeRoom = { (id: Int) in
            #"{"command":"subscribe","identifier":"{\"channel\":\"RoomChannel\",\"id\":\#(id)}"}"#
        }
        for room in rooms.reversed() {
            // The timer already runs: no timer per channel.
            #expect(driver.command(.subscribe(room)).startedTimers.isEmpty)
        }
        // First tick: only the subscribe that started the timer has waited a whole interval.
        let tick1 = driver.fire(guarantorEcho42)
        #expect(tick1.sentTexts == [subscribeEcho42])
        #expect(tick1.startedTimers == [guarantorEcho42: .milliseconds(500)])
        // Second tick: every one, sorted by identifier text.
        let tick2 = driver.fire(guarantorEcho42)
        #expect(tick2.sentTexts == [subscribeEcho42] + (1...3).map(subscribeRoom))
        driver.receive(confirmEcho42)
        for id in 1...3 {
            driver.receive(#"{"identifier":"{\"channel\":\"RoomChannel\",\"id\":\#(id)}","type":"confirm_subscription"}"#)
        }
        let quiet = driver.fire(guarantorEcho42)
        #expect(quiet.sentTexts.isEmpty)
        #expect(quiet.startedTimers.isEmpty)
        // A later subscribe starts the timer again, and is due at its first tick.
        let later = ChannelID("RoomChannel", params: ["id": .integer(9)])
        #expect(driver.command(.subscribe(later)).startedTimers == [guarantorEcho42: .milliseconds(500)])
        #expect(driver.fire(guarantorEcho42).sentTexts == [subscribeRoom(9)])
    }

    @Test("a hundred subscribes after a reconnect arm one guarantor timer; a new connection starts it afresh")
    func guarantorOneTimerPerReconnect() {
        var driver = MachineDriver()
        driver.connected()
        let channels = (0..<100).map { ChannelID("RoomChannel", params: ["id": .integer(Int64($0))]) }
        var started: [TimerKey: Duration] = [:]
        for channel in channels { started.merge(driver.command(.subscribe(channel)).startedTimers) { $1 } }
        #expect(started == [guarantorEcho42: .milliseconds(500)])
        _ = driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1006, reason: "")))
        driver.connected()
        started = [:]
        for channel in channels { started.merge(driver.command(.subscribe(channel)).startedTimers) { $1 } }
        #expect(started == [guarantorEcho42: .milliseconds(500)])
        // Only the subscribe that started the timer is sure to have waited a whole interval at the first tick;
        // the others are resent at the second (never before an interval has passed).
        #expect(driver.fire(guarantorEcho42).sentTexts.count == 1)
        #expect(driver.fire(guarantorEcho42).sentTexts.count == 100)
    }

    @Test("unsubscribe then subscribe of the same identifier waits for the settle timer", arguments: identifierHashings)
    func unsubscribeThenSubscribe(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        driver.command(.subscribe(echo42))
        driver.receive(confirmEcho42)
        #expect(driver.fire(guarantorEcho42).startedTimers.isEmpty)  // nothing unanswered: the guarantor stops
        let leave = driver.command(.unsubscribe(echo42))
        #expect(leave.sentTexts == [unsubscribeEcho42])
        #expect(leave.startedTimers == [settleEcho42: .milliseconds(500)])
        #expect(driver.command(.subscribe(echo42)).sentTexts.isEmpty)
        // A late confirm of the old subscription is not taken for the new one.
        #expect(driver.receive(confirmEcho42).subscribed.isEmpty)
        let settled = driver.fire(settleEcho42)
        #expect(settled.sentTexts == [subscribeEcho42])
        #expect(settled.startedTimers == [guarantorEcho42: .milliseconds(500)])
        #expect(driver.receive(confirmEcho42).subscribed == [echo42])
    }

    @Test("leaving while still settling sends nothing; the settle timer then has nothing to send", arguments: identifierHashings)
    func leaveWhileSettling(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        driver.command(.subscribe(echo42))
        driver.command(.unsubscribe(echo42))
        driver.command(.subscribe(echo42))
        #expect(driver.command(.unsubscribe(echo42)).sentTexts.isEmpty)
        #expect(driver.fire(settleEcho42).sentTexts.isEmpty)
        // After settling, a subscribe goes out at once.
        #expect(driver.command(.subscribe(echo42)).sentTexts == [subscribeEcho42])
    }

    @Test("send builds a message command whose data is a JSON string with the action merged in")
    func send() throws {
        var driver = MachineDriver()
        driver.connected()
        let sent = driver.command(.send(OutgoingMessage(channel: echo42, event: "speak",
                                                        arguments: [["text": "hi", "n": 1]]))).sentTexts
        #expect(sent == [#"{"command":"message","data":"{\"action\":\"speak\",\"n\":1,\"text\":\"hi\"}","identifier":\#(quoted(echo42ID))}"#])
        let frame = try JSONValue.parse(sent[0])
        #expect(try JSONValue.parse(frame["data"]?.stringValue ?? "") == ["action": "speak", "n": 1, "text": "hi"])
        let bare = driver.command(.send(OutgoingMessage(channel: echo42, event: "kick_me", arguments: []))).sentTexts
        #expect(bare == [#"{"command":"message","data":"{\"action\":\"kick_me\"}","identifier":\#(quoted(echo42ID))}"#])
        let receive = driver.command(.send(OutgoingMessage(channel: echo42, event: "", arguments: [["x": 1]]))).sentTexts
        #expect(receive == [#"{"command":"message","data":"{\"x\":1}","identifier":\#(quoted(echo42ID))}"#])
        // A message the dialect's validate would refuse is reported instead of sent.
        let refused = driver.command(.send(OutgoingMessage(channel: echo42, event: "speak", arguments: ["hi"])))
        #expect(refused.sentTexts.isEmpty)
        #expect(refused.refusedSends.map(\.code) == [.invalidArgument])
    }

    @Test("requests and custom commands resolve with .unsupported")
    func unsupportedCommands() {
        var driver = MachineDriver()
        driver.connected()
        let actions = driver.command(.request(OutgoingMessage(channel: echo42, event: "x", arguments: []), RequestID(1)))
            + driver.command(.custom(name: "signin", payload: .null, RequestID(2)))
        var resolved: [RequestID: RealtimeError.Code] = [:]
        for case .resolveRequest(let id, .failure(let error)) in actions { resolved[id] = error.code }
        #expect(resolved == [RequestID(1): .unsupported, RequestID(2): .unsupported])
        #expect(actions.sentTexts.isEmpty)
    }

    @Test("an invalid channel fails at subscribe with .invalidArgument and sends nothing")
    func invalidChannel() {
        var driver = MachineDriver()
        driver.connected()
        let actions = driver.command(.subscribe(ChannelID("Echo", params: ["channel": "x"])))
        #expect(actions.failures.first?.1.code == .invalidArgument)
        #expect(actions.sentTexts.isEmpty)
    }

    @Test("frames that are not JSON objects are reported and ignored; unknown types are only logged")
    func malformed() {
        var driver = MachineDriver()
        driver.connected()
        #expect(driver.receive("{not json").reported.map(\.code) == [.invalidJSON])
        #expect(driver.receive("[1,2]").reported.map(\.code) == [.protocolViolation])
        #expect(driver.receive(#"{"foo":1}"#).reported.map(\.code) == [.protocolViolation])
        var binary: [DialectAction] = []
        driver.machine.received(.binary(Data([1, 2, 3])), actions: &binary)
        #expect(binary.reported.map(\.code) == [.protocolViolation])
        let unknown = driver.receive(#"{"type":"hibernate_subscription","identifier":"x"}"#)
        #expect(unknown.reported.isEmpty)
        #expect(unknown.delivered.isEmpty)
        #expect(unknown.closes.isEmpty)
    }

    @Test("disconnect frames decide how the connection ends",
          arguments: [
              (#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#, "terminal:connection-refused"),
              (#"{"type":"disconnect","reason":"invalid_request"}"#, "terminal:connection-refused"),
              (#"{"type":"disconnect","reason":"remote","reconnect":false}"#, "terminal:connection-closed"),
              (#"{"type":"disconnect","reason":"some_future_reason","reconnect":false}"#, "terminal:connection-closed"),
              (#"{"type":"disconnect","reason":"server_restart","reconnect":true}"#, "backoff:0.5"),
              (#"{"type":"disconnect","reason":"remote","reconnect":true}"#, "backoff:0.0"),
              (#"{"type":"disconnect","reason":"some_future_reason","reconnect":true}"#, "backoff:0.0"),
              (#"{"type":"disconnect","reason":"some_future_reason"}"#, "backoff:0.0"),
              (#"{"type":"disconnect"}"#, "backoff:0.0"),
          ])
    func disconnectFrames(frame: String, expected: String) {
        var driver = MachineDriver()
        driver.connected()
        #expect(driver.receive(frame).closes == [1000])
        // The server's own close 1000 follows; the frame's decision wins over the bare close.
        let end = driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1000, reason: "")))
        #expect(describe(end) == expected)
        if case .terminal(let error) = end {
            #expect(error.context.serverPayload == (try? JSONValue.parse(frame)))
        }
        // The next connection starts clean.
        #expect(describe(driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1000, reason: "")))) == "backoff:0.0")
    }

    @Test("connection ends without a frame",
          arguments: [
              (TransportClosure(.closedByPeer(code: 1000, reason: "")), "backoff:0.0"),
              (TransportClosure(.closedByPeer(code: nil, reason: "")), "backoff:0.0"),
              (TransportClosure(.livenessTimeout), "backoff:0.0"),
              (TransportClosure(.failed(RealtimeError(.transportFailed, "reset", context: .init(closeCode: 1006)))), "backoff:0.0"),
              (TransportClosure(.failed(RealtimeError(.handshakeRejected, "x", context: .init(httpStatus: 404))), duringOpen: true),
               "terminal:handshake-rejected"),
              (TransportClosure(.failed(RealtimeError(.handshakeRejected, "x", context: .init(httpStatus: 403))), duringOpen: true),
               "terminal:handshake-rejected"),
              (TransportClosure(.failed(RealtimeError(.handshakeRejected, "x", context: .init(httpStatus: 429))), duringOpen: true),
               "backoff:0.0"),
              (TransportClosure(.failed(RealtimeError(.handshakeRejected, "x", context: .init(httpStatus: 503))), duringOpen: true),
               "backoff:0.0"),
              (TransportClosure(.failed(RealtimeError(.invalidArgument, "bad URL")), duringOpen: true), "terminal:invalid-argument"),
          ])
    func endsWithoutFrame(closure: TransportClosure, expected: String) {
        var driver = MachineDriver()
        #expect(describe(driver.machine.connectionEnded(closure)) == expected)
    }

    @Test("HTTP 404 on the upgrade explains the Origin check")
    func notFoundExplained() {
        var driver = MachineDriver()
        let error = RealtimeError(.handshakeRejected, "wrong path (or origin refused): HTTP 404 Not Found for /cable",
                                  context: .init(httpStatus: 404))
        guard case .terminal(let explained) = driver.machine.connectionEnded(TransportClosure(.failed(error), duringOpen: true)) else {
            Issue.record("404 must be terminal")
            return
        }
        #expect(explained.code == .handshakeRejected)
        #expect(explained.context.httpStatus == 404)
        #expect(explained.message == "Action Cable refused the upgrade of /cable with HTTP 404: either the Origin "
                + "http://127.0.0.1:3000 is not in the server's allowed_request_origins, or /cable is not where Action "
                + "Cable is mounted")
    }

    @Test("a server that does not select actioncable-v1-json is closed and fails the session",
          arguments: ["actioncable-unsupported", nil, "actioncable-v2-json"] as [String?])
    func subprotocolChecked(selected: String?) {
        var driver = MachineDriver()
        let actions = driver.open(subprotocol: selected)
        #expect(actions.closes == [1000])
        guard case .terminal(let error) = driver.machine.connectionEnded(
            TransportClosure(.closedLocally(code: 1000, reason: "unsupported protocol"))) else {
            Issue.record("an unsupported protocol must be terminal")
            return
        }
        #expect(error.code == .handshakeInvalid)
        #expect(error.message.contains("actioncable-v1-json"))
    }

    @Test("a new connection forgets the old one's subscriptions and settling identifiers", arguments: identifierHashings)
    func resetOnEnd(hashing: ActionCableSubscriptionTable.Hashing) {
        var driver = MachineDriver(identifierHashing: hashing)
        driver.connected()
        driver.command(.subscribe(echo42))
        driver.receive(confirmEcho42)
        driver.command(.unsubscribe(echo42))
        _ = driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1000, reason: "")))
        driver.connected()
        #expect(driver.receive(#"{"identifier":\#(quoted(echo42ID)),"message":1}"#).delivered.isEmpty)
        // Not settling any more on the new connection: subscribe goes out at once.
        #expect(driver.command(.subscribe(echo42)).sentTexts == [subscribeEcho42])
    }
}

/// A comparable summary of a ``ConnectionEnd``.
func describe(_ end: ConnectionEnd) -> String {
    switch end {
    case .terminal(let error): return "terminal:\(error.code)"
    case .reconnectImmediately: return "immediately"
    case .backoff(let minimum):
        let seconds = Double(minimum.components.seconds) + Double(minimum.components.attoseconds) / 1e18
        return "backoff:\(seconds)"
    }
}
