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
    /// How severe it is.
    public var level: LogLevel
    /// The text, with secrets already redacted.
    public var message: String
    /// The name of the session's dialect (`socket.io`, `pusher`, `bird`, `actioncable`).
    public var source: String

    /// A record of `message` at `level`, written by `source`.
    public init(level: LogLevel, message: String, source: String) {
        self.level = level
        self.message = message
        self.source = source
    }
}

/// The app's logging hook.
public typealias LogHandler = @Sendable (LogRecord) -> Void
