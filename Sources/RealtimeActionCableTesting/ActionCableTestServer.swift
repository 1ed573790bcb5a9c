import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import RealtimeWebSocket

/// An in-memory Rails Action Cable server for tests: attach it to an ``InMemoryTransport`` and every
/// connection the session opens speaks `actioncable-v1-json` with it, as Rails 6.0–8.x does on the wire.
///
/// Like Rails it checks the `Origin` (HTTP 404 when not allowed), authenticates in `connect` (a `disconnect`
/// frame with `unauthorized` when it fails), answers `subscribe` with `confirm_subscription` or
/// `reject_subscription`, ignores duplicate subscribes, unknown channels, unknown actions and `unsubscribe`
/// (no reply), and routes by the identifier string exactly as the client sent it. Time does not pass on its
/// own: tests call ``ping()`` to send the heartbeat.
///
/// ```swift
/// let server = ActionCableTestServer(authenticate: { request in request.url.query == "token=ok" ? "alice" : nil })
/// server.define("EchoChannel") { subscription in .confirm(streams: ["echo"]) }
/// server.onAction("EchoChannel", "speak") { call in call.broadcast(to: "echo", .object(call.data)) }
/// server.attach(to: transport)
/// ```
public final class ActionCableTestServer: Sendable {
    /// What a channel class decides in `subscribed`.
    public enum SubscriptionDecision: Sendable {
        /// Confirm and stream from `streams`.
        case confirm(streams: [String])
        /// `reject`: the client gets `reject_subscription`.
        case reject
        /// Never answer (a channel stuck in a slow `subscribed`).
        case ignore
    }

    /// The subscribe request a channel class sees.
    public struct SubscriptionRequest: Sendable {
        /// The user `authenticate` returned for the connection.
        public var user: String
        /// The identifier's keys other than `channel`.
        public var params: [String: JSONValue]
        /// The identifier string exactly as the client sent it.
        public var identifier: String
    }

    /// One action call (`perform`) or `receive` on a subscription.
    public struct ActionCall: Sendable {
        /// The user `authenticate` returned for the connection.
        public var user: String
        /// The subscription identifier's keys other than `channel`.
        public var params: [String: JSONValue]
        /// The decoded `data`, `action` included.
        public var data: [String: JSONValue]
        /// The subscription's identifier string, exactly as the client sent it.
        public var identifier: String
        let server: ActionCableTestServer
        let connection: ObjectIdentifier

        /// Sends `message` to this subscription only (Rails `transmit`).
        public func transmit(_ message: JSONValue) {
            server.transmit(message, identifier: identifier, connection: connection)
        }

        /// Broadcasts `message` to every subscription streaming from `stream`.
        public func broadcast(to stream: String, _ message: JSONValue) {
            server.broadcast(to: stream, message)
        }
    }

    private struct Channel {
        var subscribed: @Sendable (SubscriptionRequest) -> SubscriptionDecision
        var actions: [String: @Sendable (ActionCall) -> Void] = [:]
    }

    /// One client connection as the server sees it, whatever carries it.
    struct Link: Sendable {
        let id: ObjectIdentifier
        let send: @Sendable (String) -> Void
        let close: @Sendable () -> Void
        let isOpen: @Sendable () -> Bool

        init(_ peer: InMemoryPeer) {
            id = ObjectIdentifier(peer)
            send = { peer.send(text: $0) }
            close = { peer.close(code: 1000) }
            isOpen = { peer.phase == .open }
        }

        init(_ connection: WebSocketServerConnection) {
            let open = Locked(true)
            id = ObjectIdentifier(connection)
            send = { connection.send(text: $0) }
            close = {
                open.withLock { $0 = false }
                connection.close(code: 1000)
            }
            isOpen = { open.withLock { $0 } }
        }
    }

    private struct Connection {
        var link: Link
        var user: String
        /// Subscriptions by identifier: streams and params.
        var subscriptions: [String: (channel: String, params: [String: JSONValue], streams: [String])] = [:]
    }

    private struct State {
        var channels: [String: Channel] = [:]
        var connections: [ObjectIdentifier: Connection] = [:]
        var commands: [String] = []
        var ignoredSubscribes = 0
    }

    private let state = Locked(State())
    private let authenticate: @Sendable (ConnectionRequest) -> String?
    private let allowsOrigin: @Sendable (String?) -> Bool

    /// - Parameters:
    ///   - authenticate: the user for a connection request, or `nil` to refuse it as unauthorized.
    ///   - allowsOrigin: whether an `Origin` is allowed; by default any `http(s)` loopback origin.
    public init(authenticate: @escaping @Sendable (ConnectionRequest) -> String? = { _ in "anonymous" },
                allowsOrigin: @escaping @Sendable (String?) -> Bool = ActionCableTestServer.loopbackOrigin) {
        self.authenticate = authenticate
        self.allowsOrigin = allowsOrigin
    }

