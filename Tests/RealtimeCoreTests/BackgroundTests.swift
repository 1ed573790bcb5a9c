import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// `applicationDidEnterBackground()` with and without `SessionOptions.backgroundGrace`: when the
/// connection is closed, what waits, and how the foreground brings it back.
@Suite("Background grace and suspension")
struct BackgroundTests {
    private static func harness(grace: Duration?) -> EngineHarness {
        EngineHarness(options: { $0.backgroundGrace = grace }, script: { index in
            EngineHarness.welcome(id: "c\(index)") + [.expect(subRoom, reply: [subOkRoom])]
        })
    }

    @Test("without a grace period nothing is closed in the background, however long")
    func noGraceKeepsTheConnection() async throws {
        let harness = Self.harness(grace: nil)
        try await harness.session.connect()
        harness.session.applicationDidEnterBackground()
        harness.clock.advance(by: .seconds(3600))   // this welcome asks for no liveness checks
        #expect(harness.session.state == .connected)
        #expect(harness.peers[0].phase != .closed)
        #expect(harness.peers.count == 1)
    }

    @Test("after the grace period the connection closes with 1001 and the session waits, suspended, without attempts; the foreground connects, re-joins and sends what waited")
    func graceEndsInSuspension() async throws {
        let harness = Self.harness(grace: .seconds(30))
        let room = harness.session.channel("room")
        let lifecycle = Locked<[ChannelLifecycleEvent.Kind]>([])
        room.onLifecycle { event in lifecycle.withLock { $0.append(event.kind) } }
        try await harness.session.connect()
        try await room.subscribed()
        harness.session.applicationDidEnterBackground()
        harness.clock.advance(by: .milliseconds(29_999))
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .milliseconds(1))
        #expect(harness.session.state == .suspended)
        #expect(harness.peers[0].closeRequest?.code == 1001)
        #expect(harness.session.connectionID == nil)
        #expect(room.state == .pending)
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.peers.count == 1)
        #expect(harness.session.state == .suspended)

        let sending = Task { try await room.send("note", "while suspended") }
        await eventually("the send to be buffered") { harness.session.bufferedSendCount == 1 }
        harness.session.applicationWillEnterForeground()
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
        #expect(harness.session.connectionID == "c1")
        #expect(room.state == .subscribed(recovered: nil))
        try await sending.value
        #expect(texts(harness.peers[1]).last == #"{"args":["while suspended"],"ch":"room","name":"note","t":"send"}"#)
        #expect(harness.stateLog == [.connecting, .connected, .suspended, .connecting, .connected])
        let confirmations = lifecycle.withLock { $0 }.compactMap { kind -> SubscriptionInfo? in
            if case .subscribed(let info) = kind { info } else { nil }
        }
        #expect(confirmations.map(\.isResubscription) == [false, true])
        #expect(confirmations.map(\.gap) == [nil, .seconds(3600)])   // suspended at 30 s, back at 3,630 s
        #expect(harness.errorLog.isEmpty)
    }

    @Test("back in the foreground before the grace ends: nothing is closed later")
    func foregroundCancelsTheGrace() async throws {
        let harness = Self.harness(grace: .seconds(2))
        try await harness.session.connect()
        harness.session.applicationDidEnterBackground()
        harness.clock.advance(by: .seconds(1))
        harness.session.applicationWillEnterForeground()
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.session.state == .connected)
        #expect(harness.peers[0].phase != .closed)
        #expect(harness.peers.count == 1)
    }

    @Test("reconnecting in the background stops at the grace's end: no attempts until the foreground")
    func reconnectingStopsInTheBackground() async throws {
        let harness = Self.harness(grace: .zero)
        try await harness.session.connect()
        harness.peers[0].drop()
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped))
        harness.session.applicationDidEnterBackground()     // a zero grace suspends at once
        #expect(harness.session.state == .suspended)
        harness.clock.advance(by: .seconds(600))
        #expect(harness.peers.count == 1)
        harness.session.applicationWillEnterForeground()
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
    }

    @Test("suspended: path reports and reconnectNow do not connect; connect() does, and keeps its connection until the next background report; a lost path makes the foreground wait for it")
    func suspendedIgnoresEverythingButTheApp() async throws {
        let harness = Self.harness(grace: .seconds(5))
        try await harness.session.connect()
        harness.session.applicationDidEnterBackground()
        harness.clock.advance(by: .seconds(5))
        #expect(harness.session.state == .suspended)
        harness.session.networkPathChanged(isAvailable: false)
        harness.session.networkPathChanged(isAvailable: true)
        harness.session.reconnectNow()
        #expect(harness.session.state == .suspended)
        #expect(harness.peers.count == 1)

        try await harness.session.connect()                 // the app asks for a connection in the background
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .seconds(60))             // and keeps it: the grace starts with the report
        #expect(harness.session.state == .connected)
        harness.session.applicationDidEnterBackground()
        harness.clock.advance(by: .seconds(5))
        #expect(harness.session.state == .suspended)
        #expect(harness.peers[1].closeRequest?.code == 1001)

        harness.session.networkPathChanged(isAvailable: false)
        harness.session.applicationWillEnterForeground()
        #expect(harness.session.state == .waitingForNetwork)
        harness.session.networkPathChanged(isAvailable: true)
        #expect(harness.session.state == .connected)
        #expect(harness.peers.count == 3)
    }

    @Test("a connect() caller still waiting when the session suspends times out saying so; the foreground connects")
    func connectWaiterWhileSuspended() async throws {
        let harness = EngineHarness(options: { $0.backgroundGrace = .zero }, script: { index in
            index == 0 ? [.drop] : EngineHarness.welcome(id: "c\(index)")
        })
        let connecting = Task { try await harness.session.connect(timeout: .seconds(5)) }
        await eventually("the first attempt to fail") {
            if case .reconnecting = harness.session.state { true } else { false }
        }
        harness.session.applicationDidEnterBackground()
        #expect(harness.session.state == .suspended)
        harness.clock.advance(by: .seconds(5))
        let error = await #expect(throws: RealtimeError.self) { try await connecting.value }
        #expect(error?.code == .connectTimedOut)
        #expect(error?.message == "not connected in time: suspended in the background after 1 failed attempt")
        #expect(harness.peers.count == 1)
        harness.session.applicationWillEnterForeground()
        #expect(harness.session.state == .connected)
    }

    @Test("disconnect() while suspended is final; a background report does nothing to a disconnected session")
    func disconnectWhileSuspended() async throws {
        let harness = Self.harness(grace: .zero)
        try await harness.session.connect()
        harness.session.applicationDidEnterBackground()
        #expect(harness.session.state == .suspended)
        let sending = Task { try await harness.session.channel("room").send("note", "never") }
        await eventually("the send to be buffered") { harness.session.bufferedSendCount == 1 }
        harness.session.disconnect()
        let error = await #expect(throws: RealtimeError.self) { try await sending.value }
        #expect(error?.code == .disconnected)
        harness.session.applicationDidEnterBackground()
        harness.session.applicationWillEnterForeground()
        #expect(harness.session.state == .disconnected)
        #expect(harness.peers.count == 1)
    }
}
