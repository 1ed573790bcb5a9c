import Foundation
import Realtime
import RealtimeActionCableTesting
import RealtimePusherTesting
import RealtimeSocketIOTesting
import RealtimeTesting

/// `realtime serve <dialect>`: the package's embedded server on loopback, for developing an app against.
enum ServeCommand {
    static let help = """
    usage: realtime serve <socketio|pusher|bird|actioncable> [--port P] [options]

    Runs the package's embedded server on 127.0.0.1 for local development (not for production) and prints
    its url, its credentials and a ready-to-paste `realtime listen` line. It serves until Ctrl-C.

      --port P             the port (0 picks a free one; defaults: socketio 3000, pusher 6001, bird 6002,
                           actioncable 28080)
      --json               print the ready line and the answers to commands as JSON objects
      pusher / bird:
        --key K --secret S the app's credentials (default app-key / app-secret)
        --encryption-master-key B64   Pusher: the key of private-encrypted- channels (default: random)
      socketio:
        --namespace N      a namespace to accept (repeatable; default / and /chat)
      actioncable:
        --channel-class C  a channel class to accept (repeatable; default ChatChannel)

    What the server does by itself:
      pusher/bird  checks signatures of private-/presence- channels, keeps presence members, relays client-
                   events to the channel's other subscribers
      socketio     any client is accepted on the namespaces; "echo" is acknowledged with its arguments;
                   "message" is relayed to the namespace's other sockets (and acknowledged with their count);
                   WebSocket only: long-polling (--transport polling, upgrade) is refused with HTTP 400
      actioncable  any client is accepted; a subscription streams from its identifier
                   (ChatChannel{"room":42}); the actions "speak" and "message" broadcast their data to that
                   stream (with "message", as Socket.IO's relay, for the same client code), "echo" and data
                   without an action come back to the sender only

    Commands, one per line on standard input:
      trigger <channel> <event> <json>   pusher/bird: an event to every subscriber of the channel;
                                         socketio: an emit to every socket of the namespace (<channel>)
      broadcast <stream> <json>          actioncable: a message to every subscription of the stream
      quit                               stop the server (as Ctrl-C and SIGTERM do): clients get a close
                                         frame, with the dialect's restart signal where it has one

    exit: 0 after quit or a signal, 2 usage, 3 the port cannot be listened on
    """

    static func run(_ words: [String]) async throws -> ExitCode {
        let arguments = try Arguments(words, valued: ["port", "key", "secret", "encryption-master-key", "namespace",
                                                      "channel-class"],
                                      flags: ["json", "help"])
        if arguments.flag("help") {
            print(help)
            return .done
        }
        guard let word = arguments.positional.first else { throw UsageError("a dialect is needed: socketio, pusher, bird or actioncable") }
        guard arguments.positional.count == 1 else {
            throw UsageError("unexpected argument \(arguments.positional.dropFirst().joined(separator: " "))")
        }
        let dialect = try DialectKind(word)
        try arguments.refuseOptions(notFor: dialect, owners: [
            "key": [.pusher, .bird], "secret": [.pusher, .bird], "encryption-master-key": [.pusher],
            "namespace": [.socketio], "channel-class": [.actioncable],
        ])
        let port = try arguments.integer("port") ?? defaultPort(dialect)
        guard port <= 65_535 else { throw UsageError("--port takes 0…65535") }
        let output = Output(json: arguments.flag("json"))
        let server: any EmbeddedServer
        switch dialect {
        case .pusher, .bird:
            server = try PusherServe(dialect, port: port, arguments)
        case .socketio:
            server = try SocketIOServe(port: port, namespaces: arguments.all("namespace"))
        case .actioncable:
            server = try ActionCableServe(port: port, classes: arguments.all("channel-class"))
        }
        server.printReady(output)
        let quit = Finisher(output: Output(json: false))
        // Ctrl-C and SIGTERM stop the server as `quit` does: clients get a close frame.
        let signals = quit.finishOnSignals { _ in .done }
        await readCommands(server, output: output, quit: quit)
        await server.shutdown()
        withExtendedLifetime(signals) {}
        return .done
    }

    static func defaultPort(_ dialect: DialectKind) -> Int {
        switch dialect {
        case .socketio: 3000
        case .pusher: 6001
        case .bird: 6002
        case .actioncable: 28080
        }
    }

    /// Runs stdin's commands until `quit` (or a signal finishes `quit`); at the end of stdin it serves on.
    private static func readCommands(_ server: any EmbeddedServer, output: Output, quit: Finisher) async {
        Thread.detachNewThread {
            while let line = readLine() {
                let (verb, rest) = nextWord(Substring(line))
                if verb.isEmpty { continue }
                if verb == "quit" { return quit.finish(.done) }
                do {
                    try server.perform(verb, rest, output: output)
                } catch {
                    if output.json {
                        output.emit(["type": "error", "code": "invalid-argument", "message": .string("\(error)")])
                    } else {
                        printError("realtime serve: \(error)")
                    }
                }
            }
        }
        _ = await quit.wait()
    }
}

