import Foundation
import Realtime
@_spi(DialectAuthoring) import RealtimeSocketIO
import RealtimeTesting
import Testing

/// How the Engine.IO connection is carried in a scenario.
enum SocketIOCarrier: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case websocket
    case polling
    case upgrade

    var transports: [SocketIODialect.Transport] {
        switch self {
        case .websocket: [.websocket]
        case .polling: [.polling]
        case .upgrade: [.polling, .websocket]
        }
    }

    var testDescription: String { rawValue }

    /// Carriers whose base transport exists in this build.
    static var available: [SocketIOCarrier] { SocketIOBaseTransport.webSocketAvailable ? allCases : [.polling] }
}

/// One connected session against the peer, with its events and states recorded.
struct SocketIOClient {
    let session: RealtimeSession
    let events = EventLog()
    let states = Locked<[ConnectionState]>([])
    let errors = Locked<[RealtimeError]>([])

    init(peer: SocketIOPeer, carrier: SocketIOCarrier, auth: SocketIOAuth? = ["token": "secret"],
         channels: [ChannelID] = ["/", "/chat"]) {
        session = RealtimeSession(dialect: .socketIO(url: peer.url, auth: auth, transports: carrier.transports),
                                  transport: SocketIOBaseTransport.make(),
                                  options: SessionOptions(requestTimeout: .seconds(10), logHandler: { record in
                                      if ProcessInfo.processInfo.environment["SOCKETIO_TRACE"] != nil {
                                          print("[\(record.source)] \(record.message)")
                                      }
                                  }, logLevel: .trace))
        let events = events
        let states = states
        let errors = errors
        for channel in channels {
            session.channel(channel).onAny { events.append($0) }
        }
        session.onStateChange { _, new in states.withLock { $0.append(new) } }
        session.onError { error in errors.withLock { $0.append(error) } }
    }

    func channel(_ id: ChannelID) -> RealtimeChannel { session.channel(id) }
}

@Suite("Socket.IO against python-socketio", .serialized)
struct SocketIOScenarioTests {
    @Test(arguments: SocketIOCarrier.available)
    func defaultAndCustomNamespaces(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            try await client.session.connect()
            #expect(try await client.channel("/").subscribed() == nil)  // python-socketio has no recovery
            try await client.channel("/chat").subscribed()
            #expect(try await client.channel("/").request("sum", [1, 2]) == [["sum": 3]])
            #expect(try await client.channel("/chat").request("sum", [4, 5, 6]) == [["sum": 15]])
            // The welcome each connect handler emits, possibly before its CONNECT ack, is delivered.
            #expect(await client.events.wait(for: "welcome", count: 2))
            let namespaces = Set(client.events.named("welcome").compactMap { $0.data["namespace"]?.stringValue })
            #expect(namespaces == ["/", "/chat"])
            #expect(client.events.named("welcome").allSatisfy { $0.data["auth"]?["token"] == "secret" })
            // The server sees the carrier we asked for; the upgrade keeps the same Engine.IO session.
            let expected: JSONValue = carrier == .polling ? "polling" : "websocket"
            var seen: [JSONValue] = []
            for _ in 0..<50 {
                seen = try await client.channel("/").request("which_transport")
                if seen == [expected] { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(seen == [expected])
            #expect(client.states.withLock { $0 }.filter { $0 == .connected }.count == 1)
            let firstID = client.session.connectionID
            #expect(try await client.channel("/chat").request("sum", [1]) == [["sum": 1]])
            #expect(client.session.connectionID == firstID)
            client.session.disconnect()
        }
    }

    @Test("session.ping(): python-socketio's WebSocket layer answers the ping (after the upgrade too); long-polling alone cannot",
          arguments: SocketIOCarrier.available)
    func pingRoundTrip(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            try await client.session.connect()
            try await client.channel("/").subscribed()
            if carrier == .polling {
                let refused = await #expect(throws: RealtimeError.self) { try await client.session.ping() }
                #expect(refused?.code == .unsupported)
            } else {
                var roundTrip: Duration?
                for _ in 0..<100 where roundTrip == nil {
                    do {
                        roundTrip = try await client.session.ping()
                    } catch let error as RealtimeError where error.code == .unsupported && carrier == .upgrade {
                        try await Task.sleep(for: .milliseconds(20))  // the upgrade finishes in the background
                    }
                }
                let measured = try #require(roundTrip)
                #expect(measured > .zero && measured < .seconds(10))
                #expect(try await client.channel("/").request("sum", [2]) == [["sum": 2]])
            }
            #expect(client.session.state == .connected)
            client.session.disconnect()
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func authRefusedAndUnknownNamespace(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier, auth: ["token": "wrong"], channels: ["/chat"])
            try await client.session.connect()
            let refused = await #expect(throws: RealtimeError.self) { try await client.channel("/chat").subscribed() }
            #expect(refused?.code == .subscriptionRejected)
            #expect(refused?.message == "invalid token")
            #expect(refused?.context.serverPayload?["message"] == "invalid token")

            let unknown = await #expect(throws: RealtimeError.self) { try await client.channel("/nope").subscribed() }
            #expect(unknown?.code == .subscriptionRejected)
            #expect(unknown?.context.serverPayload == "Unable to connect")
            // The connection itself stays up.
            #expect(client.session.state == .connected)
            client.session.disconnect()
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func acknowledgementsBothWays(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            let chat = client.channel("/chat")
            chat.on("server_ask") { event in
                event.ack?("yes", event.data)
            }
            try await client.session.connect()
            try await chat.subscribed()
            #expect(try await chat.request("sum", [1, 2, 3]) == [["sum": 6]])
            #expect(try await chat.request("echo", "a", 2, ["b": true]) == ["a", 2, ["b": true]])
            try await chat.send("ask_me", ["q": 1])
            #expect(await client.events.wait(for: "server_ask_answer"))
            #expect(client.events.named("server_ask_answer").first?.arguments == ["yes", ["q": 1]])
            client.session.disconnect()
        }
    }

    @Test("what a client sends right before disconnectAndWait() reaches the server: a second client hears all of it",
          arguments: SocketIOCarrier.available)
    func lastSendsBeforeDisconnectArrive(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let listener = SocketIOClient(peer: peer, carrier: .websocket, channels: ["/chat"])
            try await listener.session.connect()
            #expect(try await listener.channel("/chat").request("join", "last") == ["joined"])
            let sender = SocketIOClient(peer: peer, carrier: carrier, channels: ["/chat"])
            try await sender.session.connect()
            let chat = sender.channel("/chat")
            try await chat.subscribed()
            // Sent without acknowledgements, the last ones while a POST is still in flight over polling.
            for index in 0..<20 { try await chat.send("broadcast", "last", .string("note \(index)")) }
            await sender.session.disconnectAndWait()
            #expect(await listener.events.wait(for: "room_message", count: 20))
            let heard = listener.events.named("room_message").compactMap { $0.data["message"]?.stringValue }
            #expect(heard == (0..<20).map { "note \($0)" })
            await listener.session.disconnectAndWait()
        }
    }

