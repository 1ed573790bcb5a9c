import Foundation
import Realtime

/// `realtime listen <dialect> <url> …`: joins channels and prints their events.
enum ListenCommand {
    static let help = """
    usage: realtime listen <socketio|pusher|bird|actioncable> <url> [options]

    Connects, joins every --channel and prints what arrives until --count events or --timeout seconds.

      --count N            stop after N events (exit 4 if --timeout comes first)
      --ping S             every S seconds while connected, measure the round trip to the server (a
                           WebSocket ping; not over Socket.IO long-polling) and print it
      --timeout S          stop after S seconds: exit 0, or 4 before --count events or before every channel
                           was confirmed (an error line says which). Without it, listen runs until stopped and,
                           like any session, keeps reconnecting to a server it cannot reach
    \(ConnectionOptions.help)

    With --json each line is one object:
      {"type":"state","from":"connecting","to":"connected"}       (to reconnecting: "reason":"…")
      {"type":"subscribed","channel":"…"}
      {"type":"event","channel":"…","event":"…","data":…}     (Socket.IO with several arguments: "args":[…])
      {"type":"error","code":"…","message":"…"}
      {"type":"ping","round_trip_ms":0.183}                      (with --ping)
    Pusher/Bird presence changes arrive as pusher:member_added / pusher:member_removed events (bird:…).
    Action Cable broadcasts are named by their "event", "type" or "action" member (--event-key), else "message".
    Socket.IO events that ask for an acknowledgement are acknowledged with no arguments.

    examples:
      realtime listen socketio http://127.0.0.1:3000 --channel /chat --auth '{"token":"secret"}' --json
      realtime listen pusher ws://127.0.0.1:6001 --key app-key --secret app-secret --channel private-chat
      realtime listen actioncable ws://127.0.0.1:3000/cable --channel 'ChatChannel{"room":42}' --count 1

    exit: 0 done, 2 usage, 3 refused or failed (auth, channel, session), 4 --timeout before --count,
          130 Ctrl-C and 143 SIGTERM (after closing the connection cleanly; a second signal exits at once)
    """

    static func run(_ words: [String]) async throws -> ExitCode {
        let arguments = try Arguments(words, valued: ConnectionOptions.valued.union(["count", "ping"]),
                                      flags: ConnectionOptions.flags)
        if arguments.flag("help") {
            print(help)
            return .done
        }
        guard let dialectWord = arguments.positional.first else { throw UsageError("a dialect is needed: socketio, pusher, bird or actioncable") }
        let dialect = try DialectKind(dialectWord)
        guard arguments.positional.count <= 2 else {
            throw UsageError("unexpected argument \(arguments.positional.dropFirst(2).joined(separator: " "))")
        }
        let made = try ConnectionOptions.makeDialect(dialect, url: arguments.positional.dropFirst().first, arguments)
        let channels = try ConnectionOptions.channels(arguments, dialect: dialect)
        let limit = try arguments.integer("count")
        let timeout = try arguments.seconds("timeout")
        let pingEvery = try arguments.seconds("ping")
        if pingEvery == .zero { throw UsageError("--ping takes more than 0 seconds") }
        let output = Output(json: arguments.flag("json"))
        let command = CommandSession(dialect: made, channels: channels, output: output,
                                     verbose: arguments.flag("verbose"))
        // Shown as the `subscribed` line instead.
        let confirmation = dialect.vendor.map { $0.systemPrefix + "subscription_succeeded" }
        // Pusher/Bird errors also arrive as events; the `error` line already says it.
        let errorEvents = Set(dialect.vendor.map { [$0.systemPrefix + "error", $0.systemPrefix + "subscription_error"] } ?? [])
        let received = Locked(0)
        command.session.onAny { event in
            guard event.name != confirmation else { return command.announceBefore(event) }
            guard !errorEvents.contains(event.name) else { return }
            command.announceBefore(event)
            command.output.event(event)
            event.ack?()
            let count = received.withLock { count -> Int in
                count += 1
                return count
            }
            if let limit, count >= limit { command.finisher.finish(.done) }
        }
        if limit == 0 { command.finisher.finish(.done) }
        command.finish(after: timeout, with: limit == nil ? .done : .timedOut) {
            limit.map { "\(received.withLock { $0 }) of \($0) events arrived" }
        }
        command.start()
        let pinging = pingEvery.map { every in Task { await ping(every: every, command) } }
        defer { pinging?.cancel() }
        return await command.exitCode()
    }

    /// Measures the round trip every `every` while connected, until the command ends or the connection
    /// cannot ping at all.
    private static func ping(every: Duration, _ command: CommandSession) async {
        while !Task.isCancelled, !command.finisher.isFinished {
            try? await Task.sleep(for: every)
            guard command.session.state.isConnected, !command.finisher.isFinished else { continue }
            do {
                command.output.ping(try await command.session.ping())
            } catch let error as RealtimeError {
                if error.code == .connectionClosed { continue }  // it dropped meanwhile; the state line says so
                command.output.error(error)
                if error.code == .unsupported { return }
            } catch {
                return  // cancelled: the command is ending
            }
        }
    }
}
