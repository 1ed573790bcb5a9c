import Foundation
import RealtimeCore
import RealtimeTesting
import Testing

/// `SessionOptions` is the one place for the connect timeout and the reconnect policy, whatever the dialect.
@Suite("Session options shared by every dialect")
struct SharedOptionsTests {
    @Test("SessionOptions.connectTimeout reaches the transport's request, built at once or deferred",
          arguments: [false, true])
    func connectTimeoutReachesTheRequest(deferred: Bool) async throws {
        var dialect = LineDialect()
        dialect.deferRequest = deferred
        // LineDialect leaves ConnectionRequest's own default (20 s): the session must replace it.
        let harness = EngineHarness(dialect: dialect, options: { $0.connectTimeout = .seconds(7) })
        try await harness.session.connect()
        #expect(harness.peers[0].request.connectTimeout == .seconds(7))
        #expect(harness.peers[0].request.headers == [HTTPHeader("X-Attempt", "0")])
    }

    @Test("without SessionOptions.reconnectPolicy the dialect's recommendation applies; with one, it wins")
    func reconnectPolicyPrecedence() async throws {
        let recommended = ReconnectPolicy(initialDelay: .seconds(3), multiplier: 2, maximumDelay: .seconds(8), jitter: .none)
        let chosen = ReconnectPolicy(initialDelay: .seconds(5), multiplier: 2, maximumDelay: .seconds(8), jitter: .none)
        for (options, delay) in [(nil, Duration.seconds(3)), (chosen, .seconds(5))] as [(ReconnectPolicy?, Duration)] {
            let harness = EngineHarness(dialect: LineDialect(policy: recommended),
                                        options: { $0.reconnectPolicy = options },
                                        script: { index in index == 0 ? [.send([.text(#"{"t":"welcome","id":"a"}"#)]), .drop]
                                                                      : EngineHarness.welcome() })
            try await harness.session.connect()
            guard case .reconnecting(_, let waited, _)? = harness.stateLog.last else {
                Issue.record("expected reconnecting, got \(harness.stateLog)")
                continue
            }
            #expect(waited == delay)
        }
    }
}
