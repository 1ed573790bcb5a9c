import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) @testable import RealtimeSocketIO
import Testing

@Suite("Socket.IO machine: Engine.IO")
struct MachineEngineIOTests {
    @Test func openPacketConnectsAndSetsLiveness() {
        var harness = MachineHarness()
        // The wait for the open packet is the session's connect timeout, not a timer of the machine's.
        #expect(harness.opened().startedTimers.isEmpty)
        let actions = harness.receive(MachineHarness.openPacket)
        #expect(actions.connectedIDs == ["eio-sid"])
        #expect(actions.livenessRules == [.serverPings(interval: .seconds(1), grace: .seconds(2))])
    }

    @Test("liveness: values set on the dialect replace the handshake's, one by one; .disabled checks nothing")
    func livenessOverrides() {
        let cases: [(Liveness, LivenessRule)] = [
            (Liveness(pingInterval: .seconds(5), pingTimeout: .seconds(7)), .serverPings(interval: .seconds(5), grace: .seconds(7))),
            (Liveness(pingTimeout: .seconds(9)), .serverPings(interval: .seconds(1), grace: .seconds(9))),
            (Liveness(pingInterval: .seconds(4)), .serverPings(interval: .seconds(4), grace: .seconds(2))),
            (.disabled, .none),
        ]
        for (liveness, rule) in cases {
            var harness = MachineHarness(liveness: liveness)
            #expect(harness.connect().livenessRules == [rule], "\(liveness)")
            // Pings are answered whatever the check does.
            #expect(harness.receive("2").sentTexts == ["3"])
        }
        #expect(SocketIODialect.socketIO(url: URL(string: "http://h")!, liveness: .disabled).liveness == .disabled)
    }

    @Test func answersServerPingsWithPongs() {
        var harness = MachineHarness()
        harness.connect()
        #expect(harness.receive("2").sentTexts == ["3"])
        #expect(harness.receive("2abc").sentTexts == ["3abc"])
    }

    @Test func ignoresPongsUpgradesAndNoops() {
        var harness = MachineHarness()
        harness.connect()
        for text in ["3probe", "5", "6"] {
            #expect(harness.receive(text).isEmpty, "\(text)")
        }
        #expect(harness.opened().startedTimers.isEmpty)
        #expect(harness.receive("6").isEmpty)  // a noop may precede the open packet after an upgrade
    }

    @Test func serverCloseClosesAndReconnectsWithBackoff() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        let actions = harness.receive("1")
        #expect(actions.closes.map(\.reason) == [DisconnectReason.serverRequest(reason: "Engine.IO close").description])
        #expect(harness.receive(#"42["late"]"#).isEmpty)  // nothing is read after the close was decided
        let end = harness.machine.connectionEnded(TransportClosure(.closedLocally(code: 1000, reason: "server close")))
        #expect(end == .backoff(minimum: .zero))
    }

    @Test func everyTransportEndBacksOff() {
        var harness = MachineHarness()
        let closures: [TransportClosure] = [
            TransportClosure(.closedByPeer(code: 1006, reason: "")),
            TransportClosure(.failed(RealtimeError(.transportFailed, "reset"))),
            TransportClosure(.livenessTimeout),
            TransportClosure(.failed(RealtimeError(.handshakeRejected, "400")), duringOpen: true),
        ]
        for closure in closures {
            harness.connect()
            #expect(harness.machine.connectionEnded(closure) == .backoff(minimum: .zero))
        }
    }

    @Test("a 4xx answer to the upgrade or the polling handshake ends the session; 408, 429, 5xx and later polling failures back off")
    func lastingHTTPRefusalsAreTerminal() {
        func end(_ code: RealtimeError.Code, _ status: Int) -> ConnectionEnd {
            var harness = MachineHarness()
            harness.connect()
            let error = RealtimeError(code, "HTTP \(status)", context: .init(httpStatus: status))
            return harness.machine.connectionEnded(TransportClosure(.failed(error), duringOpen: true))
        }
        for status in [400, 401, 403, 404, 410] {
            guard case .terminal(let error) = end(.handshakeRejected, status) else {
                Issue.record("HTTP \(status) should end the session")
                continue
            }
            #expect(error.context.httpStatus == status)
        }
        for status in [408, 429, 500, 502, 503] {
            #expect(end(.handshakeRejected, status) == .backoff(minimum: .zero), "HTTP \(status)")
        }
        // An open polling session whose GET is refused (the server forgot the sid) reconnects.
        #expect(end(.transportFailed, 400) == .backoff(minimum: .zero))
    }

    @Test func garbageIsAParseErrorThatCloses() {
        for text in ["9", "4x", "0{}", #"4"#] {
            var harness = MachineHarness()
            if text != "0{}" { harness.connect() } else { _ = harness.opened() }
            let actions = harness.receive(text)
            #expect(actions.reportedErrors.first?.code == .protocolViolation, "\(text)")
            #expect(actions.closes.first?.code == 1002, "\(text)")
        }
    }

    @Test func packetsBeforeOpenAreViolations() {
        var harness = MachineHarness()
        _ = harness.opened()
        #expect(harness.receive(#"42["a"]"#).closes.count == 1)
        var binary = MachineHarness()
        _ = binary.opened()
        #expect(binary.receive(binary: Data([1])).closes.count == 1)
    }

    @Test func secondOpenPacketIsAViolation() {
        var harness = MachineHarness()
        harness.connect()
        #expect(harness.receive(MachineHarness.openPacket).reportedErrors.map(\.code) == [.protocolViolation])
    }

    @Test func tooManyAttachmentsClosesWithMessageTooBig() {
        var harness = MachineHarness(limits: .init(maximumAttachments: 2))
        harness.connectAndJoin(["/"])
        let actions = harness.receive(#"453-["a"]"#)
        #expect(actions.reportedErrors.map(\.code) == [.limitExceeded])
        #expect(actions.closes.first?.code == 1009)
    }
}

