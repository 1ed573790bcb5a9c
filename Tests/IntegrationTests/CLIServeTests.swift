import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeWebSocket
import Testing

/// `realtime serve socketio` and `serve actioncable` with `listen` and `send` against them, plus usage errors
/// and `--help`: the built executable only, no outside peer.
@Suite("CLI serve, usage and help", .serialized)
struct CLIServeTests {
    @Test("serve socketio: a relayed message with several arguments carries args; echo is acknowledged; trigger")
    func socketIO() async throws {
        let server = try await ServedCLI("socketio")
        defer { server.process.stop() }
        let listener = try CLIProcess(["listen", "socketio", server.url, "--channel", "/chat", "--json",
                                       "--count", "2", "--timeout", "60"])
        defer { listener.stop() }
        #expect(await listener.subscribed("/chat"), "\(listener.transcript)")
        // Triggered while the listener is the only client: a sender that just exited may not have been
        // seen leaving yet, and would be counted.
        #expect(await server.command(#"trigger /chat news {"n": 3}"#)
                == #"{"type":"triggered","channel":"/chat","event":"news","receivers":1}"#)
        let send = try await runCLI(["send", "socketio", server.url, "--channel", "/chat", "--event", "message",
                                     "--args", #"["hi",{"n":2}]"#, "--ack", "--json"])
        #expect(send.status == 0, "\(send.transcript)")
        #expect(send.lines.last == CLILine.ack("[1]"), "\(send.transcript)")
        #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
        #expect(listener.lines == [
            CLILine.connecting, CLILine.connected, CLILine.subscribed("/chat"),
            CLILine.event("/chat", "news", #"{"n":3}"#),
            CLILine.event("/chat", "message", #""hi""#, args: #"["hi",{"n":2}]"#),
        ], "\(listener.transcript)")

        let echo = try await runCLI(["send", "socketio", server.url, "--event", "echo", "--data", "true", "--ack",
                                     "--json"])
        #expect(echo.lines.last == CLILine.ack("[true]"), "\(echo.transcript)")

        let unanswered = try await runCLI(["send", "socketio", server.url, "--event", "nothing", "--data", "1", "--ack",
                                           "--timeout", "2", "--json"])
        #expect(unanswered.status == 4, "\(unanswered.transcript)")
        #expect(unanswered.lines.last == CLILine.error("timed-out", "timed out after 2 s: no acknowledgement for nothing"),
                "\(unanswered.transcript)")

        // A mistyped command on standard input says why, and the server carries on.
        let bad = try JSONValue.parse(await server.command("trigger /chat news {bad") ?? "")
        let message = bad["message"]?.stringValue ?? ""
        #expect(bad["type"]?.stringValue == "error", "\(server.process.transcript)")
        #expect(message.hasPrefix("not JSON (") && message.hasSuffix("): {bad (usage: trigger <namespace> <event> <json>)"),
                "\(message)")
        // Receivers are not compared: a client that just exited may not have been seen leaving yet.
        let next = await server.command(#"trigger /chat news {"n": 4}"#) ?? ""
        #expect(next.hasPrefix(#"{"type":"triggered","channel":"/chat","event":"news","#), "\(next)")
    }

    @Test("serve actioncable: performs of speak and message broadcast to the identifier's stream, and a broadcast typed on stdin")
    func actionCable() async throws {
        let server = try await ServedCLI("actioncable")
        defer { server.process.stop() }
        let channel = #"ChatChannel{"room":42}"#
        let listener = try CLIProcess(["listen", "actioncable", server.url, "--channel", "ChatChannel",
                                       "--param", "room=42", "--json", "--count", "3", "--timeout", "60"])
        defer { listener.stop() }
        #expect(await listener.subscribed(channel), "\(listener.transcript)")
        let send = try await runCLI(["send", "actioncable", server.url, "--channel", channel, "--event", "speak",
                                     "--data", #"{"text":"hi"}"#, "--json"])
        #expect(send.status == 0, "\(send.transcript)")
        // The action the Examples' ChatClient performs, so it pairs with this server as with Socket.IO's.
        let message = try await runCLI(["send", "actioncable", server.url, "--channel", channel, "--event", "message",
                                        "--data", #"{"text":"as message"}"#, "--json"])
        #expect(message.status == 0, "\(message.transcript)")
        #expect(await server.command(#"broadcast ChatChannel{"room":42} {"text": "from stdin"}"#)
                == #"{"type":"triggered","channel":"ChatChannel{\"room\":42}"}"#)
        #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
        #expect(listener.lines == [
            CLILine.connecting, CLILine.connected, CLILine.subscribed(channel),
            CLILine.event(channel, "message", #"{"text":"hi"}"#),
            CLILine.event(channel, "message", #"{"text":"as message"}"#),
            CLILine.event(channel, "message", #"{"text":"from stdin"}"#),
        ], "\(listener.transcript)")
    }

    @Test("quit, Ctrl-C and SIGTERM close clients cleanly, with the dialect's restart signal; serve exits 0",
          arguments: [("socketio", "quit", "closed by the server with code 1001 (server shutting down)"),
                      ("pusher", "SIGINT", "closed by the server with code 4200 (server shutting down)"),
                      ("actioncable", "SIGTERM", "the server is restarting")])
    func stopsCleanly(dialect: String, how: String, reason: String) async throws {
        let server = try await ServedCLI(dialect)
        defer { server.process.stop() }
        let channel = ["socketio": "/chat", "pusher": "news", "actioncable": "ChatChannel"][dialect] ?? ""
        let listener = try CLIProcess(["listen", dialect, server.url, "--channel", channel, "--json"]
                                      + (dialect == "pusher" ? server.credentials : []))
        defer { listener.stop() }
        #expect(await listener.subscribed(channel), "\(listener.transcript)")
        switch how {
        case "quit": server.process.send("quit")
        case "SIGINT": server.process.signal(SIGINT)
        default: server.process.signal(SIGTERM)
        }
        #expect(await server.process.exitStatus() == 0, "\(server.process.transcript)")
        let dropped = #"{"type":"state","from":"connected","to":"reconnecting","reason":"# + JSONValue.string(reason).serialized() + "}"
        #expect(await listener.line { $0 == dropped } != nil, "\(listener.transcript)")
    }

    @Test("Ctrl-C and SIGTERM end listen with a close frame the server sees, then exit 130 and 143",
          arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func listenStopsCleanlyOnSignals(number: Int32, status: Int32) async throws {
        // A bare Action Cable server, to see how the client left: a close frame, or a socket that ended.
        let closures = Locked<[TransportClosure]>([])
        let server = try WebSocketServer(shouldUpgrade: { _ in .accept(subprotocol: "actioncable-v1-json") }) { connection, event in
            switch event {
            case .opened:
                connection.send(text: #"{"type":"welcome"}"#)
            case .received(let frames):
                for case .text(let text) in frames where text.contains(#""command":"subscribe""#) {
                    let identifier = JSONValue.string(#"{"channel":"ChatChannel"}"#).serialized()
                    connection.send(text: #"{"identifier":"# + identifier + #","type":"confirm_subscription"}"#)
                }
            case .closed(let closure):
                closures.withLock { $0.append(closure) }
            }
        }
        defer { server.stop() }
        let listener = try CLIProcess(["listen", "actioncable", server.url.absoluteString + "/cable",
                                       "--channel", "ChatChannel", "--json"])
        defer { listener.stop() }
        #expect(await listener.subscribed("ChatChannel"), "\(listener.transcript)")
        listener.signal(number)
        #expect(await listener.exitStatus() == status, "\(listener.transcript)")
        #expect(await eventually { !closures.withLock { $0.isEmpty } })
        #expect(closures.withLock { $0.map(\.kind) } == [.closedByPeer(code: 1000, reason: "client disconnect")])
    }

    @Test("nothing listening: the session keeps retrying and --timeout exits 4, saying it never connected and why")
    func nothingListening() async throws {
        let run = try await runCLI(["listen", "socketio", "http://127.0.0.1:1", "--json", "--timeout", "2"])
        #expect(run.status == 4, "\(run.transcript)")
        #expect(run.lines.first == CLILine.connecting, "\(run.transcript)")
        #expect(!run.lines.contains { $0.contains(#""subscribed""#) }, "\(run.transcript)")
        let last = try JSONValue.parse(run.lines.last ?? "")
        #expect(last["code"]?.stringValue == "timed-out", "\(run.transcript)")
        let message = last["message"]?.stringValue ?? ""
        #expect(message.hasPrefix("timed out after 2 s: never connected (last attempt: "), "\(run.transcript)")
        #expect(message.contains("127.0.0.1:1"), "\(run.transcript)")
    }

    @Test("a 4xx answer to the Socket.IO upgrade or polling handshake fails at once with exit 3, as for the other dialects")
    func socketIORefusedByHTTP() async throws {
        let pusher = try await ServedCLI("pusher")
        defer { pusher.process.stop() }
        let wrongServer = try await runCLI(["listen", "socketio", pusher.url, "--json", "--timeout", "30"])
        #expect(wrongServer.status == 3, "\(wrongServer.transcript)")
        #expect(wrongServer.lines == [
            CLILine.connecting, #"{"type":"state","from":"connecting","to":"failed"}"#,
            CLILine.error("handshake-rejected", "wrong path (or origin refused): HTTP 404 Not Found for /socket.io/"),
        ], "\(wrongServer.transcript)")

        let socketIO = try await ServedCLI("socketio")
        defer { socketIO.process.stop() }
        // The embedded server speaks WebSocket only: its polling answer is 400.
        let polling = try await runCLI(["listen", "socketio", socketIO.url, "--transport", "polling", "--json",
                                        "--timeout", "30"])
        #expect(polling.status == 3, "\(polling.transcript)")
        #expect(polling.lines.last == CLILine.error("handshake-rejected", "polling GET answered HTTP 400 for /socket.io/"),
                "\(polling.transcript)")
    }

    @Test("demo: every backend, one handler set, every step passed, exit 0")
    func demo() async throws {
        let run = try await runCLI(["demo"])
        #expect(run.status == 0, "\(run.transcript)")
        for backend in ["Socket.IO", "Pusher", "Bird", "Action Cable"] {
            #expect(run.lines.contains { $0.hasPrefix("\(backend): embedded server on ") }, "\(run.transcript)")
        }
        #expect(!run.lines.contains { $0.contains("✗") }, "\(run.transcript)")
        // Each backend's drop is reported as the resubscription's gap, and its counters show the reconnect.
        #expect(run.lines.filter { $0.contains("without a subscription (SubscriptionInfo.gap)") }.count == 4,
                "\(run.transcript)")
        #expect(run.lines.filter { $0.contains("session.statistics: 2 connections (1 reconnection)") }.count == 4,
                "\(run.transcript)")
        #expect(run.lines.last == "demo: every step passed", "\(run.transcript)")
    }

    @Test("usage mistakes exit 2 before connecting", arguments: [
        ["listen"],
        ["listen", "mqtt", "ws://127.0.0.1:1"],
        ["listen", "pusher", "ws://127.0.0.1:1", "--channel", "news"],              // no --key
        ["listen", "socketio", "http://127.0.0.1:1", "--bogus", "1"],
        ["send", "pusher", "ws://127.0.0.1:1", "--key", "k", "--channel", "private-a", "--event", "hello"],
        ["send", "socketio", "http://127.0.0.1:1", "--event", "e", "--data", "not json"],
        ["listen", "socketio", "http://127.0.0.1:1", "--channel", "/chat", "--auth", #""str""#],  // not an object
        ["send", "actioncable", "ws://127.0.0.1:1/cable", "--channel", "C", "--event", "e", "--ack"],
        ["serve", "socketio", "--port", "70000"],
        ["nonsense"],
    ])
    func usageErrors(arguments: [String]) async throws {
        let run = try await runCLI(arguments)
        #expect(run.status == 2, "\(run.transcript)")
        #expect(run.lines.isEmpty, "\(run.transcript)")
    }

    @Test("an option of another dialect, a stray word or a plain url to a remote host exits 2 naming it", arguments: [
        (["listen", "socketio", "http://127.0.0.1:1", "--key", "x"], "--key is for pusher and bird, not socketio"),
        (["send", "actioncable", "ws://127.0.0.1:1/cable", "--channel", "C", "--event", "e", "--auth", "{}"],
         "--auth is for socketio, not actioncable"),
        (["listen", "bird", "ws://127.0.0.1:1", "--key", "k", "--channel", "c", "--encryption-master-key", "x"],
         "--encryption-master-key is for pusher, not bird"),
        (["serve", "actioncable", "--namespace", "/x"], "--namespace is for socketio, not actioncable"),
        (["demo", "extra"], "unexpected argument extra"),
        (["listen", "socketio", "http://192.0.2.1:80"],
         "http://192.0.2.1:80 is not encrypted and 192.0.2.1 is not this machine: use https:// or wss://, or pass --insecure"),
        (["listen", "pusher", "ws://192.0.2.1:80/app/k", "--channel", "c"],
         "ws://192.0.2.1:80/app/k is not encrypted and 192.0.2.1 is not this machine: use wss://, or pass --insecure"),
    ])
    func foreignOptions(arguments: [String], message: String) async throws {
        let run = try await runCLI(arguments)
        #expect(run.status == 2, "\(run.transcript)")
        #expect(run.transcript.contains(message), "\(run.transcript)")
    }

    @Test("--help on every command prints its usage and exits 0", arguments: ["listen", "send", "serve", "demo"])
    func help(command: String) async throws {
        let run = try await runCLI([command, "--help"])
        #expect(run.status == 0, "\(run.transcript)")
        #expect(run.lines.first?.hasPrefix("usage: realtime \(command)") == true, "\(run.transcript)")
        #expect(run.lines.contains { $0.contains("exit") }, "\(run.transcript)")
    }
}
