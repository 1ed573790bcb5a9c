import Realtime

/// The chat's handlers, written once: they record messages, members who join and errors, whatever the
/// backend. ``attach(to:)`` registers the same closures on a connection of any protocol.
public final class ChatTranscript: Sendable {
    /// One thing the handlers saw.
    public enum Entry: Sendable, Hashable, CustomStringConvertible {
        case message(ChatMessage)
        case joined(String)
        case error(String)

        public var description: String {
            switch self {
            case .message(let message): "message \(message)"
            case .joined(let member): "joined \(member)"
            case .error(let error): "error \(error)"
            }
        }
    }

    private let entries = Guarded<[Entry]>([])
    private let onEntry: @Sendable (Entry) -> Void

    /// - Parameter onEntry: runs on the session's delivery target after each new entry.
    public init(onEntry: @escaping @Sendable (Entry) -> Void = { _ in }) {
        self.onEntry = onEntry
    }

    /// Everything seen so far, in order.
    public var all: [Entry] { entries.withLock { $0 } }

    /// The messages seen so far, in order.
    public var messages: [ChatMessage] {
        all.compactMap { if case .message(let message) = $0 { message } else { nil } }
    }

    /// Registers the handlers on `connection`; the returned ids remove them with `off(id:)`.
    @discardableResult
    public func attach(to connection: ChatConnection) -> [HandlerID] {
        var ids = connection.messageEvents.map { name in
            connection.room.on(name) { [weak self] event in self?.received(event) }
        }
        if let joined = connection.memberJoinedEvent {
            ids.append(connection.room.on(joined) { [weak self] event in self?.memberJoined(event) })
        }
        ids.append(connection.session.onError { [weak self] error in self?.record(.error(error.message)) })
        return ids
    }

    // The handlers themselves: nothing here knows which protocol delivered the event.

    private func received(_ event: RealtimeEvent) {
        do {
            record(.message(try event.decode(ChatMessage.self)))
        } catch {
            record(.error("not a chat message: \(event.data)"))
        }
    }

    private func memberJoined(_ event: RealtimeEvent) {
        // Pusher says `user_id`, Bird `member_id`.
        let id = event.data["user_id"]?.stringValue ?? event.data["member_id"]?.stringValue ?? "someone"
        record(.joined(id))
    }

    private func record(_ entry: Entry) {
        entries.withLock { $0.append(entry) }
        onEntry(entry)
    }
}
