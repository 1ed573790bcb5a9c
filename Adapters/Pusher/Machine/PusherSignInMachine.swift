@_spi(DialectAuthoring) import RealtimeCore

/// User sign-in of one Pusher / Bird session, owned by ``PusherMachine``: the app's `signin` call, the
/// authorization and `*:signin` frame, `*:signin_success`, and the `#server-to-user-<id>` channel it opens
/// (where the server sends user events and `*:watchlist_events`).
///
/// - Sign-in stays armed once asked for: the owner starts it again on every new connection.
/// - A first sign-in that fails resolves the app's call and disarms; a failure of a repeated sign-in (after a
///   reconnect, with no call waiting) is reported as an error and stays armed.
/// - Every failure carries `.signInFailed` (see ``failure(_:)``).
///
/// The owner runs the authorizer (it holds the authorizer and the connection id) and routes frames here.
struct PusherSignInMachine: Sendable {
    private let vendor: PusherVendor
    /// Sign-in was asked for once; it is repeated on every new connection.
    private(set) var isArmed = false
    /// The app's `signin` call waiting for `signin_success`.
    private var request: RequestID?
    /// The sign-in authorization in flight, or sent and unanswered.
    private var serial: UInt64?
    /// The `*:signin` frame went out on this connection and is unanswered.
    private var sent = false
    /// `#server-to-user-<id>` once signed in on this connection.
    private(set) var userChannel: String?

    init(vendor: PusherVendor) {
        self.vendor = vendor
    }

    /// Whether a channel-less `*:error` now answers the sign-in (the frame is out, no answer yet).
    var awaitsServerAnswer: Bool { sent && serial != nil }

    /// The app's `signin` call `id`. Returns whether the owner should start an authorization now; without
    /// an authorizer the call fails at once. A newer call replaces a waiting one, which fails.
    mutating func requested(_ id: RequestID, canSign: Bool, actions: inout [DialectAction]) -> Bool {
        guard canSign else {
            actions.append(.resolveRequest(id, .failure(RealtimeError(
                .signInFailed, "sign-in needs a signature, and the dialect has no auth (PusherAuth)"))))
            return false
        }
        if let pending = request {
            actions.append(.resolveRequest(pending, .failure(RealtimeError(
                .operationFailed, "a newer sign-in replaced this one"))))
        }
        request = id
        isArmed = true
        return true
    }

    /// The owner asked the authorizer to sign the user in; only the answer to `serial` counts.
    mutating func authorizing(serial: UInt64) {
        self.serial = serial
        sent = false
    }

    /// The authorizer's answer to `serial`: sends `*:signin`, or fails the sign-in. Stale answers are dropped.
    mutating func authorized(serial: UInt64, result: Result<JSONValue, RealtimeError>, actions: inout [DialectAction]) {
        guard serial == self.serial else { return }
        switch result {
        case .failure(let error):
            failed(error, actions: &actions)
        case .success(let json):
            guard let auth = json["auth"]?.stringValue, let userData = json["user_data"]?.stringValue else {
                failed(RealtimeError(.signInFailed, "the authorizer gave no \(vendor.signinDataKey)"), actions: &actions)
                return
            }
            sent = true
            actions.append(.send(vendor.frame("signin", data: .object(["auth": .string(auth),
                                                                      vendor.signinDataKey: .string(userData)]))))
        }
    }

    /// `*:signin_success`: joins the user channel, resolves the app's call and delivers the identity.
    mutating func succeeded(_ data: JSONValue, actions: inout [DialectAction]) {
        guard serial != nil else { return }
        serial = nil
        sent = false
        let text = data[vendor.signinDataKey]?.stringValue
        guard let text, let identity = try? JSONValue.parse(text),
              let id = identity[vendor.signinIDKey].flatMap(PusherMachine.idString), !id.isEmpty else {
            failed(RealtimeError(.protocolViolation, "signin_success carries no usable '\(vendor.signinDataKey)'",
                                 context: .init(serverPayload: data)), actions: &actions)
            return
        }
        let channel = PusherMachine.userChannelPrefix + id
        userChannel = channel
        var subscribe: [String: JSONValue] = ["channel": .string(channel)]
        if vendor.userChannelSendsEmptyAuth { subscribe["auth"] = .string("") }
        actions.append(.send(vendor.frame("subscribe", data: .object(subscribe))))
        if let request {
            self.request = nil
            actions.append(.resolveRequest(request, .success([identity])))
        }
        actions.append(.deliver(RealtimeEvent(channel: nil, name: vendor.systemPrefix + "signin_success",
                                              data: identity, rawData: text)))
    }

    /// The server refused the sign-in with a channel-less `*:error` (call only when ``awaitsServerAnswer``).
    mutating func refused(message: String, data: JSONValue, actions: inout [DialectAction]) {
        failed(RealtimeError(.signInFailed, "\(vendor.displayName) refused the sign-in: \(message)",
                             context: .init(serverPayload: data)), actions: &actions)
    }

    /// The app gave up waiting for `id`: its answer, when it comes, resolves nothing.
    mutating func cancel(_ id: RequestID) {
        if request == id { request = nil }
    }

    /// The connection ended: the waiting call and the user channel go; the armed sign-in stays.
    mutating func connectionEnded() {
        request = nil
        serial = nil
        sent = false
        userChannel = nil
    }

    /// Every sign-in failure carries `.signInFailed`, so an app tells it apart from connection and channel
    /// errors; the cause's code and detail stay in `context.detail`, its HTTP status in `httpStatus`.
    static func failure(_ cause: RealtimeError) -> RealtimeError {
        guard cause.code != .signInFailed else { return cause }
        var context = cause.context
        context.detail = cause.code.rawValue + (cause.context.detail.map { ": \($0)" } ?? "")
        return RealtimeError(.signInFailed, "sign-in failed: \(cause.message)", context: context)
    }

    private mutating func failed(_ cause: RealtimeError, actions: inout [DialectAction]) {
        let error = Self.failure(cause)
        serial = nil
        sent = false
        if let request {
            self.request = nil
            // A first sign-in that fails is not repeated on reconnect.
            isArmed = false
            actions.append(.resolveRequest(request, .failure(error)))
        } else {
            actions.append(.reportError(error))
        }
    }
}