    /// An `http(s)` origin on a loopback host (``Loopback``), any port.
    public static let loopbackOrigin: @Sendable (String?) -> Bool = { origin in
        guard let origin, let url = URL(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme)
        else { return false }
        return Loopback.contains(host: url.host ?? "")
    }

    // MARK: Channels

    /// Defines a channel class; `subscribed` decides every subscribe to it.
    public func define(_ channel: String, subscribed: @escaping @Sendable (SubscriptionRequest) -> SubscriptionDecision) {
        state.withLock { $0.channels[channel] = Channel(subscribed: subscribed) }
    }

    /// Defines a public method of a channel class. `"receive"` handles data without an `action`.
    public func onAction(_ channel: String, _ action: String, perform: @escaping @Sendable (ActionCall) -> Void) {
        state.withLock { $0.channels[channel]?.actions[action] = perform }
    }

    /// Makes the next `count` subscribe commands go unanswered, as when Rails runs them out of order.
    public func ignoreNextSubscribes(_ count: Int) {
        state.withLock { $0.ignoredSubscribes = count }
    }

    // MARK: Connections

    /// Serves every connection `transport` opens from now on.
    public func attach(to transport: InMemoryTransport) {
        transport.onOpen { [self] peer in accept(peer) }
    }

    /// Serves one connection.
    public func accept(_ peer: InMemoryPeer) {
        guard allowsOrigin(peer.request.origin) else {
            let path = peer.request.url.path.isEmpty ? "/" : peer.request.url.path
            peer.fail(RealtimeError(.handshakeRejected, "wrong path (or origin refused): HTTP 404 Not Found for \(path)",
                                    context: .init(httpStatus: 404)))
            return
        }
        let link = Link(peer)
        // Neither the server nor the link (whose closures hold the peer): the server keeps the link in
        // `connections` until it closes, so either capture made a cycle that leaked every connection still
        // open when its test ended (LeakSanitizer).
        peer.onReceive { [weak self, id = link.id] frame, _ in self?.received(frame, from: id) }
        peer.accept(subprotocol: Self.selectSubprotocol(peer.request.subprotocols))
        opened(link, request: peer.request)
    }

    /// Rails picks the first protocol it knows from its own list, whatever the client's order.
    static func selectSubprotocol(_ offered: [String]) -> String? {
        ["actioncable-v1-json", "actioncable-unsupported"].first { offered.contains($0) }
    }

