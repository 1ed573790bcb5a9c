import Foundation
import Realtime

/// `realtime listen <url> …`: joins channels and prints every event as a JSON line until interrupted.
func listen(_ options: CommandLineOptions) async throws {
    guard let text = options.positional.dropFirst().first, let url = URL(string: text) else {
        throw UsageError("listen needs a URL")
    }
    let dialect = try makeDialect(options, url: url)
    var settings = SessionOptions(logLevel: .debug)
    if options.flag("verbose") {
        settings.logHandler = { record in printError("[\(record.level)] \(record.message)") }
    }
    let session = RealtimeSession(dialect: dialect, options: settings)
    session.onStateChange { _, new in printError("state: \(new)") }
    session.onError { printError("error: \($0)") }
    session.onAny { event in
        FileHandle.standardOutput.write(Data((describe(event) + "\n").utf8))
        event.ack?()
    }
    for channel in try channels(options) { _ = session.channel(channel) }
    try await session.connect()
    let limit = options.value("count").flatMap(Int.init)
    var received = 0
    for await _ in session.events() {
        received += 1
        if let limit, received >= limit { break }
    }
    session.disconnect()
}

/// `realtime send <url> --channel c --event e [--data JSON] [--ack]`: sends one event, prints the answer.
func send(_ options: CommandLineOptions) async throws {
    guard let text = options.positional.dropFirst().first, let url = URL(string: text) else {
        throw UsageError("send needs a URL")
    }
    guard let event = options.value("event") else { throw UsageError("send needs --event") }
    let data = try options.value("data").map { try JSONValue.parse($0) }
    let dialect = try makeDialect(options, url: url)
    let session = RealtimeSession(dialect: dialect)
    session.onError { printError("error: \($0)") }
    guard let channelID = try channels(options).first else { throw UsageError("send needs --channel") }
    let channel = session.channel(channelID)
    try await session.connect()
    try await channel.subscribed()
    let timeout = try options.duration("timeout", default: .seconds(10))
    if options.flag("ack") {
        let answer = try await channel.request(event, arguments: data.map { [$0] } ?? [], timeout: timeout)
        print(JSONValue.array(answer).serialized())
    } else {
        try await channel.send(event, arguments: data.map { [$0] } ?? [])
        print("sent")
    }
    session.disconnect()
}
