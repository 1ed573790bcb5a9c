import Foundation

/// Severity of a log record.
public enum LogLevel: Int, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The most verbose: a line for every frame sent and received, its secrets masked.
    case trace
    /// Details for debugging: each connection attempt's URL, frames and sends dropped or ignored.
    case debug
    /// The connection's course: a connection ended, a reconnect attempt and its delay.
    case info
    /// Notable but normal; the package itself writes nothing at this level.
    case notice
    /// Something went wrong that the session recovers from (a silent link dropped).
    case warning
    /// A failure that ends the session (a server that does not speak the dialect).
    case error

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