@Suite("Socket.IO machine: namespaces")
struct MachineNamespaceTests {
    @Test func joinsTheMainNamespace() {
        var harness = MachineHarness()
        harness.connect()
        #expect(harness.command(.subscribe("/")).sentTexts == ["40"])
        let actions = harness.receive(#"40{"sid":"ns-sid"}"#)
        #expect(actions.subscribed.map(\.0) == ["/"])
        #expect(actions.subscribed.first?.1 == nil)
    }

    @Test func joinsACustomNamespaceWithAuthValue() {
        var harness = MachineHarness(auth: ["token": "secret"])
        harness.connect()
        #expect(harness.command(.subscribe("/chat")).sentTexts == [#"40/chat,{"token":"secret"}"#])
        #expect(harness.receive(#"40/chat,{"sid":"gyP_"}"#).subscribed.map(\.0) == ["/chat"])
    }

    @Test func channelNamesWithoutSlashAreNamespaces() {
        var harness = MachineHarness()
        harness.connect()
        #expect(harness.command(.subscribe("chat")).sentTexts == ["40/chat,"])
        #expect(harness.receive(#"40/chat,{"sid":"x"}"#).subscribed.map(\.0) == ["chat"])
    }

    @Test func subscribesBeforeOpenWaitForTheHandshake() {
        var harness = MachineHarness()
        _ = harness.opened()
        #expect(harness.command(.subscribe("/chat")).isEmpty)
        #expect(harness.command(.subscribe("/chat")).isEmpty)
        let actions = harness.receive(MachineHarness.openPacket)
        #expect(actions.sentTexts == ["40/chat,"])
    }

    @Test func repeatedSubscribeDoesNotSendTwice() {
        var harness = MachineHarness()
        harness.connect()
        #expect(harness.command(.subscribe("/chat")).sentTexts.count == 1)
        #expect(harness.command(.subscribe("/chat")).isEmpty)
        _ = harness.receive(#"40/chat,{"sid":"x"}"#)
        let again = harness.command(.subscribe("/chat"))
        #expect(again.sentTexts.isEmpty)
        #expect(again.subscribed.map(\.0) == ["/chat"])
    }

    @Test func authProviderRunsBeforeEveryConnect() async throws {
        let calls = Locked(0)
        var harness = MachineHarness(auth: .provider { namespace in
            let count = calls.withLock { value -> Int in
                value += 1
                return value
            }
            return ["token": .string("t\(count)"), "ns": .string(namespace.name)]
        })
        harness.connect()
        let first = harness.command(.subscribe("/chat"))
        #expect(first.sentTexts.isEmpty)
        let work = try #require(first.work.first)
        #expect(work.id.channel == "/chat")
        let value = try await work.run(DialectWorkContext())
        #expect(harness.finish(work.id, .success(value)).sentTexts == [#"40/chat,{"ns":"/chat","token":"t1"}"#])
        _ = harness.receive(#"40/chat,{"sid":"a"}"#)

        _ = harness.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1006, reason: "")))
        harness.connect()
        let second = try #require(harness.command(.subscribe("/chat")).work.first)
        #expect(second.id.serial != work.id.serial)
        let refreshed = try await second.run(DialectWorkContext())
        #expect(harness.finish(second.id, .success(refreshed)).sentTexts == [#"40/chat,{"ns":"/chat","token":"t2"}"#])
        #expect(calls.withLock { $0 } == 2)
    }

