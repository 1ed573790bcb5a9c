import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimePusher
import RealtimeTesting
import RealtimeWebSocket

/// A Pusher Channels server on loopback for tests, speaking protocol 7 as Pusher does on the wire (or Bird
/// Realtime's variant of it, with `vendor: .bird`).
///
/// It checks the app key in the path (close 4001 when unknown), verifies every private, presence and
/// sign-in signature with the app secret (a channel-less `pusher:error` with a null code when wrong, as
/// Pusher does), keeps presence members, relays `client-` events to the other subscribers of private and
/// presence channels (adding `user_id` on presence), answers `pusher:ping`, and lets tests trigger events,
/// ping and close connections with a code.
///
/// ```swift
/// let server = try PusherTestServer(key: "app-key", secret: "secret")
/// let session = RealtimeSession(dialect: .pusher(key: "app-key", host: "127.0.0.1", port: server.port))
/// server.trigger("news", event: "flash", data: ["n": 1])
/// ```
public final class PusherTestServer: Sendable {
    /// One client connection as the server sees it.
    public struct Client: Sendable, Hashable {
        /// The id the server gave the connection (`1.1001` for Pusher, `conn-1` for Bird).
        public var socketID: String
        /// Channels it is subscribed to.
        public var channels: Set<String>
        /// The user id of a signed-in client.
        public var userID: String?
    }

    private struct Member: Sendable {
        var userID: String
        var info: JSONValue
    }

    private struct Connection: Sendable {
        let link: WebSocketServerConnection
        var socketID: String
        var channels: Set<String> = []
        /// Presence identity per presence channel.
        var presence: [String: Member] = [:]
        var userID: String?
    }

    private struct State: Sendable {
        var connections: [ObjectIdentifier: Connection] = [:]
        var nextSocket = 1
        var received: [String] = []
    }

    /// The app key. A connection whose path is not `/app/<key>` is closed with 4001.
    public let key: String
    /// The app secret that every private, presence and sign-in signature is checked with.
    public let secret: String
    /// Pusher, or Bird with its own event prefixes, id and identity keys.
    public let vendor: PusherVendor
    /// Seconds sent as `activity_timeout`.
    public let activityTimeout: Int
    private let state = Locked(State())
    private let server: Locked<WebSocketServer?> = Locked(nil)

    /// The listening port.
    public let port: Int

    /// The 32-byte key `private-encrypted-` channels derive their keys from; `nil` refuses those channels.
    public let encryptionMasterKey: [UInt8]?

    /// Starts listening on `127.0.0.1:port` (0 picks a free port).
    public init(key: String, secret: String, port: Int = 0, activityTimeout: Int = 120,
                encryptionMasterKey: [UInt8]? = nil, vendor: PusherVendor = .pusher) throws(RealtimeError) {
        self.vendor = vendor
        self.key = key
        self.secret = secret
        self.encryptionMasterKey = encryptionMasterKey
        self.activityTimeout = activityTimeout
        let weak = Locked<WeakPusherServer>(WeakPusherServer())
        let listener = try WebSocketServer(configuration: .init(host: "127.0.0.1", port: port),
                                           shouldUpgrade: { request in
            request.path.hasPrefix("/app/") ? .accept() : .reject(status: 404, reason: "Not Found")
        }, handler: { connection, event in
            weak.withLock { $0.server }?.handle(connection, event)
        })
        self.port = listener.port
        server.withLock { $0 = listener }
        weak.withLock { $0.server = self }
    }

    deinit { stop() }

    /// Stops listening and drops every connection: clients see their socket drop (1006), as after a crash.
    /// ``shutdown()`` closes them cleanly instead.
    public func stop() {
        takeListener()?.stop()
    }

    /// Stops listening and closes every connection with 4200 ("reconnect immediately", as the hosted
    /// service does when it restarts a node), returning once all have ended.
    public func shutdown() async {
        await takeListener()?.shutdown(code: 4200, reason: "server shutting down")
    }

    private func takeListener() -> WebSocketServer? {
        server.withLock { current -> WebSocketServer? in
            let old = current
            current = nil
            return old
        }
    }

    /// The clients connected now, sorted by socket id.
    public var clients: [Client] {
        state.withLock { $0.connections.values.map { Client(socketID: $0.socketID, channels: $0.channels, userID: $0.userID) } }
            .sorted { $0.socketID < $1.socketID }
    }

