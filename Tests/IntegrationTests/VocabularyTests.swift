import Foundation
import Realtime
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) import RealtimeSocketIO
@_spi(DialectAuthoring) import RealtimePusher
@_spi(DialectAuthoring) import RealtimeActionCable
import RealtimeTesting
import Testing

// One vocabulary across dialects (#11): the same option names on every constructor, closures that compile as
// written, and dialect-only calls that fail the same way everywhere. In memory, no peers.

/// Where the README sample gets its tokens.
actor TokenStore {
    private var issued = 0
    func fresh() throws -> String {
        issued += 1
        return "t-\(issued)"
    }
}

/// Where the README sample gets its Pusher signatures.
struct SigningBackend: Sendable {
    func sign(_ request: PusherAuthRequest) async throws -> PusherAuthorization {
        PusherAuthorization(auth: "app-key:signed-\(request.channel ?? "user")")
    }
}

/// The README's "One vocabulary" sample in `@MainActor` code, where an opaque `some RealtimeDialect` parameter
/// made the compiler check these closures without their `@Sendable` context. It compiles with no annotation.
@MainActor
final class MainActorVocabularySample {
    var title = "chat"

    func sessions(chatURL: URL, cableURL: URL) -> [RealtimeSession] {
        let tokens = TokenStore()
        let backend = SigningBackend()
        // README vocabulary: begin
        // The closures compile as written in Swift 6, in @MainActor code too: there is no @Sendable to add.
        let options = SessionOptions(reconnectPolicy: ReconnectPolicy(initialDelay: .seconds(2)), connectTimeout: .seconds(10))
        let chat = RealtimeSession(dialect: .socketIO(url: chatURL, auth: .provider { namespace in
            ["token": .string(try await tokens.fresh()), "namespace": .string(namespace.name)]
        }), options: options)
        let cable = RealtimeSession(dialect: .actionCable(url: cableURL, auth: .provider {
            .init(headers: [HTTPHeader("Authorization", "Bearer \(try await tokens.fresh())")])
        }, liveness: Liveness(pingTimeout: .seconds(10))), options: options)
        let pusher = RealtimeSession(dialect: .pusher(key: "app-key", auth: .provider { request in
            try await backend.sign(request)                  // a PusherAuthorization
        }), options: options)
        // README vocabulary: end
        return [chat, cable, pusher]
    }

    /// A provider that reads main-actor state hops to the main actor, as any `@Sendable` closure would.
    func titledSession(chatURL: URL) -> RealtimeSession {
        RealtimeSession(dialect: .socketIO(url: chatURL, auth: .provider { _ in
            ["room": .string(await self.title)]
        }))
    }
}

/// Calls the old spellings from deprecated witnesses, so that this file compiles with warnings as errors.
protocol OldSpellings {
    func pusher() -> PusherDialect
    func bird() -> PusherDialect
    func cable() -> ActionCableDialect
    func oldTimeouts(of dialect: PusherDialect) -> (Duration, Duration, Bool)
    func oldCableTimeouts(of dialect: ActionCableDialect) -> (Duration, Duration, Bool)
    func retuned(_ dialect: ActionCableDialect) -> ActionCableDialect
    func oldChannelStates(_ error: RealtimeError) -> [ChannelState]
    func isLeft(_ state: ChannelState) -> Bool
}

struct DeprecatedSpellings: OldSpellings {
    @available(*, deprecated)
    func pusher() -> PusherDialect {
        let signer: PusherAuthorizer = .custom { _ in PusherAuthorization(auth: "k:old") }
        return .pusher(key: "k", cluster: "eu", authorizer: signer, activityTimeout: .seconds(50),
                       pongTimeout: .seconds(5))
    }

    @available(*, deprecated)
    func bird() -> PusherDialect {
        .bird(appKey: "k", region: "eu1", authorizer: .inline(secret: "s"))
    }