    @Test func staleAuthWorkIsIgnored() {
        var harness = MachineHarness(auth: .provider { _ in ["token": "x"] })
        harness.connect()
        let work = harness.command(.subscribe("/chat")).work[0]
        _ = harness.machine.connectionEnded(TransportClosure(.livenessTimeout))
        harness.connect()
        _ = harness.command(.subscribe("/chat"))
        #expect(harness.finish(work.id, .success(["token": "x"])).isEmpty)
    }

    @Test("a provider that throws refuses the namespace with the RealtimeError it threw, kept as it was")
    func authProviderFailureRefusesTheNamespace() {
        var harness = MachineHarness(auth: .provider { _ in throw RealtimeError(.authorizationFailed, "expired") })
        harness.connect()
        let work = harness.command(.subscribe("/chat")).work[0]
        let actions = harness.finish(work.id, .failure(RealtimeError(.authorizationFailed, "expired")))
        #expect(actions.subscriptionFailures.map(\.0) == ["/chat"])
        #expect(actions.subscriptionFailures.first?.1.code == .authorizationFailed)
        #expect(actions.subscriptionFailures.first?.1.message == "expired")
        #expect(actions.subscriptionFailures.first?.1.context.channel == "/chat")
        #expect(actions.sentFrames.isEmpty)
    }

    @Test("a provider's own error is .operationFailed naming what it threw, as on Pusher and Action Cable")
    func authProviderForeignError() async throws {
        struct Offline: Error {}
        var harness = MachineHarness(auth: .provider { _ in throw Offline() })
        harness.connect()
        let work = try #require(harness.command(.subscribe("/chat")).work.first)
        let thrown: RealtimeError
        do {
            _ = try await work.run(DialectWorkContext())
            Issue.record("the provider's error was not thrown")
            return
        } catch {
            thrown = try #require(error as? RealtimeError)
        }
        #expect(thrown.code == .operationFailed)
        #expect(thrown.message == "the Socket.IO auth provider threw: Offline()")
        let actions = harness.finish(work.id, .failure(thrown))
        #expect(actions.subscriptionFailures.first?.1.code == .operationFailed)
        #expect(actions.subscriptionFailures.first?.1.context.channel == "/chat")
        #expect(actions.sentFrames.isEmpty)
    }

    @Test func connectErrorObjectForm() {
        var harness = MachineHarness(auth: ["token": "wrong"])
        harness.connect()
        _ = harness.command(.subscribe("/"))
        let actions = harness.receive(#"44{"message":"invalid token","data":{"namespace":"/"}}"#)
        let (channel, error) = try! #require(actions.subscriptionFailures.first)
        #expect(channel == "/")
        #expect(error.code == .subscriptionRejected)
        #expect(error.message == "invalid token")
        #expect(error.context.serverPayload?["data"]?["namespace"] == "/")
        #expect(error.context.channel == "/")
        // No retry loop: nothing is sent and later events for it are dropped.
        #expect(actions.sentFrames.isEmpty)
        #expect(harness.receive(#"42["x"]"#).delivered.isEmpty)
    }

    @Test func connectErrorBareStringForm() {
        var harness = MachineHarness()
        harness.connect()
        _ = harness.command(.subscribe("/nope"))
        let actions = harness.receive(#"44/nope,"Unable to connect""#)
        let error = try! #require(actions.subscriptionFailures.first?.1)
        #expect(error.code == .subscriptionRejected)
        #expect(error.message == "Unable to connect")
        #expect(error.context.serverPayload == "Unable to connect")
    }

    @Test func serverDisconnectEndsTheNamespaceOnly() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/", "/chat"])
        let request = RequestID(1)
        _ = harness.command(.request(OutgoingMessage(channel: "/chat", event: "sum", arguments: [1]), request))
        let actions = harness.receive("41/chat,")
        #expect(actions.channelEnds.map(\.0) == ["/chat"])
        #expect(actions.channelEnds.first?.1.code == .channelUnavailable)
        #expect(actions.closes.isEmpty)
        #expect(actions.resolutions.map(\.0) == [request])
        // The main namespace still works.
        #expect(harness.receive(#"42["still"]"#).delivered.map(\.name) == ["still"])
        #expect(harness.receive(#"42/chat,["gone"]"#).delivered.isEmpty)
    }

    @Test func leavingSendsDisconnect() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/chat"])
        #expect(harness.command(.unsubscribe("/chat")).sentTexts == ["41/chat,"])
        #expect(harness.receive(#"42/chat,["after"]"#).delivered.isEmpty)
        #expect(harness.command(.unsubscribe("/chat")).isEmpty)
    }

