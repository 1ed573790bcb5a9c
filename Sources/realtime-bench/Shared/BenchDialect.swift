import Foundation
import Realtime

/// The three dialects as the bench's clients use them against 127.0.0.1: the session's dialect, the channel
/// of the bulk and latency runs, channel `i` of the scale runs, and the request of a transport-only client.
enum BenchDialect: String, CaseIterable, Sendable {
    case socketIO = "socketio"
    case pusher
    case actionCable = "actioncable"

    func dialect(port: Int) -> any RealtimeDialect {
        switch self {
        case .socketIO: .socketIO(url: URL(string: "http://127.0.0.1:\(port)")!)
        case .pusher: .pusher(key: "bench", host: "127.0.0.1", port: port)
        case .actionCable: .actionCable(url: URL(string: "ws://127.0.0.1:\(port)/cable")!)
        }
    }

    /// The one channel of the bulk and latency runs.
    var channel: ChannelID {
        switch self {
        case .socketIO: "/"
        case .pusher: "room"
        case .actionCable: ChannelID("RoomChannel")
        }
    }

    /// Channel `index` of the scale runs.
    func channel(_ index: Int) -> ChannelID {
        switch self {
        case .socketIO: ChannelID("/c\(index)")
        case .pusher: ChannelID("room-\(index)")
        case .actionCable: ChannelID("RoomChannel", params: ["room": .integer(Int64(index))])
        }
    }

    /// The name the session gives the blaster's events (Action Cable broadcasts without a name member are
    /// `"message"`).
    var eventName: String { self == .actionCable ? "message" : "tick" }

    /// What a transport-only client asks for: the dialect's path and subprotocol, no dialect on top.
    func rawRequest(port: Int) -> ConnectionRequest {
        switch self {
        case .socketIO:
            ConnectionRequest(url: URL(string: "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket")!)
        case .pusher:
            ConnectionRequest(url: URL(string: "ws://127.0.0.1:\(port)/app/bench?protocol=7")!)
        case .actionCable:
            ConnectionRequest(url: URL(string: "ws://127.0.0.1:\(port)/cable")!, subprotocols: ["actioncable-v1-json"])
        }
    }
}
