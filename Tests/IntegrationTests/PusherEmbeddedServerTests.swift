import Foundation
import Realtime
import RealtimePusherTesting
import RealtimeTesting
import Testing

enum PusherLive {
    static let transport = WebSocketTransport()
    static let key = "278d425bdf160c739803"
    static let secret = "7ad3773142a6692b25b8"
    /// Fast reconnects so the tests stay short; no jitter so timings are readable.
    static let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(2),
                                        jitter: .none)

    static func session(_ server: PusherTestServer, key: String = PusherLive.key, userID: String = "1",
                        secret: String = PusherLive.secret) -> RealtimeSession {
        let dialect = PusherDialect.pusher(
            key: key,
            auth: .inline(secret: secret, presenceData: #"{"user_id":"\#(userID)","user_info":{"name":"u\#(userID)"}}"#,
                          userData: #"{"id":"\#(userID)"}"#),
            host: "127.0.0.1", port: server.port)
        return RealtimeSession(dialect: dialect, transport: transport,
                               options: SessionOptions(reconnectPolicy: policy, connectTimeout: .seconds(3)))
    }
}

/// Polls `condition` every 10 ms for up to `seconds`.
func pusherWait(_ description: String, seconds: Double = 15, sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: () -> Bool) async {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return }
        try? await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("timed out waiting for \(description)", sourceLocation: sourceLocation)
}

@Suite("Pusher against the embedded loopback server")
struct PusherEmbeddedServerTests {
    @Test("public trigger, private client events between two clients, presence join and leave")
    func twoClients() async throws {
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        let alice = PusherLive.session(server, userID: "1")
        let bob = PusherLive.session(server, userID: "2")
        defer { alice.disconnect(); bob.disconnect() }
        let news = Locked<[JSONValue]>([])
        alice.channel("news").on("flash") { event in news.withLock { $0.append(event.data) } }
        let typing = Locked<[RealtimeEvent]>([])
        bob.channel("presence-room").on("client-typing") { event in typing.withLock { $0.append(event) } }
        let aliceRoster = try alice.presence("presence-room")
        try await alice.connect()
        try await bob.connect()
        _ = try await alice.channel("news").subscribed()
        _ = try await alice.channel("presence-room").subscribed()
        _ = try await bob.channel("presence-room").subscribed()

        server.trigger("news", event: "flash", data: ["n": 1])
        await pusherWait("trigger") { news.withLock { $0 } == [["n": 1]] }

        try await alice.channel("presence-room").send("client-typing", ["on": true])
        await pusherWait("client event") { typing.withLock { $0.count } == 1 }
        #expect(typing.withLock { $0.first?.data } == ["on": true])
        #expect(typing.withLock { $0.first?.userID } == "1")

        await pusherWait("bob in alice's roster") { aliceRoster.members.ids == ["1", "2"] }
        #expect(aliceRoster.members.myID == "1")
        #expect(aliceRoster.members.members["2"] == ["name": "u2"])
        bob.disconnect()
        await pusherWait("bob left") { aliceRoster.members.ids == ["1"] }
    }

    @Test("by default, handlers run on the transport group's threads, not on Dispatch's shared pool")
    func defaultDeliveryThread() async throws {
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let dialect = PusherDialect.pusher(key: PusherLive.key, auth: .inline(secret: PusherLive.secret),
                                           host: "127.0.0.1", port: server.port)
        let session = RealtimeSession(dialect: dialect, transport: WebSocketTransport(group: group))
        defer { session.disconnect() }
        let threads = Locked<[String]>([])
        session.channel("news").on("flash") { _ in threads.withLock { $0.append(Self.threadName()) } }
        try await session.connect()
        _ = try await session.channel("news").subscribed()
        server.trigger("news", event: "flash", data: ["n": 1])
        await pusherWait("the event") { !threads.withLock { $0 }.isEmpty }
        // The loop's thread runs the calls of its reads itself while the delivery's thread is idle.
        #expect(threads.withLock { $0 }.allSatisfy { ["realtime-loop-0", "realtime-dlv-0"].contains($0) })
        #expect(threads.withLock { $0 }.count == 1)
    }

