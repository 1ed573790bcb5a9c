@_spi(DialectAuthoring) @testable import RealtimeCore
import RealtimeTesting
import Testing

/// An in-memory transport that offers a delivery target of its own, as `WebSocketTransport` offers its
/// group's delivery thread.
private final class DeliveringTransport: RealtimeTransport, DeliveryProviding {
    let base = InMemoryTransport()
    let delivery: HeldDelivery?
    let asked = Locked(0)
    let loopAffinity: Int?
    /// The loop each opened request asked for.
    let requestedLoops = Locked<[Int?]>([])

    init(delivery: HeldDelivery?, loopAffinity: Int? = nil) {
        self.delivery = delivery
        self.loopAffinity = loopAffinity
    }

    func open(_ request: ConnectionRequest, handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        requestedLoops.withLock { $0.append(request.loopAffinity) }
        return base.open(request, handler: handler)
    }

    func makeDefaultDelivery() -> DefaultDelivery? {
        asked.withLock { $0 += 1 }
        return delivery.map { DefaultDelivery(target: $0.target, loopAffinity: loopAffinity) }
    }
}

@Suite("Default delivery")
struct DefaultDeliveryTests {
    @Test("without a delivery option, handlers run where the transport's own target runs them")
    func transportsTarget() async throws {
        let delivery = HeldDelivery()
        let transport = DeliveringTransport(delivery: delivery)
        let session = RealtimeSession(dialect: LineDialect(), transport: transport)
        let seen = Locked<[String]>([])
        session.on("m") { event in seen.withLock { $0.append(event.name) } }
        session.start()
        let peer = await transport.base.peer(0)
        peer.send(text: #"{"t":"welcome"}"#)
        peer.send(text: #"{"t":"ev","name":"m"}"#)
        #expect(seen.withLock { $0 }.isEmpty)  // held by the transport's target until it runs them
        delivery.runAll()
        #expect(seen.withLock { $0 } == ["m"])
        #expect(transport.asked.withLock { $0 } == 1)
        withExtendedLifetime(session) {}
    }

    @Test("every connection of the session, reconnects too, opens on the loop of the transport's target")
    func connectionsOpenBesideTheDelivery() async throws {
        let clock = ManualClock()
        let transport = DeliveringTransport(delivery: HeldDelivery(), loopAffinity: 3)
        let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                      options: SessionOptions(clock: clock, randomSource: .seeded(1)))
        session.start()
        let first = await transport.base.peer(0)
        first.send(text: #"{"t":"welcome"}"#)
        first.drop()
        clock.advance(by: .seconds(60))
        _ = await transport.base.peer(1)
        let loops = transport.requestedLoops.withLock { $0 }
        #expect(loops.count >= 2 && loops.allSatisfy { $0 == 3 })
        withExtendedLifetime(session) {}
    }

    @Test("a delivery option wins over the transport's target, which is then not asked for")
    func optionWins() async throws {
        let transport = DeliveringTransport(delivery: HeldDelivery())
        let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                      options: SessionOptions(delivery: .inline))
        let seen = Locked(0)
        session.on("m") { _ in seen.withLock { $0 += 1 } }
        session.start()
        let peer = await transport.base.peer(0)
        peer.send(text: #"{"t":"welcome"}"#)
        peer.send(text: #"{"t":"ev","name":"m"}"#)
        #expect(seen.withLock { $0 } == 1)
        #expect(transport.asked.withLock { $0 } == 0)
        #expect(transport.requestedLoops.withLock { $0 } == [nil])  // the transport picks the loop
        withExtendedLifetime(session) {}
    }
}
