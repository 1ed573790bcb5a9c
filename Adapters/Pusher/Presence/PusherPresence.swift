import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// A member of a presence channel: its id and the info its identity carried (`user_info` / `member_info`).
public struct PresenceMember: Sendable, Hashable, Identifiable {
    /// The member id, always a string (servers may send numbers).
    public var id: String
    /// The member's info as sent; `.null` when it had none.
    public var info: JSONValue

    /// Makes a member.
    public init(id: String, info: JSONValue = .null) {
        self.id = id
        self.info = info
    }

    /// The info decoded as `T` (`try member.info(as: Profile.self)`).
    public func info<T: Decodable>(as type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try info.decode(type, decoder: decoder)
    }
}

/// What one presence event changed.
public enum PresenceChange: Sendable, Hashable {
    /// `*:subscription_succeeded`: the whole roster was replaced.
    case replaced
    /// A member joined (or an existing id was sent again with new info).
    case added(PresenceMember)
    /// A member left.
    case removed(PresenceMember)
}

/// The members of one presence channel: who is here, and who this client is.
public struct PusherMembers: Sendable, Hashable {
    /// Member info by id (ids are strings even when the server sent numbers).
    public var members: [String: JSONValue] = [:]
    /// This client's id, from the identity it subscribed with; `nil` until subscribed (Bird's `myId`).
    public var myID: String?

    /// Makes a roster.
    public init(members: [String: JSONValue] = [:], myID: String? = nil) {
        self.members = members
        self.myID = myID
    }

    /// How many members are here.
    public var count: Int { members.count }
    /// Ids sorted, for stable display.
    public var ids: [String] { members.keys.sorted() }
    /// Every member, sorted by id.
    public var all: [PresenceMember] { ids.map { PresenceMember(id: $0, info: members[$0] ?? .null) } }
    /// This client as a member, with its info; `nil` until subscribed.
    public var me: PresenceMember? { myID.map { PresenceMember(id: $0, info: members[$0] ?? .null) } }

    /// The member with `id`, or `nil` (PusherSwift's `findMember(userId:)`).
    public func member(id: String) -> PresenceMember? {
        members[id].map { PresenceMember(id: id, info: $0) }
    }

    /// Folds one presence event in: `*:subscription_succeeded` replaces the list, `*:member_added` and
    /// `*:member_removed` change one member. Other events change nothing. Returns what changed, if anything.
    @discardableResult
    public mutating func apply(_ event: RealtimeEvent) -> PresenceChange? {
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
            myID = event.data["me"]?.stringValue
            return .replaced
        case "member_added":
            guard let id = Self.memberID(event.data) else { return nil }
            let info = event.data["user_info"] ?? event.data["member_info"] ?? .null
            members[id] = info
            return .added(PresenceMember(id: id, info: info))
        case "member_removed":
            guard let id = Self.memberID(event.data), let info = members.removeValue(forKey: id) else { return nil }
            return .removed(PresenceMember(id: id, info: info))
        default:
            return nil
        }
    }

    private static func memberID(_ data: JSONValue) -> String? {
        (data["user_id"] ?? data["member_id"]).flatMap(PusherMachine.idString)
    }
}

/// Keeps ``PusherMembers`` for a presence channel up to date from its events, and empties it whenever the
/// session leaves `connected` (the server sends the whole list again after the re-subscribe).
///
/// The roster follows the session as it handles each frame, ahead of the delivery queue: once
/// `channel.subscribed()` returns, or a lifecycle observer sees `.subscribed`, it already holds the
/// subscription's members and `me`, on every subscription (after a reconnect too). `onChange`, ``updates``,
/// ``onMemberAdded(_:)`` and ``onMemberRemoved(_:)`` hear of each change afterwards on the delivery queue,
/// once and in wire order.
///
/// It is kept through `session.removeAllHandlers()`, and so are the handlers given to
/// ``onMemberAdded(_:)`` and ``onMemberRemoved(_:)``; they end with ``off(id:)`` or when the roster is
/// released. Make the roster before the channel's subscription succeeds (before `connect()`, say): one
/// made later fills at the next subscribe.
///
/// ```swift
/// let room = try session.presence("presence-room")
/// room.onMemberAdded { member in print("joined:", member.id, member.info) }
/// for await members in room.updates { print(members.count, "here; me:", members.me?.id ?? "?") }
/// ```
public final class PusherPresenceRoster: Sendable {
    /// The members, and how many changes made them: a change's number orders its publication.
    private struct State: Sendable {
        var members = PusherMembers()
        var version: UInt64 = 0
    }

    private struct Observers: Sendable {
        var added: [HandlerID: @Sendable (PresenceMember) -> Void] = [:]
        var removed: [HandlerID: @Sendable (PresenceMember) -> Void] = [:]
        /// Each stream with the number of the last roster it was given.
        var updates: [HandlerID: (continuation: AsyncStream<PusherMembers>.Continuation, version: UInt64)] = [:]
    }

    private static let eventNames: Set<String> = Set(
        ["subscription_succeeded", "member_added", "member_removed"].flatMap { suffix in
            [PusherVendor.pusher.systemPrefix + suffix, PusherVendor.bird.systemPrefix + suffix]
        })

    /// The channel this roster follows.
    public let channel: RealtimeChannel
    private let state = Locked(State())
    private let handlers = Locked<[HandlerID]>([])
    private let observers = Locked(Observers())
    private let onChange: (@Sendable (PusherMembers) -> Void)?

    init(session: RealtimeSession, channel: RealtimeChannel, onChange: (@Sendable (PusherMembers) -> Void)?) {
        self.onChange = onChange
        self.channel = channel
        // A tap, not handlers: the roster changes as the session handles the frame, before the
        // `subscribed()` waiters it answers resume; the app hears of it on the delivery queue.
        let id = session.addTap(channel: channel.id) { [weak self] input in self?.observe(input) }
        handlers.withLock { $0 = [id] }
    }

