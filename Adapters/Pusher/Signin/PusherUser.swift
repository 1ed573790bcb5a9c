@_spi(DialectAuthoring) import RealtimeCore

/// A change in the online state of users on the signed-in user's watchlist (Pusher's
/// `watchlist_events`; the watchlist is the `watchlist` array of the signed `user_data`).
public struct PusherWatchlistEvent: Sendable, Hashable {
    /// Whether the users came online or went offline.
    public enum Kind: String, Sendable, Hashable {
        /// The users came online.
        case online
        /// The users went offline.
        case offline
    }

    /// Online or offline.
    public var kind: Kind
    /// The users whose state changed.
    public var userIDs: [String]

    /// Makes an event.
    public init(kind: Kind, userIDs: [String]) {
        self.kind = kind
        self.userIDs = userIDs
    }

    /// The entries of a `*:watchlist_events` event (`{events: [{name, user_ids}]}`), in order; entries with
    /// another name are skipped. Empty for any other event.
    public static func parse(_ event: RealtimeEvent) -> [PusherWatchlistEvent] {
        guard event.name == PusherEvents.pusher.watchlistEvents || event.name == PusherEvents.bird.watchlistEvents
        else { return [] }
        return (event.data["events"]?.arrayValue ?? []).compactMap { entry in
            guard let kind = entry["name"]?.stringValue.flatMap(Kind.init(rawValue:)) else { return nil }
            let ids = (entry["user_ids"]?.arrayValue ?? []).compactMap(PusherMachine.idString)
            return PusherWatchlistEvent(kind: kind, userIDs: ids)
        }
    }
}

/// The signed-in user's side of a session (pusher-js `pusher.user`, BirdRealtime's `member`): events the
/// server sends to this user on `#server-to-user-<id>`, and the watchlist. Handlers live on the session, so
/// they survive reconnects and the re-sign-in that follows; they receive nothing until ``signIn(timeout:)``
/// succeeds.
///
/// ```swift
/// let user = try session.user
/// user.on("notice") { event in print(event.data) }
/// user.onWatchlist { change in print(change.kind, change.userIDs) }
/// try await user.signIn()
/// ```
public struct PusherUserScope: Sendable {
    /// The session this scope belongs to.
    public let session: RealtimeSession

    /// Signs the user in; see ``RealtimeSession/signIn(timeout:)``.
    @discardableResult
    public func signIn(timeout: Duration? = nil) async throws -> PusherSignedInUser {
        try await session.signIn(timeout: timeout)
    }

    /// Calls `handler` for every event named `event` sent to this user (`bind`).
    @discardableResult
    public func on(_ event: String, perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        session.on(event) { received in
            if Self.isUserChannel(received.channel) { handler(received) }
        }
    }

    /// Calls `handler` for every event sent to this user (`bindGlobal`).
    @discardableResult
    public func onAny(perform handler: @escaping @Sendable (RealtimeEvent) -> Void) -> HandlerID {
        session.onAny { received in
            if Self.isUserChannel(received.channel) { handler(received) }
        }
    }

    /// Calls `handler` for each watchlist change: users that came online or went offline.
    @discardableResult
    public func onWatchlist(_ handler: @escaping @Sendable (PusherWatchlistEvent) -> Void) -> HandlerID {
        session.onAny { received in
            for change in PusherWatchlistEvent.parse(received) { handler(change) }
        }
    }

    /// Watchlist changes as an async sequence.
    ///
    /// Bounded like `channel.lifecycle()`: it holds at most 1,024 changes the consumer has not taken and
    /// drops later ones until it catches up.
    public var watchlist: AsyncStream<PusherWatchlistEvent> {
        AsyncStream(bufferingPolicy: .bufferingOldest(observerStreamLimit)) { continuation in
            let id = onWatchlist { continuation.yield($0) }
            continuation.onTermination = { [session] _ in session.off(id: id) }
        }
    }

    /// Events sent to this user named `name` (every one when `nil`), as an async sequence.
    ///
    /// Back-pressured like ``RealtimeSession/events(_:)``: events waiting in it count against
    /// `SessionOptions.deliveryHighWatermark` and `deliveryByteBudget`, so a consumer that falls behind
    /// pauses reading from the socket instead of growing a buffer; nothing is dropped. End the iteration
    /// (or release the stream) when you stop consuming.
    public func events(_ name: String? = nil) -> RealtimeEventStream {
        session.events(name) { Self.isUserChannel($0.channel) }
    }

    /// Removes a handler added through this scope (`unbind`).
    public func off(id: HandlerID) {
        session.off(id: id)
    }

    static func isUserChannel(_ channel: ChannelID?) -> Bool {
        channel?.name.hasPrefix(PusherMachine.userChannelPrefix) == true
    }
}

extension RealtimeSession {
    /// The signed-in user's events and watchlist (Pusher `pusher.user`, Bird `member`).
    ///
    /// Throws `.unsupported` on a session of another dialect, like ``signIn(timeout:)`` and
    /// ``presence(_:onChange:)``.
    public var user: PusherUserScope {
        get throws {
            try requireDialect(PusherDialect.self, for: "user", needs: "Pusher or Bird")
            return PusherUserScope(session: self)
        }
    }
}