    /// Every text frame received from clients, in arrival order.
    public var receivedFrames: [String] { state.withLock { $0.received } }

    /// Presence members of `channel`: user id → info.
    public func members(of channel: String) -> [String: JSONValue] {
        state.withLock { state in
            var members: [String: JSONValue] = [:]
            for connection in state.connections.values {
                if let member = connection.presence[channel] { members[member.userID] = member.info }
            }
            return members
        }
    }

    /// Sends `event` with `data` (as a JSON string, as Pusher does) to every subscriber of `channel`. On
    /// `private-encrypted-` channels the data is sealed with the channel's key and a random nonce.
    public func trigger(_ channel: String, event: String, data: JSONValue) {
        var payload = data.serialized()
        if channel.hasPrefix("private-encrypted-"), let masterKey = encryptionMasterKey {
            let key = SHA256.hash(Array(channel.utf8) + masterKey)
            var generator = SystemRandomNumberGenerator()
            let nonce = (0..<SecretBox.nonceCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let box = SecretBox.seal(Array(payload.utf8), nonce: nonce, key: key)
            payload = JSONValue.object(["nonce": .string(Data(nonce).base64EncodedString()),
                                        "ciphertext": .string(Data(box).base64EncodedString())]).serialized()
        }
        let text = Self.frame(event, channel: channel, data: .string(payload))
        let links = state.withLock { $0.connections.values.filter { $0.channels.contains(channel) }.map(\.link) }
        for link in links { link.send(text: text) }
    }

    /// Sends `event` to a signed-in user on `#server-to-user-<id>`.
    public func sendToUser(_ userID: String, event: String, data: JSONValue) {
        trigger("#server-to-user-\(userID)", event: event, data: data)
    }

    /// Tells the signed-in user `userID` that `userIDs` came online or went offline (`name` is `online` or
    /// `offline`): `*_internal:watchlist_events` on `#server-to-user-<id>`, as Pusher sends it.
    public func sendWatchlistEvent(to userID: String, name: String, userIDs: [String]) {
        let data: JSONValue = ["events": [["name": .string(name), "user_ids": .array(userIDs.map(JSONValue.string))]]]
        let text = Self.frame(vendor.internalPrefix + "watchlist_events", channel: "#server-to-user-\(userID)",
                              data: .string(data.serialized()))
        let links = state.withLock { $0.connections.values.filter { $0.userID == userID }.map(\.link) }
        for link in links { link.send(text: text) }
    }

    /// Sends every subscriber of `channel` its subscriber count now (`pusher_internal:subscription_count`
    /// `{subscription_count}`, or Bird's `bird_internal:connection_count`).
    public func sendSubscriptionCount(_ channel: String) {
        let links = state.withLock { $0.connections.values.filter { $0.channels.contains(channel) }.map(\.link) }
        let data: JSONValue = [vendor.countEvent: .integer(Int64(links.count))]
        let text = Self.frame(vendor.internalPrefix + vendor.countEvent, channel: channel, data: .string(data.serialized()))
        for link in links { link.send(text: text) }
    }

    /// Sends `pusher:ping` to every client.
    public func pingAll() {
        for link in state.withLock({ $0.connections.values.map(\.link) }) {
            link.send(text: Self.frame(vendor.systemPrefix + "ping", data: .string("{}")))
        }
    }

    /// Closes every client connection with `code`.
    public func closeAll(code: Int, reason: String = "") {
        for link in state.withLock({ $0.connections.values.map(\.link) }) { link.close(code: code, reason: reason) }
    }

    /// Closes the connection of `socketID` with `code`.
    public func close(socketID: String, code: Int, reason: String = "") {
        state.withLock { $0.connections.values.first { $0.socketID == socketID }?.link }?.close(code: code, reason: reason)
    }

    // MARK: Wire

    static func frame(_ event: String, channel: String? = nil, data: JSONValue) -> String {
        var members: [String: JSONValue] = ["event": .string(event), "data": data]
        if let channel { members["channel"] = .string(channel) }
        return JSONValue.object(members).serialized()
    }

    private func error(_ message: String, code: Int?) -> String {
        Self.frame(vendor.systemPrefix + "error", data: ["message": .string(message), "code": code.map { .integer(Int64($0)) } ?? .null])
    }

    private func handle(_ link: WebSocketServerConnection, _ event: WebSocketServer.Event) {
        let id = ObjectIdentifier(link)
        switch event {
        case .opened:
            let path = link.request?.path ?? ""
            guard path == "/app/\(key)" else {
                link.send(text: error("Could not find app by key", code: 4001))
                link.close(code: 4001, reason: "Could not find app by key")
                return
            }
            let socketID = state.withLock { state -> String in
                let number = state.nextSocket
                state.nextSocket += 1
                let socketID = vendor == .bird ? "conn-\(number)" : "\(number).\(1000 + number)"
                state.connections[id] = Connection(link: link, socketID: socketID)
                return socketID
            }
            let data = JSONValue.object([vendor.connectionIDKey: .string(socketID),
                                         "activity_timeout": .integer(Int64(activityTimeout))])
            link.send(text: Self.frame(vendor.systemPrefix + "connection_established", data: .string(data.serialized())))
        case .received(let frames):
            for case .text(let text) in frames { received(text, from: id) }
        case .closed:
            let gone = state.withLock { $0.connections.removeValue(forKey: id) }
            if let gone {
                for (channel, member) in gone.presence { memberLeft(member, channel: channel) }
            }
        }
    }

    private func received(_ text: String, from id: ObjectIdentifier) {
        state.withLock { $0.received.append(text) }
        guard let connection = state.withLock({ $0.connections[id] }) else { return }
        let link = connection.link
        guard let message = try? JSONValue.parse(text), let event = message["event"]?.stringValue else {
            link.send(text: error("Malformed message", code: 4200))
            return
        }
        let data = message["data"]
        let prefix = vendor.systemPrefix
        switch event {
        case prefix + "ping":
            link.send(text: Self.frame(prefix + "pong", data: .string("{}")))
        case prefix + "pong":
            return
        case prefix + "subscribe":
            subscribe(data, id: id, connection: connection)
        case prefix + "unsubscribe":
            guard let channel = data?["channel"]?.stringValue else { return }
            let member = state.withLock { state -> Member? in
                state.connections[id]?.channels.remove(channel)
                return state.connections[id]?.presence.removeValue(forKey: channel)
            }
            if let member { memberLeft(member, channel: channel) }
        case prefix + "signin":
            signin(data, id: id, connection: connection)
        default:
            guard event.hasPrefix("client-"), let channel = message["channel"]?.stringValue else {
                link.send(text: error("Unsupported event \(event)", code: nil))
                return
            }
            clientEvent(event, channel: channel, data: data ?? .null, id: id, connection: connection)
        }
    }

    private func signature(_ signed: String) -> String { "\(key):\(HMACSHA256.hex(signed, key: secret))" }

    private func subscribe(_ data: JSONValue?, id: ObjectIdentifier, connection: Connection) {
        let link = connection.link
        guard let channel = data?["channel"]?.stringValue, !channel.isEmpty else {
            link.send(text: error("Missing channel", code: nil))
            return
        }
        if vendor == .bird, channel.hasPrefix("private-encrypted-") {
            link.send(text: error("Encrypted channels are not supported", code: nil))
            return
        }
        var member: Member?
        if channel.hasPrefix("#server-to-user-") {
            guard connection.userID.map({ "#server-to-user-\($0)" }) == channel else {
                link.send(text: error("Not signed in as this user", code: nil))
                return
            }
        } else if channel.hasPrefix("private-encrypted-"), encryptionMasterKey == nil {
            link.send(text: error("Encrypted channels are not enabled for this app", code: nil))
            return
        } else if channel.hasPrefix("private-") || channel.hasPrefix("presence-") {
            let identity = data?[vendor.subscribeIdentityKey]?.stringValue
            let signed = channel.hasPrefix("presence-") ? "\(connection.socketID):\(channel):\(identity ?? "")"
                : "\(connection.socketID):\(channel)"
            guard data?["auth"]?.stringValue == signature(signed) else {
                link.send(text: error("Invalid signature: expected HMAC SHA256 hex digest of \(signed)", code: nil))
                return
            }
            if channel.hasPrefix("presence-") {
                guard let identity, let parsed = try? JSONValue.parse(identity),
                      let userID = parsed[vendor.memberIDKey].flatMap(Self.idString) else {
                    link.send(text: error("Invalid presence \(vendor.subscribeIdentityKey)", code: nil))
                    return
                }
                member = Member(userID: userID, info: parsed[vendor.memberInfoKey] ?? .null)
            }
        }
        let (others, alreadyPresent) = state.withLock { state -> ([WebSocketServerConnection], Bool) in
            state.connections[id]?.channels.insert(channel)
            let present = member.map { member in
                state.connections.values.contains { $0.presence[channel]?.userID == member.userID }
            } ?? true
            if let member { state.connections[id]?.presence[channel] = member }
            let others = state.connections.filter { $0.key != id && $0.value.channels.contains(channel) }.map(\.value.link)
            return (others, present)
        }
        var payload: JSONValue = .object([:])
        if channel.hasPrefix("presence-") {
            let members = self.members(of: channel)
            payload = ["presence": ["ids": .array(members.keys.sorted().map(JSONValue.string)),
                                    "hash": .object(members), "count": .integer(Int64(members.count))]]
        }
        link.send(text: Self.frame(vendor.internalPrefix + "subscription_succeeded", channel: channel,
                                   data: .string(payload.serialized())))
        if let member, !alreadyPresent {
            let added = Self.frame(vendor.internalPrefix + "member_added", channel: channel,
                                   data: .string(JSONValue.object([vendor.memberIDKey: .string(member.userID),
                                                                   vendor.memberInfoKey: member.info]).serialized()))
            for other in others { other.send(text: added) }
        }
    }

    private func memberLeft(_ member: Member, channel: String) {
        let (stillPresent, links) = state.withLock { state -> (Bool, [WebSocketServerConnection]) in
            let present = state.connections.values.contains { $0.presence[channel]?.userID == member.userID }
            return (present, state.connections.values.filter { $0.channels.contains(channel) }.map(\.link))
        }
        guard !stillPresent else { return }
        let removed = Self.frame(vendor.internalPrefix + "member_removed", channel: channel,
                                 data: .string(JSONValue.object([vendor.memberIDKey: .string(member.userID)]).serialized()))
        for link in links { link.send(text: removed) }
    }

    private func signin(_ data: JSONValue?, id: ObjectIdentifier, connection: Connection) {
        guard let userData = data?[vendor.signinDataKey]?.stringValue,
              data?["auth"]?.stringValue == signature(vendor.signinSignedString(connectionID: connection.socketID,
                                                                                identity: userData)),
              let userID = (try? JSONValue.parse(userData))?[vendor.signinIDKey].flatMap(Self.idString),
              !userID.isEmpty else {
            connection.link.send(text: error("Invalid signin", code: nil))
            return
        }
        state.withLock { $0.connections[id]?.userID = userID }
        connection.link.send(text: Self.frame(vendor.systemPrefix + "signin_success",
                                              data: .string(JSONValue.object([vendor.signinDataKey: .string(userData)]).serialized())))
    }

    private func clientEvent(_ event: String, channel: String, data: JSONValue, id: ObjectIdentifier,
                             connection: Connection) {
        guard channel.hasPrefix("private-") || channel.hasPrefix("presence-"),
              !channel.hasPrefix("private-encrypted-") else {
            connection.link.send(text: error("Client events are only allowed on private and presence channels",
                                                  code: nil))
            return
        }
        guard connection.channels.contains(channel) else {
            connection.link.send(text: error("Not subscribed to \(channel)", code: nil))
            return
        }
        var members: [String: JSONValue] = ["event": .string(event), "channel": .string(channel),
                                            "data": .string(data.stringValue ?? data.serialized())]
        if let member = connection.presence[channel] { members["user_id"] = .string(member.userID) }
        let text = JSONValue.object(members).serialized()
        let others = state.withLock { $0.connections.filter { $0.key != id && $0.value.channels.contains(channel) }.map(\.value.link) }
        for other in others { other.send(text: text) }
    }

    private static func idString(_ value: JSONValue) -> String? {
        switch value {
        case .string(let text): return text
        case .integer(let number): return String(number)
        default: return nil
        }
    }
}

/// Breaks the cycle between the listener's handler and the test server.
private struct WeakPusherServer: Sendable {
    weak var server: PusherTestServer?
}