    /// Runs `connect`: welcome, or `unauthorized` and close.
    func opened(_ link: Link, request: ConnectionRequest) {
        guard let user = authenticate(request) else {
            link.send(#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
            link.close()
            return
        }
        state.withLock { $0.connections[link.id] = Connection(link: link, user: user) }
        link.send(#"{"type":"welcome"}"#)
    }

    /// Forgets a connection that closed.
    func closed(_ id: ObjectIdentifier) {
        state.withLock { _ = $0.connections.removeValue(forKey: id) }
    }

    /// The user of every open connection, sorted.
    public var connectedUsers: [String] {
        state.withLock { $0.connections.values.filter { $0.link.isOpen() }.map(\.user) }.sorted()
    }

    /// Every command text received, in order.
    public var receivedCommands: [String] { state.withLock { $0.commands } }

    /// Sends the heartbeat to every connection: `{"type":"ping","message":<seconds>}`.
    public func ping(at seconds: Int64 = Int64(Date().timeIntervalSince1970)) {
        for link in openLinks() { link.send(#"{"type":"ping","message":\#(seconds)}"#) }
    }

    /// Broadcasts `message` to every subscription streaming from `stream`.
    public func broadcast(to stream: String, _ message: JSONValue) {
        let targets = state.withLock { state in
            state.connections.values.flatMap { connection in
                connection.subscriptions.filter { $0.value.streams.contains(stream) }.map { (connection.link, $0.key) }
            }
        }
        for (link, identifier) in targets { link.send(Self.messageFrame(identifier, message)) }
    }

    /// Disconnects `user`'s connections: with a `disconnect` frame when `reason` is set (Rails 7.1+), with a
    /// bare close 1000 when it is `nil` (Rails 6.1/7.0 remote disconnect).
    public func disconnect(user: String, reason: String? = "remote", reconnect: Bool = true) {
        let links = state.withLock { state in
            let matching = state.connections.filter { $0.value.user == user }
            for key in matching.keys { state.connections[key] = nil }
            return matching.values.map(\.link)
        }
        for link in links { close(link, reason: reason, reconnect: reconnect) }
    }

    /// `ActionCable.server.restart`: every connection gets `server_restart` with `reconnect: true`.
    public func restart() {
        let links = state.withLock { state in
            defer { state.connections = [:] }
            return state.connections.values.map(\.link)
        }
        for link in links { close(link, reason: "server_restart", reconnect: true) }
    }

    // MARK: Commands

    func received(_ frame: TransportFrame, from id: ObjectIdentifier) {
        guard case .text(let text) = frame else { return }
        state.withLock { $0.commands.append(text) }
        // Rails ignores malformed commands without answering.
        guard let command = try? JSONValue.parse(text), let identifier = command["identifier"]?.stringValue,
              let decoded = try? JSONValue.parse(identifier), let channelName = decoded["channel"]?.stringValue,
              case .object(var params) = decoded else { return }
        params["channel"] = nil
        switch command["command"]?.stringValue {
        case "subscribe":
            subscribe(identifier, channel: channelName, params: params, connection: id)
        case "unsubscribe":
            state.withLock { _ = $0.connections[id]?.subscriptions.removeValue(forKey: identifier) }
        case "message":
            perform(command["data"], identifier: identifier, connection: id)
        default:
            return
        }
    }

    private func subscribe(_ identifier: String, channel: String, params: [String: JSONValue], connection id: ObjectIdentifier) {
        let lookup = state.withLock { state -> (Channel, String, Link)? in
            if state.ignoredSubscribes > 0 {
                state.ignoredSubscribes -= 1
                return nil
            }
            guard let connection = state.connections[id],
                  connection.subscriptions[identifier] == nil,
                  let definition = state.channels[channel] else { return nil }
            return (definition, connection.user, connection.link)
        }
        guard let (definition, user, link) = lookup else { return }
        switch definition.subscribed(SubscriptionRequest(user: user, params: params, identifier: identifier)) {
        case .confirm(let streams):
            state.withLock { $0.connections[id]?.subscriptions[identifier] = (channel, params, streams) }
            link.send(Self.typedFrame(identifier, "confirm_subscription"))
        case .reject:
            link.send(Self.typedFrame(identifier, "reject_subscription"))
        case .ignore:
            return
        }
    }

    private func perform(_ data: JSONValue?, identifier: String, connection id: ObjectIdentifier) {
        // `data` must be a JSON string holding an object; Rails fails an object with a TypeError, silently.
        guard let text = data?.stringValue, case .object(let members)? = try? JSONValue.parse(text) else { return }
        let lookup = state.withLock { state -> (@Sendable (ActionCall) -> Void, String, [String: JSONValue])? in
            guard let connection = state.connections[id],
                  let subscription = connection.subscriptions[identifier],
                  let handler = state.channels[subscription.channel]?.actions[members["action"]?.stringValue ?? "receive"]
            else { return nil }
            return (handler, connection.user, subscription.params)
        }
        guard let (handler, user, params) = lookup else { return }
        handler(ActionCall(user: user, params: params, data: members, identifier: identifier, server: self,
                           connection: id))
    }

    fileprivate func transmit(_ message: JSONValue, identifier: String, connection: ObjectIdentifier) {
        let link = state.withLock { $0.connections[connection]?.link }
        link?.send(Self.messageFrame(identifier, message))
    }

    private func close(_ link: Link, reason: String?, reconnect: Bool) {
        if let reason {
            let frame: JSONValue = ["type": "disconnect", "reason": .string(reason), "reconnect": .bool(reconnect)]
            link.send(frame.serialized())
        }
        link.close()
    }

    private func openLinks() -> [Link] {
        state.withLock { $0.connections.values.map(\.link) }.filter { $0.isOpen() }
    }

    private static func typedFrame(_ identifier: String, _ type: String) -> String {
        JSONValue.object(["identifier": .string(identifier), "type": .string(type)]).serialized()
    }

    private static func messageFrame(_ identifier: String, _ message: JSONValue) -> String {
        JSONValue.object(["identifier": .string(identifier), "message": message]).serialized()
    }
}

extension ActionCableTestServer {
    /// Serves real WebSocket connections on loopback, for tests over `WebSocketTransport` and demos.
    ///
    /// Clients connect to `ws://127.0.0.1:<server.port><path>`. Another path, or an `Origin` the server does
    /// not allow, is answered with HTTP 404 as Rails does. Stop it with `WebSocketServer.stop()`.
    public func listen(configuration: WebSocketServer.Configuration = .init(),
                       path: String = "/cable") throws(RealtimeError) -> WebSocketServer {
        try WebSocketServer(configuration: configuration, shouldUpgrade: { [self] request in
            guard request.path == path, allowsOrigin(request.origin) else {
                return .reject(status: 404, reason: "Not Found")
            }
            return .accept(subprotocol: Self.selectSubprotocol(request.subprotocols))
        }, handler: { [self] connection, event in
            switch event {
            case .opened:
                guard let request = connection.request else { return }
                let url = URL(string: "ws://\(request.host ?? "127.0.0.1")\(request.target)")
                    ?? URL(string: "ws://127.0.0.1/")!
                opened(Link(connection), request: ConnectionRequest(url: url, headers: request.headers,
                                                                    subprotocols: request.subprotocols,
                                                                    origin: request.origin))
            case .received(let frames):
                for frame in frames { received(frame, from: ObjectIdentifier(connection)) }
            case .closed:
                closed(ObjectIdentifier(connection))
            }
        })
    }
}
