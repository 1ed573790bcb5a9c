import RealtimeCore

/// The members of one presence channel: who is here, and who this client is.
public struct PusherMembers: Sendable, Hashable {
    /// Member info by id (ids are strings even when the server sent numbers).
    public var members: [String: JSONValue] = [:]
    /// This client's id, from the identity it subscribed with; `nil` until subscribed.
    public var me: String?

    public init(members: [String: JSONValue] = [:], me: String? = nil) {
        self.members = members
        self.me = me
    }

    public var count: Int { members.count }
    /// Ids sorted, for stable display.
    public var ids: [String] { members.keys.sorted() }

    /// Folds one presence event in: `*:subscription_succeeded` replaces the list, `*:member_added` and
    /// `*:member_removed` change one member. Other events change nothing. Returns whether it changed.
    @discardableResult
    public mutating func apply(_ event: RealtimeEvent) -> Bool {
        let name = event.name.split(separator: ":", maxSplits: 1).last.map(String.init) ?? event.name
        switch name {
        case "subscription_succeeded":
            let presence = event.data["presence"]
            var fresh: [String: JSONValue] = [:]
            if let hash = presence?["hash"]?.objectValue {
                for (id, info) in hash { fresh[id] = info }
            }
            for id in presence?["ids"]?.arrayValue ?? [] {
                if let id = PusherMachine.idString(id), fresh[id] == nil { fresh[id] = .null }
            }
            members = fresh
            me = event.data["me"]?.stringValue
            return true
        case "member_added":
            guard let id = Self.memberID(event.data) else { return false }
            members[id] = event.data["user_info"] ?? event.data["member_info"] ?? .null
            return true
        case "member_removed":
            guard let id = Self.memberID(event.data) else { return false }
            return members.removeValue(forKey: id) != nil
        default:
            return false
        }
    }

    private static func memberID(_ data: JSONValue) -> String? {
        (data["user_id"] ?? data["member_id"]).flatMap(PusherMachine.idString)
    }
}

/// Keeps ``PusherMembers`` for a presence channel up to date from its events, and empties it whenever the
/// session leaves `connected` (the server sends the whole list again after the re-subscribe).
///
/// The machine owns the wire state, but the app reads members from any thread at any time, so the roster
/// is rebuilt here from the same events the app can see, under a lock; no second source of truth.
public final class PusherPresenceRoster: Sendable {
    private let channel: RealtimeChannel
    private let state = Locked(PusherMembers())
    private let handlers = Locked<[HandlerID]>([])
    private let onChange: (@Sendable (PusherMembers) -> Void)?

    init(session: RealtimeSession, channel: RealtimeChannel, onChange: (@Sendable (PusherMembers) -> Void)?) {
        self.onChange = onChange
        self.channel = channel
        var ids: [HandlerID] = []
        for suffix in ["subscription_succeeded", "member_added", "member_removed"] {
            for prefix in ["pusher:", "bird:"] {
                ids.append(channel.on(prefix + suffix) { [weak self] event in self?.apply(event) })
            }
        }
        ids.append(session.onStateChange { [weak self] _, new in
            if case .connected = new { return }
            self?.reset()
        })
        handlers.withLock { $0 = ids }
    }

    /// The members now; empty while the channel is not joined (`leave()` sends no event that would clear it).
    public var members: PusherMembers {
        guard case .subscribed = channel.state else { return PusherMembers() }
        return state.withLock { $0 }
    }

    /// The handler ids this roster registered, so the app can remove them with `off(id:)`.
    public var handlerIDs: [HandlerID] { handlers.withLock { $0 } }

    private func apply(_ event: RealtimeEvent) {
        let changed = state.withLock { members -> PusherMembers? in members.apply(event) ? members : nil }
        if let changed { onChange?(changed) }
    }

    private func reset() {
        let changed = state.withLock { members -> Bool in
            guard members != PusherMembers() else { return false }
            members = PusherMembers()
            return true
        }
        if changed { onChange?(PusherMembers()) }
    }
}

extension RealtimeSession {
    /// Tracks the members of the presence channel `channel` (and holds the channel). `onChange` runs on the
    /// delivery queue after every change. Keep the roster alive as long as you read it.
    public func presence(_ channel: ChannelID,
                         onChange: (@Sendable (PusherMembers) -> Void)? = nil) -> PusherPresenceRoster {
        PusherPresenceRoster(session: self, channel: self.channel(channel), onChange: onChange)
    }
}
