/// Every error the package reports: a stable `code`, a human message and the context that explains it.
///
/// Compare errors by `code` (`error.code == .handshakeRejected`); the message is for people and may change.
public struct RealtimeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier for the kind of failure.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's stable text (`"handshake-rejected"`), as logs and `description` show it.
        public let rawValue: String
        /// A code spelled `rawValue`. The package's own codes are the constants below.
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A feature the chosen dialect does not have (for example acks on Pusher).
        public static let unsupported = Code(rawValue: "unsupported")
        /// An argument the caller passed is not acceptable (reserved event name, bad URL).
        public static let invalidArgument = Code(rawValue: "invalid-argument")
        /// Name resolution, TCP connect, read or write failed.
        public static let transportFailed = Code(rawValue: "transport-failed")
        /// The HTTP proxy (``ProxyConfiguration``) could not be reached, refused the tunnel (`context.httpStatus`:
        /// 407, or 401 from tinyproxy, when it wants credentials or refused the ones sent), or answered something
        /// that is not HTTP.
        public static let proxyFailed = Code(rawValue: "proxy-failed")
        /// The connection attempt did not finish within its timeout.
        public static let connectTimedOut = Code(rawValue: "connect-timed-out")
        /// The server answered the WebSocket upgrade with something other than 101.
        public static let handshakeRejected = Code(rawValue: "handshake-rejected")
        /// The upgrade response was malformed (bad accept key, missing headers, wrong subprotocol).
        public static let handshakeInvalid = Code(rawValue: "handshake-invalid")
        /// TLS could not be established; `context.detail` says why (unknown CA, hostname, expired).
        public static let tlsFailed = Code(rawValue: "tls-failed")
        /// The peer broke the wire protocol (bad frame, bad packet).
        public static let protocolViolation = Code(rawValue: "protocol-violation")
        /// A text message was not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalid-utf8")
        /// A frame, message or queue exceeded an explicit limit.
        public static let limitExceeded = Code(rawValue: "limit-exceeded")
        /// JSON text could not be parsed; `context.offset` gives the byte offset.
        public static let invalidJSON = Code(rawValue: "invalid-json")
        /// A payload could not be decoded into the requested type.
        public static let decodingFailed = Code(rawValue: "decoding-failed")
        /// The connection closed; `context.closeCode` holds the code when one was received.
        public static let connectionClosed = Code(rawValue: "connection-closed")
        /// The link went silent for longer than its liveness rule allows.
        public static let livenessTimeout = Code(rawValue: "liveness-timeout")
        /// The server refused the connection for good (bad app key, unauthorized).
        public static let connectionRefused = Code(rawValue: "connection-refused")
        /// A channel subscription was refused by the server or its authorizer.
        public static let subscriptionRejected = Code(rawValue: "subscription-rejected")
        /// An authorization step (auth endpoint, signin) failed.
        public static let authorizationFailed = Code(rawValue: "authorization-failed")
        /// A request or buffered send was not answered in time.
        public static let timedOut = Code(rawValue: "timed-out")
        /// The app disconnected the session, so pending work was abandoned.
        public static let disconnected = Code(rawValue: "disconnected")
        /// The session failed (reconnect attempts exhausted, terminal close), so pending work was abandoned.
        public static let sessionFailed = Code(rawValue: "session-failed")
        /// A bounded queue was full.
        public static let bufferFull = Code(rawValue: "buffer-full")
        /// The channel is not subscribed (failed, left, or ended by the server).
        public static let channelUnavailable = Code(rawValue: "channel-unavailable")
        /// The server sent an error message that did not end the connection.
        public static let serverError = Code(rawValue: "server-error")
        /// An app-supplied asynchronous step (an auth or credential provider) threw.
        public static let operationFailed = Code(rawValue: "operation-failed")
        /// A message could not be decrypted.
        public static let decryptionFailed = Code(rawValue: "decryption-failed")
        /// The task waiting for the operation was cancelled. The session's `async` calls throw
        /// `CancellationError` instead; this code is seen only through completion-based adapters.
        public static let cancelled = Code(rawValue: "cancelled")
    }

    /// Facts that explain an error. Every field is optional.
    public struct Context: Sendable, Hashable {
        /// WebSocket or dialect close code.
        public var closeCode: Int?
        /// HTTP status of a rejected upgrade or auth request, or of a proxy that refused a tunnel.
        public var httpStatus: Int?
        /// The error payload the server sent, as JSON.
        public var serverPayload: JSONValue?
        /// The channel the error concerns.
        public var channel: ChannelID?
        /// Byte offset in the input where parsing failed.
        public var offset: Int?
        /// A short technical detail: errno text, OpenSSL reason, redirect location.
        public var detail: String?

        /// Facts to attach; each one is `nil` unless given.
        public init(closeCode: Int? = nil, httpStatus: Int? = nil, serverPayload: JSONValue? = nil,
                    channel: ChannelID? = nil, offset: Int? = nil, detail: String? = nil) {
            self.closeCode = closeCode
            self.httpStatus = httpStatus
            self.serverPayload = serverPayload
            self.channel = channel
            self.offset = offset
            self.detail = detail
        }

        /// What is set, `close code 4001; HTTP 404; channel /chat; at byte 12; <detail>`, leaving out a detail
        /// that `message` already says (a server's reason that is also the error's message).
        func description(besides message: String) -> String {
            var parts: [String] = []
            if let closeCode { parts.append("close code \(closeCode)") }
            if let httpStatus { parts.append("HTTP \(httpStatus)") }
            if let channel { parts.append("channel \(channel)") }
            if let offset { parts.append("at byte \(offset)") }
            if let detail, !detail.isEmpty, !message.contains(detail) { parts.append(detail) }
            return parts.joined(separator: "; ")
        }
    }

    /// What kind of failure it is: compare this, not the message.
    public var code: Code
    /// What went wrong, for people; it may change between releases.
    public var message: String
    /// The facts that explain the error (close code, HTTP status, channel, …).
    public var context: Context

    /// An error with `code`, `message` and, when known, `context`.
    public init(_ code: Code, _ message: String, context: Context = Context()) {
        self.code = code
        self.message = message
        self.context = context
    }

    public var description: String {
        var parts = ["\(code): \(message)"]
        let context = context.description(besides: message)
        if !context.isEmpty { parts.append(context) }
        return parts.joined(separator: "; ")
    }

    /// The dialect cannot do `feature`.
    public static func unsupported(_ feature: String) -> RealtimeError {
        RealtimeError(.unsupported, "\(feature) is not supported by this dialect")
    }
}

extension RealtimeError.Context: CustomStringConvertible {
    /// What is set, as in the error's description, plus the server's payload: `close code 4001; HTTP 404`.
    public var description: String {
        var parts = [description(besides: "")]
        if let serverPayload { parts.append("server payload \(serverPayload)") }
        let text = parts.filter { !$0.isEmpty }.joined(separator: "; ")
        return text.isEmpty ? "no context" : text
    }
}
