@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing

@Suite("LivenessMonitor")
struct LivenessMonitorTests {
    private let ping = TransportFrame.text("ping")
    private var clientPings: LivenessRule { .clientPings(idle: .seconds(10), timeout: .seconds(3), ping: ping) }
    private let serverPings = LivenessRule.serverPings(interval: .seconds(5), grace: .seconds(2))

    @Test("without a rule there is nothing to watch")
    func noRule() {
        var monitor = LivenessMonitor()
        #expect(monitor.check(at: .seconds(1_000)) == .nothingToDo)
        #expect(monitor.probe(at: .seconds(1_000)) == .nothingToDo)
    }

    @Test("server pings: alive until interval + grace after the last frame, then dead")
    func serverDeadline() {
        var monitor = LivenessMonitor()
        monitor.adopt(serverPings)
        monitor.received(at: .seconds(100))
        #expect(monitor.check(at: .seconds(101)) == .checkAfter(.seconds(6)))
        monitor.received(at: .seconds(104))
        #expect(monitor.check(at: .seconds(107)) == .checkAfter(.seconds(4)))
        #expect(monitor.check(at: .seconds(111)) == .dead)
    }

    @Test("server pings: a probe checks the deadline and sends nothing")
    func serverProbe() {
        var monitor = LivenessMonitor()
        monitor.adopt(serverPings)
        #expect(monitor.probe(at: .seconds(1)) == .checkAfter(.seconds(6)))
        #expect(monitor.probe(at: .seconds(7)) == .dead)
    }

    @Test("client pings: a ping after a quiet idle time, dead when nothing answers in time")
    func clientPingUnanswered() {
        var monitor = LivenessMonitor()
        monitor.adopt(clientPings)
        #expect(monitor.check(at: .seconds(4)) == .checkAfter(.seconds(6)))
        #expect(monitor.check(at: .seconds(10)) == .ping(ping, checkAfter: .seconds(3)))
        #expect(monitor.pingSentAt == .seconds(10))
        #expect(monitor.check(at: .seconds(12)) == .checkAfter(.seconds(1)))
        #expect(monitor.check(at: .seconds(13)) == .dead)
    }

    @Test("client pings: anything arriving answers the ping and restarts the idle time")
    func clientPingAnswered() {
        var monitor = LivenessMonitor()
        monitor.adopt(clientPings)
        #expect(monitor.check(at: .seconds(10)) == .ping(ping, checkAfter: .seconds(3)))
        monitor.received(at: .seconds(11))
        #expect(monitor.check(at: .seconds(13)) == .checkAfter(.seconds(8)))
        #expect(monitor.pingSentAt == nil)
    }

    @Test("client pings: a probe pings at once, but never twice while one is in flight")
    func clientProbe() {
        var monitor = LivenessMonitor()
        monitor.adopt(clientPings)
        monitor.received(at: .seconds(5))
        #expect(monitor.probe(at: .seconds(6)) == .ping(ping, checkAfter: .seconds(3)))
        #expect(monitor.probe(at: .seconds(7)) == .nothingToDo)
    }

    @Test("a new rule or a stop forgets the ping in flight")
    func adoptAndStop() {
        var monitor = LivenessMonitor()
        monitor.adopt(clientPings)
        _ = monitor.probe(at: .seconds(1))
        monitor.adopt(clientPings)
        #expect(monitor.pingSentAt == nil)
        _ = monitor.probe(at: .seconds(2))
        monitor.stop()
        #expect(monitor.pingSentAt == nil)
        #expect(monitor.rule == .none)
        #expect(monitor.check(at: .seconds(100)) == .nothingToDo)
    }
}