    @available(*, deprecated)
    func cable() -> ActionCableDialect {
        .actionCable(url: URL(string: "ws://127.0.0.1:1/cable")!,
                     credentials: { .init(queryItems: [URLQueryItem(name: "token", value: "old")]) })
    }

    @available(*, deprecated)
    func oldTimeouts(of dialect: PusherDialect) -> (Duration, Duration, Bool) {
        (dialect.activityTimeout, dialect.pongTimeout, dialect.authorizer != nil)
    }

    @available(*, deprecated)
    func oldCableTimeouts(of dialect: ActionCableDialect) -> (Duration, Duration, Bool) {
        (dialect.pingInterval, dialect.staleGrace, dialect.credentials != nil)
    }

    @available(*, deprecated)
    func retuned(_ dialect: ActionCableDialect) -> ActionCableDialect {
        var changed = dialect
        changed.pingInterval = .seconds(4)
        changed.staleGrace = .seconds(8)
        changed.credentials = nil
        return changed
    }

    @available(*, deprecated)
    func oldChannelStates(_ error: RealtimeError) -> [ChannelState] { [.failed(error), .ended(error), .left] }

    @available(*, deprecated)
    func isLeft(_ state: ChannelState) -> Bool {
        if case .left = state { true } else { false }
    }
}

/// The error every dialect-only call throws off its dialect.
private func expectUnsupported(_ call: String, dialect: String, needs: String, channel: ChannelID? = nil,
                               sourceLocation: SourceLocation = #_sourceLocation,
                               _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("\(call) on \(dialect) must throw", sourceLocation: sourceLocation)
    } catch let error as RealtimeError {
        #expect(error.code == .unsupported, sourceLocation: sourceLocation)
        #expect(error.message == "\(call) is not supported by the \(dialect) dialect; it needs \(needs)",
                sourceLocation: sourceLocation)
        #expect(error.context.detail == call, sourceLocation: sourceLocation)
        #expect(error.context.channel == channel, sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("One vocabulary across dialects")