    @Test func afterReconnectNamespacesRejoinWithFreshState() {
        var harness = MachineHarness(auth: ["token": "secret"])
        harness.connectAndJoin(["/", "/chat"])
        _ = harness.command(.request(OutgoingMessage(channel: "/chat", event: "a", arguments: []), RequestID(9)))
        _ = harness.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1006, reason: "")))
        // Before the new handshake nothing is sent and nothing is connected.
        let early = harness.command(.send(OutgoingMessage(channel: "/chat", event: "x", arguments: [])))
        #expect(early.sentFrames.isEmpty)
        harness.connect()
        #expect(harness.command(.subscribe("/")).sentTexts == [#"40{"token":"secret"}"#])
        #expect(harness.command(.subscribe("/chat")).sentTexts == [#"40/chat,{"token":"secret"}"#])
        #expect(harness.receive(#"40/chat,{"sid":"new"}"#).subscribed.map(\.0) == ["/chat"])
        // Ack ids restart, and the old request's ack resolves nothing.
        #expect(harness.receive(#"43/chat,0[1]"#).resolutions.isEmpty)
        let sent = harness.command(.request(OutgoingMessage(channel: "/chat", event: "b", arguments: []), RequestID(10)))
        #expect(sent.sentTexts == [#"42/chat,0["b"]"#])
    }
}

@Suite("Socket.IO machine: events and acks")
struct MachineEventTests {
    @Test func mapsEventsIntoRealtimeEvents() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/chat"])
        let event = try #require(harness.receive(#"42/chat,["message",{"text":"hi"},2]"#).delivered.first)
        #expect(event.channel == "/chat")
        #expect(event.name == "message")
        #expect(event.data == ["text": "hi"])
        #expect(event.arguments == [["text": "hi"], 2])
        #expect(event.rawData == #"["message",{"text":"hi"},2]"#)
        #expect(event.ackToken == nil)

