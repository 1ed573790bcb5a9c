import Foundation
import Realtime

/// A chat room on one backend: the session, the room's channel, and the few things the protocols disagree on.
///
/// Everything else (the handlers in ``ChatTranscript``, the message type, error handling) is the same for
/// every backend. The factories below are the only place that knows which protocol is in use.
public struct ChatConnection: Sendable {
    /// The backend's name, for logs.
    public let backend: String
    public let session: RealtimeSession
    public let room: RealtimeChannel
    /// The events that carry chat messages here. Action Cable names a broadcast by its `event`, `type` or
    /// `action` key, else `message` (the chat server's case); Pusher and Bird deliver what another client
    /// sent as a `client-` event.
    public let messageEvents: [String]
    /// The event that says a member joined, where the protocol has presence.
    public let memberJoinedEvent: String?
    private let postMessage: @Sendable (RealtimeChannel, ChatMessage) async throws -> Void

    /// Posts `message` to the room in the protocol's way: an emit, a client event or a perform.
    public func post(_ message: ChatMessage) async throws {
        try await postMessage(room, message)
    }

    /// Socket.IO: the room is a namespace; the server relays `say` to the room as `message`.
    public static func socketIO(url: URL, namespace: String = "/chat",
                                options: SessionOptions = SessionOptions()) -> ChatConnection {
        let session = RealtimeSession(dialect: .socketIO(url: url, defaultNamespaces: []), options: options)
        return ChatConnection(backend: "Socket.IO", session: session, room: session.channel(ChannelID(namespace)),
                              messageEvents: ["message"], memberJoinedEvent: nil) { room, message in
            try await room.send("say", encoding: message)
        }
    }

    /// Pusher Channels or Bird Realtime: the room is a presence channel; what the app posts is a client event
    /// that the server relays to the other members.
    public static func pusher(_ dialect: PusherDialect, room: String = "presence-chat",
                              options: SessionOptions = SessionOptions()) -> ChatConnection {
        let session = RealtimeSession(dialect: dialect, options: options)
        return ChatConnection(backend: dialect.vendor == .bird ? "Bird" : "Pusher", session: session,
                              room: session.channel(ChannelID(room)), messageEvents: ["message", "client-message"],
                              memberJoinedEvent: dialect.vendor.events.memberAdded) { room, message in
            try await room.send("client-message", encoding: message)
        }
    }

    /// Action Cable: the room is `ChatChannel` with a `room` parameter; `speak` broadcasts to it.
    public static func actionCable(url: URL, room: String = "lobby",
                                   options: SessionOptions = SessionOptions()) -> ChatConnection {
        let session = RealtimeSession(dialect: .actionCable(url: url), options: options)
        return ChatConnection(backend: "Action Cable", session: session,
                              room: session.channel(ChannelID("ChatChannel", params: ["room": .string(room)])),
                              messageEvents: ["message"], memberJoinedEvent: nil) { room, message in
            try await room.send("speak", encoding: message)
        }
    }
}
