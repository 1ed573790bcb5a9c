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