    /// The system name of the calling thread.
    private static func threadName() -> String {
        let text = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a wrong secret fails the private channel only; a wrong key is refused for good with 4001")
    func refusals() async throws {
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        let wrongSecret = PusherLive.session(server, secret: "not-the-secret")
        defer { wrongSecret.disconnect() }
        try await wrongSecret.connect()
        await #expect(throws: RealtimeError.self) { _ = try await wrongSecret.channel("private-x").subscribed() }
        _ = try await wrongSecret.channel("news").subscribed()
        #expect(wrongSecret.state == .connected)

        let wrongKey = PusherLive.session(server, key: "nope")
        defer { wrongKey.disconnect() }
        await #expect(throws: RealtimeError.self) { try await wrongKey.connect() }
        if case .failed(let error) = wrongKey.state {
            #expect(error.code == .connectionRefused)
            #expect(error.context.closeCode == 4001)
        } else {
            Issue.record("expected failed, got \(wrongKey.state)")
        }
    }

    @Test("a 4200 close reconnects at once and re-authorizes; sign-in is re-run; server pings are answered")
    func reconnectAndSignin() async throws {
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        let session = PusherLive.session(server, userID: "9")
        defer { session.disconnect() }
        let notices = Locked<[JSONValue]>([])
        session.on("notice") { event in notices.withLock { $0.append(event.data) } }
        try await session.connect()
        let room = session.channel("private-room")
        _ = try await room.subscribed()
        let user = try await session.signIn()
        #expect(user.id == "9")
        await pusherWait("user channel") { server.clients.first?.channels.contains("#server-to-user-9") == true }
        server.sendToUser("9", event: "notice", data: ["hello": "you"])
        await pusherWait("user event") { notices.withLock { $0 } == [["hello": "you"]] }

        server.pingAll()
        await pusherWait("pong") { server.receivedFrames.contains { $0.contains("pusher:pong") } }

        let firstID = session.connectionID
        server.closeAll(code: 4200, reason: "generic reconnect")
        await pusherWait("new connection") { session.connectionID != nil && session.connectionID != firstID }
        await pusherWait("re-subscribed and signed in") {
            guard let client = server.clients.first else { return false }
            return client.channels.contains("private-room") && client.userID == "9"
                && client.channels.contains("#server-to-user-9")
        }
        // The server records the channel before its confirmation reaches the session.
        await pusherWait("room re-joined") { room.state == .subscribed(recovered: nil) }
        #expect(room.state == .subscribed(recovered: nil))
    }

    @Test("shutdown() closes with 4200: the session reconnects at once for closedByServer(4200), reports no error")
    func shutdownClosesCleanly() async throws {
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        defer { server.stop() }
        let session = PusherLive.session(server)
        defer { session.disconnect() }
        let recorder = FirstDropRecorder(session)
        try await session.connect()
        _ = try await session.channel("private-room").subscribed()
        await server.shutdown()
        #expect(server.clients.isEmpty)
        await pusherWait("reconnecting") { recorder.drop != nil }
        #expect(recorder.drop?.reason == .closedByServer(code: 4200, reason: "server shutting down"))
        #expect(recorder.drop?.delay == .zero)   // 4200–4299: reconnect at once
        #expect(recorder.errorsBeforeDrop.isEmpty, "\(recorder.errorsBeforeDrop)")
    }

    @Test("encrypted channel: the server seals with the derived key, our client opens it; client events refused")
    func encrypted() async throws {
        let masterKey = Array("0123456789abcdef0123456789abcdef".utf8)
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret, encryptionMasterKey: masterKey)
        let session = RealtimeSession(
            dialect: .pusher(key: PusherLive.key,
                             auth: .inline(secret: PusherLive.secret, encryptionMasterKey: masterKey),
                             host: "127.0.0.1", port: server.port),
            transport: PusherLive.transport,
            options: SessionOptions(reconnectPolicy: PusherLive.policy, connectTimeout: .seconds(3)))
        defer { session.disconnect() }
        let vault = session.channel("private-encrypted-vault")
        let seen = Locked<[RealtimeEvent]>([])
        vault.on("secret") { event in seen.withLock { $0.append(event) } }
        try await session.connect()
        _ = try await vault.subscribed()
        server.trigger("private-encrypted-vault", event: "secret", data: ["code": "42", "émoji": "🔐"])
        await pusherWait("decrypted") { seen.withLock { $0.count } == 1 }
        #expect(seen.withLock { $0.first?.data } == ["code": "42", "émoji": "🔐"])
        #expect(!server.receivedFrames.contains { $0.contains("shared_secret") })
        await #expect(throws: RealtimeError.self) { try await vault.send("client-x", ["a": 1]) }
    }