/// The first space-separated word of `text` and what follows it.
func nextWord(_ text: Substring) -> (String, Substring) {
    let trimmed = text.drop { $0 == " " || $0 == "\t" }
    let end = trimmed.firstIndex { $0 == " " || $0 == "\t" } ?? trimmed.endIndex
    return (String(trimmed[..<end]), trimmed[end...])
}

/// One embedded server as `serve` runs it.
protocol EmbeddedServer: Sendable {
    func printReady(_ output: Output)
    /// Runs a stdin command (`trigger`, `broadcast`) with the rest of its line.
    func perform(_ verb: String, _ rest: Substring, output: Output) throws
    /// Closes every client cleanly (the dialect's restart signal, then a close frame) and stops listening.
    func shutdown() async
}

extension EmbeddedServer {
    /// The ready line: JSON, or a few readable lines.
    func announce(_ output: Output, dialect: DialectKind, url: String, credentials: KeyValuePairs<String, String>,
                  listen: String, command: String) {
        if output.json {
            var members: [(String, JSONValue)] = [("type", "ready"), ("dialect", .string(dialect.rawValue)),
                                                  ("url", .string(url))]
            members += credentials.map { ($0.key, .string($0.value)) }
            members += [("listen", .string(listen))]
            let body = members.map { JSONValue.string($0.0).serialized() + ":" + $0.1.serialized() }
            FileHandle.standardOutput.write(Data(("{" + body.joined(separator: ",") + "}\n").utf8))
        } else {
            var text = "realtime serve \(dialect.rawValue): \(url)\n"
            for (name, value) in credentials { text += "  \(name): \(value)\n" }
            text += "  listen:  \(listen)\n  \(command)   (on this terminal; Ctrl-C stops)\n"
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    /// `count` names, then JSON: the rest of the line, spaces and all.
    func split(_ rest: Substring, count: Int, usage: String) throws -> ([String], JSONValue) {
        var names: [String] = []
        var remaining = rest
        for _ in 0..<count {
            let (word, after) = nextWord(remaining)
            guard !word.isEmpty else { throw UsageError("usage: \(usage)") }
            names.append(word)
            remaining = after
        }
        do {
            return (names, try JSONValue.parse(String(remaining)))
        } catch {
            let text = remaining.trimmingCharacters(in: .whitespaces)
            throw UsageError("not JSON (\(error.message)): \(text) (usage: \(usage))")
        }
    }

    func triggered(_ output: Output, channel: String, event: String?, receivers: Int?) {
        if output.json {
            var members: [(String, JSONValue)] = [("type", "triggered"), ("channel", .string(channel))]
            if let event { members.append(("event", .string(event))) }
            if let receivers { members.append(("receivers", .integer(Int64(receivers)))) }
            let body = members.map { JSONValue.string($0.0).serialized() + ":" + $0.1.serialized() }
            FileHandle.standardOutput.write(Data(("{" + body.joined(separator: ",") + "}\n").utf8))
        } else {
            let to = receivers.map { " to \($0) client\($0 == 1 ? "" : "s")" } ?? ""
            FileHandle.standardOutput.write(Data("sent \(event.map { "\($0) " } ?? "")on \(channel)\(to)\n".utf8))
        }
    }
}

/// Pusher Channels or Bird Realtime: ``PusherTestServer``.
struct PusherServe: EmbeddedServer {
    let dialect: DialectKind
    let server: PusherTestServer
    let masterKey: [UInt8]?

    init(_ dialect: DialectKind, port: Int, _ arguments: Arguments) throws {
        let vendor = dialect.vendor ?? .pusher
        var masterKey: [UInt8]?
        if vendor.supportsEncryptedChannels {
            if let text = arguments.value("encryption-master-key") {
                guard let data = Data(base64Encoded: text), data.count == 32 else {
                    throw UsageError("--encryption-master-key takes 32 bytes in base64")
                }
                masterKey = Array(data)
            } else {
                var generator = SystemRandomNumberGenerator()
                masterKey = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
        }
        self.dialect = dialect
        self.masterKey = masterKey
        server = try PusherTestServer(key: arguments.value("key") ?? "app-key",
                                      secret: arguments.value("secret") ?? "app-secret", port: port,
                                      encryptionMasterKey: masterKey, vendor: vendor)
    }

    func printReady(_ output: Output) {
        let url = "ws://127.0.0.1:\(server.port)"
        var credentials: KeyValuePairs<String, String> = ["key": server.key, "secret": server.secret]
        var extra = ""
        if let masterKey {
            let key = Data(masterKey).base64EncodedString()
            credentials = ["key": server.key, "secret": server.secret, "encryptionMasterKey": key]
            extra = " --encryption-master-key \(key)"
        }
        announce(output, dialect: dialect, url: url, credentials: credentials,
                 listen: "realtime listen \(dialect.rawValue) \(url) --key \(server.key) --secret \(server.secret)"
                    + "\(extra) --channel private-chat",
                 command: "trigger <channel> <event> <json>")
    }

    func perform(_ verb: String, _ rest: Substring, output: Output) throws {
        let usage = "trigger <channel> <event> <json>"
        guard verb == "trigger" else { throw UsageError("unknown command \(verb) (\(usage), quit)") }
        let (names, data) = try split(rest, count: 2, usage: usage)
        let receivers = server.clients.filter { $0.channels.contains(names[0]) }.count
        server.trigger(names[0], event: names[1], data: data)
        triggered(output, channel: names[0], event: names[1], receivers: receivers)
    }

    func shutdown() async { await server.shutdown() }
}

/// Socket.IO: ``SocketIOServer`` (WebSocket only; it refuses long-polling).
struct SocketIOServe: EmbeddedServer {
    let server: SocketIOServer

    init(port: Int, namespaces: [String]) throws {
        server = try SocketIOServer(configuration: .init(port: port))
        for name in namespaces.isEmpty ? ["/", "/chat"] : namespaces {
            let namespace = name.hasPrefix("/") ? name : "/" + name
            server.namespace(namespace)
            server.on("echo", in: namespace) { _, arguments, ack in ack?.send(arguments) }
            server.on("message", in: namespace) { [server] sender, arguments, ack in
                let others = server.sockets(in: namespace).filter { $0.id != sender.id }
                for socket in others { socket.emit("message", arguments) }
                ack?(.integer(Int64(others.count)))
            }
        }
    }

    func printReady(_ output: Output) {
        let url = server.url.absoluteString
        announce(output, dialect: .socketio, url: url, credentials: [:],
                 listen: "realtime listen socketio \(url) --channel /chat",
                 command: "trigger <namespace> <event> <json>")
    }

    func perform(_ verb: String, _ rest: Substring, output: Output) throws {
        let usage = "trigger <namespace> <event> <json>"
        guard verb == "trigger" else { throw UsageError("unknown command \(verb) (\(usage), quit)") }
        let (names, data) = try split(rest, count: 2, usage: usage)
        let namespace = names[0].hasPrefix("/") ? names[0] : "/" + names[0]
        let sockets = server.sockets(in: namespace)
        for socket in sockets { socket.emit(names[1], [data]) }
        triggered(output, channel: namespace, event: names[1], receivers: sockets.count)
    }

    func shutdown() async { await server.shutdown() }
}

/// Action Cable: ``ActionCableTestServer`` over real WebSocket connections, with Rails' heartbeat.
final class ActionCableServe: EmbeddedServer {
    let server: ActionCableTestServer
    let listener: WebSocketServer
    private let heartbeat: Task<Void, Never>

    init(port: Int, classes: [String]) throws {
        let server = ActionCableTestServer()
        self.server = server
        for name in classes.isEmpty ? ["ChatChannel"] : classes {
            // The stream of a subscription is its identifier as the CLI prints it: ChatChannel{"room":42}.
            let stream: @Sendable ([String: JSONValue]) -> String = { ChannelID(name, params: $0).description }
            server.define(name) { request in .confirm(streams: [stream(request.params)]) }
            for action in ["speak", "message"] {
                server.onAction(name, action) { call in
                    call.broadcast(to: stream(call.params), .object(call.data.filter { $0.key != "action" }))
                }
            }
            server.onAction(name, "echo") { call in call.transmit(.object(call.data.filter { $0.key != "action" })) }
            server.onAction(name, "receive") { call in call.transmit(.object(call.data)) }
        }
        listener = try server.listen(configuration: .init(port: port))
        // Rails pings every 3 s; clients count a link silent for longer as dead.
        heartbeat = Task {
            while !Task.isCancelled {
                server.ping()
                try? await Task.sleep(for: .seconds(3))
            }
        }
    }

    func printReady(_ output: Output) {
        let url = "ws://127.0.0.1:\(listener.port)/cable"
        announce(output, dialect: .actioncable, url: url, credentials: [:],
                 listen: "realtime listen actioncable \(url) --channel 'ChatChannel{\"room\":42}'",
                 command: "broadcast <stream> <json>")
    }

    func perform(_ verb: String, _ rest: Substring, output: Output) throws {
        let usage = "broadcast <stream> <json>"
        guard verb == "broadcast" else { throw UsageError("unknown command \(verb) (\(usage), quit)") }
        let (names, message) = try split(rest, count: 1, usage: usage)
        server.broadcast(to: names[0], message)
        triggered(output, channel: names[0], event: nil, receivers: nil)
    }

    func shutdown() async {
        heartbeat.cancel()
        server.restart()   // Rails' `server_restart` disconnect, which clients answer by reconnecting
        await listener.shutdown()
    }
}
