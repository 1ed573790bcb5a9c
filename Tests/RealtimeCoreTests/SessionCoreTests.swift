@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing

/// The core driven directly, input by input: its callers are ids, so what it answers is plain values.
@Suite("SessionCore")
struct SessionCoreTests {
    private let room: ChannelID = "room"
    private let cancelled = RealtimeError(.cancelled, "the task was cancelled")

    private static func makeCore() -> SessionCore {
        let dialect = LineDialect()
        return SessionCore(dialect: dialect, machine: dialect.makeMachine(), policy: dialect.reconnectPolicy,
                           options: SessionOptions(randomSource: .seeded(1)), defaultChannels: [])
    }

    private func message(_ event: String = "say") -> OutgoingMessage {
        OutgoingMessage(channel: room, event: event, arguments: [])
    }

    /// A core on connection 1, its handshake done, with `room` subscribed when `subscribed`.
    private static func connectedCore(subscribed: Bool, room: ChannelID = "room") -> SessionCore {
        var core = makeCore()
        _ = core.run(.subscribe(room), .connect(timeout: nil, operation: nil),
                     .transport(connection: 1, .opened(TransportOpenInfo())),
                     .transport(connection: 1, .received([.text(#"{"t":"welcome","id":"c1"}"#)])))
        if subscribed {
            _ = core.run(.transport(connection: 1, .received([.text(#"{"t":"subok","ch":"\#(room.name)"}"#)])))
        }
        return core
    }

    @Test("a send that cannot even be buffered is answered with its failure at once")
    func refusedSend() {
        var core = Self.makeCore()
        let effects = core.run(.send(message(), operation: OperationID(1)))
        #expect(effects.answers.map(\.operation) == [OperationID(1)])
        #expect(effects.failureCodes == [.channelUnavailable])
    }

    @Test("a cancellation that overtakes its call answers the call when it arrives, which then never starts")
    func earlyCancellation() {
        var core = Self.makeCore()
        let onCancel = core.run(.subscribe(room), .cancel(operation: OperationID(7)))
        #expect(onCancel.answers.isEmpty)
        let onSend = core.run(.send(message(), operation: OperationID(7)))
        #expect(onSend.answers == [.failed(OperationID(7), cancelled)])
        #expect(core.bufferedSendCount == 0)
        let next = core.run(.send(message(), operation: OperationID(8)))
        #expect(next.answers.isEmpty)
        #expect(core.bufferedSendCount == 1)
    }

    @Test("connect() callers wait by id: a deadline answers its own caller, the handshake the others")
    func connectWaiters() throws {
        var core = Self.makeCore()
        let first = core.run(.connect(timeout: .seconds(5), operation: OperationID(1)))
        let second = core.run(.connect(timeout: .seconds(10), operation: OperationID(2)))
        let deadline = try #require(first.serial(of: .connectDeadline(OperationID(1))))
        #expect(second.serial(of: .connectDeadline(OperationID(2))) != nil)

        let timedOut = core.run(.timer(.connectDeadline(OperationID(1)), serial: deadline))
        #expect(timedOut.answers.map(\.operation) == [OperationID(1)])
        #expect(timedOut.failureCodes == [.connectTimedOut])

        let welcomed = core.run(.transport(connection: 1, .opened(TransportOpenInfo())),
                                .transport(connection: 1, .received([.text(#"{"t":"welcome"}"#)])))
        #expect(welcomed.answers == [.done(OperationID(2))])
        #expect(core.state == .connected)
        let again = core.run(.timer(.connectDeadline(OperationID(1)), serial: deadline))
        #expect(again.answers.isEmpty)
    }

    @Test("cancelling the last waiting connect() stops connecting")
    func cancelConnect() {
        var core = Self.makeCore()
        _ = core.run(.connect(timeout: nil, operation: OperationID(1)))
        let effects = core.run(.cancel(operation: OperationID(1)))
        #expect(effects.answers == [.failed(OperationID(1), cancelled)])
        #expect(core.state == .disconnected)
    }

    @Test("a request is answered with the dialect's reply, a subscription wait with the subscription")
    func replies() {
        var core = Self.connectedCore(subscribed: true)
        let waited = core.run(.awaitSubscription(room, operation: OperationID(3)))
        #expect(waited.answers == [.subscribed(OperationID(3), recovered: nil)])
        let sent = core.run(.request(message("ask"), timeout: .seconds(5), operation: OperationID(4)))
        #expect(sent.answers.isEmpty)
        let acked = core.run(.transport(connection: 1, .received([.text(#"{"t":"ack","id":1,"args":["ok"]}"#)])))
        #expect(acked.answers == [.replied(OperationID(4), ["ok"])])
    }

    @Test("a buffered request's deadline fails it; a late answer then finds nothing")
    func requestDeadline() throws {
        var core = Self.connectedCore(subscribed: false)
        let buffered = core.run(.request(message("ask"), timeout: .seconds(5), operation: OperationID(4)))
        let deadline = try #require(buffered.serial(of: .requestDeadline(RequestID(OperationID(4)))))
        #expect(core.bufferedSendCount == 1)
        let timedOut = core.run(.timer(.requestDeadline(RequestID(OperationID(4))), serial: deadline))
        #expect(timedOut.answers.map(\.operation) == [OperationID(4)])
        #expect(timedOut.failureCodes == [.timedOut])
        #expect(core.bufferedSendCount == 0)
    }

    @Test("disconnecting fails what waits for the channel, buffered work first, each by its id")
    func disconnectFailsWaiting() {
        var core = Self.connectedCore(subscribed: false)
        let waiting = core.run(.send(message(), operation: OperationID(5)),
                               .awaitSubscription(room, operation: OperationID(6)),
                               .request(message("ask"), timeout: .seconds(5), operation: OperationID(7)))
        #expect(waiting.answers.isEmpty)
        let effects = core.run(.disconnect())
        #expect(effects.answers.map(\.operation) == [OperationID(5), OperationID(7), OperationID(6)])
        #expect(effects.failureCodes == [.disconnected, .disconnected, .disconnected])
    }

    @Test("a lost connection fails the requests written on it")
    func droppedRequests() {
        var core = Self.connectedCore(subscribed: true)
        _ = core.run(.request(message("ask"), timeout: .seconds(5), operation: OperationID(4)))
        let closure = TransportClosure(.closedByPeer(code: 1006, reason: ""))
        let effects = core.run(.transport(connection: 1, .closed(closure)))
        #expect(effects.answers.map(\.operation) == [OperationID(4)])
        #expect(effects.failureCodes == [.connectionClosed])
    }

    @Test("a timer that fired is cancelled too, so the engine lets go of its handle; a stale one is not")
    func firedTimerIsReleased() throws {
        var core = Self.makeCore()
        let scheduled = core.run(.connect(timeout: .seconds(5), operation: OperationID(1)))
        let deadline = try #require(scheduled.serial(of: .connectDeadline(OperationID(1))))
        let fired = core.run(.timer(.connectDeadline(OperationID(1)), serial: deadline))
        #expect(fired.cancelled == [.connectDeadline(OperationID(1))])
        let stale = core.run(.timer(.connectDeadline(OperationID(1)), serial: deadline))
        #expect(stale.cancelled.isEmpty)
    }
}

extension SessionCore {
    /// Handles `inputs` in order and returns the effects.
    fileprivate mutating func run(_ inputs: EngineInput...) -> [EngineEffect] {
        var effects: [EngineEffect] = []
        for input in inputs { handle(input, effects: &effects) }
        return effects
    }
}

extension [EngineEffect] {
    fileprivate var answers: [OperationAnswer] {
        compactMap { if case .answer(let answer) = $0 { answer } else { nil } }
    }

    fileprivate var failureCodes: [RealtimeError.Code] {
        answers.compactMap { if case .failed(_, let error) = $0 { error.code } else { nil } }
    }

    fileprivate var cancelled: [EngineTimer] {
        compactMap { if case .cancel(let timer) = $0 { timer } else { nil } }
    }

    /// The serial `timer` was last scheduled with.
    fileprivate func serial(of timer: EngineTimer) -> UInt64? {
        compactMap { effect -> UInt64? in
            if case .schedule(timer, let serial, _) = effect { serial } else { nil }
        }.last
    }
}
