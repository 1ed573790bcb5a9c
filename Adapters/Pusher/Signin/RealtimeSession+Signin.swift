import RealtimeCore

/// The identity a sign-in established: the signed `user_data` (Pusher) or `member_data` (Bird).
public struct PusherSignedInUser: Sendable, Hashable {
    /// `id` (Pusher) or `member_id` (Bird).
    public var id: String
    /// The whole identity object.
    public var data: JSONValue
    /// The channel the server uses to reach this user (`#server-to-user-<id>`); its events reach
    /// `session.on(…)` handlers with this channel.
    public var channel: ChannelID { ChannelID(PusherMachine.userChannelPrefix + id) }
}

extension RealtimeSession {
    /// Signs the user in (`pusher:signin` / `bird:signin`) with the dialect's authorizer, and returns the
    /// identity once the server confirms. Sign-in stays armed: it runs again after every reconnect, and
    /// a later failure is reported to `onError`.
    ///
    /// Throws `.authorizationFailed` when the authorizer fails or the server refuses, `.unsupported` on a
    /// session of another dialect.
    @discardableResult
    public func signin(timeout: Duration? = nil) async throws -> PusherSignedInUser {
        let answer = try await dialectCommand(PusherMachine.signinCommand, timeout: timeout)
        guard let data = answer.first,
              let id = (data["id"] ?? data["member_id"]).flatMap(PusherMachine.idString) else {
            throw RealtimeError(.protocolViolation, "the sign-in answer carries no id")
        }
        return PusherSignedInUser(id: id, data: data)
    }
}
