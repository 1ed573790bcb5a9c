@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Channel lifecycle")
struct ChannelLifecycleTests {
    @Test("subscribed, then resubscribed after a reconnect, with the server's payload; left; observers survive the channel's removeAllHandlers")
    func subscribeResubscribeLeave() async throws {
        let harness = EngineHarness(script: { index in
            EngineHarness.welcome(id: "c\(index)")
                + [.expect(subRoom, reply: [.text(#"{"t":"subok","ch":"room","payload":{"n":\#(index)}}"#)])]
        })
        let room = harness.session.channel("room")
        let seen = Locked<[ChannelLifecycleEvent.Kind]>([])
        let everywhere = Locked<[ChannelLifecycleEvent]>([])
        let id = room.onLifecycle { event in seen.withLock { $0.append(event.kind) } }
        room.removeAllHandlers()     // removes event handlers; observers stay
        harness.session.onChannelEvent { event in everywhere.withLock { $0.append(event) } }
        try await harness.session.connect()
        harness.peers[0].drop()
        harness.clock.advance(by: .seconds(1))
        #expect(harness.session.state == .connected)
        room.leave()
        #expect(seen.withLock { $0 } == [
            .subscribed(SubscriptionInfo(isResubscription: false, recovered: nil, serverPayload: ["n": 0])),
            // Dropped at 0 s, joined again after the 1 s reconnect delay: a 1 s gap.
            .subscribed(SubscriptionInfo(isResubscription: true, recovered: nil, serverPayload: ["n": 1],
                                         gap: .seconds(1))),
            .unsubscribed,
        ])
        #expect(everywhere.withLock { $0 }.map(\.channel) == ["room", "room", "room"])
        room.off(id: id)
        harness.session.channel("room")
        #expect(seen.withLock { $0 }.count == 3)
    }

    @Test("a refused channel reports .rejected; a channel the server ends reports .endedByServer")
    func rejectedAndEnded() async throws {
        let subPrivate = TransportFrame.text(#"{"ch":"private","t":"sub"}"#)
        let harness = EngineHarness(script: { _ in
            EngineHarness.welcome() + [.expect(subPrivate, reply: [.text(#"{"t":"subfail","ch":"private"}"#)]),
                                       .expect(subRoom, reply: [subOkRoom])]
        })
        let events = Locked<[ChannelLifecycleEvent]>([])
        harness.session.onChannelEvent { event in events.withLock { $0.append(event) } }
        let secret = harness.session.channel("private")
        try await harness.session.connect()
        let room = harness.session.channel("room")
        try await room.subscribed()
        harness.peers[0].send(text: #"{"t":"end","ch":"room"}"#)
        let kinds = events.withLock { $0 }.map { event -> String in
            switch event.kind {
            case .subscribed: "subscribed \(event.channel)"
            case .rejected(let error): "rejected \(event.channel) \(error.code)"
            case .unsubscribed: "unsubscribed \(event.channel)"
            case .endedByServer(let error): "ended \(event.channel) \(error.code)"
            }
        }
        #expect(kinds == ["rejected private subscription-rejected", "subscribed room", "ended room channel-unavailable"])
        #expect(secret.state != .pending)
    }

    @Test("the lifecycle stream yields the same changes")
    func stream() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        var iterator = room.lifecycle().makeAsyncIterator()
        try await harness.session.connect()
        let first = await iterator.next()
        #expect(first?.kind == .subscribed(SubscriptionInfo(isResubscription: false, recovered: nil)))
        room.leave()
        #expect(await iterator.next()?.kind == .unsubscribed)
    }
}

@Suite("Handler ids chosen by the app")
struct ChosenHandlerIDTests {
    @Test("one id on two sessions; off(id:) removes it from each; registering it again replaces the handler")
    func sameIDEverywhere() async throws {
        let first = EngineHarness()
        let second = EngineHarness()
        let id = HandlerID()
        let heard = Locked<[String]>([])
        for (name, harness) in [("first", first), ("second", second)] {
            #expect(harness.session.on("x", id: id) { _ in heard.withLock { $0.append(name) } } == id)
            try await harness.session.connect()
        }
        first.peers[0].send(text: #"{"t":"ev","name":"x"}"#)
        second.peers[0].send(text: #"{"t":"ev","name":"x"}"#)
        #expect(heard.withLock { $0 } == ["first", "second"])
        // Registered again in one session: replaced, not doubled.
        first.session.on("x", id: id) { _ in heard.withLock { $0.append("first again") } }
        first.peers[0].send(text: #"{"t":"ev","name":"x"}"#)
        #expect(heard.withLock { $0 }.suffix(1) == ["first again"])
        first.session.off(id: id)
        second.session.off(id: id)
        first.peers[0].send(text: #"{"t":"ev","name":"x"}"#)
        second.peers[0].send(text: #"{"t":"ev","name":"x"}"#)
        #expect(heard.withLock { $0 }.count == 3)
    }
}