        let bare = try #require(harness.receive(#"42/chat,["ping"]"#).delivered.first)
        #expect(bare.data == .null)
        #expect(bare.arguments.isEmpty)
    }

    @Test("an event's arguments are parsed when first read, once for every copy; changes keep them")
    func argumentsAreParsedWhenRead() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/chat"])
        var event = try #require(harness.receive(#"42/chat,7["tick",{"n":[1,{"a":true}]},"x"]"#).delivered.first)
        #expect(event.name == "tick")
        #expect(event.ackToken?.id == 7)
        #expect(!event.isPayloadParsed)
        let copy = event
        #expect(copy.arguments == [["n": [1, ["a": true]]], "x"])
        #expect(event.isPayloadParsed)
        #expect(event.data == ["n": [1, ["a": true]]])
        event.rawData = "replaced"  // the parsed arguments stay, though the text they came from is gone
        #expect(event.arguments == [["n": [1, ["a": true]]], "x"])
        event.data = 5
        #expect(event.data == 5 && event.arguments == [["n": [1, ["a": true]]], "x"])

        // A name that is a number, and a payload that is not an event array, as before.
        #expect(harness.receive(#"42/chat,[42,true]"#).delivered.map(\.arguments) == [[true]])
        #expect(harness.receive(#"42/chat,[{"no":"name"}]"#).delivered.isEmpty)
        #expect(harness.receive(#"42/chat,["bad",]"#).delivered.isEmpty)
    }

    @Test("while handlers read payloads, arguments are parsed on arrival, but for one probe packet in 256")
    func payloadsReadHint() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/chat"])
        let packet = #"42/chat,["tick",{"n":1},2]"#
        #expect(harness.receive(packet).delivered.map(\.isPayloadParsed) == [false])
        harness.machine.payloadsAreRead(true)
        var parsed = 0
        var deferred = 0
        for _ in 0..<(2 * PayloadParsing.probeInterval) {
            for event in harness.receive(packet).delivered {
                if event.isPayloadParsed { parsed += 1 } else { deferred += 1 }
                #expect(event.name == "tick" && event.arguments == [["n": 1], 2])  // read after the count: reading parses
            }
        }
        #expect(deferred == 2 && parsed == 2 * PayloadParsing.probeInterval - 2)
        harness.machine.payloadsAreRead(false)
        #expect(harness.receive(packet).delivered.map(\.isPayloadParsed) == [false])
    }

    @Test func eventsBeforeTheConnectAckAreDeliveredAfterIt() {
        var harness = MachineHarness()
        harness.connect()
        _ = harness.command(.subscribe("/chat"))
        #expect(harness.receive(#"42/chat,["welcome",1]"#).delivered.isEmpty)
        #expect(harness.receive(#"42/chat,["welcome",2]"#).delivered.isEmpty)
        let actions = harness.receive(#"40/chat,{"sid":"x"}"#)
        #expect(actions.subscribed.map(\.0) == ["/chat"])
        #expect(actions.delivered.map(\.data) == [1, 2])
        // subscribed comes first so the engine's state is right when the events are handled
        let subscribedIndex = actions.firstIndex { if case .subscribed = $0 { true } else { false } }
        let deliverIndex = actions.firstIndex { if case .deliver = $0 { true } else { false } }
        #expect(subscribedIndex! < deliverIndex!)
    }

    @Test func earlyEventBufferIsBounded() {
        var harness = MachineHarness(limits: .init(maximumEventsBeforeConnect: 2))
        harness.connect()
        _ = harness.command(.subscribe("/"))
        _ = harness.receive(#"42["a"]"#)
        _ = harness.receive(#"42["b"]"#)
        #expect(harness.receive(#"42["c"]"#).reportedErrors.map(\.code) == [.bufferFull])
        #expect(harness.receive(#"40{"sid":"s"}"#).delivered.map(\.name) == ["a", "b"])
    }

    @Test func eventsForUnjoinedNamespacesAreDropped() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        #expect(harness.receive(#"42/other,["x"]"#).delivered.isEmpty)
    }

    @Test func reservedNamesFromTheServerAreRefused() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        for name in SocketIODialect.reservedEventNames.sorted() {
            let actions = harness.receive(#"42["\#(name)"]"#)
            #expect(actions.delivered.isEmpty, "\(name)")
            #expect(actions.reportedErrors.map(\.code) == [.protocolViolation], "\(name)")
        }
        for name in ["connected", "Connect", "disconnec", "message"] {
            #expect(harness.receive(#"42["\#(name)"]"#).delivered.map(\.name) == [name])
        }
    }

    @Test func requestsGetPerNamespaceAckIDs() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/", "/chat"])
        let sum = OutgoingMessage(channel: "/chat", event: "sum", arguments: [[1, 2, 3]])
        #expect(harness.command(.request(sum, RequestID(1))).sentTexts == [#"42/chat,0["sum",[1,2,3]]"#])
        #expect(harness.command(.request(sum, RequestID(2))).sentTexts == [#"42/chat,1["sum",[1,2,3]]"#])
        let main = OutgoingMessage(channel: "/", event: "echo", arguments: ["x"])
        #expect(harness.command(.request(main, RequestID(3))).sentTexts == [#"420["echo","x"]"#])

        let second = harness.receive(#"43/chat,1[{"sum":6}]"#).resolutions
        #expect(second.map(\.0) == [RequestID(2)])
        #expect(try second.first?.1.get() == [["sum": 6]])
        #expect(harness.receive(#"43/chat,1[{"sum":6}]"#).resolutions.isEmpty)  // answered once only
        #expect(try harness.receive(#"430["x"]"#).resolutions.first?.1.get() == ["x"])
        #expect(try harness.receive("43/chat,0[]").resolutions.first?.1.get() == [])
    }

    @Test func cancelledRequestsAreForgotten() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        _ = harness.command(.request(OutgoingMessage(channel: "/", event: "slow", arguments: []), RequestID(5)))
        _ = harness.command(.cancelRequest(RequestID(5)))
        #expect(harness.receive("430[1]").resolutions.isEmpty)
    }

    @Test func requestOnANamespaceThatIsNotConnectedFails() {
        var harness = MachineHarness()
        harness.connect()
        let actions = harness.command(.request(OutgoingMessage(channel: "/chat", event: "a", arguments: []), RequestID(1)))
        #expect(actions.sentFrames.isEmpty)
        #expect(actions.resolutions.first.map { (try? $0.1.get()) == nil } == true)
        let send = harness.command(.send(OutgoingMessage(channel: "/chat", event: "a", arguments: [])))
        #expect(send.refusedSends.map(\.code) == [.channelUnavailable])
    }

    @Test func serverAskedAcksCarryATokenAndAreAnsweredOnce() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/chat"])
        let event = try #require(harness.receive(#"42/chat,1["server_ask",{"q":1}]"#).delivered.first)
        let token = try #require(event.ackToken)
        #expect(token == AckToken(channel: "/chat", id: 1))
        #expect(harness.command(.acknowledge(token, ["yes"])).sentTexts == [#"43/chat,1["yes"]"#])
        #expect(harness.command(.acknowledge(token, ["again"])).sentFrames.isEmpty)
    }

    @Test func staleAckTokensAreNotSentOnANewConnection() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        let token = try #require(harness.receive(#"423["ask"]"#).delivered.first?.ackToken)
        _ = harness.machine.connectionEnded(TransportClosure(.livenessTimeout))
        harness.connectAndJoin(["/"])
        #expect(harness.command(.acknowledge(token, [1])).sentFrames.isEmpty)
    }

    @Test func unansweredServerAcksAreBounded() {
        var harness = MachineHarness(limits: .init(maximumUnansweredServerAcks: 1))
        harness.connectAndJoin(["/"])
        #expect(harness.receive(#"421["a"]"#).delivered.first?.ackToken != nil)
        let actions = harness.receive(#"422["b"]"#)
        #expect(actions.delivered.first?.ackToken == nil)
        #expect(actions.reportedErrors.map(\.code) == [.limitExceeded])
    }

    @Test func plainSendsHaveNoAckID() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/chat"])
        let message = OutgoingMessage(channel: "/chat", event: "typing", arguments: [["on": true]])
        #expect(harness.command(.send(message)).sentTexts == [#"42/chat,["typing",{"on":true}]"#])
    }

    @Test func packetsOverMaxPayloadAreRefused() {
        var harness = MachineHarness()
        harness.connect(openPacket: #"0{"sid":"s","pingInterval":1000,"pingTimeout":2000,"maxPayload":64}"#)
        _ = harness.command(.subscribe("/"))
        _ = harness.receive(#"40{"sid":"x"}"#)
        let big = OutgoingMessage(channel: "/", event: "big", arguments: [.string(String(repeating: "x", count: 100))])
        let sent = harness.command(.send(big))
        #expect(sent.sentFrames.isEmpty)
        #expect(sent.refusedSends.map(\.code) == [.limitExceeded])
        let request = harness.command(.request(big, RequestID(1)))
        #expect(request.sentFrames.isEmpty)
        #expect(request.resolutions.count == 1)
        // The ack id was not used up.
        let small = OutgoingMessage(channel: "/", event: "s", arguments: [])
        #expect(harness.command(.request(small, RequestID(2))).sentTexts == [#"420["s"]"#])
    }

    @Test func customCommandsAreUnsupported() {
        var harness = MachineHarness()
        harness.connect()
        let actions = harness.command(.custom(name: "signin", payload: .null, RequestID(4)))
        #expect(actions.resolutions.first.map { (try? $0.1.get()) == nil } == true)
    }
}

@Suite("Socket.IO machine: binary")
struct MachineBinaryTests {
    @Test func binaryEventsAreDeliveredWithAttachmentsRestored() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        let header = #"452-["binary_from_server",{"first":{"_placeholder":true,"num":0},"nested":{"second":{"_placeholder":true,"num":1}},"len":4}]"#
        #expect(harness.receive(header).delivered.isEmpty)
        #expect(harness.receive(binary: Data([1, 2])).delivered.isEmpty)
        let event = try #require(harness.receive(binary: Data([3, 4])).delivered.first)
        #expect(event.name == "binary_from_server")
        #expect(event.data["first"] == .binary(Data([1, 2])))
        #expect(event.data["nested"]?["second"] == .binary(Data([3, 4])))
        #expect(event.rawData == String(header.dropFirst(4)))
    }

    @Test func binaryAcksResolveRequests() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        let message = OutgoingMessage(channel: "/", event: "binary_echo", arguments: [.binary(Data([9, 8, 7, 6]))])
        let sent = harness.command(.request(message, RequestID(1)))
        #expect(sent.sentFrames == [.text(#"451-0["binary_echo",{"_placeholder":true,"num":0}]"#),
                                    .binary(Data([9, 8, 7, 6]))])
        _ = harness.receive(#"461-0[{"len":4,"data":{"_placeholder":true,"num":0}}]"#)
        let resolved = harness.receive(binary: Data([9, 8, 7, 6])).resolutions
        #expect(try resolved.first?.1.get() == [["len": 4, "data": .binary(Data([9, 8, 7, 6]))]])
    }

    @Test func binaryAcknowledgementsToTheServer() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/chat"])
        let token = try #require(harness.receive(#"42/chat,4["want_bytes"]"#).delivered.first?.ackToken)
        let sent = harness.command(.acknowledge(token, [["blob": .binary(Data([1]))]]))
        #expect(sent.sentFrames == [.text(#"461-/chat,4[{"blob":{"_placeholder":true,"num":0}}]"#), .binary(Data([1]))])
    }

    @Test func binaryFramesWithoutAPendingPacketAreViolations() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        let actions = harness.receive(binary: Data([1]))
        #expect(actions.reportedErrors.map(\.code) == [.protocolViolation])
        #expect(actions.closes.count == 1)
    }

    @Test func halfReceivedPacketIsForgottenOnReconnect() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        _ = harness.receive(#"451-["a",{"_placeholder":true,"num":0}]"#)
        _ = harness.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1006, reason: "")))
        harness.connectAndJoin(["/"])
        #expect(harness.receive(#"42["b"]"#).delivered.map(\.name) == ["b"])
    }
}

