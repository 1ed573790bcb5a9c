import Foundation

/// Severity of a log record.
public enum LogLevel: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }
}

/// One line for the app's logging hook. The message has already passed through ``Redaction``.
public struct LogRecord: Sendable, Hashable {
    public var level: LogLevel
    public var message: String
    /// The component that wrote it ("session", "socket.io", "websocket").
    public var source: String

    public init(level: LogLevel, message: String, source: String) {
        self.level = level
        self.message = message
        self.source = source
    }
}

/// The app's logging hook.
public typealias LogHandler = @Sendable (LogRecord) -> Void

/// Masks secrets in log text: auth signatures, tokens, passwords, secrets and `Authorization` headers.
public enum Redaction {
    /// Keys whose values are secrets wherever they appear (JSON members, query items, headers).
    public static let secretKeys: [String] = [
        "auth", "token", "access_token", "password", "secret", "shared_secret", "authorization",
        "api_key", "apikey", "signature", "cookie",
    ]

    /// Returns `text` with the value of every secret key replaced by `<redacted>`.
    public static func redact(_ text: String) -> String {
        var output = Substring(text)
        var result = ""
        result.reserveCapacity(text.utf8.count)
        while let match = nextSecret(in: output) {
            result += output[output.startIndex..<match.valueStart]
            result += "<redacted>"
            output = output[match.valueEnd...]
        }
        result += output
        return result
    }

    private struct Match {
        var valueStart: Substring.Index
        var valueEnd: Substring.Index
    }

    /// Finds the earliest `key":"value"`, `key=value` or `Key: value` occurrence of a secret key.
    private static func nextSecret(in text: Substring) -> Match? {
        let lowered = text.lowercased()
        var best: Match?
        var bestOffset = Int.max
        for key in secretKeys {
            var searchFrom = lowered.startIndex
            while let range = lowered.range(of: key, range: searchFrom..<lowered.endIndex) {
                searchFrom = range.upperBound
                let keyStartOffset = lowered.distance(from: lowered.startIndex, to: range.lowerBound)
                if keyStartOffset >= bestOffset { break }
                // The key must not be the tail of a longer word.
                if range.lowerBound > lowered.startIndex {
                    let previous = lowered[lowered.index(before: range.lowerBound)]
                    if previous.isLetter || previous == "_" { continue }
                }
                let afterKeyOffset = lowered.distance(from: lowered.startIndex, to: range.upperBound)
                var cursor = text.index(text.startIndex, offsetBy: afterKeyOffset)
                if cursor < text.endIndex, text[cursor] == "\"" { cursor = text.index(after: cursor) }
                while cursor < text.endIndex, text[cursor] == " " { cursor = text.index(after: cursor) }
                guard cursor < text.endIndex, text[cursor] == ":" || text[cursor] == "=" else { continue }
                cursor = text.index(after: cursor)
                while cursor < text.endIndex, text[cursor] == " " { cursor = text.index(after: cursor) }
                let quoted = cursor < text.endIndex && text[cursor] == "\""
                if quoted { cursor = text.index(after: cursor) }
                let start = cursor
                var end = cursor
                while end < text.endIndex {
                    let character = text[end]
                    if quoted {
                        if character == "\\" {
                            end = text.index(after: end)
                            if end < text.endIndex { end = text.index(after: end) }
                            continue
                        }
                        if character == "\"" { break }
                    } else if character == "&" || character == "," || character == "\n" || character == "}"
                                || (character == " " && !lowered[range].hasPrefix("authorization")) {
                        break
                    }
                    end = text.index(after: end)
                }
                if start == end { continue }
                best = Match(valueStart: start, valueEnd: end)
                bestOffset = keyStartOffset
                break
            }
        }
        return best
    }
}
