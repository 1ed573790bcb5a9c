@_spi(DialectAuthoring) import RealtimeCore

extension RealtimeError.Code {
    /// A Pusher or Bird user sign-in failed: the authorizer failed or gave no identity, or the server refused
    /// the signature. Never a connection error: the session stays connected and its channels stay joined.
    /// The cause's own code and detail are in `context.detail`, an auth endpoint's status in `httpStatus`.
    public static let signInFailed = RealtimeError.Code(rawValue: "sign-in-failed")
}

/// The identity a sign-in established: the signed `user_data` (Pusher) or `member_data` (Bird).
public struct PusherSignedInUser: Sendable, Hashable {
    /// `id` (Pusher) or `member_id` (Bird).
    public var id: String
    /// The whole identity object.
    public var data: JSONValue
    /// The channel the server uses to reach this user (`#server-to-user-<id>`); its events reach
    /// `session.on(…)` handlers with this channel, and ``RealtimeSession/user`` handlers.
    public var channel: ChannelID { ChannelID(PusherMachine.userChannelPrefix + id) }
}

extension RealtimeSession {
    /// Signs the user in (`pusher:signin` / `bird:signin`) with the dialect's ``PusherAuth``, and returns
    /// the identity once the server confirms. Sign-in stays armed: it runs again after every reconnect, and
    /// a later failure goes to ``onSignInError(_:)`` (and `onError`), never failing the connection.
    ///
    /// Throws `.signInFailed` when the authorizer fails or the server refuses, `.connectionClosed` when the
    /// connection drops before the answer, and `.unsupported` at once, without waiting for a connection,
    /// on a session of another dialect.
    @discardableResult
    public func signIn(timeout: Duration? = nil) async throws -> PusherSignedInUser {
        try requireDialect(PusherDialect.self, for: "signIn", needs: "Pusher or Bird")
        let answer = try await dialectCommand(PusherMachine.signinCommand, timeout: timeout)
        guard let data = answer.first,
              let id = (data["id"] ?? data["member_id"]).flatMap(PusherMachine.idString) else {
            throw RealtimeError(.protocolViolation, "the sign-in answer carries no id")
        }
        return PusherSignedInUser(id: id, data: data)
    }

    /// The old spelling of ``signIn(timeout:)``.
    @available(*, deprecated, renamed: "signIn(timeout:)")
    @discardableResult
    public func signin(timeout: Duration? = nil) async throws -> PusherSignedInUser {
        try await signIn(timeout: timeout)
    }

    /// Observes sign-in failures only (code `.signInFailed`): a re-sign-in after a reconnect whose
    /// authorizer failed or that the server refused. The first ``signIn(timeout:)`` throws its failure
    /// instead. Bird's `onSigninError`; remove it with `off(id:)`.
    @discardableResult
    public func onSignInError(_ handler: @escaping @Sendable (RealtimeError) -> Void) -> HandlerID {
        onError { error in
            if error.code == .signInFailed { handler(error) }
        }
    }
}
