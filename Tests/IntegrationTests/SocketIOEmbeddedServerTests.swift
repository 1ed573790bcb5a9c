import Foundation
import Realtime
@_spi(DialectAuthoring) import RealtimeSocketIO
import RealtimePusherTesting
import RealtimeSocketIOTesting
import RealtimeTesting
import Testing

/// The embedded server with the same namespaces and handlers as `Tests/Fixtures/socketio/server.py`.
func makeFixtureLikeServer(configuration: SocketIOServer.Configuration = .init()) throws -> SocketIOServer {
    let server = try SocketIOServer(configuration: configuration)
    for namespace in ["/", "/chat"] {
        server.namespace(namespace) { socket, auth in
            let token = auth?["token"]?.stringValue
            if namespace == "/chat", token != "secret" { return .reject("invalid token") }
            if let token, token != "secret" { return .reject("invalid token") }
            socket.emit("welcome", [["namespace": .string(namespace), "auth": auth ?? .null]])
            return .accept
        }
        server.on("sum", in: namespace) { _, arguments, ack in
            let total = arguments.first?.arrayValue?.compactMap(\.integerValue).reduce(0, +) ?? 0
            ack?(["sum": .integer(total)])
        }
        server.on("echo", in: namespace) { _, arguments, ack in ack?.send(arguments) }
        server.on("binary_echo", in: namespace) { _, arguments, ack in ack?.send(arguments) }
        server.on("send_binary", in: namespace) { socket, _, ack in
            socket.emit("binary_from_server", [["first": .binary(Data([1, 2])),
                                                "nested": ["second": .binary(Data([3, 4]))], "len": 4]])
            ack?("sent")
        }
        server.on("ask_me", in: namespace) { socket, arguments, _ in
            socket.request("server_ask", arguments) { answer in socket.emit("server_ask_answer", answer) }
        }
        server.on("join", in: namespace) { socket, arguments, ack in
            if let room = arguments.first?.stringValue { socket.join(room) }
            ack?("joined")
        }
        server.on("broadcast", in: namespace) { [weak server] _, arguments, ack in
            guard let room = arguments.first?.stringValue else { return }
            server?.emit("room_message", [["room": .string(room), "message": arguments.dropFirst().first ?? .null]],
                         toRoom: room, in: namespace)
            ack?("sent")
        }
        server.on("kick_me", in: namespace) { socket, _, _ in socket.disconnect() }
        server.on("close_engine", in: namespace) { socket, _, _ in socket.closeConnection() }
        server.on("go_silent", in: namespace) { socket, _, _ in socket.stopHeartbeat() }
        server.on("drop_transport", in: namespace) { socket, _, _ in socket.dropConnection() }
        server.on("burst", in: namespace) { socket, arguments, _ in
            let count = Int(arguments.first?.integerValue ?? 0)
            for index in 0..<count { socket.emit("burst_item", [.integer(Int64(index))]) }
            socket.emit("burst_done", [.integer(Int64(count))])
        }
    }
    return server
}

/// Runs a fixture Python script with the peer's venv; returns its exit status and standard output.
func runPython(_ script: String, _ arguments: [String], timeout: Duration = .seconds(60)) async throws
    -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = SocketIOPeer.python
    process.arguments = [SocketIOPeer.repositoryRoot.appendingPathComponent(script).path] + arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let pid = process.processIdentifier
    let text = await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
        Thread.detachNewThread {
            let data = output.fileHandleForReading.readDataToEndOfFile()
            continuation.resume(returning: String(decoding: data, as: UTF8.self))
        }
    }
    var status: Int32 = 0
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid { return ((status >> 8) & 0xFF, text) }
        if reaped < 0 { return (process.terminationStatus, text) }  // Foundation reaped it first
        try await Task.sleep(for: .milliseconds(10))
    }
    kill(pid, SIGKILL)
    return (-1, text)
}

