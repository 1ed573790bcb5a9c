import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) @testable import RealtimeSocketIO
import RealtimeTesting
import Testing

/// A few lines of Socket.IO server over an `InMemoryPeer`: open packet, CONNECT acks (token checked when
/// `requiredToken` is set), `sum` acks, empty `noop` acks and a welcome event before the CONNECT ack.
private func serve(_ peer: InMemoryPeer, requiredToken: String? = nil, tokens: Locked<[String]>) {
    peer.onReceive { frame, peer in
        guard case .text(let text) = frame else { return }
        if text.hasPrefix("40") {
            var decoder = SocketIOPacketDecoder()
            guard let packet = try? decoder.receive(text: String(text.dropFirst())) else { return }
            // As socket.io and python-socketio do: a CONNECT payload that is not an object is a parse error.
            if let payload = packet.payload, payload.objectValue == nil {
                peer.close(code: 1002, reason: "parse error")
                return
            }
            let token = packet.payload?["token"]?.stringValue ?? ""
            tokens.withLock { $0.append(token) }
            let prefix = packet.namespace == "/" ? "" : packet.namespace + ","
            if let requiredToken, token != requiredToken {
                peer.send(text: #"44\#(prefix){"message":"invalid token"}"#)
                return
            }
            // python-socketio may emit from its connect handler before the ack.
            peer.send([.text(#"42\#(prefix)["welcome","\#(packet.namespace)"]"#),
                       .text(#"40\#(prefix){"sid":"ns-\#(peer.index)"}"#)])
        } else if text.hasPrefix("42"), text.contains(#"["sum","#) {
            var decoder = SocketIOPacketDecoder()
            guard let packet = try? decoder.receive(text: String(text.dropFirst())), let id = packet.id,
                  let numbers = packet.payload?[1]?.arrayValue else { return }
            let total = numbers.compactMap(\.integerValue).reduce(0, +)
            peer.send(SocketIOPacket(kind: .ack, namespace: packet.namespace, id: id, payload: [["sum": .integer(total)]])
                .encoded())
        } else if text.hasPrefix("42"), text.contains(#"["noop""#) {
            var decoder = SocketIOPacketDecoder()
            guard let packet = try? decoder.receive(text: String(text.dropFirst())), let id = packet.id else { return }
            peer.send(SocketIOPacket(kind: .ack, namespace: packet.namespace, id: id, payload: []).encoded())
        } else if text.hasPrefix("42"), text.contains(#"["flaky""#) || text.contains(#"["later""#) {
            // `flaky` is answered from its second arrival on this connection, `later` only on a later one.
            let arrivals = peer.receivedTexts.filter { $0.contains(#"["flaky""#) }.count
            guard text.contains(#"["flaky""#) ? arrivals >= 2 : peer.index >= 1 else { return }
            var decoder = SocketIOPacketDecoder()
            guard let packet = try? decoder.receive(text: String(text.dropFirst())), let id = packet.id else { return }
            peer.send(SocketIOPacket(kind: .ack, namespace: packet.namespace, id: id,
                                     payload: [["connection": .integer(Int64(peer.index))]]).encoded())
        }
    }
    peer.accept()
    peer.send(text: #"0{"sid":"eio-\#(peer.index)","upgrades":[],"pingInterval":1000,"pingTimeout":2000,"maxPayload":100000}"#)
}

@Suite("Socket.IO over the session engine")
struct SessionTests {
    private func makeSession(auth: SocketIOAuth?, requiredToken: String? = nil)
        -> (RealtimeSession, InMemoryTransport, ManualClock, Locked<[String]>) {
        let tokens = Locked<[String]>([])
        let transport = InMemoryTransport(autoAccept: false) { peer in
            serve(peer, requiredToken: requiredToken, tokens: tokens)
        }
        let clock = ManualClock()
        let session = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!, auth: auth),
                                      transport: transport,
                                      options: SessionOptions(delivery: .inline, clock: clock, randomSource: .seeded(1)))
        return (session, transport, clock, tokens)
    }

    @Test("two spellings of one namespace share one subscription: \"\" is \"/\", \"chat\" is \"/chat\"", .timeLimit(.minutes(1)))
    func namespaceSpellings() async throws {
        let (session, transport, _, _) = makeSession(auth: nil)
        let slashChat = session.channel("/chat")
        let bareChat = session.channel("chat")
        let empty = session.channel("")
        #expect(bareChat.id == "/chat")
        #expect(empty.id == "/")
        try await session.connect()
        try await slashChat.subscribed()
        try await bareChat.subscribed()
        try await empty.subscribed()
        #expect(bareChat.state == .subscribed(recovered: nil) && empty.state == .subscribed(recovered: nil))
        // One CONNECT per namespace on the wire.
        let connects = transport.peers[0].receivedTexts.filter { $0.hasPrefix("40") }
        #expect(connects.filter { $0.hasPrefix("40/chat,") }.count == 1)
    }

    @Test("a value nested 10,000 deep is refused before the attachment walk, with .limitExceeded")
    func deepValueRefused() async throws {
        let (session, transport, _, _) = makeSession(auth: nil)
        let root = session.channel("/")
        try await session.connect()
        try await root.subscribed()
        var deep: JSONValue = .binary(Data([1]))
        for _ in 0..<10_000 { deep = .array([deep]) }
        for expectsReply in [false, true] {
            do {
                if expectsReply { _ = try await root.request("x", arguments: [deep]) } else { try await root.send("x", deep) }
                Issue.record("a 10,000-deep value was sent")
            } catch let error as RealtimeError {
                #expect(error.code == .limitExceeded)
            }
        }
        #expect(!transport.peers[0].receivedTexts.contains { $0.hasPrefix("45") || $0.hasPrefix("42") })
    }

    @Test func connectsJoinsAndRequests() async throws {
        let (session, transport, _, tokens) = makeSession(auth: ["token": "secret"], requiredToken: "secret")
        let welcomes = Locked<[JSONValue]>([])
        let chat = session.channel("/chat")
        chat.on("welcome") { event in welcomes.withLock { $0.append(event.data) } }
        try await session.connect()
        #expect(session.connectionID == "eio-0")
        try await chat.subscribed()
        let reply = try await chat.request("sum", [1, 2, 3])
        #expect(reply == [["sum": 6]])
        #expect(welcomes.withLock { $0 } == ["/chat"])
        #expect(tokens.withLock { $0 } == ["secret", "secret"])  // "/" and "/chat"
        #expect(transport.peers[0].receivedTexts.contains(#"42/chat,0["sum",[1,2,3]]"#))
        session.disconnect()
    }

    @Test("request(_:encoding:as:) sends the encoded value and decodes the answer's first argument; one that does not decode throws .decodingFailed carrying it; an empty answer decodes as null")
    func typedRequest() async throws {
        struct Total: Decodable, Equatable { var sum: Int }
        let (session, transport, _, _) = makeSession(auth: nil)
        let chat = session.channel("/chat")
        try await session.connect()
        try await chat.subscribed()
        #expect(try await chat.request("sum", encoding: [1, 2, 3], as: Total.self) == Total(sum: 6))
        #expect(transport.peers[0].receivedTexts.contains(#"42/chat,0["sum",[1,2,3]]"#))

        let error = await #expect(throws: RealtimeError.self) {
            try await chat.request("sum", encoding: [4], as: String.self)
        }
        #expect(error?.code == .decodingFailed)
        #expect(error?.message == #"the answer to "sum" on /chat is not a String"#)
        #expect(error?.context.serverPayload == ["sum": 4])
        #expect(error?.context.detail?.isEmpty == false)

        #expect(try await chat.request("noop", encoding: true, as: Total?.self) == nil)
        await #expect(throws: RealtimeError.self) { try await chat.request("noop", encoding: true, as: Total.self) }
        session.disconnect()
    }

    @Test func aSendOverTheServersMaxPayloadThrows() async throws {
        let (session, transport, _, _) = makeSession(auth: nil)
        try await session.connect()
        let root = session.channel("/")
        try await root.subscribed()
        let error = await #expect(throws: RealtimeError.self) {
            try await root.send("big", .string(String(repeating: "x", count: 200_000)))
        }
        #expect(error?.code == .limitExceeded)
        try await root.send("small", "fits")
        #expect(transport.peers[0].receivedTexts.last == #"42["small","fits"]"#)
        session.disconnect()
    }

    @Test func refusedAuthFailsTheChannelWithTheServerPayload() async throws {
        let (session, _, _, _) = makeSession(auth: ["token": "wrong"], requiredToken: "secret")
        let chat = session.channel("/chat")
        try await session.connect()
        let error = await #expect(throws: RealtimeError.self) { try await chat.subscribed() }
        #expect(error?.code == .subscriptionRejected)
        #expect(error?.context.serverPayload?["message"] == "invalid token")
        session.disconnect()
    }

    @Test func reconnectRejoinsEveryNamespaceWithFreshAuth() async throws {
        let counter = Locked(0)
        let (session, transport, clock, tokens) = makeSession(auth: .provider { _ in
            let value = counter.withLock { count -> Int in
                count += 1
                return count
            }
            return ["token": .string("t\(value)")]
        })
        let chat = session.channel("/chat")
        let main = session.channel("/")
        try await session.connect()
        try await chat.subscribed()
        try await main.subscribed()
        #expect(Set(tokens.withLock { $0 }) == ["t1", "t2"])

        transport.peers[0].drop()
        clock.advance(by: .seconds(2))  // the first delay is at most 1.5 s; liveness needs 3 s
        _ = await transport.peer(1)
        try await chat.subscribed()
        try await main.subscribed()
        // Both namespaces joined again, each with a token fetched for this connection.
        let afterReconnect = Array(tokens.withLock { $0 }.dropFirst(2))
        #expect(Set(afterReconnect) == ["t3", "t4"])
        #expect(session.connectionID == "eio-1")
        session.disconnect()
    }

    @Test("auth that is not a JSON object refuses each namespace with .invalidArgument, heard by onError; no CONNECT, no reconnect loop",
          .timeLimit(.minutes(1)))
    func nonObjectAuthIsRefused() async throws {
        let (session, transport, clock, _) = makeSession(auth: .value("just-a-string"))
        let errors = Locked<[RealtimeError]>([])
        session.onError { error in errors.withLock { $0.append(error) } }
        let chat = session.channel("/chat")
        try await session.connect()
        let error = await #expect(throws: RealtimeError.self) { try await chat.subscribed() }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message == #"Socket.IO's auth must be a JSON object such as {"token": "…"}; a string was given"#)
        #expect(error?.context.channel == "/chat")
        // "/" (joined on connect) and "/chat", each once.
        #expect(errors.withLock { $0.map(\.code) } == [.invalidArgument, .invalidArgument])
        clock.advance(by: .seconds(2))  // past any reconnect delay, short of the 3 s liveness deadline
        #expect(transport.peers.count == 1)
        #expect(session.state == .connected)
        #expect(!transport.peers[0].receivedTexts.contains { $0.hasPrefix("40") })
        session.disconnect()
    }

    @Test("an auth provider returning something other than an object refuses that namespace with .invalidArgument",
          .timeLimit(.minutes(1)))
    func providerReturningNonObjectIsRefused() async throws {
        let (session, transport, _, _) = makeSession(auth: .provider { namespace in
            namespace == "/chat" ? ["a", "b"] : ["token": "fine"]
        })
        let chat = session.channel("/chat")
        let root = session.channel("/")
        try await session.connect()
        try await root.subscribed()
        let error = await #expect(throws: RealtimeError.self) { try await chat.subscribed() }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.hasSuffix("; the auth provider returned an array") == true)
        #expect(transport.peers.count == 1 && session.state == .connected)
        #expect(!transport.peers[0].receivedTexts.contains { $0.hasPrefix("40/chat") })
        session.disconnect()
    }

    @Test("a server that closes with 1002 is reported through onError, not only retried", .timeLimit(.minutes(1)))
    func protocolErrorCloseIsReported() async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(autoAccept: false) { peer in
            peer.onReceive { frame, peer in
                if case .text(let text) = frame, text.hasPrefix("40") { peer.close(code: 1002, reason: "parse error") }
            }
            peer.accept()
            peer.send(text: #"0{"sid":"s","upgrades":[],"pingInterval":1000,"pingTimeout":2000,"maxPayload":100000}"#)
        }
        let session = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!), transport: transport,
                                      options: SessionOptions(delivery: .inline, clock: clock, randomSource: .seeded(1)))
        let errors = Locked<[RealtimeError]>([])
        session.onError { error in errors.withLock { $0.append(error) } }
        try await session.connect()
        while errors.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(5)) }
        #expect(errors.withLock { $0.map(\.context.closeCode) } == [1002])
        guard case .reconnecting(_, _, .closedByServer(1002?, _)) = session.state else {
            Issue.record("expected reconnecting after the 1002 close, got \(session.state)")
            return
        }
        session.disconnect()
    }

    @Test("a 404 or 400 answer to the upgrade fails connect() and the session; a 503 is retried", .timeLimit(.minutes(1)),
          arguments: [(404, true), (400, true), (503, false)])
    func httpRefusalOfTheUpgrade(status: Int, terminal: Bool) async throws {
        let clock = ManualClock()
        let transport = InMemoryTransport(autoAccept: false) { peer in
            peer.fail(RealtimeError(.handshakeRejected, "HTTP \(status)", context: .init(httpStatus: status)))
        }
        let session = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!), transport: transport,
                                      options: SessionOptions(delivery: .inline, clock: clock, randomSource: .seeded(1)))
        if terminal {
            let error = await #expect(throws: RealtimeError.self) { try await session.connect() }
            #expect(error?.code == .handshakeRejected && error?.context.httpStatus == status)
            guard case .failed = session.state else {
                Issue.record("expected failed, got \(session.state)")
                return
            }
            clock.advance(by: .seconds(60))
            #expect(transport.peers.count == 1)
        } else {
            session.start()
            _ = await transport.peer(0)
            while !{ if case .reconnecting = session.state { true } else { false } }() {
                try await Task.sleep(for: .milliseconds(5))
            }
            clock.advance(by: .seconds(5))
            _ = await transport.peer(1)
            session.disconnect()
        }
    }

    @Test("a request that times out names its event, namespace and timeout", .timeLimit(.minutes(1)))
    func requestTimeoutMessage() async throws {
        let (session, transport, clock, _) = makeSession(auth: nil)
        let chat = session.channel("/chat")
        try await session.connect()
        try await chat.subscribed()
        // Within the 3 s liveness deadline of this server, which never pings.
        let pending = Task { try await chat.request("unanswered", timeout: .milliseconds(2_500)) }
        while !transport.peers[0].receivedTexts.contains(where: { $0.contains("unanswered") }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        clock.advance(by: .milliseconds(2_500))
        let error = await #expect(throws: RealtimeError.self) { try await pending.value }
        #expect(error?.code == .timedOut)
        #expect(error?.message == #"no acknowledgement for "unanswered" on /chat within 2.5 s"#)
        session.disconnect()
    }

    /// Waits until the peer has received `count` texts containing `fragment` (real time; the clock stays put).
    private func arrivals(_ count: Int, of fragment: String, at peer: InMemoryPeer) async throws {
        while peer.receivedTexts.filter({ $0.contains(fragment) }).count < count {
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    // Within the 3 s liveness deadline of this server, which never pings, in each of these.

    @Test("request(retries:) sends again after a timeout and returns the retry's answer", .timeLimit(.minutes(1)))
    func requestRetriedAfterATimeout() async throws {
        let (session, transport, clock, _) = makeSession(auth: nil)
        let chat = session.channel("/chat")
        try await session.connect()
        try await chat.subscribed()
        let pending = Task { try await chat.request("flaky", [1], timeout: .seconds(1), retries: 2) }
        try await arrivals(1, of: #"["flaky""#, at: transport.peers[0])
        clock.advance(by: .seconds(1))
        try await arrivals(2, of: #"["flaky""#, at: transport.peers[0])
        #expect(try await pending.value == [["connection": 0]])
        // Answered the second time: the third allowed send never happens.
        clock.advance(by: .seconds(1))
        #expect(transport.peers[0].receivedTexts.filter { $0.contains(#"["flaky""#) }.count == 2)
        session.disconnect()
    }

    @Test("request(retries: 1) sends twice, then throws the last .timedOut", .timeLimit(.minutes(1)))
    func requestRetriesRunOut() async throws {
        let (session, transport, clock, _) = makeSession(auth: nil)
        let chat = session.channel("/chat")
        try await session.connect()
        try await chat.subscribed()
        let pending = Task { try await chat.request("unanswered", timeout: .seconds(1), retries: 1) }
        try await arrivals(1, of: "unanswered", at: transport.peers[0])
        clock.advance(by: .seconds(1))
        try await arrivals(2, of: "unanswered", at: transport.peers[0])
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: RealtimeError.self) { try await pending.value }
        #expect(error?.code == .timedOut)
        #expect(transport.peers[0].receivedTexts.filter { $0.contains("unanswered") }.count == 2)
        session.disconnect()
    }

    @Test("a request whose connection ends unanswered fails with .connectionClosed, or with retries is sent again on the next connection",
          .timeLimit(.minutes(1)))
    func requestRetriedOnTheNextConnection() async throws {
        let (session, transport, clock, _) = makeSession(auth: nil)
        let chat = session.channel("/chat")
        try await session.connect()
        try await chat.subscribed()
        let once = Task { try await chat.request("later", "once", timeout: .seconds(30)) }
        let retried = Task { try await chat.request("later", "retried", timeout: .seconds(30), retries: 1) }
        try await arrivals(2, of: #"["later""#, at: transport.peers[0])
        transport.peers[0].drop()
        let error = await #expect(throws: RealtimeError.self) { try await once.value }
        #expect(error?.code == .connectionClosed)
        clock.advance(by: .seconds(2))  // the first reconnect delay is at most 1.5 s
        let next = await transport.peer(1)
        #expect(try await retried.value == [["connection": 1]])
        let resent = next.receivedTexts.filter { $0.contains(#"["later""#) }
        #expect(resent.count == 1 && resent.allSatisfy { $0.hasPrefix("42/chat,") && $0.hasSuffix(#"["later","retried"]"#) })
        session.disconnect()
    }

    @Test("retries end on a failure no retry can cure (the app disconnects), on cancellation, and a negative count is refused",
          .timeLimit(.minutes(1)))
    func requestRetriesStop() async throws {
        let (session, transport, clock, _) = makeSession(auth: nil)
        let chat = session.channel("/chat")
        try await session.connect()
        try await chat.subscribed()
        let refused = await #expect(throws: RealtimeError.self) { try await chat.request("x", retries: -1) }
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.message == "retries must be 0 or more, not -1")

        let cancelled = Task { try await chat.request("unanswered", timeout: .seconds(1), retries: 5) }
        try await arrivals(1, of: "unanswered", at: transport.peers[0])
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        clock.advance(by: .seconds(1))

        let ended = Task { try await chat.request("ignored", timeout: .seconds(1), retries: 5) }
        try await arrivals(1, of: "ignored", at: transport.peers[0])
        session.disconnect()
        let error = await #expect(throws: RealtimeError.self) { try await ended.value }
        #expect(error?.code == .disconnected)
        #expect(transport.peers[0].receivedTexts.filter { $0.contains("unanswered") }.count == 1)
        #expect(transport.peers[0].receivedTexts.filter { $0.contains("ignored") }.count == 1)
    }

    @Test("SessionOptions.connectTimeout bounds the wait for the Engine.IO open packet and the transport's opening")
    func connectTimeoutBoundsTheHandshake() async throws {
        let clock = ManualClock()
        // Accepts the upgrade and never sends the open packet.
        let transport = InMemoryTransport(autoAccept: false) { peer in peer.accept() }
        let session = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!), transport: transport,
                                      options: SessionOptions(delivery: .inline, connectTimeout: .seconds(7),
                                                              clock: clock, randomSource: .seeded(1)))
        let errors = Locked<[RealtimeError]>([])
        session.onError { error in errors.withLock { $0.append(error) } }
        session.start()
        let peer = await transport.peer(0)
        #expect(peer.request.connectTimeout == .seconds(7))
        clock.advance(by: .milliseconds(6_999))
        #expect(session.state == .connecting)
        #expect(errors.withLock { $0 }.isEmpty)
        clock.advance(by: .milliseconds(1))
        #expect(errors.withLock { $0.map(\.code) } == [.connectTimedOut])
        guard case .reconnecting = session.state else {
            Issue.record("expected reconnecting, got \(session.state)")
            return
        }
        session.disconnect()
    }
}
