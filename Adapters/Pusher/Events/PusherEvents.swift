@_spi(DialectAuthoring) import RealtimeCore

/// The names under which a vendor's system events reach handlers (`channel.on(…)`, `session.on(…)`).
///
/// ```swift
/// room.on(PusherEvents.pusher.memberAdded) { event in print(event.data) }
/// session.on(PusherEvents.bird.error) { event in print(event.data["message"] ?? "") }
/// ```
public struct PusherEvents: Sendable, Hashable {
    /// `*:error`, session scope (or the channel it names): `{message, code?}`.
    public let error: String
    /// `*:subscription_succeeded` on a channel; on presence channels `{presence: {ids, hash, count}, me}`.
    public let subscriptionSucceeded: String
    /// `*:subscription_error` on a channel the server or the authorizer refused: `{type, error, status?}`.
    public let subscriptionError: String
    /// The channel's subscriber count: `pusher:subscription_count` (`{subscription_count}`) or
    /// `bird:connection_count`. ``RealtimeChannel/onSubscriptionCount(_:)`` reads it for you.
    public let subscriptionCount: String
    /// `*:member_added` on a presence channel: `{user_id, user_info}` (Bird: `member_id`, `member_info`).
    public let memberAdded: String
    /// `*:member_removed` on a presence channel: `{user_id}` (Bird: `member_id`).
    public let memberRemoved: String
    /// `*:cache_miss` on a `cache-` channel with nothing cached.
    public let cacheMiss: String
    /// `*:signin_success`, session scope, with the signed identity as data.
    public let signinSuccess: String
    /// `*:watchlist_events` on the user channel: `{events: [{name: "online" | "offline", user_ids}]}`.
    /// ``PusherUserScope/onWatchlist(_:)`` splits it for you.
    public let watchlistEvents: String

    /// The names for `vendor`.
    public init(_ vendor: PusherVendor) {
        let prefix = vendor.systemPrefix
        error = prefix + "error"
        subscriptionSucceeded = prefix + "subscription_succeeded"
        subscriptionError = prefix + "subscription_error"
        subscriptionCount = prefix + vendor.countEvent
        memberAdded = prefix + "member_added"
        memberRemoved = prefix + "member_removed"
        cacheMiss = prefix + "cache_miss"
        signinSuccess = prefix + "signin_success"
        watchlistEvents = prefix + "watchlist_events"
    }

    /// Pusher Channels' names (`pusher:…`).
    public static let pusher = PusherEvents(.pusher)
    /// Bird Realtime's names (`bird:…`).
    public static let bird = PusherEvents(.bird)
}

extension PusherVendor {
    /// The names under which this vendor's system events reach handlers.
    public var events: PusherEvents { PusherEvents(self) }
}

extension RealtimeChannel {
    /// Calls `handler` with the channel's subscriber count each time the server sends it (Pusher's
    /// `subscription_count`, when the app enables it; Bird's `connection_count`). Remove it with `off(id:)`.
    ///
    /// Throws `.unsupported` on a session of another dialect, like `session.presence(_:)`.
    @discardableResult
    public func onSubscriptionCount(_ handler: @escaping @Sendable (Int) -> Void) throws -> HandlerID {
        try requireDialect(PusherDialect.self, for: "onSubscriptionCount", needs: "Pusher or Bird")
        return countHandler(handler)
    }

    /// The channel's subscriber counts as they arrive, as an async sequence.
    ///
    /// Each count replaces the one before, so the stream keeps the newest: it holds at most 1,024 counts the
    /// consumer has not taken and drops the oldest past that. Throws `.unsupported` on a session of another
    /// dialect, like ``onSubscriptionCount(_:)``.
    public var subscriptionCounts: AsyncStream<Int> {
        get throws {
            try requireDialect(PusherDialect.self, for: "subscriptionCounts", needs: "Pusher or Bird")
            return AsyncStream(bufferingPolicy: .bufferingNewest(observerStreamLimit)) { continuation in
                let id = countHandler { continuation.yield($0) }
                continuation.onTermination = { _ in off(id: id) }
            }
        }
    }

    private func countHandler(_ handler: @escaping @Sendable (Int) -> Void) -> HandlerID {
        // One handler for both vendors: the two event names never collide.
        onAny { event in
            if let count = PusherEvents.subscriptionCount(event) { handler(count) }
        }
    }
}

extension PusherEvents {
    /// The count carried by a `pusher:subscription_count` or `bird:connection_count` event; `nil` for other
    /// events. Pusher sends `{subscription_count: N}`; Bird's payload is passed through, so a bare number
    /// and `{connection_count: N}` are read too.
    public static func subscriptionCount(_ event: RealtimeEvent) -> Int? {
        guard event.name == pusher.subscriptionCount || event.name == bird.subscriptionCount else { return nil }
        let value = event.data["subscription_count"] ?? event.data["connection_count"] ?? event.data["count"]
            ?? event.data
        return value.integerValue.map(Int.init)
    }
}
