@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// The session's observer streams hold at most 1,024 elements a consumer has not taken, and keep the end
/// their documentation names.
@Suite("Observer streams are bounded")
struct ObserverStreamTests {
    @Test("errors keeps the oldest 1,024 errors and drops later ones until the consumer catches up")
    func errorsKeepOldest() async throws {
        let harness = EngineHarness()
        var errors = harness.session.errors.makeAsyncIterator()
        try await harness.session.connect()
        // LineDialect reports every frame that is not JSON as "not JSON", every unknown one as "unknown frame".
        for _ in 0..<(observerStreamLimit + 100) { harness.peers[0].send(text: "garbage") }
        harness.peers[0].send(text: #"{"t":"mystery"}"#)
        for _ in 0..<observerStreamLimit { #expect(await errors.next()?.message == "not JSON") }
        // The hundred "not JSON" past the bound and the "unknown frame" after them were dropped.
        harness.peers[0].send(text: #"{"t":"mystery"}"#)
        #expect(await errors.next()?.message == "unknown frame")
        #expect(harness.errorLog.count == observerStreamLimit + 102)
    }

    @Test("states keeps the newest 1,024 states, so the latest always arrives")
    func statesKeepNewest() async throws {
        let harness = EngineHarness()
        let states = harness.session.states
        // Each round is connecting, connected, disconnected: 1,200 states after the first, initialized.
        for _ in 0..<400 {
            try await harness.session.connect()
            harness.session.disconnect()
        }
        var seen: [ConnectionState] = []
        for await state in states {
            seen.append(state)
            if seen.count == observerStreamLimit { break }
        }
        #expect(!seen.contains(.initialized))
        #expect(seen.last == .disconnected)
        #expect(harness.stateLog.count == 1_200)
        #expect(Array(seen) == Array(harness.stateLog.suffix(observerStreamLimit)))
    }
}