    @Test("Bird: connection_id, member_data presence, bird:signin with member_id and the user channel")
    func bird() async throws {
        let server = try PusherTestServer(key: "bird-key", secret: PusherLive.secret, vendor: .bird)
        func client(_ member: String) -> RealtimeSession {
            RealtimeSession(dialect: .bird(key: "bird-key",
                                           auth: .inline(secret: PusherLive.secret,
                                                         presenceData: #"{"member_id":"\#(member)","member_info":{"m":"\#(member)"}}"#,
                                                         userData: #"{"member_id":"\#(member)"}"#),
                                           host: "127.0.0.1", port: server.port),
                            transport: PusherLive.transport,
                            options: SessionOptions(reconnectPolicy: PusherLive.policy, connectTimeout: .seconds(3)))
        }
        let first = client("a")
        let second = client("b")
        defer { first.disconnect(); second.disconnect() }
        let roster = try first.presence("presence-room")
        try await first.connect()
        #expect(first.connectionID == "conn-1")
        try await second.connect()
        _ = try await first.channel("presence-room").subscribed()
        _ = try await second.channel("presence-room").subscribed()
        await pusherWait("both members") { roster.members.ids == ["a", "b"] }
        #expect(roster.members.myID == "a")
        #expect(roster.members.members["b"] == ["m": "b"])
        let user = try await second.signIn()
        #expect(user.id == "b")
        let got = Locked<[JSONValue]>([])
        second.on("hello") { event in got.withLock { $0.append(event.data) } }
        await pusherWait("member channel") {
            server.clients.contains { $0.channels.contains("#server-to-user-b") }
        }
        #expect(!server.receivedFrames.contains { $0.contains("#server-to-user-b") && $0.contains("auth") })
        server.sendToUser("b", event: "hello", data: ["x": 1])
        await pusherWait("user event") { got.withLock { $0 } == [["x": 1]] }
        await #expect(throws: RealtimeError.self) { _ = try await first.channel("private-encrypted-x").subscribed() }
    }
    @Test("errors as events over a real socket: a wrong signature gives pusher:error (session) and pusher:subscription_error (channel); Bird's bird:error too")
    func errorsAsEvents() async throws {
        for vendor in [PusherVendor.pusher, .bird] {
            let key = vendor == .bird ? "bird-key" : PusherLive.key
            let server = try PusherTestServer(key: key, secret: PusherLive.secret, vendor: vendor)
            let authorizer = PusherAuth.inline(secret: "not-the-secret")
            let dialect: PusherDialect = vendor == .bird
                ? .bird(key: key, auth: authorizer, host: "127.0.0.1", port: server.port)
                : .pusher(key: key, auth: authorizer, host: "127.0.0.1", port: server.port)
            let session = RealtimeSession(dialect: dialect, transport: PusherLive.transport,
                                          options: SessionOptions(reconnectPolicy: PusherLive.policy,
                                                                  connectTimeout: .seconds(3)))
            defer { session.disconnect() }
            let prefix = vendor.systemPrefix
            let sessionErrors = Locked<[RealtimeEvent]>([])
            session.on(prefix + "error") { event in sessionErrors.withLock { $0.append(event) } }
            let channelErrors = Locked<[RealtimeEvent]>([])
            let room = session.channel("private-room")
            room.on(prefix + "subscription_error") { event in channelErrors.withLock { $0.append(event) } }
            try await session.connect()
            await #expect(throws: RealtimeError.self) { _ = try await room.subscribed() }
            await pusherWait("both events (\(vendor.name))") {
                sessionErrors.withLock { $0.count } == 1 && channelErrors.withLock { $0.count } == 1
            }
            #expect(sessionErrors.withLock { $0.first?.data["message"]?.stringValue?.hasPrefix("Invalid signature") } == true)
            #expect(channelErrors.withLock { $0.first?.channel } == "private-room")
            if case .rejected(let error) = room.state { #expect(error.code == .subscriptionRejected) }
            else { Issue.record("expected a failed channel, got \(room.state)") }
            #expect(session.state == .connected)
        }
    }
    @Test("typed APIs over a real socket: subscription counts, user-scope events and watchlist changes after signIn()")
    func typedAPIs() async throws {
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        let session = PusherLive.session(server, userID: "5")
        let other = PusherLive.session(server, userID: "6")
        defer { session.disconnect(); other.disconnect() }
        let counts = Locked<[Int]>([])
        try session.channel("news").onSubscriptionCount { count in counts.withLock { $0.append(count) } }
        let notices = Locked<[JSONValue]>([])
        try session.user.on("notice") { event in notices.withLock { $0.append(event.data) } }
        let changes = Locked<[PusherWatchlistEvent]>([])
        try session.user.onWatchlist { change in changes.withLock { $0.append(change) } }
        try await session.connect()
        try await other.connect()
        _ = try await session.channel("news").subscribed()
        _ = try await other.channel("news").subscribed()
        server.sendSubscriptionCount("news")
        await pusherWait("count") { counts.withLock { $0 } == [2] }

        #expect(try await session.user.signIn().id == "5")
        await pusherWait("user channel") { server.clients.contains { $0.channels.contains("#server-to-user-5") } }
        server.trigger("news", event: "notice", data: ["on": "news"])
        server.sendToUser("5", event: "notice", data: ["to": "you"])
        server.sendWatchlistEvent(to: "5", name: "online", userIDs: ["6"])
        await pusherWait("watchlist") { changes.withLock { $0.count } == 1 }
        #expect(changes.withLock { $0 } == [PusherWatchlistEvent(kind: .online, userIDs: ["6"])])
        #expect(notices.withLock { $0 } == [["to": "you"]])
    }
}
