import Foundation
import Realtime
import RealtimeTesting
import Testing

/// Sessions and authorizers for pusher-fake's app (`peer-key` / `peer-secret`).
enum PusherFake {
    /// Fast reconnects so the reconnect tests stay short.
    static let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1),
                                        jitter: .none)

    static func session(_ server: PusherFakeServer, port: Int? = nil,
                        auth: PusherAuth? = nil) -> RealtimeSession {
        RealtimeSession(dialect: .pusher(key: PusherFakeServer.key, auth: auth, host: "127.0.0.1",
                                         port: port ?? server.wsPort),
                        transport: PusherLive.transport,
                        options: SessionOptions(reconnectPolicy: policy, connectTimeout: .seconds(5)))
    }

    /// Local signing with the app secret; `user` is the presence identity.
    static func inline(user: String? = nil) -> PusherAuth {
        .inline(secret: PusherFakeServer.secret,
                presenceData: user.map { #"{"user_id":"\#($0)","user_info":{"via":"inline"}}"# },
                encryptionMasterKey: PusherFakeServer.encryptionMasterKey)
    }

    /// The SDK-signed endpoint of `sdk.py`; `user` becomes the presence member id.
    static func endpoint(_ app: PusherFakeApp, user: String? = nil) -> PusherAuth {
        .endpoint(app.authURL, params: user.map { ["user_id": $0] } ?? [:])
    }
}

/// Events seen by handlers, in order.
final class FakeEventLog: Sendable {
    private let events = Locked<[RealtimeEvent]>([])

    init(_ channel: RealtimeChannel, _ names: String...) {
        for name in names { record(channel, name) }
    }

    func record(_ channel: RealtimeChannel, _ name: String) {
        channel.on(name) { [events] event in events.withLock { $0.append(event) } }
    }

    var all: [RealtimeEvent] { events.withLock { $0 } }
    var count: Int { all.count }
    func data(_ name: String? = nil) -> [JSONValue] { all.filter { name == nil || $0.name == name }.map(\.data) }
}

/// The answer of `channel.subscribed()`, or `nil` when none came within `seconds` (a wedged subscription
/// then fails its test instead of hanging it).
func subscriptionAnswer(_ channel: RealtimeChannel, within seconds: Double = 20) async -> Result<Bool?, any Error>? {
    let answer = Locked<Result<Bool?, any Error>?>(nil)
    Task {
        do {
            let recovered = try await channel.subscribed()
            answer.withLock { $0 = .success(recovered) }
        } catch {
            answer.withLock { $0 = .failure(error) }
        }
    }
    _ = await fakeEventually(seconds: seconds) { answer.withLock { $0 } != nil }
    return answer.withLock { $0 }
}

/// Starts pusher-fake and the SDK app for one test and stops both when it ends, even when it throws.
func withPusherFake(_ body: (PusherFakeServer, PusherFakeApp) async throws -> Void) async throws {
    let server = try await PusherFakeServer.start()
    defer { server.stop() }
    let app = try await PusherFakeApp.start(for: server)
    defer { app.stop() }
    try await body(server, app)
}

/// Every scenario here runs over a real socket against pusher-fake (Ruby), a Pusher server we did not write;
/// events are triggered by the official `pusher` server SDK over pusher-fake's REST API. What pusher-fake
/// lacks (sign-in, server pings, 4xxx closes, `pusher:error`) stays covered by `PusherEmbeddedServerTests`.
@Suite("Pusher against pusher-fake (third-party server) and the official pusher SDK", .serialized,
       .timeLimit(.minutes(3)),
       .enabled(if: PusherFakeServer.unavailableReason == nil || PeerRequirement.required,
                "run Tests/Fixtures/pusher-fake/provision.sh"))
struct PusherFakeTests {
    static let wait = 20.0

