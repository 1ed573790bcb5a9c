import Foundation
import Realtime

/// How a command ended; `main` exits with `code`.
enum ExitCode: Int32, Sendable {
    case done = 0
    case failure = 1
    case usage = 2
    /// Refused or terminal: auth refused, channel rejected, session failed.
    case refused = 3
    /// `--timeout` elapsed before `--count` events (or before `send` finished).
    case timedOut = 4
    /// Ctrl-C (128 + SIGINT), after a clean close.
    case interrupted = 130
    /// SIGTERM (128 + SIGTERM), after a clean close.
    case terminated = 143
}

/// A command-line mistake: printed with the command's help, exit 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Positional words plus `--name value`, `--name=value` and `--flag` options, checked against the options
/// the command knows so a typo fails instead of being ignored.
struct Arguments {
    private(set) var positional: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// - Parameters:
    ///   - valued: options that take a value.
    ///   - flags: options that take none.
    init(_ arguments: [String], valued: Set<String>, flags flagNames: Set<String>) throws {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard !optionsEnded, argument.hasPrefix("--") else {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if flagNames.contains(name) {
                guard inline == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if valued.contains(name) {
                if let inline {
                    values[name, default: []].append(inline)
                } else {
                    guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                    values[name, default: []].append(arguments[index])
                    index += 1
                }
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }
    /// Every option given, valued or flag.
    var givenOptions: Set<String> { flags.union(values.keys) }

    /// Refuses options that belong to other dialects than `dialect` (`owners`: option → the dialects it is
    /// for), so that `--key` on Socket.IO fails instead of being ignored.
    func refuseOptions(notFor dialect: DialectKind, owners: [String: Set<DialectKind>]) throws {
        for name in givenOptions.sorted() {
            guard let dialects = owners[name], !dialects.contains(dialect) else { continue }
            let names = DialectKind.allCases.filter(dialects.contains).map(\.rawValue).joined(separator: " and ")
            throw UsageError("--\(name) is for \(names), not \(dialect.rawValue)")
        }
    }

    /// Seconds as a `Duration`; `nil` when the option is absent.
    func seconds(_ name: String) throws -> Duration? {
        guard let text = value(name) else { return nil }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
            throw UsageError("--\(name) takes seconds, not \(text)")
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    func integer(_ name: String) throws -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), number >= 0 else {
            throw UsageError("--\(name) takes a whole number, not \(text)")
        }
        return number
    }

    /// The option's value parsed as JSON.
    func json(_ name: String) throws -> JSONValue? {
        guard let text = value(name) else { return nil }
        do {
            return try JSONValue.parse(text)
        } catch {
            throw UsageError("--\(name) is not JSON (\(error.message)); quote strings: '\"hello\"'")
        }
    }

    /// `--header "Name: value"` options.
    func headers() throws -> [HTTPHeader] {
        try all("header").map { header in
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                throw UsageError("--header takes \"Name: value\", not \(header)")
            }
            return HTTPHeader(String(header[..<colon]).trimmingCharacters(in: .whitespaces),
                              String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
    }
}