    @Test("a burst of 40 sends over polling arrives whole: python-engineio drops a POST of more than 16 packets")
    func burstOverPollingArrivesWhole() async throws {
        try await withSocketIOPeer { peer in
            let listener = SocketIOClient(peer: peer, carrier: .websocket, channels: ["/chat"])
            try await listener.session.connect()
            #expect(try await listener.channel("/chat").request("join", "burst") == ["joined"])
            let sender = SocketIOClient(peer: peer, carrier: .polling, channels: ["/chat"])
            try await sender.session.connect()
            let chat = sender.channel("/chat")
            try await chat.subscribed()
            // At once: all but the first wait behind the POST in flight, then go out together.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    group.addTask { try await chat.send("broadcast", "burst", .string("burst \(index)")) }
                }
                try await group.waitForAll()
            }
            #expect(await listener.events.wait(for: "room_message", count: 40))
            let heard = Set(listener.events.named("room_message").compactMap { $0.data["message"]?.stringValue })
            #expect(heard == Set((0..<40).map { "burst \($0)" }))
            await sender.session.disconnectAndWait()
            await listener.session.disconnectAndWait()
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func binaryBothWaysNested(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            let chat = client.channel("/chat")
            try await client.session.connect()
            try await chat.subscribed()
            let payload: JSONValue = ["blob": .binary(Data([0, 1, 2, 255])),
                                      "nested": ["deeper": [.binary(Data(repeating: 7, count: 3000)), "text"]]]
            let reply = try await chat.request("binary_echo", payload, .binary(Data([9])))
            #expect(reply == [payload, .binary(Data([9]))])

            #expect(try await chat.request("send_binary") == ["sent"])
            #expect(await client.events.wait(for: "binary_from_server"))
            let event = try #require(client.events.named("binary_from_server").first)
            #expect(event.data["first"] == .binary(Data([1, 2])))
            #expect(event.data["nested"]?["second"] == .binary(Data([3, 4])))
            #expect(event.data["len"] == 4)
            client.session.disconnect()
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func roomBroadcast(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let first = SocketIOClient(peer: peer, carrier: carrier)
            let second = SocketIOClient(peer: peer, carrier: carrier)
            let outsider = SocketIOClient(peer: peer, carrier: carrier)
            for client in [first, second, outsider] {
                try await client.session.connect()
                try await client.channel("/chat").subscribed()
            }
            #expect(try await first.channel("/chat").request("join", "room-1") == ["joined"])
            #expect(try await second.channel("/chat").request("join", "room-1") == ["joined"])
            #expect(try await first.channel("/chat").request("broadcast", "room-1", "hello") == ["sent"])
            #expect(await first.events.wait(for: "room_message"))
            #expect(await second.events.wait(for: "room_message"))
            #expect(second.events.named("room_message").first?.data == ["room": "room-1", "message": "hello"])
            // Whoever did not join hears nothing (checked after the members heard it).
            #expect(try await outsider.channel("/chat").request("sum", [1]) == [["sum": 1]])
            #expect(outsider.events.named("room_message").isEmpty)
            for client in [first, second, outsider] { client.session.disconnect() }
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func serverDisconnectEndsOneNamespace(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            let chat = client.channel("/chat")
            try await client.session.connect()
            try await chat.subscribed()
            try await chat.send("kick_me")
            #expect(await eventually { if case .endedByServer = chat.state { true } else { false } })
            if case .endedByServer(let error) = chat.state { #expect(error.code == .channelUnavailable) }
            // The connection and the other namespace go on, and nothing re-joins on its own.
            #expect(client.session.state == .connected)
            #expect(try await client.channel("/").request("sum", [2, 2]) == [["sum": 4]])
            if case .endedByServer = chat.state {} else { Issue.record("/chat was re-joined: \(chat.state)") }
            client.session.disconnect()
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func leavingAndRejoiningANamespace(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            let chat = client.channel("/chat")
            try await client.session.connect()
            try await chat.subscribed()
            let connectionID = client.session.connectionID
            chat.leave()
            #expect(await eventually { chat.state == .unsubscribed })
            await #expect(throws: RealtimeError.self) { try await chat.request("sum", [1], timeout: .seconds(2)) }
            // Joining again on the same Engine.IO connection gets a fresh CONNECT ack and a new welcome.
            let again = client.channel("/chat")
            try await again.subscribed()
            #expect(try await again.request("sum", [5]) == [["sum": 5]])
            #expect(client.session.connectionID == connectionID)
            client.session.disconnect()
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func engineIOCloseReconnectsAndRejoins(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            try await reconnectScenario(peer: peer, carrier: carrier, trigger: "close_engine")
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func abruptDropReconnectsAndRejoins(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            try await reconnectScenario(peer: peer, carrier: carrier, trigger: "drop_transport")
        }
    }

    @Test("a request whose connection the server cuts fails with .connectionClosed, or with retries is answered on the next connection",
          arguments: SocketIOCarrier.available)
    func requestRetriedAcrossAServerDrop(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            let chat = client.channel("/chat")
            try await client.session.connect()
            try await chat.subscribed()
            // The server cuts the connection instead of answering a key's first call, and answers the next.
            let unretried = UUID().uuidString
            let error = await #expect(throws: RealtimeError.self) {
                try await chat.request("drop_once", .string(unretried), timeout: .seconds(10))
            }
            #expect(error?.code == .connectionClosed)
            try await chat.subscribed()
            let retried = UUID().uuidString
            let answer = try await chat.request("drop_once", .string(retried), timeout: .seconds(10), retries: 1)
            #expect(answer == [["key": .string(retried), "calls": 2]])
            client.session.disconnect()
        }
    }

    /// python-engineio queues the close packet, then marks the session closed and answers every later GET
    /// with HTTP 400 "Session is disconnected": a client whose next long-poll was not already waiting when
    /// the server closed never receives the packet (seen once in CI), and reconnects after that 400 instead.
    private static func isEngineIOCloseLostBetweenPolls(_ reason: DisconnectReason) -> Bool {
        guard case .failure(let error) = reason else { return false }
        return error.code == .transportFailed && error.context.httpStatus == 400
            && String(describing: error).contains("Session is disconnected")
    }

    private func reconnectScenario(peer: SocketIOPeer, carrier: SocketIOCarrier, trigger: String) async throws {
        let tokens = Locked<[String]>([])
        let client = SocketIOClient(peer: peer, carrier: carrier, auth: .provider { namespace in
            tokens.withLock { $0.append(namespace.name) }
            return ["token": "secret"]
        })
        let chat = client.channel("/chat")
        let lifecycle = Locked<[ChannelLifecycleEvent.Kind]>([])
        chat.onLifecycle { event in lifecycle.withLock { $0.append(event.kind) } }
        try await client.session.connect()
        try await chat.subscribed()
        let firstID = client.session.connectionID
        // python-socketio handles each namespace's CONNECT in its own task, so "/chat" can be confirmed before
        // "/" is welcomed; a welcome still queued when the server drops the link is lost with it.
        #expect(await client.events.wait(for: "welcome", count: 2))
        try await chat.send(trigger)
        #expect(await eventually(timeout: .seconds(15)) {
            client.session.connectionID != nil && client.session.connectionID != firstID
                && chat.state == .subscribed(recovered: nil)
        })
        // State observers run on the delivery queue, after the state read above.
        #expect(await eventually {
            client.states.withLock { $0 }.contains { if case .reconnecting = $0 { true } else { false } }
        })
        let reasons = client.states.withLock { $0 }.compactMap { state -> DisconnectReason? in
            if case .reconnecting(_, _, let reason) = state { reason } else { nil }
        }
        print("socket.io \(carrier) \(trigger): reconnecting after \(reasons)")
        #expect(reasons.count >= 1)
        if trigger == "close_engine" {
            #expect(reasons.first == .serverRequest(reason: "Engine.IO close")
                    || (carrier == .polling && reasons.first.map(Self.isEngineIOCloseLostBetweenPolls) == true),
                    "\(reasons)")
        }
        // python-socketio's CONNECT ack carries the namespace's sid; the second one is a resubscription.
        // Lifecycle events arrive on the delivery queue, possibly after the state read above.
        #expect(await eventually(timeout: .seconds(15)) { lifecycle.withLock { $0 }.count >= 2 })
        let confirmations = lifecycle.withLock { $0 }.compactMap { kind -> SubscriptionInfo? in
            if case .subscribed(let info) = kind { info } else { nil }
        }
        #expect(confirmations.map(\.isResubscription) == [false, true])
        #expect(confirmations.allSatisfy { $0.serverPayload?["sid"]?.stringValue?.isEmpty == false })
        #expect(confirmations.first?.serverPayload?["sid"] != confirmations.last?.serverPayload?["sid"])
        // Both namespaces joined again, each after asking the auth provider again. Each namespace's provider
        // runs in its own task, so "/chat" may be confirmed before "/" asked.
        #expect(await eventually { tokens.withLock { $0 }.count >= 4 })
        #expect(tokens.withLock { $0 }.sorted() == ["/", "/", "/chat", "/chat"])
        #expect(try await chat.request("sum", [3, 4]) == [["sum": 7]])
        #expect(await client.events.wait(for: "welcome", count: 4))
        client.session.disconnect()
    }

    @Test(arguments: SocketIOCarrier.available)
    func heartbeatKeepsTheLinkAndDetectsASilentServer(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer(fastPing: true) { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            try await client.session.connect()
            try await client.channel("/chat").subscribed()
            let firstID = client.session.connectionID
            // Several 1 s ping cycles pass; pongs keep the server from dropping us.
            try await Task.sleep(for: .milliseconds(3500))
            #expect(client.session.connectionID == firstID)
            #expect(client.states.withLock { $0 } == [.connecting, .connected])

            try await client.channel("/chat").send("go_silent")
            let silencedAt = ContinuousClock.now
            #expect(await eventually(timeout: .seconds(8)) {
                client.states.withLock { $0 }.contains { if case .reconnecting = $0 { true } else { false } }
            })
            // Dead after pingInterval + pingTimeout (4 s) of silence counted from the last ping, which came
            // at most 1 s before the server went silent: the 8 s bound above rules out the 45 s default.
            print("socket.io silent server (\(carrier)): detected after \(ContinuousClock.now - silencedAt)")
            #expect(await eventually(timeout: .seconds(10)) {
                client.session.connectionID != firstID && client.session.state == .connected
            })
            client.session.disconnect()
        }
    }

    @Test(arguments: SocketIOCarrier.available)
    func burstOfTenThousandEventsArrivesCompleteAndInOrder(carrier: SocketIOCarrier) async throws {
        try await withSocketIOPeer { peer in
            let client = SocketIOClient(peer: peer, carrier: carrier)
            let chat = client.channel("/chat")
            try await client.session.connect()
            try await chat.subscribed()
            let started = ContinuousClock.now
            try await chat.send("burst", 10_000)
            #expect(await client.events.wait(for: "burst_done", timeout: .seconds(60)))
            let elapsed = ContinuousClock.now - started
            let items = client.events.named("burst_item").compactMap { $0.data.integerValue }
            #expect(items.count == 10_000)
            #expect(items == Array(0..<10_000))
            print("socket.io burst over \(carrier): 10000 events in \(elapsed)")
            client.session.disconnect()
        }
    }
}
