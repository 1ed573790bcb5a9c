@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// `Liveness` is user input: a zero or negative duration must not reach a dialect's rule.
@Suite("Liveness durations")
struct LivenessTests {
    static let minimum = Liveness.minimumDuration

    @Test("a duration below the minimum, zero and negative included, is raised to 100 ms when made",
          arguments: [Duration.zero, .seconds(-5), .milliseconds(-1), .nanoseconds(1), .milliseconds(99)])
    func shortDurationsAreRaised(duration: Duration) {
        #expect(Self.minimum == .milliseconds(100))
        let liveness = Liveness(pingInterval: duration, pingTimeout: duration)
        #expect(liveness.pingInterval == Self.minimum)
        #expect(liveness.pingTimeout == Self.minimum)
        #expect(liveness == Liveness(pingInterval: Self.minimum, pingTimeout: Self.minimum))
    }

    @Test("setting a property raises it the same way; nil and durations from the minimum up are kept")
    func propertiesAreRaisedToo() {
        var liveness = Liveness(pingInterval: .seconds(30))
        liveness.pingInterval = .zero
        liveness.pingTimeout = .seconds(-1)
        #expect(liveness.pingInterval == Self.minimum)
        #expect(liveness.pingTimeout == Self.minimum)
        liveness.pingInterval = .milliseconds(100)
        liveness.pingTimeout = .seconds(7)
        #expect(liveness.pingInterval == .milliseconds(100))
        #expect(liveness.pingTimeout == .seconds(7))
        liveness.pingInterval = nil
        #expect(liveness.pingInterval == nil)
        #expect(Liveness().pingInterval == nil && Liveness().pingTimeout == nil)
    }

    @Test("a server-pings rule never gets a zero or negative interval or grace")
    func serverPingsRule() {
        let rule = Liveness(pingInterval: .zero, pingTimeout: .seconds(-3))
            .serverPings(defaultInterval: .seconds(3), defaultTimeout: .seconds(3))
        #expect(rule == .serverPings(interval: Self.minimum, grace: Self.minimum))
    }
}
