import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// A session over the in-memory transport with a manual clock and inline delivery: every step a test
/// takes on its own thread runs to completion before the call returns.
final class EngineHarness: Sendable {
    let clock = ManualClock()
    let transport: InMemoryTransport
    let session: RealtimeSession
    let states = Locked<[ConnectionState]>([])
    let events = Locked<[RealtimeEvent]>([])
    let errors = Locked<[RealtimeError]>([])

    /// - Parameters:
    ///   - script: what each connection (by index) does; `nil` accepts and stays silent.
    ///   - recordsEvents: keeps every event in ``eventLog``; off for tests of when events go away.
    init(dialect: LineDialect = LineDialect(), options: (inout SessionOptions) -> Void = { _ in },
         recordsEvents: Bool = true,
         script: @escaping @Sendable (Int) -> [ScriptedPeer.Step]? = { _ in EngineHarness.welcome() }) {
        transport = InMemoryTransport(autoAccept: false)
        var settings = SessionOptions(delivery: .inline, clock: clock, randomSource: .seeded(1))
        options(&settings)
        session = RealtimeSession(dialect: dialect, transport: transport, options: settings)
        transport.onOpen { peer in
            if let steps = script(peer.index) {
                ScriptedPeer(steps).attach(to: peer)
            } else {
                peer.accept()
            }
        }
        session.onStateChange { [states] _, new in states.withLock { $0.append(new) } }
        if recordsEvents { session.onAny { [events] event in events.withLock { $0.append(event) } } }
        session.onError { [errors] error in errors.withLock { $0.append(error) } }
    }

    static func welcome(id: String = "conn-1", extra: String = "") -> [ScriptedPeer.Step] {
        [.send([.text(#"{"t":"welcome","id":"\#(id)"\#(extra)}"#)])]
    }

    var peers: [InMemoryPeer] { transport.peers }
    var stateLog: [ConnectionState] { states.withLock { $0 } }
    var eventLog: [RealtimeEvent] { events.withLock { $0 } }
    var errorLog: [RealtimeError] { errors.withLock { $0 } }
}

/// Waits (yielding, never sleeping) until `condition` holds; records an issue if it never does.
func eventually(_ description: String = "condition", sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: () -> Bool) async {
    for _ in 0..<200_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("timed out waiting for \(description)", sourceLocation: sourceLocation)
}

/// Frames of a peer decoded as JSON, for order-insensitive key checks.
func texts(_ peer: InMemoryPeer) -> [String] { peer.receivedTexts }

let subRoom = TransportFrame.text(#"{"ch":"room","t":"sub"}"#)
let subOkRoom = TransportFrame.text(#"{"t":"subok","ch":"room"}"#)

/// What `InMemoryPeer.drop()` makes the session report as the reason for reconnecting.
let dropped = DisconnectReason.failure(RealtimeError(.transportFailed, "connection reset by peer",
                                                     context: .init(closeCode: 1006)))

/// A delivery target that keeps handler calls until the test runs them, for tests of what happens while
/// they wait.
final class HeldDelivery: Sendable {
    private let queued = Locked<[@Sendable () -> Void]>([])

    var target: DeliveryTarget {
        .custom { [queued] work in queued.withLock { $0.append(work) } }
    }

    /// Runs the handler calls waiting now, in order.
    func runAll() {
        let work = queued.withLock { queue in defer { queue = [] }; return queue }
        for item in work { item() }
    }
}