    deinit {
        for id in handlers.withLock({ $0 }) { channel.off(id: id) }
        for entry in observers.withLock({ $0.updates.values }) { entry.continuation.finish() }
    }

    /// The members now; empty while the channel is not joined (`leave()` sends no event that would clear it).
    public var members: PusherMembers {
        guard case .subscribed = channel.state else { return PusherMembers() }
        return state.withLock { $0.members }
    }

    /// How many members are here now.
    public var count: Int { members.count }
    /// This client as a member, with its info; `nil` while not joined.
    public var me: PresenceMember? { members.me }
    /// This client's member id; `nil` while not joined (Bird's `myId`).
    public var myID: String? { members.myID }

    /// The member with `id`, if it is here.
    public func member(id: String) -> PresenceMember? { members.member(id: id) }

    /// The roster now, then after every change (on the session's delivery queue), as an async sequence.
    /// The iteration ends when the roster is released.
    ///
    /// Each element is the whole roster, so the stream keeps the newest: it holds at most 1,024 rosters
    /// the consumer has not taken and drops the oldest past that; the current roster always arrives.
    public var updates: AsyncStream<PusherMembers> {
        AsyncStream(bufferingPolicy: .bufferingNewest(observerStreamLimit)) { continuation in
            let id = HandlerID()
            let joined = if case .subscribed = channel.state { true } else { false }
            observers.withLock { observers in
                // The roster now may be ahead of the delivery queue: changes it already holds are not
                // yielded again. Not joined, it starts empty and takes every change still to come.
                let (members, version) = joined ? state.withLock { ($0.members, $0.version) } : (PusherMembers(), 0)
                observers.updates[id] = (continuation, version)
                // Under the lock, like `publish`, so that a newer roster is never yielded before this one.
                // `yield` runs no app code.
                continuation.yield(members)
            }
            continuation.onTermination = { [weak self] _ in
                self?.observers.withLock { _ = $0.updates.removeValue(forKey: id) }
            }
        }
    }

    /// Calls `handler` when a member joins, after the roster includes it, on the delivery queue. Kept
    /// through `session.removeAllHandlers()`; remove it with ``off(id:)``.
    @discardableResult
    public func onMemberAdded(_ handler: @escaping @Sendable (PresenceMember) -> Void) -> HandlerID {
        let id = HandlerID()
        observers.withLock { $0.added[id] = handler }
        return id
    }

    /// Calls `handler` with the member (and its last info) when it leaves, after the roster dropped it.
    /// Kept through `session.removeAllHandlers()`; remove it with ``off(id:)``.
    @discardableResult
    public func onMemberRemoved(_ handler: @escaping @Sendable (PresenceMember) -> Void) -> HandlerID {
        let id = HandlerID()
        observers.withLock { $0.removed[id] = handler }
        return id
    }

    /// Removes a handler added with ``onMemberAdded(_:)`` or ``onMemberRemoved(_:)``.
    public func off(id: HandlerID) {
        observers.withLock { observers in
            observers.added[id] = nil
            observers.removed[id] = nil
        }
    }

    /// The ids this roster registered on the session (kept through `removeAllHandlers()`; `off(id:)`
    /// removes them).
    public var handlerIDs: [HandlerID] { handlers.withLock { $0 } }

    /// Folds in what the session just handled (on its input thread) and returns the publication of the
    /// change, to run on the delivery queue in its place.
    private func observe(_ input: SessionTapInput) -> (@Sendable () -> Void)? {
        let outcome: (PresenceChange?, PusherMembers, UInt64)?
        switch input {
        case .event(let event):
            guard Self.eventNames.contains(event.name) else { return nil }
            outcome = state.withLock { state in
                guard let change = state.members.apply(event) else { return nil }
                state.version += 1
                return (change, state.members, state.version)
            }
        case .state(_, let new):
            if case .connected = new { return nil }
            outcome = state.withLock { state in
                guard state.members != PusherMembers() else { return nil }
                state.members = PusherMembers()
                state.version += 1
                return (nil, state.members, state.version)
            }
        }
        guard let (change, members, version) = outcome else { return nil }
        return { [weak self] in self?.publish(change, members, version: version) }
    }

    /// Tells the app of one change: `onChange`, the streams that have not seen it, then the member handlers.
    private func publish(_ change: PresenceChange?, _ members: PusherMembers, version: UInt64) {
        onChange?(members)
        let (added, removed) = observers.withLock { observers in
            for (id, entry) in observers.updates where entry.version < version {
                observers.updates[id]?.version = version
                entry.continuation.yield(members)
            }
            return (Array(observers.added.values), Array(observers.removed.values))
        }
        switch change {
        case .added(let member): for handler in added { handler(member) }
        case .removed(let member): for handler in removed { handler(member) }
        case .replaced, nil: break
        }
    }
}

extension RealtimeSession {
    /// Tracks the members of the presence channel `channel` (and holds the channel). `onChange` runs on the
    /// delivery queue after every change. Keep the roster alive as long as you read it.
    ///
    /// Throws `.unsupported` on a session of another dialect (presence rosters are Pusher's and Bird's).
    public func presence(_ channel: ChannelID,
                         onChange: (@Sendable (PusherMembers) -> Void)? = nil) throws -> PusherPresenceRoster {
        try requireDialect(PusherDialect.self, for: "presence", needs: "Pusher or Bird", channel: channel)
        return PusherPresenceRoster(session: self, channel: self.channel(channel), onChange: onChange)
    }
}
