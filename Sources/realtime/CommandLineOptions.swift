import Foundation
import Realtime

/// A tiny argument reader: positional words and `--name value` / `--flag` options.
struct CommandLineOptions {
    private(set) var positional: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Options that take no value.
    static let flagNames: Set<String> = ["ack", "insecure", "verbose", "help", "polling", "upgrade"]

    init(_ arguments: [String]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("--") {
                let name = String(argument.dropFirst(2))
                if Self.flagNames.contains(name) {
                    flags.insert(name)
                } else {
                    guard index + 1 < arguments.count else { throw UsageError("--\(name) needs a value") }
                    values[name, default: []].append(arguments[index + 1])
                    index += 1
                }
            } else {
                positional.append(argument)
            }
            index += 1
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    func duration(_ name: String, default fallback: Duration) throws -> Duration {
        guard let text = value(name) else { return fallback }
        guard let seconds = Double(text), seconds >= 0 else { throw UsageError("--\(name) takes seconds") }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// `--header "Name: value"` options.
    func headers() throws -> [HTTPHeader] {
        try all("header").map { header in
            guard let colon = header.firstIndex(of: ":") else { throw UsageError("--header takes \"Name: value\"") }
            return HTTPHeader(String(header[..<colon]).trimmingCharacters(in: .whitespaces),
                              String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
    }

    /// `--param key=json` options, for Action Cable identifiers.
    func params() throws -> [String: JSONValue] {
        var params: [String: JSONValue] = [:]
        for item in all("param") {
            guard let equals = item.firstIndex(of: "=") else { throw UsageError("--param takes key=value") }
            let key = String(item[..<equals])
            let text = String(item[item.index(after: equals)...])
            params[key] = (try? JSONValue.parse(text)) ?? .string(text)
        }
        return params
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Builds the dialect a command asked for.
func makeDialect(_ options: CommandLineOptions, url: URL) throws -> any RealtimeDialect {
    let headers = try options.headers()
    switch options.value("dialect") ?? "socketio" {
    case "socketio", "socket.io":
        var transports: [SocketIODialect.Transport] = [.websocket]
        if options.flag("polling") { transports = [.polling] }
        if options.flag("upgrade") { transports = [.polling, .websocket] }
        let auth = try options.value("auth").map { SocketIOAuth.value(try JSONValue.parse($0)) }
        return SocketIODialect(url: url, auth: auth, headers: headers, transports: transports,
                               defaultNamespaces: [],
                               allowsInsecureTransportToRemoteHosts: options.flag("insecure"))
    case "actioncable", "cable":
        return ActionCableDialect.actionCable(url: url, headers: headers, origin: options.value("origin"),
                                              allowsInsecureTransportToRemoteHosts: options.flag("insecure"))
    case let other:
        throw UsageError("unknown dialect \(other) (socketio, actioncable)")
    }
}

/// Channel ids from `--channel` (and `--param` for Action Cable).
func channels(_ options: CommandLineOptions) throws -> [ChannelID] {
    let params = try options.params()
    let names = options.all("channel")
    return (names.isEmpty ? ["/"] : names).map { ChannelID($0, params: params) }
}

/// One line of JSON for an event, as `listen` prints it.
func describe(_ event: RealtimeEvent) -> String {
    var object: [String: JSONValue] = ["event": .string(event.name), "data": event.data]
    if let channel = event.channel { object["channel"] = .string(channel.description) }
    if event.arguments.count > 1 { object["arguments"] = .array(event.arguments) }
    return JSONValue.object(object).serialized()
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
