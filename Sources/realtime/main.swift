import Foundation
import Realtime

// realtime — command-line client for every dialect of the package.
let usage = """
    usage: realtime <command> [options]

      demo   [--dialect socketio]             a live session against an embedded loopback server
      listen <url> [--dialect socketio|actioncable] [--channel C]... [--param k=v]... [--header "N: v"]...
             [--auth JSON] [--polling|--upgrade] [--count N] [--verbose] [--insecure]
                                              print every event as a JSON line
      send   <url> --channel C --event E [--data JSON] [--ack] [--timeout S] [--dialect …]
                                              send one event (with --ack: wait for the acknowledgement)
    """

do {
    let options = try CommandLineOptions(Array(CommandLine.arguments.dropFirst()))
    switch options.positional.first {
    case "demo":
        exit(try await demo(options) ? 0 : 1)
    case "listen":
        try await listen(options)
    case "send":
        try await send(options)
    case nil, "help":
        print(usage)
    case let other?:
        printError("realtime: unknown command \(other)\n\(usage)")
        exit(2)
    }
} catch let error as UsageError {
    printError("realtime: \(error)\n\(usage)")
    exit(2)
} catch {
    printError("realtime: \(error)")
    exit(1)
}
