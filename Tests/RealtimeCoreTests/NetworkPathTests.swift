import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// The app's network-path and foreground reports: what the session drops, waits for and retries.
@Suite("Network path and foreground")
struct NetworkPathTests {
    @Test("losing the path drops the connection and spends no attempts; its return connects and re-joins at once")
    func pathLostAndBack() async throws {
        let harness = EngineHarness(script: { index in
            EngineHarness.welcome(id: "c\(index)") + [.expect(subRoom, reply: [subOkRoom])]
        })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        harness.session.networkPathChanged(isAvailable: false)
        #expect(harness.session.state == .waitingForNetwork)
        #expect(harness.peers[0].phase == .closed)
        #expect(harness.peers[0].closeRequest?.code == 1006)
        #expect(room.state == .pending)
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.peers.count == 1)
        #expect(harness.session.state == .waitingForNetwork)

        let sending = Task { try await room.send("note", "while offline") }
        await eventually("the send to be buffered") { harness.session.bufferedSendCount == 1 }
        harness.session.networkPathChanged(isAvailable: true)
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
        #expect(harness.session.connectionID == "c1")
        #expect(room.state == .subscribed(recovered: nil))
        try await sending.value
        #expect(texts(harness.peers[1]).last == #"{"args":["while offline"],"ch":"room","name":"note","t":"send"}"#)
        #expect(harness.stateLog == [.connecting, .connected, .waitingForNetwork, .connecting, .connected])
    }

    @Test("a path reported while reconnecting skips the delay and starts a fresh backoff")
    func pathSkipsBackoff() async throws {
        let harness = EngineHarness(script: { index in
            switch index {
            case 0, 3: return EngineHarness.welcome()
            default: return [.drop]
            }
        })
        try await harness.session.connect()
        harness.peers[0].drop()
        harness.clock.advance(by: .seconds(1))              // attempt 1 fails
        #expect(harness.session.state == .reconnecting(attempt: 2, delay: .seconds(2), reason: dropped))
        harness.session.networkPathChanged(isAvailable: true)   // attempt now; it fails too
        #expect(harness.peers.count == 3)
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped))
        harness.session.reconnectNow()
        #expect(harness.peers.count == 4)
        #expect(harness.session.state == .connected)
    }

    @Test("connect() while the path is down waits for it instead of failing or spending attempts")
    func connectWhileOffline() async throws {
        let harness = EngineHarness(options: { $0.connectCallTimeout = nil })
        harness.session.networkPathChanged(isAvailable: false)
        let connecting = Task { try await harness.session.connect() }
        await eventually("waiting for the network") { harness.session.state == .waitingForNetwork }
        harness.clock.advance(by: .seconds(600))
        #expect(harness.peers.isEmpty)
        harness.session.networkPathChanged(isAvailable: true)
        try await connecting.value
        #expect(harness.session.state == .connected)
        #expect(harness.peers.count == 1)
    }

    @Test("a path lost mid-attempt ends the attempt; a stale answer for it is ignored")
    func pathLostWhileConnecting() async throws {
        let harness = EngineHarness(script: { index in index == 0 ? nil : EngineHarness.welcome() })
        harness.session.start()
        #expect(harness.session.state == .connecting)
        harness.session.networkPathChanged(isAvailable: false)
        #expect(harness.session.state == .waitingForNetwork)
        harness.peers[0].send(text: #"{"t":"welcome","id":"stale"}"#)
        #expect(harness.session.state == .waitingForNetwork)
        harness.clock.advance(by: .seconds(60))             // no handshake timeout, no retry
        #expect(harness.peers.count == 1)
        harness.session.networkPathChanged(isAvailable: true)
        #expect(harness.session.state == .connected)
        #expect(harness.session.connectionID == "conn-1")
    }

    @Test("disconnected and failed sessions ignore path reports; reconnectNow does nothing when connected")
    func ignoredReports() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        harness.session.reconnectNow()
        #expect(harness.peers.count == 1)
        #expect(harness.session.state == .connected)
        harness.session.disconnect()
        harness.session.networkPathChanged(isAvailable: false)
        harness.session.networkPathChanged(isAvailable: true)
        harness.session.reconnectNow()
        #expect(harness.session.state == .disconnected)
        #expect(harness.peers.count == 1)
    }

    @Test("foreground with client pings: the ping goes out at once, one at a time, and a dead link is dropped")
    func foregroundProbe() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome(extra: #","idle":10"#) })
        try await harness.session.connect()
        harness.clock.advance(by: .seconds(3))
        #expect(!texts(harness.peers[0]).contains(#"{"t":"ping"}"#))
        harness.session.applicationWillEnterForeground()
        harness.session.applicationWillEnterForeground()
        #expect(texts(harness.peers[0]).filter { $0 == #"{"t":"ping"}"# }.count == 1)
        harness.peers[0].send(text: #"{"t":"ev","name":"pong"}"#)
        harness.clock.advance(by: .seconds(2))
        #expect(harness.session.state == .connected)

        harness.session.applicationWillEnterForeground()     // this time nobody answers
        #expect(texts(harness.peers[0]).filter { $0 == #"{"t":"ping"}"# }.count == 2)
        harness.clock.advance(by: .milliseconds(1_999))
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .milliseconds(1))
        guard case .reconnecting = harness.session.state else {
            Issue.record("expected reconnecting, got \(harness.session.state)")
            return
        }
        #expect(harness.peers[0].closeRequest?.code == 1006)
    }

    @Test("a path change while connected probes the link the same way")
    func pathChangeProbes() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome(extra: #","idle":10"#) })
        try await harness.session.connect()
        harness.session.networkPathChanged(isAvailable: true)
        #expect(texts(harness.peers[0]).last == #"{"t":"ping"}"#)
        #expect(harness.session.state == .connected)
    }

    @Test("foreground while reconnecting tries at once")
    func foregroundWhileReconnecting() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        harness.peers[0].drop()
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped))
        harness.session.applicationWillEnterForeground()
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
    }
}
