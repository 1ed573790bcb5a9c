import Foundation
import Realtime
import RealtimeActionCableTesting
import RealtimePusherTesting
import RealtimeSocketIOTesting
import RealtimeTesting

/// One backend of the demo: its embedded server on loopback and what the demo asks of it.
protocol DemoBackend: Sendable {
    var name: String { get }
    var url: String { get }
    var channel: ChannelID { get }
    /// The dialect's event for a member joining; `nil` where the protocol has no presence.
    var presenceEvent: String? { get }
    func makeSession(_ options: SessionOptions) -> RealtimeSession
    /// The server sends the chat a message `{"text": text}`.
    func push(_ text: String)
    /// A request the server acknowledges, and whether the answer is right; `nil` where there are no acks.
    func request(on channel: RealtimeChannel) async throws -> (String, Bool)?
    /// Another member joins the channel; `nil` where there is no presence.
    func guest(_ id: String) -> RealtimeSession?
    /// The app's own message, in the dialect's way (emit, client event, perform).
    func post(_ text: String, on channel: RealtimeChannel) async throws
    /// How many times the server received the app's message `text`.
    func received(_ text: String) -> Int
    /// The server drops the client's connection, as a restart or a network fault would.
    func drop()
    func stop()
}

/// Socket.IO: ``SocketIOServer``, namespace `/chat`, `say` relayed to the room, `sum` acknowledged.
final class SocketIODemo: DemoBackend {
    let server: SocketIOServer
    private let said = Locked<[String]>([])

    init() throws {
        let server = try SocketIOServer()
        let said = self.said
        self.server = server
        server.namespace("/chat") { socket, _ in
            socket.join("lobby")   // after every reconnect too
            return .accept
        }
        server.on("say", in: "/chat") { [weak server] _, arguments, _ in
            said.withLock { $0.append(arguments.first?["text"]?.stringValue ?? "") }
            server?.emit("message", arguments, toRoom: "lobby", in: "/chat")
        }
        server.on("sum", in: "/chat") { _, arguments, ack in
            ack?(.integer(arguments.compactMap(\.integerValue).reduce(0, +)))
        }
    }

    var name: String { "Socket.IO" }
    var url: String { server.url.absoluteString }
    var channel: ChannelID { "/chat" }
    var presenceEvent: String? { nil }

    func makeSession(_ options: SessionOptions) -> RealtimeSession {
        RealtimeSession(dialect: .socketIO(url: server.url, defaultNamespaces: []), options: options)
    }

    func push(_ text: String) {
        for socket in server.sockets(in: "/chat") { socket.emit("message", [["text": .string(text)]]) }
    }

    func request(on channel: RealtimeChannel) async throws -> (String, Bool)? {
        let answer = try await channel.request("sum", 1, 2, 3, timeout: .seconds(5))
        return ("sum(1, 2, 3) acknowledged with \(JSONValue.array(answer))", answer == [6])
    }

    func guest(_ id: String) -> RealtimeSession? { nil }

    func post(_ text: String, on channel: RealtimeChannel) async throws {
        try await channel.send("say", ["text": .string(text)])
    }

    func received(_ text: String) -> Int { said.withLock { $0.filter { $0 == text }.count } }

    func drop() { server.sockets(in: "/chat").first?.dropConnection() }

    func stop() { server.stop() }
}

/// Pusher Channels or Bird Realtime: ``PusherTestServer``, a presence channel signed with the app secret.
final class PusherDemo: DemoBackend {
    let vendor: PusherVendor
    let server: PusherTestServer

    init(vendor: PusherVendor) throws {
        self.vendor = vendor
        server = try PusherTestServer(key: "demo-key", secret: "demo-secret", vendor: vendor)
    }

    var name: String { vendor == .bird ? "Bird" : "Pusher" }
    var url: String { "ws://127.0.0.1:\(server.port)" }
    var channel: ChannelID { "presence-chat" }
    var presenceEvent: String? { vendor.systemPrefix + "member_added" }

    private func dialect(member: String) -> PusherDialect {
        let identity = JSONValue.object([vendor.memberIDKey: .string(member),
                                         vendor.memberInfoKey: ["name": .string(member)]]).serialized()
        // Signing here with the secret is for development only; an app asks its backend.
        let authorizer = PusherAuth.inline(secret: server.secret, presenceData: identity)
        return vendor == .bird
            ? .bird(key: server.key, auth: authorizer, host: "127.0.0.1", port: server.port)
            : .pusher(key: server.key, auth: authorizer, host: "127.0.0.1", port: server.port)
    }

    func makeSession(_ options: SessionOptions) -> RealtimeSession {
        RealtimeSession(dialect: dialect(member: "me"), options: options)
    }

    func push(_ text: String) { server.trigger("presence-chat", event: "message", data: ["text": .string(text)]) }

    func request(on channel: RealtimeChannel) async throws -> (String, Bool)? { nil }

    func guest(_ id: String) -> RealtimeSession? {
        let session = RealtimeSession(dialect: dialect(member: id))
        _ = session.channel(channel)
        session.start()
        return session
    }

    func post(_ text: String, on channel: RealtimeChannel) async throws {
        try await channel.send("client-message", ["text": .string(text)])
    }

    func received(_ text: String) -> Int {
        server.receivedFrames.filter { $0.contains("client-message") && $0.contains(text) }.count
    }

    func drop() { server.closeAll(code: 1012, reason: "service restart") }   // backs off, then reconnects

    func stop() { server.stop() }
}

/// Action Cable: ``ActionCableTestServer`` over WebSocket; `speak` broadcasts to the room's stream.
final class ActionCableDemo: DemoBackend {
    let server: ActionCableTestServer
    let listener: WebSocketServer
    private let heartbeat: Task<Void, Never>

    init() throws {
        let server = ActionCableTestServer()
        server.define("ChatChannel") { request in .confirm(streams: ["chat:\(request.params["room"] ?? .null)"]) }
        server.onAction("ChatChannel", "speak") { call in
            call.broadcast(to: "chat:\(call.params["room"] ?? .null)", .object(call.data.filter { $0.key != "action" }))
        }
        self.server = server
        listener = try server.listen()
        // Rails pings every 3 s; the client counts a longer silence as a dead link.
        heartbeat = Task {
            while !Task.isCancelled {
                server.ping()
                try? await Task.sleep(for: .seconds(3))
            }
        }
    }

    var name: String { "Action Cable" }
    var url: String { "ws://127.0.0.1:\(listener.port)/cable" }
    var channel: ChannelID { ChannelID("ChatChannel", params: ["room": "lobby"]) }
    var presenceEvent: String? { nil }

    func makeSession(_ options: SessionOptions) -> RealtimeSession {
        RealtimeSession(dialect: .actionCable(url: URL(string: url)!), options: options)
    }

    func push(_ text: String) { server.broadcast(to: "chat:\"lobby\"", ["text": .string(text)]) }

    func request(on channel: RealtimeChannel) async throws -> (String, Bool)? { nil }

    func guest(_ id: String) -> RealtimeSession? { nil }

    func post(_ text: String, on channel: RealtimeChannel) async throws {
        try await channel.perform("speak", ["text": .string(text)])
    }

    func received(_ text: String) -> Int {
        server.receivedCommands.filter { $0.contains("speak") && $0.contains(text) }.count
    }

    func drop() { server.disconnect(user: "anonymous", reason: "remote", reconnect: true) }

    func stop() {
        heartbeat.cancel()
        listener.stop()
    }
}
