import Foundation
import Realtime

/// The server's half of each dialect, shared by the blaster (one client, blocking writes) and the scale
/// server (many clients on the library's `WebSocketServer`). The frames are the ones the dialect kits'
/// embedded servers send (`SocketIOServer`, `PusherTestServer`, `ActionCableTestServer`), written out here
/// because the bench links no kit.
extension BenchDialect {
    /// The dialect a request path belongs to: `/socket.io/`, `/app/<key>`, `/cable`.
    init?(path: String) {
        if path.hasPrefix("/socket.io") {
            self = .socketIO
        } else if path.hasPrefix("/app/") {
            self = .pusher
        } else if path.hasPrefix("/cable") {
            self = .actionCable
        } else {
            return nil
        }
    }

    /// Rails answers with the first protocol it knows; the others take none.
    func subprotocol(offered: [String]) -> String? {
        self == .actionCable && offered.contains("actioncable-v1-json") ? "actioncable-v1-json" : nil
    }

    /// What the server says as soon as the upgrade is done. Socket.IO's ping interval is long enough that no
    /// ping falls inside a run (the blaster does not read while it writes).
    func opening(connection: Int) -> [String] {
        switch self {
        case .socketIO:
            [#"0{"sid":"bench\#(connection)","upgrades":[],"pingInterval":300000,"pingTimeout":300000,"maxPayload":1000000}"#]
        case .pusher:
            [#"{"event":"pusher:connection_established","data":"{\"socket_id\":\"\#(connection).1\",\"activity_timeout\":120}"}"#]
        case .actionCable:
            [#"{"type":"welcome"}"#]
        }
    }

    /// The server's answer to one client text frame, and the key of the channel it confirmed, if any
    /// (a Socket.IO namespace, a Pusher channel name, an Action Cable identifier as the client wrote it).
    func answer(_ text: String) -> (replies: [String], confirmed: String?) {
        switch self {
        case .socketIO:
            // CONNECT: `40`, `40{auth}`, `40/chat,` or `40/chat,{auth}`; anything else needs no answer.
            guard text.hasPrefix("40") else { return ([], nil) }
            let rest = text.dropFirst(2)
            var namespace = "/"
            if rest.hasPrefix("/") { namespace = String(rest.prefix { $0 != "," }) }
            let prefix = namespace == "/" ? "40" : "40\(namespace),"
            return ([prefix + #"{"sid":"bench"}"#], namespace)
        case .pusher:
            guard let frame = try? JSONValue.parse(text) else { return ([], nil) }
            switch frame["event"]?.stringValue {
            case "pusher:subscribe":
                // `data` is an object from most clients, a JSON string from some.
                var data = frame["data"]
                if let inner = data?.stringValue { data = try? JSONValue.parse(inner) }
                guard let channel = data?["channel"]?.stringValue else { return ([], nil) }
                return ([#"{"event":"pusher_internal:subscription_succeeded","channel":\#(JSONValue.string(channel).serialized()),"data":"{}"}"#],
                        channel)
            case "pusher:ping":
                return ([#"{"event":"pusher:pong","data":"{}"}"#], nil)
            default:
                return ([], nil)
            }
        case .actionCable:
            guard let frame = try? JSONValue.parse(text), frame["command"]?.stringValue == "subscribe",
                  let identifier = frame["identifier"]?.stringValue else { return ([], nil) }
            return ([#"{"identifier":\#(JSONValue.string(identifier).serialized()),"type":"confirm_subscription"}"#], identifier)
        }
    }

    /// The channel key of the bench's channel as the dialect's client writes it (for `--raw`, where no
    /// client subscribes).
    var defaultKey: String {
        switch self {
        case .socketIO: "/"
        case .pusher: "room"
        case .actionCable: #"{"channel":"RoomChannel"}"#
        }
    }

    /// Rails' heartbeat, every 3 s; the Action Cable client drops a link that misses two.
    static var actionCableBeat: String {
        #"{"type":"ping","message":\#(Int(Date().timeIntervalSince1970))}"#
    }

    /// One event on the channel `key`, `size` bytes of text in all (the `text` member pads it): number
    /// `number`, and `"t":stamp` (CLOCK_MONOTONIC nanoseconds) when paced.
    func eventText(key: String, number: Int, stamp: UInt64? = nil, size: Int = 150) -> String {
        func body(_ padding: Int) -> String {
            #"{"n":\#(number),"# + (stamp.map { #""t":\#($0),"# } ?? "")
                + #""text":"\#(String(repeating: "x", count: padding))","ok":true}"#
        }
        let bare = event(key: key, body: body(0))
        return event(key: key, body: body(max(0, size - bare.utf8.count)))
    }

    private func event(key: String, body: String) -> String {
        switch self {
        case .socketIO:
            key == "/" ? #"42["tick",\#(body)]"# : #"42\#(key),["tick",\#(body)]"#
        case .pusher:
            #"{"event":"tick","channel":\#(JSONValue.string(key).serialized()),"data":\#(JSONValue.string(body).serialized())}"#
        case .actionCable:
            #"{"identifier":\#(JSONValue.string(key).serialized()),"message":\#(body)}"#
        }
    }
}
