import Foundation
import Realtime
import RealtimeTesting

enum DemoCommand {
    static let help = """
    usage: realtime demo [--dialect socketio]

    A live Socket.IO session against an embedded loopback server, step by step: connect with auth, an
    acknowledged request, a room broadcast, binary both ways, an ack the server asks for, a dropped
    connection with automatic reconnect and re-join, and a send buffered while offline.
    exit: 0 every step passed, 1 a step failed, 2 usage
    """

    static func run(_ words: [String]) async throws -> ExitCode {
        let arguments = try Arguments(words, valued: ["dialect"], flags: ["help"])
        if arguments.flag("help") {
            print(help)
            return .done
        }
        let dialect = arguments.value("dialect") ?? "socketio"
        guard dialect == "socketio" || dialect == "socket.io" else {
            throw UsageError("the \(dialect) demo is not written yet; available: socketio")
        }
        return try await demo() ? .done : .failure
    }
}

/// `realtime demo`: see ``DemoCommand/help``.
func demo() async throws -> Bool {
    let server = try SocketIOServer(configuration: .init(pingInterval: .seconds(5), pingTimeout: .seconds(5)))
    defer { server.stop() }
    server.namespace("/chat") { socket, auth in
        guard auth?["token"] == "demo-token" else { return .reject("invalid token") }
        socket.join("lobby")   // every client starts in the lobby, after every reconnect too
        return .accept
    }
    server.on("join", in: "/chat") { socket, arguments, ack in
        socket.join(arguments.first?.stringValue ?? "lobby")
        ack?("joined")
    }
    server.on("say", in: "/chat") { _, arguments, _ in
        server.emit("said", arguments, toRoom: "lobby", in: "/chat")
    }
    server.on("sum", in: "/chat") { _, arguments, ack in
        ack?(.integer(arguments.compactMap(\.integerValue).reduce(0, +)))
    }
    server.on("reverse-bytes", in: "/chat") { _, arguments, ack in
        ack?(.binary(Data((arguments.first?.binaryValue ?? Data()).reversed())))
    }

    print("demo: embedded Socket.IO server on \(server.url.absoluteString)")
    let session = RealtimeSession(dialect: .socketIO(url: server.url, auth: ["token": "demo-token"],
                                                     defaultNamespaces: []))
    let delivered = Locked(ConnectionState.initialized)
    session.onStateChange { _, new in
        delivered.withLock { $0 = new }
        print("  state → \(new)")
    }
    session.onError { print("  error: \($0)") }
    let chat = session.channel("/chat")
    let heard = Locked<[String]>([])
    chat.on("said") { event in
        let text = event.data.stringValue ?? event.data.description
        heard.withLock { $0.append(text) }
        print("  /chat said: \(text)")
    }
    chat.on("are-you-there") { event in event.ack?("yes, still here") }

    var checks: [(String, Bool)] = []
    func check(_ name: String, _ passed: Bool) {
        checks.append((name, passed))
        print("\(passed ? "✓" : "✗") \(name)")
    }

    try await withTimeout(.seconds(10)) { try await session.connect() }
    try await withTimeout(.seconds(10)) { _ = try await chat.subscribed() }
    check("connected and joined /chat with auth", chat.state == .subscribed(recovered: nil))

    let joined = try await chat.request("join", "news", timeout: .seconds(5))
    check("request with acknowledgement: join(news) → \(joined.first?.description ?? "nothing")",
          joined == ["joined"])
    let sum = try await chat.request("sum", 1, 2, 3, 4, timeout: .seconds(5))
    check("request with acknowledgement: sum(1, 2, 3, 4) = \(sum.first?.description ?? "?")", sum == [10])
    let bytes = Data([1, 2, 3, 4, 5])
    let reversed = try await chat.request("reverse-bytes", .binary(bytes), timeout: .seconds(5))
    check("binary attachment both ways", reversed.first?.binaryValue == Data(bytes.reversed()))

    try await chat.send("say", "hello, lobby")
    await waitFor(.seconds(5)) { heard.withLock { $0.contains("hello, lobby") } }
    check("room broadcast received", heard.withLock { $0.contains("hello, lobby") })

    let answer = Locked<[JSONValue]?>(nil)
    server.sockets(in: "/chat").first?.request("are-you-there", []) { reply in answer.withLock { $0 = reply } }
    await waitFor(.seconds(5)) { answer.withLock { $0 } != nil }
    check("the server's ack request answered: \(answer.withLock { $0 }?.first?.description ?? "nothing")",
          answer.withLock { $0 } == ["yes, still here"])

    print("demo: the server drops the connection; the session reconnects by its policy")
    server.sockets(in: "/chat").first?.dropConnection()
    await waitFor(.seconds(5)) { !session.state.isConnected }
    let offline = Task { try await chat.send("say", "sent while offline") }
    try await withTimeout(.seconds(15)) { _ = try await chat.subscribed() }
    try await offline.value
    await waitFor(.seconds(5)) { heard.withLock { $0.contains("sent while offline") } }
    check("reconnected and re-joined /chat", session.state == .connected)
    check("the send buffered while offline was delivered once",
          heard.withLock { $0.filter { $0 == "sent while offline" }.count } == 1)

    session.disconnect()
    await waitFor(.seconds(5)) { delivered.withLock { $0 } == .disconnected }
    check("disconnect() stays disconnected", session.state == .disconnected)
    let passed = checks.filter(\.1).count
    print("demo: \(passed) passed, \(checks.count - passed) failed")
    return passed == checks.count
}

/// Runs `body`, failing with `.timedOut` if it takes longer than `limit`.
func withTimeout(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw RealtimeError(.timedOut, "the demo step took longer than \(limit)")
        }
        try await group.next()
        group.cancelAll()
    }
}

/// Polls `condition` every 10 ms for at most `limit` (the CLI, unlike tests, may wait on real time).
func waitFor(_ limit: Duration, _ condition: () -> Bool) async {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while !condition(), clock.now < deadline {
        try? await Task.sleep(for: .milliseconds(10))
    }
}
