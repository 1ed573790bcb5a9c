import Foundation
import RealtimeCore

/// An in-memory Rails Action Cable server for tests: attach it to an ``InMemoryTransport`` and every
/// connection the session opens speaks `actioncable-v1-json` with it, as Rails 6.1–8.x does on the wire.
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
        public var user: String
        /// The identifier's keys other than `channel`.
        public var params: [String: JSONValue]
        public var identifier: String
    }

    /// One action call (`perform`) or `receive` on a subscription.
    public struct ActionCall: Sendable {
        public var user: String
        public var params: [String: JSONValue]
        /// The decoded `data`, `action` included.
        public var data: [String: JSONValue]
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

    private struct Connection {
        var peer: InMemoryPeer
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

    /// `http(s)://127.0.0.1`, `localhost` or `[::1]`, any port.
    public static let loopbackOrigin: @Sendable (String?) -> Bool = { origin in
        guard let origin, let url = URL(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme)
        else { return false }
        return ["127.0.0.1", "localhost", "::1", "[::1]"].contains(url.host ?? "")
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
            peer.fail(RealtimeError(.handshakeRejected, "origin rejected or wrong path (HTTP 404 Not Found)",
                                    context: .init(httpStatus: 404)))
            return
        }
        let subprotocol = peer.request.subprotocols.first { $0 == "actioncable-v1-json" || $0 == "actioncable-unsupported" }
        peer.onReceive { [self] frame, peer in received(frame, from: peer) }
        peer.accept(subprotocol: subprotocol)
        guard let user = authenticate(peer.request) else {
            peer.send(text: #"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
            peer.close(code: 1000)
            return
        }
        state.withLock { $0.connections[ObjectIdentifier(peer)] = Connection(peer: peer, user: user) }
        peer.send(text: #"{"type":"welcome"}"#)
    }

    /// The user of every open connection, sorted.
    public var connectedUsers: [String] {
        state.withLock { $0.connections.values.filter { $0.peer.phase == .open }.map(\.user) }.sorted()
    }

    /// Every command text received, in order.
    public var receivedCommands: [String] { state.withLock { $0.commands } }

    /// Sends the heartbeat to every connection: `{"type":"ping","message":<seconds>}`.
    public func ping(at seconds: Int64 = Int64(Date().timeIntervalSince1970)) {
        for peer in openPeers() { peer.send(text: #"{"type":"ping","message":\#(seconds)}"#) }
    }

    /// Broadcasts `message` to every subscription streaming from `stream`.
    public func broadcast(to stream: String, _ message: JSONValue) {
        let targets = state.withLock { state in
            state.connections.values.flatMap { connection in
                connection.subscriptions.filter { $0.value.streams.contains(stream) }.map { (connection.peer, $0.key) }
            }
        }
        for (peer, identifier) in targets { peer.send(text: Self.messageFrame(identifier, message)) }
    }

    /// Disconnects `user`'s connections: with a `disconnect` frame when `reason` is set (Rails 7.1+), with a
    /// bare close 1000 when it is `nil` (Rails 6.1/7.0 remote disconnect).
    public func disconnect(user: String, reason: String? = "remote", reconnect: Bool = true) {
        let peers = state.withLock { state in
            let matching = state.connections.filter { $0.value.user == user }
            for key in matching.keys { state.connections[key] = nil }
            return matching.values.map(\.peer)
        }
        for peer in peers { close(peer, reason: reason, reconnect: reconnect) }
    }

    /// `ActionCable.server.restart`: every connection gets `server_restart` with `reconnect: true`.
    public func restart() {
        let peers = state.withLock { state in
            defer { state.connections = [:] }
            return state.connections.values.map(\.peer)
        }
        for peer in peers { close(peer, reason: "server_restart", reconnect: true) }
    }

    // MARK: Commands

    private func received(_ frame: TransportFrame, from peer: InMemoryPeer) {
        guard case .text(let text) = frame else { return }
        state.withLock { $0.commands.append(text) }
        // Rails ignores malformed commands without answering.
        guard let command = try? JSONValue.parse(text), let identifier = command["identifier"]?.stringValue,
              let decoded = try? JSONValue.parse(identifier), let channelName = decoded["channel"]?.stringValue,
              case .object(var params) = decoded else { return }
        params["channel"] = nil
        switch command["command"]?.stringValue {
        case "subscribe":
            subscribe(identifier, channel: channelName, params: params, peer: peer)
        case "unsubscribe":
            state.withLock { _ = $0.connections[ObjectIdentifier(peer)]?.subscriptions.removeValue(forKey: identifier) }
        case "message":
            perform(command["data"], identifier: identifier, peer: peer)
        default:
            return
        }
    }

    private func subscribe(_ identifier: String, channel: String, params: [String: JSONValue], peer: InMemoryPeer) {
        let lookup = state.withLock { state -> (Channel, String)? in
            if state.ignoredSubscribes > 0 {
                state.ignoredSubscribes -= 1
                return nil
            }
            guard let connection = state.connections[ObjectIdentifier(peer)],
                  connection.subscriptions[identifier] == nil,
                  let definition = state.channels[channel] else { return nil }
            return (definition, connection.user)
        }
        guard let (definition, user) = lookup else { return }
        switch definition.subscribed(SubscriptionRequest(user: user, params: params, identifier: identifier)) {
        case .confirm(let streams):
            state.withLock { $0.connections[ObjectIdentifier(peer)]?.subscriptions[identifier] = (channel, params, streams) }
            peer.send(text: Self.typedFrame(identifier, "confirm_subscription"))
        case .reject:
            peer.send(text: Self.typedFrame(identifier, "reject_subscription"))
        case .ignore:
            return
        }
    }

    private func perform(_ data: JSONValue?, identifier: String, peer: InMemoryPeer) {
        // `data` must be a JSON string holding an object; Rails fails an object with a TypeError, silently.
        guard let text = data?.stringValue, case .object(let members)? = try? JSONValue.parse(text) else { return }
        let lookup = state.withLock { state -> (@Sendable (ActionCall) -> Void, String, [String: JSONValue])? in
            guard let connection = state.connections[ObjectIdentifier(peer)],
                  let subscription = connection.subscriptions[identifier],
                  let handler = state.channels[subscription.channel]?.actions[members["action"]?.stringValue ?? "receive"]
            else { return nil }
            return (handler, connection.user, subscription.params)
        }
        guard let (handler, user, params) = lookup else { return }
        handler(ActionCall(user: user, params: params, data: members, identifier: identifier, server: self,
                           connection: ObjectIdentifier(peer)))
    }

    fileprivate func transmit(_ message: JSONValue, identifier: String, connection: ObjectIdentifier) {
        let peer = state.withLock { $0.connections[connection]?.peer }
        peer?.send(text: Self.messageFrame(identifier, message))
    }

    private func close(_ peer: InMemoryPeer, reason: String?, reconnect: Bool) {
        if let reason {
            let frame: JSONValue = ["type": "disconnect", "reason": .string(reason), "reconnect": .bool(reconnect)]
            peer.send(text: frame.serialized())
        }
        peer.close(code: 1000)
    }

    private func openPeers() -> [InMemoryPeer] {
        state.withLock { $0.connections.values.map(\.peer) }.filter { $0.phase == .open }
    }

    private static func typedFrame(_ identifier: String, _ type: String) -> String {
        JSONValue.object(["identifier": .string(identifier), "type": .string(type)]).serialized()
    }

    private static func messageFrame(_ identifier: String, _ message: JSONValue) -> String {
        JSONValue.object(["identifier": .string(identifier), "message": message]).serialized()
    }
}
