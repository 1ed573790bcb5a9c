import Foundation
import Realtime

// realtime — the package's command-line client and embedded servers, for every dialect.
let usage = """
    usage: realtime <command> [arguments]

      demo    [--dialect socketio|pusher|bird|actioncable]
                                                     one set of handlers against every embedded server
      listen  <socketio|pusher|bird|actioncable> <url> [--channel C]... [--count N] [--timeout S] [--ping S] [--json]
                                                     join channels and print their events
      send    <socketio|pusher|bird|actioncable> <url> --channel C --event E [--data JSON | --args JSON-array]
              [--ack] [--timeout S] [--json]         send one event, perform or client event
      serve   <socketio|pusher|bird|actioncable> [--port P] [--json]
                                                     run an embedded server for local development

    <url> is optional for pusher and bird (the cloud host of --cluster). `realtime <command> --help` tells more.
    Exit codes: 0 done, 1 a demo step failed, 2 usage, 3 refused or failed, 4 timeout, 130 Ctrl-C, 143 SIGTERM.
    """

let words = Array(CommandLine.arguments.dropFirst())
let command = words.first
let rest = Array(words.dropFirst())
let helps: [String: String] = ["listen": ListenCommand.help, "send": SendCommand.help, "serve": ServeCommand.help,
                               "demo": DemoCommand.help]
do {
    let code: ExitCode
    switch command {
    case "demo":
        code = try await DemoCommand.run(rest)
    case "listen":
        code = try await ListenCommand.run(rest)
    case "send":
        code = try await SendCommand.run(rest)
    case "serve":
        code = try await ServeCommand.run(rest)
    case "help", "--help", "-h":
        print(rest.first.flatMap { helps[$0] } ?? usage)
        code = .done
    case nil:
        printError(usage)
        code = .usage
    case let other?:
        printError("realtime: unknown command \(other)\n\n\(usage)")
        code = .usage
    }
    exit(code.rawValue)
} catch let error as UsageError {
    printError("realtime \(command ?? ""): \(error) (see realtime \(command ?? "") --help)")
    exit(ExitCode.usage.rawValue)
} catch let error as RealtimeError {
    printError("realtime \(command ?? ""): \(error)")
    exit(ExitCode.refused.rawValue)
} catch {
    printError("realtime \(command ?? ""): \(error)")
    exit(ExitCode.failure.rawValue)
}
