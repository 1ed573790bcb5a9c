import Foundation
import Realtime

/// `realtime send <dialect> <url> --channel C --event E …`: sends one message once the channel is joined.
enum SendCommand {
    static let help = """
    usage: realtime send <socketio|pusher|bird|actioncable> <url> --channel C --event E
                         [--data JSON | --args JSON-array] [--ack] [--timeout S] [options]

    Connects, joins the channel and, once the server confirms it, sends one message:
      socketio     an emit of E with --data (one argument) or --args (several); --ack waits for the
                   acknowledgement and prints it
      pusher/bird  a client event (E must start with client-) on a private- or presence- channel
      actioncable  a perform of action E with --data (a JSON object, default {})

      --event E            the event (Action Cable: the action)
      --data JSON          the payload ('{"text":"hi"}', '"a string"', 42)
      --args JSON-array    Socket.IO: several arguments ('[1,2,3]')
      --ack                Socket.IO: wait for the acknowledgement
      --timeout S          give up after S seconds (default 30; exit 4)
    \(ConnectionOptions.help)

    With --json, besides the state, subscribed and error lines of `listen`:
      {"type":"sent","channel":"…","event":"…"}
      {"type":"ack","data":[…]}

    Without --ack the command waits 0.5 s after the write before closing: nothing acknowledges a send, and
    servers that run commands on a pool (Rails) could otherwise see the close first.

    exit: 0 sent (and acknowledged), 2 usage, 3 refused or failed, 4 timeout, 130 Ctrl-C, 143 SIGTERM
    """

    static func run(_ words: [String]) async throws -> ExitCode {
        let arguments = try Arguments(words, valued: ConnectionOptions.valued.union(["event", "data", "args"]),
                                      flags: ConnectionOptions.flags.union(["ack"]))
        if arguments.flag("help") {
            print(help)
            return .done
        }
        guard let dialectWord = arguments.positional.first else { throw UsageError("a dialect is needed: socketio, pusher, bird or actioncable") }
        let dialect = try DialectKind(dialectWord)
        guard arguments.positional.count <= 2 else {
            throw UsageError("unexpected argument \(arguments.positional.dropFirst(2).joined(separator: " "))")
        }
        guard let event = arguments.value("event"), !event.isEmpty else { throw UsageError("send needs --event") }
        guard arguments.all("channel").count <= 1 else { throw UsageError("send takes one --channel") }
        let payload = try message(arguments, dialect: dialect, event: event)
        let made = try ConnectionOptions.makeDialect(dialect, url: arguments.positional.dropFirst().first, arguments)
        let channels = try ConnectionOptions.channels(arguments, dialect: dialect)
        let timeout = try arguments.seconds("timeout") ?? .seconds(30)
        let output = Output(json: arguments.flag("json"))
        let command = CommandSession(dialect: made, channels: channels, output: output,
                                     verbose: arguments.flag("verbose"))
        guard let channel = command.channels.first else { throw UsageError("send needs --channel") }
        let wantsAck = arguments.flag("ack")
        command.finish(after: timeout, with: .timedOut) {
            wantsAck ? "no acknowledgement for \(event)" : "\(event) was not sent"
        }
        command.start()
        Task {
            do {
                try await channel.subscribed()
            } catch {
                return   // a refused channel is reported, and ends the command, through the session's error line
            }
            command.queue.async { command.announce(channel.id) }
            do {
                if wantsAck {
                    // The command's own --timeout decides and says what was awaited; the request's is a backstop.
                    let answer = try await channel.request(event, arguments: payload, timeout: timeout + .seconds(1))
                    command.queue.async {
                        output.ack(answer)
                        command.finisher.finish(.done)
                    }
                } else {
                    try await channel.send(event, arguments: payload)
                    // Written is not handled: Rails runs commands and the close on a worker pool, so a close
                    // sent at once can overtake the perform ("Ignoring message processed after the WebSocket
                    // was closed"). Nothing acknowledges a send, so give the server a moment.
                    try await Task.sleep(for: .milliseconds(500))
                    command.queue.async {
                        output.sent(channel: channel.id, event: event)
                        command.finisher.finish(.done)
                    }
                }
            } catch {
                let failure = error as? RealtimeError
                    ?? RealtimeError(.operationFailed, "the send failed", context: .init(detail: "\(error)"))
                command.queue.async {
                    output.error(failure)
                    command.finisher.finish(failure.code == .timedOut ? .timedOut : .refused)
                }
            }
        }
        return await command.exitCode()
    }

    /// The message's arguments, checked against the dialect's rules before connecting.
    static func message(_ arguments: Arguments, dialect: DialectKind, event: String) throws -> [JSONValue] {
        let data = try arguments.json("data")
        let list = try arguments.json("args")
        if data != nil, list != nil { throw UsageError("give --data or --args, not both") }
        if arguments.flag("ack"), dialect != .socketio {
            throw UsageError("--ack is Socket.IO only: \(dialect.rawValue) has no acknowledgements")
        }
        switch dialect {
        case .socketio:
            if let list {
                guard let values = list.arrayValue else { throw UsageError("--args takes a JSON array") }
                return values
            }
            return data.map { [$0] } ?? []
        case .pusher, .bird:
            guard list == nil else { throw UsageError("--args is Socket.IO only") }
            guard event.hasPrefix("client-") else {
                throw UsageError("\(dialect.rawValue) clients send client events only: name it client-…")
            }
            return [data ?? .object([:])]
        case .actioncable:
            guard list == nil else { throw UsageError("--args is Socket.IO only") }
            guard let object = (data ?? .object([:])).objectValue else {
                throw UsageError("actioncable --data takes a JSON object (the action's data)")
            }
            guard object["action"] == nil else { throw UsageError("--data must not carry its own \"action\"") }
            return [.object(object)]
        }
    }
}