@Suite("Socket.IO machine: connection state recovery")
struct MachineRecoveryTests {
    @Test func offsetsAreStrippedAndSentBackOnReconnect() throws {
        var harness = MachineHarness(auth: ["token": "secret"])
        harness.connect()
        _ = harness.command(.subscribe("/"))
        let first = harness.receive(#"40{"sid":"a","pid":"p1"}"#)
        #expect(first.subscribed.first?.1 == false)

        let event = try #require(harness.receive(#"42["news",1,"off-1"]"#).delivered.first)
        #expect(event.arguments == [1])
        _ = harness.receive(#"42["news",2,"off-2"]"#)
        // Events with an ack id carry no offset.
        let asked = try #require(harness.receive(#"427["ask","keep"]"#).delivered.first)
        #expect(asked.arguments == ["keep"])

        _ = harness.machine.connectionEnded(TransportClosure(.closedByPeer(code: 1006, reason: "")))
        harness.connect()
        #expect(harness.command(.subscribe("/")).sentTexts == [#"40{"offset":"off-2","pid":"p1","token":"secret"}"#])
        let recovered = harness.receive(#"40{"sid":"b","pid":"p1"}"#)
        #expect(recovered.subscribed.first?.1 == true)
    }

    @Test func aNewPidMeansNotRecovered() {
        var harness = MachineHarness()
        harness.connect()
        _ = harness.command(.subscribe("/chat"))
        _ = harness.receive(#"40/chat,{"sid":"a","pid":"p1"}"#)
        _ = harness.machine.connectionEnded(TransportClosure(.livenessTimeout))
        harness.connect()
        #expect(harness.command(.subscribe("/chat")).sentTexts == [#"40/chat,{"pid":"p1"}"#])
        let actions = harness.receive(#"40/chat,{"sid":"b","pid":"p2"}"#)
        #expect(actions.subscribed.first?.1 == false)
        // The new pid is the one offered next time.
        _ = harness.machine.connectionEnded(TransportClosure(.livenessTimeout))
        harness.connect()
        #expect(harness.command(.subscribe("/chat")).sentTexts == [#"40/chat,{"pid":"p2"}"#])
    }

    @Test func withoutRecoveryStringArgumentsStay() throws {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        let event = try #require(harness.receive(#"42["msg","hello"]"#).delivered.first)
        #expect(event.arguments == ["hello"])
    }

    @Test func eventsBufferedBeforeTheAckAreStrippedToo() throws {
        var harness = MachineHarness()
        harness.connect()
        _ = harness.command(.subscribe("/"))
        _ = harness.receive(#"42["early","x","off-9"]"#)
        let actions = harness.receive(#"40{"sid":"a","pid":"p"}"#)
        #expect(actions.delivered.first?.arguments == ["x"])
    }

    @Test func serverDisconnectForgetsTheRecoverySession() {
        var harness = MachineHarness()
        harness.connect()
        _ = harness.command(.subscribe("/"))
        _ = harness.receive(#"40{"sid":"a","pid":"p1"}"#)
        #expect(harness.receive("41").channelEnds.map(\.0) == ["/"])
        // The app joins again by hand: no pid is offered, the server forgot the session.
        #expect(harness.command(.subscribe("/")).sentTexts == ["40"])
    }
}

@Suite("Socket.IO dialect")
struct DialectTests {
    @Test func websocketRequest() throws {
        let dialect = SocketIODialect.socketIO(url: URL(string: "https://api.example.com")!,
                                               headers: [HTTPHeader("X-App", "1")],
                                               queryItems: [URLQueryItem(name: "room", value: "a b")])
        let request = try dialect.makeConnectionRequest()
        #expect(request.url.absoluteString == "wss://api.example.com/socket.io/?room=a%20b&EIO=4&transport=websocket")
        #expect(request.headers == [HTTPHeader("X-App", "1")])
        #expect(request.allowsInsecureTransportToRemoteHosts == false)
        #expect(dialect.defaultChannels == ["/"])
        #expect(dialect.name == "socket.io")
    }

    @Test func pollingRequestAndCustomPath() throws {
        let dialect = SocketIODialect(url: URL(string: "ws://127.0.0.1:3000")!, path: "realtime",
                                      transports: [.polling, .websocket])
        let request = try dialect.makeConnectionRequest()
        #expect(request.url.absoluteString == "http://127.0.0.1:3000/realtime/?EIO=4&transport=polling")
        #expect(dialect.upgrades)
        #expect(!SocketIODialect(url: URL(string: "http://h")!, transports: [.polling]).upgrades)
    }

    @Test func urlPathNamesTheDefaultNamespace() {
        #expect(SocketIODialect(url: URL(string: "https://h/admin")!).defaultChannels == ["/admin"])
        #expect(SocketIODialect(url: URL(string: "https://h/")!).defaultChannels == ["/"])
        #expect(SocketIODialect(url: URL(string: "https://h")!, defaultNamespaces: []).defaultChannels.isEmpty)
    }

    @Test func badURLsAreInvalidArguments() {
        for text in ["ftp://h", "/relative"] {
            let dialect = SocketIODialect(url: URL(string: text)!)
            let error = #expect(throws: RealtimeError.self) { try dialect.makeConnectionRequest() }
            #expect(error?.code == .invalidArgument)
        }
    }

    @Test func reconnectDefaultsAreTheJSClients() {
        let policy = SocketIODialect(url: URL(string: "https://h")!).reconnectPolicy
        #expect(policy == ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(5),
                                          jitter: .proportional(0.5)))
    }

    @Test func refusesReservedNames() {
        let dialect = SocketIODialect(url: URL(string: "https://h")!)
        for name in ["connect", "connect_error", "disconnect", "disconnecting", "newListener", "removeListener"] {
            let error = dialect.validate(OutgoingMessage(channel: "/", event: name, arguments: []), expectsReply: false)
            #expect(error?.code == .invalidArgument, "\(name)")
        }
        #expect(dialect.validate(OutgoingMessage(channel: "/", event: "message", arguments: []), expectsReply: true) == nil)
    }

    @Test func refusesTooManyAttachments() {
        let dialect = SocketIODialect(url: URL(string: "https://h")!, limits: .init(maximumAttachments: 1))
        let two = OutgoingMessage(channel: "/", event: "b", arguments: [.binary(Data([1])), [.binary(Data([2]))]])
        #expect(dialect.validate(two, expectsReply: false)?.code == .limitExceeded)
    }

    @Test("trace lines mask a CONNECT payload whole: every string of the auth object, whatever its names")
    func connectPayloadRedacted() {
        let dialect = SocketIODialect(url: URL(string: "https://h")!)
        let line = dialect.logDescription(of: .text(#"40/chat,{"jwt":"S3CRET-a","pin":"S3CRET-b","tries":3}"#))
        #expect(!line.contains("S3CRET"))
        #expect(line.hasPrefix("40/chat,{"))
        #expect(line.contains(#""jwt":"<redacted>""#))
        // Events keep their data, minus members with secret names.
        let event = dialect.logDescription(of: .text(#"42/chat,["msg",{"text":"hi","token":"S3CRET"}]"#))
        #expect(event.contains(#""text":"hi""#) && !event.contains("S3CRET"))
    }
}


@Suite("Socket.IO machine: compress(false)")
struct MachineCompressTests {
    @Test("compress: false makes every frame of the packet (attachments too) sendUncompressed; the default, send")
    func uncompressedFrames() {
        var harness = MachineHarness()
        harness.connectAndJoin(["/"])
        let plain = harness.command(.send(OutgoingMessage(channel: "/", event: "e", arguments: [.binary(Data([1]))],
                                                          compress: false)))
        let uncompressed = plain.compactMap { if case .sendUncompressed(let frame) = $0 { frame } else { nil } }
        #expect(uncompressed.count == 2)
        #expect(plain.sentFrames.isEmpty)
        let ask = harness.command(.request(OutgoingMessage(channel: "/", event: "q", arguments: [], compress: false),
                                           RequestID(1)))
        #expect(ask.contains { if case .sendUncompressed = $0 { true } else { false } })
        let normal = harness.command(.send(OutgoingMessage(channel: "/", event: "e", arguments: [1])))
        #expect(normal.sentTexts == [#"42["e",1]"#])
    }
}
