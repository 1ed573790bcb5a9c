@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("HandlerRegistry: persistent (adapter) handlers")
struct PersistentHandlerTests {
    @Test("persistent handlers and observers survive every bulk removal; off(id:) removes them; app ones go")
    func survivesBulkRemoval() {
        let registry = HandlerRegistry()
        let calls = Locked<[String]>([])
        let kept = registry.add(channel: "room", event: "joined", persistent: true) { _ in
            calls.withLock { $0.append("kept") }
        }
        registry.add(channel: "room", event: "joined") { _ in calls.withLock { $0.append("app") } }
        let keptState = registry.addStateObserver(persistent: true) { _, _ in calls.withLock { $0.append("kept-state") } }
        registry.addStateObserver { _, _ in calls.withLock { $0.append("app-state") } }
        registry.addErrorObserver { _ in calls.withLock { $0.append("app-error") } }
        let joined = RealtimeEvent(channel: "room", name: "joined", data: .null)

        registry.remove(event: "joined", channel: "room")
        registry.dispatch(joined)
        #expect(calls.withLock { $0 } == ["kept"])

        registry.add(channel: "room", event: "joined") { _ in calls.withLock { $0.append("app2") } }
        registry.removeAll(channel: "room")
        registry.removeEverything()
        calls.withLock { $0 = [] }
        registry.dispatch(joined)
        registry.dispatchState(from: .connecting, to: .connected)
        registry.dispatchError(RealtimeError(.serverError, "x"))
        #expect(calls.withLock { $0 } == ["kept", "kept-state"])
        #expect(registry.count == 2)

        #expect(registry.remove(id: kept))
        #expect(registry.remove(id: keptState))
        #expect(registry.count == 0)
    }
}