    @Test("pusher-fake proves: public channel, REST-triggered object and string data arrive decoded; socket_id exclusion")
    func publicChannel() async throws {
        try await withPusherFake { server, app in
            let session = PusherFake.session(server)
            defer { session.disconnect() }
            let news = session.channel("news")
            let log = FakeEventLog(news, "greet")
            try await session.connect()
            _ = try await news.subscribed()
            try await app.trigger("news", "greet", ["hello": "world", "n": 1, "list": [1, "two", nil]])
            try await app.trigger("news", "greet", "plain text")
            await pusherWait("both triggers", seconds: Self.wait) { log.count == 2 }
            #expect(log.data() == [["hello": "world", "n": 1, "list": [1, "two", nil]], "plain text"])
            #expect(log.all.allSatisfy { $0.channel == "news" })

            // Our connection id is the server's socket id: a trigger that excludes it skips us, not the other.
            let other = PusherFake.session(server)
            defer { other.disconnect() }
            let otherLog = FakeEventLog(other.channel("news"), "greet")
            try await other.connect()
            _ = try await other.channel("news").subscribed()
            try await app.run(["op": "trigger", "channel": "news", "event": "greet", "data": "not for you",
                               "socket_id": .string(try #require(session.connectionID))])
            try await app.trigger("news", "greet", "for all")
            await pusherWait("the other session got both", seconds: Self.wait) { otherLog.count == 2 }
            await pusherWait("we got the second", seconds: Self.wait) { log.count == 3 }
            #expect(otherLog.data() == ["not for you", "for all"])
            #expect(log.data().last == "for all")
        }
    }

    @Test("pusher-fake proves: session.ping() gets its pong from the server's WebSocket layer, no Pusher message involved")
    func pingRoundTrip() async throws {
        try await withPusherFake { server, _ in
            let session = PusherFake.session(server)
            defer { session.disconnect() }
            try await session.connect()
            let roundTrip = try await session.ping()
            #expect(roundTrip > .zero && roundTrip < .seconds(10))
            #expect(session.state == .connected)
        }
    }

    @Test("pusher-fake proves: after backgroundGrace in the background the connection is closed (the server empties the channel) and nothing reconnects; the foreground re-joins and events flow again")
    func backgroundSuspension() async throws {
        try await withPusherFake { server, app in
            let session = RealtimeSession(
                dialect: .pusher(key: PusherFakeServer.key, host: "127.0.0.1", port: server.wsPort),
                transport: PusherLive.transport,
                options: SessionOptions(reconnectPolicy: PusherFake.policy, connectTimeout: .seconds(5),
                                        backgroundGrace: .milliseconds(200)))
            defer { session.disconnect() }
            let news = session.channel("news")
            let log = FakeEventLog(news, "item")
            try await session.connect()
            _ = try await news.subscribed()
            let firstID = session.connectionID
            session.applicationDidEnterBackground()
            await pusherWait("suspended", seconds: Self.wait) { session.state == .suspended }
            var vacated = false
            for _ in 0..<400 where !vacated {
                vacated = try await !app.occupied("news")
                if !vacated { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(vacated, "pusher-fake still lists a connection on news")
            try await Task.sleep(for: .seconds(1))   // several reconnect delays of this policy: none is taken
            #expect(session.state == .suspended)
            #expect(session.connectionID == nil)

            session.applicationWillEnterForeground()
            _ = try await news.subscribed()
            #expect(session.state == .connected)
            #expect(session.connectionID != firstID)
            try await app.trigger("news", "item", "after the foreground")
            await pusherWait("the event after the foreground", seconds: Self.wait) { log.count == 1 }
            #expect(log.data() == ["after the foreground"])
        }
    }

    @Test("pusher-fake proves: private channel authorised by an HTTP endpoint the official SDK signs")
    func privateEndpoint() async throws {
        try await withPusherFake { server, app in
            let session = PusherFake.session(server, auth: PusherFake.endpoint(app))
            defer { session.disconnect() }
            let orders = session.channel("private-orders")
            let log = FakeEventLog(orders, "created")
            try await session.connect()
            _ = try await orders.subscribed()
            let socketID = try #require(session.connectionID)
            await pusherWait("the endpoint's log line", seconds: Self.wait) { !app.authRequests.isEmpty }
            #expect(app.authRequests.map(\.channel) == ["private-orders"])
            #expect(app.authRequests.map(\.socketID) == [socketID])
            #expect(app.messages.first { $0["type"] == "auth" }?["content_type"] == "application/x-www-form-urlencoded")
            try await app.trigger("private-orders", "created", ["id": 7])
            await pusherWait("private event", seconds: Self.wait) { log.count == 1 }
            #expect(log.data() == [["id": 7]])
        }
    }

    @Test("pusher-fake proves: private channel authorised by a closure; a throwing closure fails only its channel")
    func privateClosure() async throws {
        try await withPusherFake { server, app in
            let asked = Locked<[PusherAuthRequest]>([])
            let authorizer = PusherAuth.provider { request in
                asked.withLock { $0.append(request) }
                if request.channel == "private-refused" {
                    throw RealtimeError(.authorizationFailed, "the app said no")
                }
                return try PusherAuth.sign(request, key: PusherFakeServer.key, secret: PusherFakeServer.secret,
                                                 presenceData: nil, userData: nil)
            }
            let session = PusherFake.session(server, auth: authorizer)
            defer { session.disconnect() }
            let room = session.channel("private-room")
            let log = FakeEventLog(room, "said")
            try await session.connect()
            _ = try await room.subscribed()
            let socketID = try #require(session.connectionID)
            #expect(asked.withLock { $0.map(\.connectionID) } == [socketID])
            #expect(asked.withLock { $0.map(\.channel) } == ["private-room"])

            let refused = session.channel("private-refused")
            await #expect(throws: RealtimeError.self) { _ = try await refused.subscribed() }
            if case .rejected(let error) = refused.state {
                #expect(error.code == .authorizationFailed)
            } else {
                Issue.record("expected private-refused to fail, got \(refused.state)")
            }
            try await app.trigger("private-room", "said", "still here")
            await pusherWait("private event", seconds: Self.wait) { log.count == 1 }
            #expect(log.data() == ["still here"])
            #expect(session.state == .connected)
        }
    }

    @Test("pusher-fake proves: private channel signed locally with the app secret (inline)")
    func privateInline() async throws {
        try await withPusherFake { server, app in
            let session = PusherFake.session(server, auth: PusherFake.inline())
            defer { session.disconnect() }
            let inbox = session.channel("private-inbox")
            let log = FakeEventLog(inbox, "mail")
            try await session.connect()
            _ = try await inbox.subscribed()
            try await app.trigger("private-inbox", "mail", ["from": "ops", "body": "Zoë ✉️"])
            await pusherWait("private event", seconds: Self.wait) { log.count == 1 }
            #expect(log.data() == [["from": "ops", "body": "Zoë ✉️"]])
            #expect(app.authRequests.isEmpty)
        }
    }

    @Test("pusher-fake proves: presence members, me with info, added/removed handlers (kept through removeAllHandlers) as a second session and a pysher process join and leave; leave() empties the roster")
    func presence() async throws {
        try await withPusherFake { server, app in
            let alice = PusherFake.session(server, auth: PusherFake.inline(user: "alice"))
            let bob = PusherFake.session(server, auth: PusherFake.endpoint(app, user: "bob"))
            defer { alice.disconnect(); bob.disconnect() }
            let aliceRoster = try alice.presence("presence-room")
            let bobRoster = try bob.presence("presence-room")
            let aliceRoom = alice.channel("presence-room")
            let changes = FakeEventLog(aliceRoom, "pusher:member_added", "pusher:member_removed")
            let joined = Locked<[PresenceMember]>([])
            let left = Locked<[PresenceMember]>([])
            aliceRoster.onMemberAdded { member in joined.withLock { $0.append(member) } }
            aliceRoster.onMemberRemoved { member in left.withLock { $0.append(member) } }
            try await alice.connect()
            _ = try await alice.channel("presence-room").subscribed()
            await pusherWait("alice alone", seconds: Self.wait) { aliceRoster.members.ids == ["alice"] }
            #expect(aliceRoster.members.myID == "alice")
            #expect(aliceRoster.me == PresenceMember(id: "alice", info: ["via": "inline"]))
            #expect(aliceRoster.members.members["alice"] == ["via": "inline"])

            let bobLifecycle = Locked<[ChannelLifecycleEvent]>([])
            bob.onChannelEvent { event in bobLifecycle.withLock { $0.append(event) } }
            try await bob.connect()
            _ = try await bob.channel("presence-room").subscribed()
            // The confirmation carries pusher-fake's presence snapshot: alice already there, bob with her.
            await pusherWait("bob's lifecycle event", seconds: Self.wait) { !bobLifecycle.withLock { $0 }.isEmpty }
            guard case .subscribed(let info)? = bobLifecycle.withLock({ $0 }).first?.kind else {
                Issue.record("no lifecycle event for bob's subscription")
                return
            }
            #expect(!info.isResubscription)
            let snapshot = info.serverPayload?["presence"]?["hash"]?.objectValue
            #expect(Set(snapshot?.keys ?? [:].keys) == ["alice", "bob"])
            #expect(info.serverPayload?["me"] == "bob")
            await pusherWait("bob in alice's roster", seconds: Self.wait) { aliceRoster.members.ids == ["alice", "bob"] }
            #expect(aliceRoster.members.members["bob"] == ["via": "endpoint"])
            await pusherWait("bob's own roster", seconds: Self.wait) { bobRoster.members.ids == ["alice", "bob"] }
            #expect(bobRoster.members.myID == "bob")
            #expect(bobRoster.members.members["alice"] == ["via": "inline"])
            struct Via: Decodable, Equatable { var via: String }
            #expect(try aliceRoster.member(id: "bob")?.info(as: Via.self) == Via(via: "endpoint"))
            await pusherWait("bob's arrival handled", seconds: Self.wait) { !joined.withLock { $0 }.isEmpty }
            #expect(joined.withLock { $0 } == [PresenceMember(id: "bob", info: ["via": "endpoint"])])
            // Member handlers run just before the event's own handlers: wait for the app's log too, or the
            // removal below can come first and drop bob's member_added from it.
            await pusherWait("bob's member_added logged", seconds: Self.wait) {
                !changes.data("pusher:member_added").isEmpty
            }

            // The app clears its handlers: its own log stops, the roster and its member handlers go on.
            alice.removeAllHandlers()

            // A second process: pysher, signing for itself, joins and leaves.
            try await app.run(["op": "join", "channel": "presence-room", "user_id": "py"])
            await pusherWait("pysher in alice's roster", seconds: Self.wait) {
                aliceRoster.members.ids == ["alice", "bob", "py"]
            }
            #expect(aliceRoster.members.members["py"] == ["via": "pysher"])
            // pysher prints its own confirmation when it arrives, which can be after alice hears of the join.
            await pusherWait("pysher's confirmation", seconds: Self.wait) { app.messages.contains { $0["type"] == "joined" } }
            let pysherView = app.messages.first { $0["type"] == "joined" }?["data"]?["presence"]?["hash"]?.objectValue
            #expect(pysherView.map { $0.keys.sorted() } == ["alice", "bob", "py"])
            try await app.run(["op": "leave"])
            await pusherWait("pysher left", seconds: Self.wait) { aliceRoster.members.ids == ["alice", "bob"] }

            bob.disconnect()
            await pusherWait("bob left", seconds: Self.wait) { aliceRoster.members.ids == ["alice"] }
            // The roster changes before its handlers run: wait for the handlers' own log too.
            await pusherWait("bob's removal handled", seconds: Self.wait) { left.withLock { $0.count } >= 2 }
            let added = changes.data("pusher:member_added").compactMap { $0["user_id"]?.stringValue }
            #expect(added == ["bob"])
            #expect(changes.data("pusher:member_removed").isEmpty)
            #expect(joined.withLock { $0.map(\.id) } == ["bob", "py"])
            #expect(left.withLock { $0 } == [PresenceMember(id: "py", info: ["via": "pysher"]),
                                             PresenceMember(id: "bob", info: ["via": "endpoint"])])
            #expect(aliceRoster.count == 1)

            // Leaving: pusher-fake drops the last member, and alice's roster no longer lists anyone.
            aliceRoom.leave()
            var vacated = false
            for _ in 0..<400 where !vacated {
                vacated = try await !app.occupied("presence-room")
                if !vacated { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(vacated, "pusher-fake still lists a member of presence-room")
            #expect(aliceRoster.members == PusherMembers())
        }
    }

    @Test("pusher-fake proves: client events between two sessions on a private channel, not echoed to the sender")
    func clientEvents() async throws {
        try await withPusherFake { server, _ in
            let alice = PusherFake.session(server, auth: PusherFake.inline())
            let bob = PusherFake.session(server, auth: PusherFake.inline())
            defer { alice.disconnect(); bob.disconnect() }
            let aliceLog = FakeEventLog(alice.channel("private-chat"), "client-typing", "client-ack")
            let bobLog = FakeEventLog(bob.channel("private-chat"), "client-typing")
            try await alice.connect()
            try await bob.connect()
            _ = try await alice.channel("private-chat").subscribed()
            _ = try await bob.channel("private-chat").subscribed()

            try await alice.channel("private-chat").send("client-typing", ["on": true, "who": "alice"])
            await pusherWait("bob got the client event", seconds: Self.wait) { bobLog.count == 1 }
            #expect(bobLog.data() == [["on": true, "who": "alice"]])
            try await bob.channel("private-chat").send("client-ack", ["seen": 1])
            await pusherWait("alice got the answer", seconds: Self.wait) { aliceLog.data("client-ack").count == 1 }
            #expect(aliceLog.data("client-ack") == [["seen": 1]])
            // pusher-fake writes an echo, if any, before it could relay bob's later answer.
            #expect(aliceLog.data("client-typing").isEmpty)
        }
    }

    @Test("pusher-fake proves: private-encrypted- events the SDK sealed are opened; tampered or plaintext ones are typed errors")
    func encrypted() async throws {
        try await withPusherFake { server, app in
            let viaEndpoint = PusherFake.session(server, auth: PusherFake.endpoint(app))
            let viaInline = PusherFake.session(server, auth: PusherFake.inline())
            defer { viaEndpoint.disconnect(); viaInline.disconnect() }
            let vault = viaEndpoint.channel("private-encrypted-vault")
            let endpointLog = FakeEventLog(vault, "secret")
            let inlineLog = FakeEventLog(viaInline.channel("private-encrypted-vault"), "secret")
            let errors = Locked<[RealtimeError]>([])
            viaEndpoint.onError { error in errors.withLock { $0.append(error) } }
            try await viaEndpoint.connect()
            try await viaInline.connect()
            _ = try await vault.subscribed()
            _ = try await viaInline.channel("private-encrypted-vault").subscribed()

            try await app.trigger("private-encrypted-vault", "secret", ["code": "42", "émoji": "🔐"])
            // The inline session derived its key from the master key itself; the SDK handed the other one over.
            await pusherWait("both opened it", seconds: Self.wait) { endpointLog.count == 1 && inlineLog.count == 1 }
            #expect(endpointLog.data() == [["code": "42", "émoji": "🔐"]])
            #expect(inlineLog.data() == [["code": "42", "émoji": "🔐"]])

            try await app.run(["op": "tampered", "channel": "private-encrypted-vault", "event": "secret",
                               "data": ["code": "forged"]])
            await pusherWait("a typed decryption error", seconds: Self.wait) {
                errors.withLock { $0.contains { $0.code == .decryptionFailed } }
            }
            let failure = errors.withLock { $0.first { $0.code == .decryptionFailed } }
            #expect(failure?.context.channel == "private-encrypted-vault")

            // Plaintext on an encrypted channel (a backend that forgot to encrypt) is reported, never delivered.
            try await app.run(["op": "raw", "channel": "private-encrypted-vault", "event": "secret",
                               "data": #"{"code":"plain"}"#])
            await pusherWait("plaintext refused", seconds: Self.wait) {
                errors.withLock { $0.filter { $0.code == .decryptionFailed }.count } == 2
            }

            try await app.trigger("private-encrypted-vault", "secret", ["code": "43"])
            await pusherWait("the next event still opens", seconds: Self.wait) { endpointLog.count == 2 }
            #expect(endpointLog.data() == [["code": "42", "émoji": "🔐"], ["code": "43"]])
            #expect(viaEndpoint.state == .connected)
            #expect(vault.state == .subscribed(recovered: nil))
        }
    }

    @Test("pusher-fake proves: cache- channels, pusher:cache_miss first, then the last event replayed to a new subscriber")
    func cacheChannel() async throws {
        try await withPusherFake { server, app in
            let first = PusherFake.session(server)
            let second = PusherFake.session(server)
            defer { first.disconnect(); second.disconnect() }
            let firstLog = FakeEventLog(first.channel("cache-quotes"), "pusher:cache_miss", "quote")
            try await first.connect()
            _ = try await first.channel("cache-quotes").subscribed()
            await pusherWait("cache miss", seconds: Self.wait) { firstLog.data("pusher:cache_miss").count == 1 }

            try await app.trigger("cache-quotes", "quote", ["v": 41])
            try await app.trigger("cache-quotes", "quote", ["v": 42])
            await pusherWait("live quotes", seconds: Self.wait) { firstLog.data("quote").count == 2 }

            let secondLog = FakeEventLog(second.channel("cache-quotes"), "pusher:cache_miss", "quote")
            try await second.connect()
            _ = try await second.channel("cache-quotes").subscribed()
            await pusherWait("the last quote replayed", seconds: Self.wait) { secondLog.count == 1 }
            // pusher-fake sends either the replay or a cache miss, so the one event seen is the whole answer.
            #expect(secondLog.all.map(\.name) == ["quote"])
            #expect(secondLog.data("quote") == [["v": 42]])
            #expect(secondLog.all.first?.channel == "cache-quotes")
        }
    }

    @Test("pusher-fake proves: a wrong signature (pusher_internal:subscription_error) fails the channel (event, typed error, state); later subscribes do not wedge")
    func wrongSignature() async throws {
        try await withPusherFake { server, app in
            let authorizer = PusherAuth.provider { request in
                if request.channel == "private-bad" {
                    return PusherAuthorization(auth: PusherFakeServer.key + ":" + String(repeating: "0", count: 64))
                }
                return try PusherAuth.sign(request, key: PusherFakeServer.key, secret: PusherFakeServer.secret,
                                                 presenceData: nil, userData: nil)
            }
            let session = PusherFake.session(server, auth: authorizer)
            defer { session.disconnect() }
            let seenByAny = Locked<[RealtimeEvent]>([])
            session.onAny { event in
                if event.name == "pusher:subscription_error" { seenByAny.withLock { $0.append(event) } }
            }
            try await session.connect()
            let bad = session.channel("private-bad")
            let badEvents = FakeEventLog(bad, "pusher:subscription_error")
            switch await subscriptionAnswer(bad) {
            case .failure(let error as RealtimeError)?:
                #expect(error.code == .subscriptionRejected)
                #expect(error.context.channel == "private-bad")
            case let other:
                Issue.record("a wrong signature must fail the channel with a RealtimeError, got \(String(describing: other))")
            }
            if case .rejected(let error) = bad.state {
                #expect(error.code == .subscriptionRejected)
            } else {
                Issue.record("expected private-bad to be failed, got \(bad.state)")
            }
            #expect(session.state == .connected)
            // The channel's own handlers and onAny see the refusal as an event (pusher-fake sends `{}`).
            await pusherWait("the subscription_error event", seconds: Self.wait) { badEvents.count == 1 }
            #expect(badEvents.data().first?["type"] == "SubscriptionError")
            #expect(seenByAny.withLock { $0.map(\.channel) } == ["private-bad"])

            let good = session.channel("private-good")
            let log = FakeEventLog(good, "ok")
            _ = try await good.subscribed()
            // Asking again for the refused channel is answered again (refused again), not left waiting.
            switch await subscriptionAnswer(session.channel("private-bad")) {
            case .failure(let error as RealtimeError)?:
                #expect(error.code == .subscriptionRejected)
            case let other:
                Issue.record("asked again, private-bad must be refused again, got \(String(describing: other))")
            }
            _ = try await session.channel("after-refusals").subscribed()
            try await app.trigger("private-good", "ok", 1)
            await pusherWait("the good channel works", seconds: Self.wait) { log.count == 1 }
            #expect(log.data() == [1])
        }
    }

    @Test("pusher-fake proves: after leave() (the server reports the channel vacated) no more events arrive; joining again works")
    func unsubscribe() async throws {
        try await withPusherFake { server, app in
            let session = PusherFake.session(server)
            defer { session.disconnect() }
            let news = session.channel("news")
            let control = session.channel("control")
            let newsLog = FakeEventLog(news, "item")
            let controlLog = FakeEventLog(control, "mark")
            try await session.connect()
            _ = try await news.subscribed()
            _ = try await control.subscribed()
            try await app.trigger("news", "item", 1)
            await pusherWait("first item", seconds: Self.wait) { newsLog.count == 1 }
            #expect(try await app.occupied("news"))

            news.leave()
            var vacated = false
            for _ in 0..<400 where !vacated {
                vacated = try await !app.occupied("news")
                if !vacated { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(vacated, "pusher-fake still lists a connection on news")
            #expect(news.state == .unsubscribed)
            try await app.trigger("news", "item", 2)
            try await app.trigger("control", "mark", "after")
            await pusherWait("the control event", seconds: Self.wait) { controlLog.count == 1 }
            #expect(newsLog.data() == [1])

            // Joining again works: the channel was left cleanly on both sides.
            _ = try await session.channel("news").subscribed()
            try await app.trigger("news", "item", 3)
            await pusherWait("the item after re-joining", seconds: Self.wait) { newsLog.count == 2 }
            #expect(newsLog.data() == [1, 3])
        }
    }

    @Test("pusher-fake proves: killed and restarted, every channel is re-authorised and re-joined")
    func reconnectAfterRestart() async throws {
        try await withPusherFake { server, app in
            let session = PusherFake.session(server, auth: PusherFake.endpoint(app, user: "r"))
            defer { session.disconnect() }
            let connections = Locked(0)
            session.onStateChange { _, new in if new == .connected { connections.withLock { $0 += 1 } } }
            let names = ["news", "private-room", "presence-room", "private-encrypted-vault"]
            let logs = names.map { FakeEventLog(session.channel(ChannelID($0)), "tick") }
            let roster = try session.presence("presence-room")
            try await session.connect()
            for name in names { _ = try await session.channel(ChannelID(name)).subscribed() }
            let privateNames = ["presence-room", "private-encrypted-vault", "private-room"]
            // The endpoint's log line may reach the test after its answer reached the session.
            await pusherWait("authorised", seconds: Self.wait) { app.authRequests.count == privateNames.count }
            #expect(app.authRequests.map(\.channel).sorted() == privateNames)

            server.kill()
            await pusherWait("the session notices", seconds: Self.wait) { session.state != .connected }
            try await server.restart()
            await pusherWait("a second connection", seconds: Self.wait) {
                connections.withLock { $0 } == 2 && session.state == .connected
            }
            // A restarted pusher-fake hands out the same socket ids again (they come from Ruby object ids),
            // so the new requests are told apart by count, not by id.
            await pusherWait("re-authorised", seconds: Self.wait) { app.authRequests.count == 2 * privateNames.count }
            let again = app.authRequests.dropFirst(privateNames.count)
            #expect(again.map(\.channel).sorted() == privateNames)
            #expect(again.allSatisfy { $0.socketID == session.connectionID })
            await pusherWait("presence re-joined", seconds: Self.wait) { roster.members.ids == ["r"] }
            #expect(roster.members.myID == "r")
            for name in names { _ = try await session.channel(ChannelID(name)).subscribed() }
            // pusher-fake forgot every subscription, so an event on each channel proves each was re-joined.
            for name in names { try await app.trigger(name, "tick", ["after": "restart"]) }
            await pusherWait("a tick on every channel", seconds: Self.wait) { logs.allSatisfy { $0.count == 1 } }
            for log in logs { #expect(log.data() == [["after": "restart"]]) }
            #expect(connections.withLock { $0 } == 2)
        }
    }

    @Test("pusher-fake proves: a dropped link reconnects, re-authorises and re-joins; another member sees leave and return")
    func reconnectAfterDroppedLink() async throws {
        try await withPusherFake { server, app in
            let proxy = try FaultProxy(upstreamPort: server.wsPort)
            defer { proxy.stop() }
            let alice = PusherFake.session(server, port: proxy.port, auth: PusherFake.endpoint(app, user: "alice"))
            let bob = PusherFake.session(server, auth: PusherFake.inline(user: "bob"))
            defer { alice.disconnect(); bob.disconnect() }
            let aliceLog = FakeEventLog(alice.channel("private-room"), "tick")
            alice.channel("presence-room")
            try await alice.connect()
            _ = try await alice.channel("presence-room").subscribed()
            _ = try await alice.channel("private-room").subscribed()
            // Bob joins second, so the only changes he sees are alice leaving and coming back.
            let bobRoster = try bob.presence("presence-room")
            let bobChanges = FakeEventLog(bob.channel("presence-room"), "pusher:member_added", "pusher:member_removed")
            try await bob.connect()
            _ = try await bob.channel("presence-room").subscribed()
            await pusherWait("both members", seconds: Self.wait) { bobRoster.members.ids == ["alice", "bob"] }
            let firstID = try #require(alice.connectionID)

            proxy.resetAll()
            await pusherWait("alice back on a new connection", seconds: Self.wait) {
                alice.state == .connected && alice.connectionID != nil && alice.connectionID != firstID
            }
            let secondID = try #require(alice.connectionID)
            await pusherWait("alice re-authorised", seconds: Self.wait) {
                app.authRequests.filter { $0.socketID == secondID }.map(\.channel).sorted() == ["presence-room", "private-room"]
            }
            await pusherWait("bob saw alice leave and return", seconds: Self.wait) {
                bobChanges.all.map(\.name) == ["pusher:member_removed", "pusher:member_added"]
            }
            #expect(bobChanges.all.allSatisfy { $0.data["user_id"] == "alice" })
            await pusherWait("alice in bob's roster again", seconds: Self.wait) { bobRoster.members.ids == ["alice", "bob"] }
            _ = try await alice.channel("private-room").subscribed()
            try await app.trigger("private-room", "tick", "after the drop")
            await pusherWait("alice's private channel works again", seconds: Self.wait) { aliceLog.count == 1 }
            #expect(aliceLog.data() == ["after the drop"])
        }
    }
}
