import ChatKit
import Foundation
import Realtime
import RealtimeActionCableTesting
import RealtimePusherTesting
import RealtimeSocketIOTesting
import RealtimeTesting

// ChatKit's handlers, unchanged, against the embedded Socket.IO, Pusher, Bird and Action Cable servers of the
// per-dialect test kits (RealtimeSocketIOTesting, RealtimePusherTesting, RealtimeActionCableTesting). On each
// backend two users join the room; the server says hello, alice posts a message, and both transcripts must
// show what the other side did. Exit 0 when every backend passed.
//
//   swift run FourBackendChat

/// One embedded server and how to reach it as a given user.
protocol ChatServer: Sendable {
    var name: String { get }
    func connection(for user: String) -> ChatConnection
    /// The server itself posts a chat message to the room.
    func announce(_ message: ChatMessage)
    func stop()
}

/// Socket.IO: namespace `/chat`; `say` is relayed to everyone in the room as `message`.
final class SocketIOChatServer: ChatServer {
    let server: SocketIOServer
    init() throws {
        server = try SocketIOServer()
        server.namespace("/chat") { socket, _ in
            socket.join("lobby")
            return .accept
        }
        server.on("say", in: "/chat") { [weak server] _, arguments, _ in
            server?.emit("message", arguments, toRoom: "lobby", in: "/chat")
        }
    }
    var name: String { "Socket.IO" }
    func connection(for user: String) -> ChatConnection { .socketIO(url: server.url) }
    func announce(_ message: ChatMessage) {
        server.emit("message", [(try? JSONValue(encoding: message)) ?? .null], toRoom: "lobby", in: "/chat")
    }
    func stop() { server.stop() }
}

/// Pusher Channels or Bird Realtime: a presence channel; every user signs with the app secret here, which only
/// a test or a demo may do (an app asks its backend).
final class PusherChatServer: ChatServer {
    let server: PusherTestServer
    init(vendor: PusherVendor) throws {
        server = try PusherTestServer(key: "chat-key", secret: "chat-secret", vendor: vendor)
    }
    var name: String { server.vendor == .bird ? "Bird" : "Pusher" }
    func connection(for user: String) -> ChatConnection {
        let vendor = server.vendor
        let identity = JSONValue.object([vendor.memberIDKey: .string(user),
                                         vendor.memberInfoKey: ["name": .string(user)]]).serialized()
        let auth = PusherAuth.inline(secret: server.secret, presenceData: identity)
        let dialect: PusherDialect = vendor == .bird
            ? .bird(key: server.key, auth: auth, host: "127.0.0.1", port: server.port)
            : .pusher(key: server.key, auth: auth, host: "127.0.0.1", port: server.port)
        return .pusher(dialect)
    }
    func announce(_ message: ChatMessage) {
        server.trigger("presence-chat", event: "message", data: (try? JSONValue(encoding: message)) ?? .null)
    }
    func stop() { server.stop() }
}

/// Action Cable: `ChatChannel` streams `chat:<room>`; its `speak` action broadcasts the message to the room.
final class ActionCableChatServer: ChatServer {
    let server = ActionCableTestServer()
    let listener: WebSocketServer
    let heartbeat: Task<Void, Never>
    init() throws {
        server.define("ChatChannel") { request in .confirm(streams: ["chat:\(request.params["room"] ?? .null)"]) }
        server.onAction("ChatChannel", "speak") { call in
            call.broadcast(to: "chat:\(call.params["room"] ?? .null)", .object(call.data.filter { $0.key != "action" }))
        }
        listener = try server.listen()
        // Rails pings every 3 s, and the client counts a longer silence as a dead link.
        heartbeat = Task { [server] in
            while !Task.isCancelled {
                server.ping()
                try? await Task.sleep(for: .seconds(3))
            }
        }
    }
    var name: String { "Action Cable" }
    func connection(for user: String) -> ChatConnection {
        .actionCable(url: URL(string: "ws://127.0.0.1:\(listener.port)/cable")!)
    }
    func announce(_ message: ChatMessage) {
        server.broadcast(to: "chat:\"lobby\"", (try? JSONValue(encoding: message)) ?? .null)
    }
    func stop() {
        heartbeat.cancel()
        listener.stop()
    }
}

/// Polls `condition` every 20 ms for at most `limit`.
func eventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
    return condition()
}

/// Runs the conversation on one backend; returns the checks that failed.
func converse(on server: any ChatServer) async throws -> [String] {
    print("\(server.name):")
    let alice = server.connection(for: "alice")
    let bob = server.connection(for: "bob")
    let aliceSaw = ChatTranscript { entry in print("  alice saw \(entry)") }
    let bobSaw = ChatTranscript { entry in print("  bob saw   \(entry)") }
    aliceSaw.attach(to: alice)
    bobSaw.attach(to: bob)
    defer {
        alice.session.disconnect()
        bob.session.disconnect()
    }

    for connection in [alice, bob] {
        try await connection.session.connect(timeout: .seconds(10))
        try await connection.room.subscribed()
    }
    let welcome = ChatMessage(author: "server", text: "welcome to \(server.name)")
    let hello = ChatMessage(author: "alice", text: "hello from alice on \(server.name)")
    server.announce(welcome)
    try await alice.post(hello)

    var failures: [String] = []
    if !(await eventually { aliceSaw.messages.contains(welcome) && bobSaw.messages.contains(welcome) }) {
        failures.append("the server's message did not reach both users")
    }
    if !(await eventually { bobSaw.messages.contains(hello) }) {
        failures.append("bob never saw alice's message")
    }
    if alice.memberJoinedEvent != nil, !(await eventually { aliceSaw.all.contains(.joined("bob")) }) {
        failures.append("alice never saw bob join")
    }
    let errors = (aliceSaw.all + bobSaw.all).filter { if case .error = $0 { true } else { false } }
    if !errors.isEmpty { failures.append("errors: \(errors)") }
    return failures
}

var failed: [String] = []
let servers: [@Sendable () throws -> any ChatServer] = [
    { try SocketIOChatServer() },
    { try PusherChatServer(vendor: .pusher) },
    { try PusherChatServer(vendor: .bird) },
    { try ActionCableChatServer() },
]
for makeServer in servers {
    let server = try makeServer()
    do {
        let failures = try await converse(on: server)
        failed += failures.map { "\(server.name): \($0)" }
        print(failures.isEmpty ? "  ✓ \(server.name) passed" : "  ✗ \(server.name): \(failures.joined(separator: "; "))")
    } catch {
        failed.append("\(server.name): \(error)")
        print("  ✗ \(server.name): \(error)")
    }
    server.stop()
}
print(failed.isEmpty ? "four-backend-chat: passed" : "four-backend-chat: FAILED\n  " + failed.joined(separator: "\n  "))
exit(failed.isEmpty ? 0 : 1)
