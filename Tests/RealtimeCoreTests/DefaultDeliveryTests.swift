@_spi(DialectAuthoring) @testable import RealtimeCore
import RealtimeTesting
import Testing

/// An in-memory transport that offers a delivery target of its own, as `WebSocketTransport` offers its
/// group's delivery thread.
private final class DeliveringTransport: RealtimeTransport, DeliveryProviding {
    let base = InMemoryTransport()
    let delivery: HeldDelivery?
    let asked = Locked(0)

    init(delivery: HeldDelivery?) { self.delivery = delivery }

    func open(_ request: ConnectionRequest, handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        base.open(request, handler: handler)
    }

    func makeDefaultDelivery() -> DeliveryTarget? {
        asked.withLock { $0 += 1 }
        return delivery?.target
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
        withExtendedLifetime(session) {}
    }
}