struct VocabularyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("the README's vocabulary sample is the @MainActor code above, line for line")
    func readmeSampleMatches() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let start = try #require(source.range(of: "        // README vocabulary: begin\n"))
        let end = try #require(source.range(of: "        // README vocabulary: end", range: start.upperBound..<source.endIndex))
        let compiled = source[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }.joined(separator: "\n")
        let shown = try #require(PusherReadmeSampleTests.readmeBlock(after: "Tests/IntegrationTests/VocabularyTests.swift",
                                                                     in: readme))
        #expect(shown == compiled)
    }

    @Test("closures written without @Sendable compile on the main actor and run where the session needs them")
    func providersCompileAndRun() async throws {
        let sample = MainActorVocabularySample()
        let sessions = await sample.sessions(chatURL: URL(string: "http://127.0.0.1:1")!,
                                             cableURL: URL(string: "ws://127.0.0.1:1/cable")!)
        #expect(sessions.map(\.dialectName) == ["socket.io", "actioncable", "pusher"])
        #expect(await sample.titledSession(chatURL: URL(string: "http://127.0.0.1:1")!).dialectName == "socket.io")

        // The same spellings outside any actor, run over the in-memory transport.
        let tokens = TokenStore()
        let backend = SigningBackend()
        let clock = ManualClock()
        let transport = InMemoryTransport(autoAccept: false) { peer in
            if peer.request.url.path.hasSuffix("/cable") {
                peer.accept(subprotocol: ActionCableDialect.protocolName)
                peer.send(text: #"{"type":"welcome"}"#)
                return
            }
            peer.onReceive { frame, peer in
                if case .text(let text) = frame, text.hasPrefix("40") { peer.send(text: #"40{"sid":"ns"}"#) }
            }
            peer.accept()
            peer.send(text: #"0{"sid":"eio","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":100000}"#)
        }
        let options = SessionOptions(delivery: .inline, clock: clock)
        let chat = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!, auth: .provider { namespace in
            ["token": .string(try await tokens.fresh()), "namespace": .string(namespace.name)]
        }), transport: transport, options: options)
        let cable = RealtimeSession(dialect: .actionCable(url: URL(string: "ws://127.0.0.1:1/cable")!, auth: .provider {
            .init(headers: [HTTPHeader("Authorization", "Bearer \(try await tokens.fresh())")])
        }), transport: transport, options: options)
        defer {
            chat.disconnect()
            cable.disconnect()
        }
        try await chat.connect()
        try await chat.channel("/").subscribed()
        try await cable.connect()
        let sent = transport.peers.flatMap(\.receivedTexts)
        #expect(sent.contains(#"40{"namespace":"/","token":"t-1"}"#))
        #expect(transport.peers.last?.request.headers == [HTTPHeader("Authorization", "Bearer t-2")])

        let pusher = PusherDialect.pusher(key: "app-key", auth: .provider { request in try await backend.sign(request) })
        guard case .provider(let sign)? = pusher.auth else {
            Issue.record("the Pusher provider was not kept")
            return
        }
        let answer = try await sign(PusherAuthRequest(connectionID: "1.1", channel: "private-x", vendor: .pusher))
        #expect(answer.auth == "app-key:signed-private-x")
    }

    @Test("an auth provider that throws refuses the channel with the same error on Socket.IO, Pusher and Bird",
          .timeLimit(.minutes(1)))
    func providerFailuresAreTheSameEverywhere() async throws {
        struct Offline: Error {}
        /// Accepts and greets as a server of `vendor` ("socket.io", "pusher" or "bird") would.
        func server(_ vendor: String) -> InMemoryTransport {
            InMemoryTransport(autoAccept: false) { peer in
                peer.accept()
                guard vendor != "socket.io" else {
                    peer.send(text: #"0{"sid":"eio","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":100000}"#)
                    return
                }
                let idKey = vendor == "bird" ? "connection_id" : "socket_id"
                let established = JSONValue.object([idKey: "1.2", "activity_timeout": 120]).serialized()
                peer.send(text: JSONValue.object(["event": .string("\(vendor):connection_established"),
                                                  "data": .string(established)]).serialized())
            }
        }
        let options = SessionOptions(delivery: .inline, clock: ManualClock())
        let url = URL(string: "http://127.0.0.1:1")!
        for (thrown, code, message) in [
            (Offline() as any Error, RealtimeError.Code.operationFailed, "auth provider threw: Offline()"),
            (RealtimeError(.authorizationFailed, "token expired"), .authorizationFailed, "token expired"),
        ] {
            let sessions: [(RealtimeSession, ChannelID)] = [
                (RealtimeSession(dialect: .socketIO(url: url, auth: .provider { _ in throw thrown }),
                                 transport: server("socket.io"), options: options), "/chat"),
                (RealtimeSession(dialect: .pusher(key: "k", auth: .provider { _ in throw thrown }, host: "127.0.0.1"),
                                 transport: server("pusher"), options: options), "private-chat"),
                (RealtimeSession(dialect: .bird(key: "k", auth: .provider { _ in throw thrown }, host: "127.0.0.1"),
                                 transport: server("bird"), options: options), "private-chat"),
            ]
            for (session, name) in sessions {
                defer { session.disconnect() }
                try await session.connect()
                let channel = session.channel(name)
                do {
                    try await channel.subscribed()
                    Issue.record("\(session.dialectName): \(name) was joined although its provider threw")
                } catch let error as RealtimeError {
                    #expect(error.code == code, "\(session.dialectName)")
                    #expect(error.message.hasSuffix(message), "\(session.dialectName): \(error.message)")
                    #expect(error.context.channel == name, "\(session.dialectName)")
                    #expect(channel.state == .rejected(error), "\(session.dialectName)")
                }
            }
        }
    }

    @Test("perform, request, signIn and presence throw .unsupported at once off their dialect, before any connection",
          .timeLimit(.minutes(1)))
    func offDialectCalls() async throws {
        let transport = InMemoryTransport()
        let options = SessionOptions(delivery: .inline, clock: ManualClock())
        let socketIO = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!),
                                       transport: transport, options: options)
        let pusher = RealtimeSession(dialect: .pusher(key: "k", host: "127.0.0.1"), transport: transport, options: options)
        let bird = RealtimeSession(dialect: .bird(key: "k", host: "127.0.0.1"), transport: transport, options: options)
        let cable = RealtimeSession(dialect: .actionCable(url: URL(string: "ws://127.0.0.1:1/cable")!),
                                    transport: transport, options: options)
        let room = ChannelID("ChatChannel", params: ["room": 1])

        // perform is Action Cable's (on Socket.IO it used to send an event named after the action).
        await expectUnsupported("perform", dialect: "socket.io", needs: "Action Cable", channel: "/chat") {
            try await socketIO.channel("/chat").perform("speak", ["text": "hi"])
        }
        await expectUnsupported("perform", dialect: "pusher", needs: "Action Cable", channel: "private-chat") {
            try await pusher.channel("private-chat").perform("speak")
        }
        // request needs acknowledgements, which only Socket.IO has.
        for (session, name, channel) in [(pusher, "pusher", ChannelID("private-chat")), (bird, "bird", "private-chat"),
                                         (cable, "actioncable", room)] {
            await expectUnsupported("request", dialect: name, needs: "Socket.IO (acknowledgements)", channel: channel) {
                _ = try await session.channel(channel).request("sum", 1, 2)
            }
        }
        // signIn and presence are Pusher's and Bird's; signIn used to wait for a connection first.
        for (session, name) in [(socketIO, "socket.io"), (cable, "actioncable")] {
            await expectUnsupported("signIn", dialect: name, needs: "Pusher or Bird") {
                _ = try await session.signIn()
            }
            await expectUnsupported("presence", dialect: name, needs: "Pusher or Bird", channel: "presence-room") {
                _ = try session.presence("presence-room")
            }
        }
        // Nothing was queued and nothing connected.
        #expect(transport.peers.isEmpty)
        for session in [socketIO, pusher, bird, cable] {
            #expect(session.bufferedSendCount == 0)
            #expect(session.state == .initialized)
        }
        // On their own dialects the same calls pass the check.
        let roster = try bird.presence("presence-room")
        #expect(roster.channel.id == "presence-room")
    }

    @Test("session.user, onSubscriptionCount and subscriptionCounts throw .unsupported off Pusher and Bird, like signIn",
          .timeLimit(.minutes(1)))
    func offDialectPusherExtras() async throws {
        let transport = InMemoryTransport()
        let options = SessionOptions(delivery: .inline, clock: ManualClock())
        let socketIO = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!),
                                       transport: transport, options: options)
        let cable = RealtimeSession(dialect: .actionCable(url: URL(string: "ws://127.0.0.1:1/cable")!),
                                    transport: transport, options: options)
        let room = ChannelID("ChatChannel", params: ["room": 1])
        for (session, name, channel) in [(socketIO, "socket.io", ChannelID("/chat")), (cable, "actioncable", room)] {
            await expectUnsupported("user", dialect: name, needs: "Pusher or Bird") {
                _ = try session.user
            }
            await expectUnsupported("onSubscriptionCount", dialect: name, needs: "Pusher or Bird", channel: channel) {
                try session.channel(channel).onSubscriptionCount { _ in Issue.record("no count off Pusher") }
            }
            await expectUnsupported("subscriptionCounts", dialect: name, needs: "Pusher or Bird", channel: channel) {
                _ = try session.channel(channel).subscriptionCounts
            }
        }
        #expect(transport.peers.isEmpty)
        for session in [socketIO, cable] { #expect(session.state == .initialized) }

        // On their own dialects the same calls pass the check.
        for dialect in [PusherDialect.pusher(key: "k", host: "127.0.0.1"), .bird(key: "k", host: "127.0.0.1")] {
            let session = RealtimeSession(dialect: dialect, transport: transport, options: options)
            let user = try session.user
            user.off(id: user.onAny { _ in })
            let news = session.channel("news")
            news.off(id: try news.onSubscriptionCount { _ in })
            _ = try news.subscriptionCounts
        }
    }

    @Test("every constructor takes every option of its dialect's initializer")
    func constructorsExposeEveryOption() throws {
        let liveness = Liveness(pingInterval: .seconds(4), pingTimeout: .seconds(9))

        let credentials = ActionCableDialect.Credentials(headers: [HTTPHeader("Authorization", "Bearer a")])
        let cable = ActionCableDialect.actionCable(
            url: URL(string: "ws://10.0.0.2/cable")!, headers: [HTTPHeader("X-App", "1")], origin: "https://app.example",
            auth: .value(credentials), guarantor: .init(interval: .seconds(1), maximumAttempts: 3),
            restartDelay: .seconds(2), eventNameKeys: ["kind"], allowsInsecureTransportToRemoteHosts: true,
            liveness: liveness)
        // The stored options of the dialect: a new one must be added to the constructor and to this test.
        #expect(Set(Mirror(reflecting: cable).children.compactMap(\.label)) == [
            "url", "headers", "origin", "auth", "guarantor", "restartDelay", "eventNameKeys",
            "allowsInsecureTransportToRemoteHosts", "liveness",
        ])
        #expect(cable.headers == [HTTPHeader("X-App", "1")] && cable.origin == "https://app.example")
        if case .value(let kept)? = cable.auth { #expect(kept == credentials) } else { Issue.record("auth lost") }
        #expect(cable.guarantor == .init(interval: .seconds(1), maximumAttempts: 3))
        #expect(cable.restartDelay == .seconds(2) && cable.eventNameKeys == ["kind"])
        #expect(cable.allowsInsecureTransportToRemoteHosts && cable.liveness == liveness)
        guard case .ready(let cableRequest) = cable.connectionRequest(attempt: 0) else {
            Issue.record("a fixed credential needs no asynchronous step")
            return
        }
        #expect(cableRequest.allowsInsecureTransportToRemoteHosts)

        let socketIO = SocketIODialect.socketIO(
            url: URL(string: "http://10.0.0.2:3000")!, path: "/rt/", auth: ["token": "a"], headers: [HTTPHeader("X-App", "1")],
            queryItems: [URLQueryItem(name: "v", value: "2")], transports: [.polling, .websocket],
            defaultNamespaces: ["/chat"], limits: .init(maximumAttachments: 3), allowsInsecureTransportToRemoteHosts: true,
            liveness: liveness)
        #expect(Set(Mirror(reflecting: socketIO).children.compactMap(\.label)) == [
            "url", "path", "auth", "headers", "queryItems", "transports", "defaultNamespaces", "limits",
            "allowsInsecureTransportToRemoteHosts", "liveness",
        ])
        #expect(socketIO.path == "/rt/" && socketIO.headers == [HTTPHeader("X-App", "1")])
        #expect(socketIO.queryItems == [URLQueryItem(name: "v", value: "2")] && socketIO.transports == [.polling, .websocket])
        #expect(socketIO.defaultNamespaces == ["/chat"] && socketIO.limits.maximumAttachments == 3)
        #expect(socketIO.allowsInsecureTransportToRemoteHosts && socketIO.liveness == liveness)
        if case .value(let payload)? = socketIO.auth { #expect(payload == ["token": "a"]) } else { Issue.record("auth lost") }
        guard case .ready(let socketIORequest) = socketIO.connectionRequest(attempt: 0) else {
            Issue.record("Socket.IO needs no asynchronous step before connecting")
            return
        }
        #expect(socketIORequest.allowsInsecureTransportToRemoteHosts)

        for dialect in [PusherDialect.pusher(key: "k", cluster: "eu", auth: .inline(secret: "s"), host: "10.0.0.2", port: 6001,
                                             useTLS: false, allowsInsecureTransportToRemoteHosts: true, liveness: liveness),
                        PusherDialect.bird(key: "k", cluster: "eu1", auth: .inline(secret: "s"), host: "10.0.0.2", port: 6001,
                                           useTLS: false, allowsInsecureTransportToRemoteHosts: true, liveness: liveness)] {
            #expect(Set(Mirror(reflecting: dialect).children.compactMap(\.label)) == [
                "vendor", "key", "host", "port", "usesTLS", "allowsInsecureTransportToRemoteHosts", "auth", "liveness",
            ])
            #expect(dialect.key == "k" && dialect.host == "10.0.0.2" && dialect.port == 6001 && !dialect.usesTLS)
            #expect(dialect.allowsInsecureTransportToRemoteHosts && dialect.auth != nil && dialect.liveness == liveness)
        }
        // The cluster names the host: Pusher's cluster, Bird's region.
        #expect(PusherDialect.pusher(key: "k", cluster: "eu").host == "ws-eu.pusher.com")
        #expect(PusherDialect.bird(key: "k", cluster: "eu1").host == "ws-eu1.realtime.platform.bird.com")
    }

    @Test("no dialect has a reconnect policy of its own: each recommends its default, SessionOptions sets it")
    func reconnectPolicyIsTheDialectsDefault() {
        #expect(PusherDialect.pusher(key: "k").reconnectPolicy == PusherDialect.defaultReconnectPolicy)
        #expect(PusherDialect.bird(key: "k").reconnectPolicy == PusherDialect.defaultReconnectPolicy)
        #expect(SocketIODialect.socketIO(url: URL(string: "http://h")!).reconnectPolicy
                == SocketIODialect.defaultReconnectPolicy)
        #expect(ActionCableDialect.actionCable(url: URL(string: "ws://h/cable")!).reconnectPolicy
                == ActionCableDialect.defaultReconnectPolicy)
        #expect(SessionOptions().reconnectPolicy == nil)
        #expect(SessionOptions().connectTimeout == .seconds(20))
    }

    @Test("the old spellings still compile (deprecated) and mean the same as the new ones")
    func oldSpellings() async throws {
        let old: any OldSpellings = DeprecatedSpellings()
        let pusher = old.pusher()
        #expect(pusher.host == "ws-eu.pusher.com" && pusher.liveness == Liveness(pingInterval: .seconds(50), pingTimeout: .seconds(5)))
        guard case .provider(let sign)? = pusher.auth else {
            Issue.record(".custom must become .provider")
            return
        }
        #expect(try await sign(PusherAuthRequest(connectionID: "1.1", channel: "private-x", vendor: .pusher)).auth == "k:old")
        let times = old.oldTimeouts(of: pusher)
        #expect(times.0 == .seconds(50) && times.1 == .seconds(5) && times.2)
        let bird = old.bird()
        #expect(bird.vendor == .bird && bird.key == "k" && bird.host == "ws-eu1.realtime.platform.bird.com")
        let automatic = old.oldTimeouts(of: .pusher(key: "k"))
        #expect(automatic.0 == .seconds(120) && automatic.1 == .seconds(30) && !automatic.2)

        let cable = old.cable()
        guard case .deferred(let prepare) = cable.connectionRequest(attempt: 0) else {
            Issue.record("credentials must become a provider")
            return
        }
        #expect(try await prepare().url.absoluteString == "ws://127.0.0.1:1/cable?token=old")
        let cableTimes = old.oldCableTimeouts(of: cable)
        #expect(cableTimes.0 == .seconds(3) && cableTimes.1 == .seconds(3) && cableTimes.2)
        let retuned = old.retuned(cable)
        #expect(retuned.liveness == Liveness(pingInterval: .seconds(4), pingTimeout: .seconds(8)))
        #expect(retuned.auth == nil)

        let refused = RealtimeError(.subscriptionRejected, "refused")
        #expect(old.oldChannelStates(refused) == [.rejected(refused), .endedByServer(refused), .unsubscribed])
        #expect(old.isLeft(.unsubscribed) && !old.isLeft(.pending) && !old.isLeft(.rejected(refused)))
    }
}