@Suite("Embedded Socket.IO server", .serialized)
struct SocketIOEmbeddedServerTests {
    @Test func pythonSocketIOClientPassesTheCoreScenario() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let (status, output) = try await runPython("Tests/Fixtures/socketio/client.py", [server.url.absoluteString])
        #expect(status == 0, "\(output)")
        #expect(output.contains("ALL OK"))
        for check in ["connect with auth", "ack from server", "ack from client", "binary to server and back, nested",
                      "binary from server, nested", "wrong token refused"] {
            #expect(output.contains("PASS \(check)"), "\(check): \(output)")
        }
    }

    @Test func ourClientAgainstTheEmbeddedServer() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let events = EventLog()
        let session = RealtimeSession(dialect: .socketIO(url: server.url, auth: ["token": "secret"]),
                                      transport: WebSocketTransport())
        let chat = session.channel("/chat")
        chat.onAny { events.append($0) }
        chat.on("server_ask") { event in event.ack?("yes") }
        try await session.connect()
        try await chat.subscribed()
        #expect(await events.wait(for: "welcome"))
        #expect(try await chat.request("sum", [1, 2, 3]) == [["sum": 6]])
        let blob: JSONValue = ["a": .binary(Data([1, 2, 3])), "b": [.binary(Data([4]))]]
        #expect(try await chat.request("binary_echo", blob) == [blob])
        try await chat.send("ask_me", ["q": 1])
        #expect(await events.wait(for: "server_ask_answer"))
        #expect(events.named("server_ask_answer").first?.arguments == ["yes"])
        #expect(try await chat.request("join", "r") == ["joined"])
        #expect(try await chat.request("broadcast", "r", "hi") == ["sent"])
        #expect(await events.wait(for: "room_message"))

        let refused = await #expect(throws: RealtimeError.self) {
            try await session.channel("/nope").subscribed()
        }
        #expect(refused?.code == .subscriptionRejected)

        try await chat.send("kick_me")
        #expect(await eventually { if case .endedByServer = chat.state { true } else { false } })
        #expect(session.state == .connected)
        session.disconnect()
    }

    @Test("auth that is not an object: the namespace is refused with .invalidArgument, the connection stays up")
    func nonObjectAuthAgainstTheEmbeddedServer() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let session = RealtimeSession(dialect: .socketIO(url: server.url, auth: .value("just-a-string")),
                                      transport: WebSocketTransport())
        let errors = Locked<[RealtimeError]>([])
        session.onError { error in errors.withLock { $0.append(error) } }
        let chat = session.channel("/chat")
        try await session.connect()
        let refused = await #expect(throws: RealtimeError.self) { try await chat.subscribed() }
        #expect(refused?.code == .invalidArgument)
        try await Task.sleep(for: .milliseconds(300))
        #expect(session.state == .connected)   // no close 1002, no reconnect loop
        // onError runs on the delivery queue, not in step with subscribed() throwing.
        #expect(await eventually { errors.withLock { $0 }.count >= 2 })
        #expect(errors.withLock { $0.map(\.code) } == [.invalidArgument, .invalidArgument])  // "/" and "/chat"
        session.disconnect()
    }

    @Test("a 404 answer to the upgrade (the Pusher embedded server's port) fails connect() at once, without retries")
    func wrongServerFailsAtOnce() async throws {
        let pusher = try PusherTestServer(key: "app-key", secret: "app-secret")
        defer { pusher.stop() }
        let session = RealtimeSession(dialect: .socketIO(url: URL(string: "http://127.0.0.1:\(pusher.port)")!),
                                      transport: WebSocketTransport())
        let error = await #expect(throws: RealtimeError.self) { try await session.connect(timeout: .seconds(10)) }
        #expect(error?.code == .handshakeRejected)
        #expect(error?.context.httpStatus == 404)
        #expect(error?.message == "wrong path (or origin refused): HTTP 404 Not Found for /socket.io/")
        guard case .failed = session.state else {
            Issue.record("expected failed, got \(session.state)")
            return
        }
    }

    @Test("shutdown() closes with 1001: the session reconnects for closedByServer(1001), reports no error")
    func shutdownClosesCleanly() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let session = RealtimeSession(dialect: .socketIO(url: server.url), transport: WebSocketTransport())
        defer { session.disconnect() }
        let recorder = FirstDropRecorder(session)
        try await session.connect()
        await server.shutdown()
        #expect(server.connectionCount == 0)
        #expect(await eventually { recorder.drop != nil })
        #expect(recorder.drop?.reason == .closedByServer(code: 1001, reason: "server shutting down"))
        #expect(recorder.errorsBeforeDrop.isEmpty, "\(recorder.errorsBeforeDrop)")
    }

    @Test("disconnectAndWait(): everything sent before it, then the close, reach the server before it returns")
    func disconnectAndWaitDeliversTheLastMessages() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let notes = Locked<[Int]>([])
        server.on("note") { _, arguments, _ in
            notes.withLock { $0.append(arguments.first?.stringValue?.utf8.count ?? -1) }
        }
        let session = RealtimeSession(dialect: .socketIO(url: server.url), transport: WebSocketTransport())
        try await session.connect()
        // A send returns once the transport has the frame, not once the server has it: large messages are
        // still on their way when the last send returns.
        let large = String(repeating: "x", count: 900_000)
        let root = session.channel("/")
        for _ in 0..<3 { try await root.send("note", .string(large)) }
        await session.disconnectAndWait()
        // The server ran each handler as it read the message, before it answered the close that followed.
        #expect(notes.withLock { $0 } == [900_000, 900_000, 900_000])
        #expect(session.state == .disconnected)
        #expect(await eventually { server.connectionCount == 0 })
    }

    @Test func heartbeatAndSilenceOnTheEmbeddedServer() async throws {
        // pingTimeout above pingInterval, as in the python fixture's 1 s / 3 s: a late deadline of an old
        // ping must not drop a client that answered the newer one.
        let server = try makeFixtureLikeServer(configuration: .init(pingInterval: .milliseconds(400),
                                                                    pingTimeout: .milliseconds(800)))
        defer { server.stop() }
        let session = RealtimeSession(dialect: .socketIO(url: server.url), transport: WebSocketTransport())
        let states = Locked<[ConnectionState]>([])
        session.onStateChange { _, new in states.withLock { $0.append(new) } }
        try await session.connect()
        let firstID = session.connectionID
        try await Task.sleep(for: .milliseconds(2000))  // about five ping cycles answered
        #expect(session.connectionID == firstID)
        #expect(server.connectionCount == 1)
        try await session.channel("/").send("go_silent")
        #expect(await eventually(timeout: .seconds(5)) {
            states.withLock { $0 }.contains { if case .reconnecting = $0 { true } else { false } }
        })
        #expect(await eventually(timeout: .seconds(10)) { session.state == .connected && session.connectionID != firstID })
        session.disconnect()
    }

    @Test func networkPathLossDropsTheSocketAndItsReturnRejoins() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let session = RealtimeSession(dialect: .socketIO(url: server.url), transport: WebSocketTransport())
        let events = EventLog()
        let root = session.channel("/")
        root.onAny { events.append($0) }
        try await session.connect()
        try await root.subscribed()
        let firstID = session.connectionID
        #expect(server.connectionCount == 1)

        session.networkPathChanged(isAvailable: false)
        #expect(await eventually(timeout: .seconds(5)) { session.state == .waitingForNetwork })
        #expect(await eventually(timeout: .seconds(5)) { server.connectionCount == 0 })
        try await Task.sleep(for: .milliseconds(300))   // no attempt while the path is down
        #expect(server.connectionCount == 0)
        let sending = Task { try await root.request("sum", [1, 2, 3], timeout: .seconds(10)) }

        session.networkPathChanged(isAvailable: true)
        let answer = try await sending.value
        #expect(answer == [["sum": 6]])
        #expect(session.state == .connected)
        #expect(session.connectionID != firstID)
        #expect(server.connectionCount == 1)
        // Handlers run on the delivery queue, not in step with the request's answer.
        #expect(await eventually(timeout: .seconds(5)) { events.named("welcome").count == 2 })
        session.disconnect()
    }

    @Test func burstFromTheEmbeddedServerArrivesInOrder() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let events = EventLog()
        let session = RealtimeSession(dialect: .socketIO(url: server.url), transport: WebSocketTransport())
        session.channel("/").onAny { events.append($0) }
        try await session.connect()
        try await session.channel("/").subscribed()
        let started = ContinuousClock.now
        try await session.channel("/").send("burst", 10_000)
        #expect(await events.wait(for: "burst_done", timeout: .seconds(30)))
        let elapsed = ContinuousClock.now - started
        let items = events.named("burst_item").compactMap { $0.data.integerValue }
        #expect(items == Array(0..<10_000))
        print("socket.io burst from the embedded server: 10000 events in \(elapsed)")
        session.disconnect()
    }

    @Test func connectionStateRecoveryEndToEnd() async throws {
        let server = try makeFixtureLikeServer(configuration: .init(recovery: true))
        defer { server.stop() }
        let events = EventLog()
        let session = RealtimeSession(dialect: .socketIO(url: server.url, auth: ["token": "secret"]),
                                      transport: WebSocketTransport())
        let chat = session.channel("/chat")
        chat.onAny { events.append($0) }
        try await session.connect()
        #expect(try await chat.subscribed() == false)  // a first join has nothing to recover
        #expect(try await chat.request("join", "news") == ["joined"])
        server.emit("news", [["n": 1]], toRoom: "news", in: "/chat")
        #expect(await events.wait(for: "news"))
        #expect(events.named("news").first?.arguments == [["n": 1]])  // the offset is not an argument
        let socketID = server.sockets(in: "/chat").first?.id

        try await chat.send("drop_transport")
        #expect(await eventually { server.connectionCount == 0 })
        server.emit("news", [["n": 2]], toRoom: "news", in: "/chat")  // missed while away
        #expect(await eventually { chat.state == .subscribed(recovered: true) })
        #expect(await events.wait(for: "news", count: 2))
        #expect(events.named("news").map(\.arguments) == [[["n": 1]], [["n": 2]]])
        #expect(server.sockets(in: "/chat").first?.id == socketID)
        // The room membership came back with the session.
        server.emit("news", [["n": 3]], toRoom: "news", in: "/chat")
        #expect(await events.wait(for: "news", count: 3))
        session.disconnect()
    }
}
