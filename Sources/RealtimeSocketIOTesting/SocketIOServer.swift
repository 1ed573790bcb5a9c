import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeSocketIO
import RealtimeTesting
import RealtimeWebSocket

/// An embedded Socket.IO v5 server (Engine.IO v4 over WebSocket) on loopback, for tests and demos.
///
/// Namespaces are registered with a connect handler that checks the CONNECT payload; event handlers
/// get the arguments with binary attachments restored and an acknowledgement responder when the client
/// asked for one. Sockets can emit, ask the client for an ack, join rooms and be disconnected.
///
/// ```swift
/// let server = try SocketIOServer()
/// server.namespace("/chat") { _, auth in auth?["token"] == "secret" ? .accept : .reject("invalid token") }
/// server.on("sum", in: "/chat") { _, arguments, ack in
///     ack?(["sum": .integer(arguments.first?.arrayValue?.compactMap(\.integerValue).reduce(0, +) ?? 0)])
/// }
/// let session = RealtimeSession(dialect: .socketIO(url: server.url, auth: ["token": "secret"]))
/// ```
///
/// Handlers run on the connection's event-loop thread, one at a time per connection: keep them short.
/// Long-polling is not served: a polling request is refused with HTTP 400.
public final class SocketIOServer: Sendable {
    /// Where to listen and the Engine.IO parameters announced to clients.
    public struct Configuration: Sendable {
        /// A numeric loopback address (`127.0.0.1` or `::1`).
        public var host: String
        /// 0 picks a free port.
        public var port: Int
        /// The Engine.IO path (`/socket.io/`).
        public var path: String
        /// Time between a pong and the next ping (announced in the open packet).
        public var pingInterval: Duration
        /// Time a client has to answer a ping before it is dropped.
        public var pingTimeout: Duration
        /// Largest payload announced to clients.
        public var maxPayload: Int
        /// Runs the heartbeat; pass a manual clock to drive it by hand.
        public var clock: any RealtimeClock
        /// Connection state recovery as Node's `connectionStateRecovery`: CONNECT acks carry a `pid`, events
        /// without an ack carry an offset, and a client that drops (not one that leaves) can come back within
        /// `maximumDisconnection` to the same socket id and rooms, with the room events it missed.
        public var recovery: Bool
        /// How long a client that dropped can come back to its session (Node's `maxDisconnectionDuration`);
        /// only used with `recovery` on.
        public var maximumDisconnection: Duration

        /// Loopback on a free port, with Node's defaults: pings every 25 s, 20 s to answer, 1 MB payloads,
        /// recovery off.
        public init(host: String = "127.0.0.1", port: Int = 0, path: String = "/socket.io/",
                    pingInterval: Duration = .seconds(25), pingTimeout: Duration = .seconds(20),
                    maxPayload: Int = 1_000_000, clock: any RealtimeClock = SystemClock(),
                    recovery: Bool = false, maximumDisconnection: Duration = .seconds(120)) {
            self.host = host
            self.port = port
            self.path = path
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
            self.maxPayload = maxPayload
            self.clock = clock
            self.recovery = recovery
            self.maximumDisconnection = maximumDisconnection
        }
    }

    /// The answer of a namespace's connect handler.
    public enum ConnectDecision: Sendable {
        /// Sends the CONNECT ack with a fresh socket id.
        case accept
        /// Refuses with CONNECT_ERROR `{"message": message, "data": data}`.
        case reject(String, data: JSONValue? = nil)
    }

    /// Decides on one namespace CONNECT, given its payload.
    public typealias ConnectHandler = @Sendable (_ socket: SocketIOServerSocket, _ auth: JSONValue?) -> ConnectDecision
    /// Handles one event; `ack` is set when the client asked for an acknowledgement.
    public typealias EventHandler = @Sendable (_ socket: SocketIOServerSocket, _ arguments: [JSONValue],
                                               _ ack: SocketIOServerAck?) -> Void

    struct State {
        var connectHandlers: [String: ConnectHandler] = [:]
        var eventHandlers: [String: [String: EventHandler]] = [:]
        var clients: [ObjectIdentifier: EngineClient] = [:]
        /// namespace → room → socket ids
        var rooms: [String: [String: Set<String>]] = [:]
        var sockets: [String: SocketIOServerSocket] = [:]
        var nextID: UInt64 = 0
        /// pid → a dropped socket that may come back.
        var sessions: [String: RecoverableSession] = [:]
        var nextOffset: UInt64 = 0
    }

    /// A socket that dropped while recovery is on, with the room events it missed since.
    struct RecoverableSession {
        var socketID: String
        var namespace: String
        var rooms: Set<String>
        var missed: [(offset: String, event: String, arguments: [JSONValue])] = []
        var expires: Duration
    }

    /// Per Engine.IO connection.
    struct EngineClient {
        var sid: String
        var decoder = SocketIOPacketDecoder()
        var sockets: [String: SocketIOServerSocket] = [:]
        var pendingAcks: [String: [Int64: @Sendable ([JSONValue]) -> Void]] = [:]
        var nextAckID: [String: Int64] = [:]
        /// Pings sent, and the number of the last one answered: a deadline only checks its own ping.
        var pingsSent: UInt64 = 0
        var pingsAnswered: UInt64 = 0
        var silent = false
        var heartbeat: (any ScheduledTimer)?
        var pongDeadline: (any ScheduledTimer)?
        /// The client sent an Engine.IO CLOSE: a deliberate end, so nothing is kept for recovery.
        var closedByClient = false
    }

    /// What the server was started with.
    public let configuration: Configuration
    let state = Locked(State())
    private let webSocketServer: Locked<WebSocketServer?> = Locked(nil)

    /// The port the server listens on.
    public let port: Int

    /// Starts listening at once.
    public init(configuration: Configuration = Configuration()) throws(RealtimeError) {
        self.configuration = configuration
        let path = configuration.path.hasSuffix("/") ? configuration.path : configuration.path + "/"
        // Weak, so the WebSocket server's handler does not keep this server alive.
        let box = Locked(WeakServer())
        let server = try WebSocketServer(
            configuration: .init(host: configuration.host, port: configuration.port),
            shouldUpgrade: { request in
                let items = URLComponents(string: "http://h" + request.target)?.queryItems ?? []
                func value(_ name: String) -> String? { items.first { $0.name == name }?.value }
                guard request.path == path || request.path + "/" == path else {
                    return .reject(status: 404, reason: "Not Found")
                }
                guard value("EIO") == "4", value("transport") == "websocket", value("sid") == nil else {
                    return .reject(status: 400, reason: "Bad Request")
                }
                return .accept()
            },
            handler: { connection, event in
                box.withLock { $0.server }?.handle(connection, event)
            })
        port = server.port
        webSocketServer.withLock { $0 = server }
        box.withLock { $0.server = self }
    }

    /// `http://host:port` for `.socketIO(url:)`.
    public var url: URL {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return URL(string: "http://\(host):\(port)")!
    }

    /// Stops listening and drops every client: clients see their socket drop (1006), as after a crash.
    /// ``shutdown()`` closes them cleanly instead.
    public func stop() {
        let timers = state.withLock { state -> [any ScheduledTimer] in
            defer { state.clients = [:] }
            return state.clients.values.flatMap { [$0.heartbeat, $0.pongDeadline].compactMap { $0 } }
        }
        for timer in timers { timer.cancel() }
        webSocketServer.withLock { $0 }?.stop()
    }

    /// Stops listening and closes every client's WebSocket with 1001 "going away", returning once all
    /// have ended; clients reconnect as after a server restart. Each client's heartbeat stops as its
    /// close completes.
    public func shutdown() async {
        await webSocketServer.withLock { $0 }?.shutdown()
    }

    deinit {
        stop()
    }

    /// Engine.IO connections open now.
    public var connectionCount: Int { state.withLock { $0.clients.count } }

    /// Accepts clients on `name`; `connect` decides on each CONNECT (accepts everyone by default).
    public func namespace(_ name: String, connect: @escaping ConnectHandler = { _, _ in .accept }) {
        state.withLock { $0.connectHandlers[name] = connect }
    }

    /// Calls `handler` for every `event` on `namespace` (registered on the fly if needed).
    public func on(_ event: String, in namespace: String = "/", _ handler: @escaping EventHandler) {
        state.withLock { state in
            if state.connectHandlers[namespace] == nil { state.connectHandlers[namespace] = { _, _ in .accept } }
            state.eventHandlers[namespace, default: [:]][event] = handler
        }
    }

    /// Emits to every socket of `room` in `namespace`.
    public func emit(_ event: String, _ arguments: [JSONValue], toRoom room: String, in namespace: String = "/") {
        let members = state.withLock { state in
            let now = configuration.clock.now()
            for (pid, session) in state.sessions where session.namespace == namespace && session.rooms.contains(room)
                && session.expires > now {
                state.nextOffset += 1
                state.sessions[pid]?.missed.append(("o\(state.nextOffset)", event, arguments))
            }
            return (state.rooms[namespace]?[room] ?? []).compactMap { state.sockets[$0] }
        }
        for socket in members { socket.emit(event, arguments) }
    }

    /// The connected sockets of `namespace`.
    public func sockets(in namespace: String = "/") -> [SocketIOServerSocket] {
        state.withLock { $0.sockets.values.filter { $0.namespace == namespace } }
    }

    // MARK: - Engine.IO

    private func handle(_ connection: WebSocketServerConnection, _ event: WebSocketServer.Event) {
        let key = ObjectIdentifier(connection)
        switch event {
        case .opened:
            let sid = state.withLock { state -> String in
                state.nextID += 1
                let sid = "eio\(state.nextID)-" + UUID().uuidString.prefix(8)
                state.clients[key] = EngineClient(sid: sid)
                return sid
            }
            let handshake = EngineIOHandshake(sid: sid, upgrades: [], pingInterval: configuration.pingInterval,
                                              pingTimeout: configuration.pingTimeout,
                                              maxPayload: configuration.maxPayload)
            connection.send(text: "0" + handshake.json)
            scheduleHeartbeat(connection)
        case .received(let frames):
            for frame in frames { received(frame, on: connection) }
        case .closed:
            forget(connection)
        }
    }

    /// As python-engineio does: the next ping goes `pingInterval` after the previous pong, and a ping
    /// without a pong within `pingTimeout` drops the client.
    private func scheduleHeartbeat(_ connection: WebSocketServerConnection) {
        let key = ObjectIdentifier(connection)
        let timer = configuration.clock.schedule(after: configuration.pingInterval) { [weak self, weak connection] in
            guard let self, let connection else { return }
            let ping = self.state.withLock { state -> UInt64? in
                guard let client = state.clients[key], !client.silent else { return nil }
                state.clients[key]?.pingsSent += 1
                return client.pingsSent + 1
            }
            guard let ping else { return }
            connection.send(text: "2")
            let deadline = self.configuration.clock.schedule(after: self.configuration.pingTimeout) { [weak self, weak connection] in
                guard let self, let connection else { return }
                let missed = self.state.withLock { state -> Bool in
                    guard let client = state.clients[key], !client.silent else { return false }
                    return client.pingsAnswered < ping
                }
                if missed { connection.abort() }
            }
            self.state.withLock { $0.clients[key]?.pongDeadline = deadline }
        }
        state.withLock { $0.clients[key]?.heartbeat = timer }
    }

    private func received(_ frame: TransportFrame, on connection: WebSocketServerConnection) {
        let key = ObjectIdentifier(connection)
        do throws(RealtimeError) {
            let packet: SocketIOPacket?
            switch try EngineIOPacket(frame: frame) {
            case .binary(let data):
                packet = try state.withLock { state in
                    Result { () throws(RealtimeError) in try state.clients[key]?.decoder.receive(binary: data) }
                }.get()
            case .text(.pong, _):
                let known = state.withLock { state -> Bool in
                    guard let client = state.clients[key] else { return false }
                    state.clients[key]?.pingsAnswered = client.pingsSent
                    return true
                }
                if known { scheduleHeartbeat(connection) }
                return
            case .text(.close, _):
                state.withLock { $0.clients[key]?.closedByClient = true }
                connection.close()
                return
            case .text(.message, let text):
                packet = try state.withLock { state in
                    Result { () throws(RealtimeError) in try state.clients[key]?.decoder.receive(text: text) }
                }.get()
            case .text:
                return
            }
            if let packet { handle(packet, on: connection) }
        } catch {
            connection.close(code: 1002, reason: "parse error")
        }
    }

    private func forget(_ connection: WebSocketServerConnection) {
        let key = ObjectIdentifier(connection)
        let timers = state.withLock { state -> [any ScheduledTimer] in
            guard let client = state.clients.removeValue(forKey: key) else { return [] }
            for socket in client.sockets.values {
                if let pid = socket.pid, !client.closedByClient {
                    let rooms = state.rooms[socket.namespace]?.filter { $0.value.contains(socket.id) }.map(\.key) ?? []
                    state.sessions[pid] = RecoverableSession(
                        socketID: socket.id, namespace: socket.namespace, rooms: Set(rooms),
                        expires: configuration.clock.now() + configuration.maximumDisconnection)
                }
                Self.remove(socket, from: &state)
            }
            return [client.heartbeat, client.pongDeadline].compactMap { $0 }
        }
        for timer in timers { timer.cancel() }
    }

    private static func remove(_ socket: SocketIOServerSocket, from state: inout State) {
        state.sockets[socket.id] = nil
        for room in state.rooms[socket.namespace]?.keys.map({ $0 }) ?? [] {
            state.rooms[socket.namespace]?[room]?.remove(socket.id)
        }
    }

    // MARK: - Socket.IO

    private func handle(_ packet: SocketIOPacket, on connection: WebSocketServerConnection) {
        let key = ObjectIdentifier(connection)
        let namespace = packet.namespace
        switch packet.kind {
        case .connect:
            let recovery = configuration.recovery
            let now = configuration.clock.now()
            let (handler, socket, restored) = state.withLock {
                state -> (ConnectHandler?, SocketIOServerSocket?, RecoverableSession?) in
                guard let handler = state.connectHandlers[namespace], state.clients[key] != nil else {
                    return (nil, nil, nil)
                }
                var restored: RecoverableSession?
                if recovery, let pid = packet.payload?["pid"]?.stringValue, let session = state.sessions[pid],
                   session.namespace == namespace, session.expires > now {
                    state.sessions[pid] = nil
                    restored = session
                }
                state.nextID += 1
                let restoredPID = restored == nil ? nil : packet.payload?["pid"]?.stringValue
                let socket = SocketIOServerSocket(
                    id: restored?.socketID ?? "s\(state.nextID)-" + UUID().uuidString.prefix(8),
                    namespace: namespace, auth: packet.payload, connection: connection, server: self,
                    pid: recovery ? (restoredPID ?? "p\(state.nextID)-" + UUID().uuidString.prefix(8)) : nil)
                return (handler, socket, restored)
            }
            guard let handler, let socket else {
                send(SocketIOPacket(kind: .connectError, namespace: namespace, payload: ["message": "Invalid namespace"]),
                     on: connection)
                return
            }
            switch handler(socket, packet.payload) {
            case .accept:
                state.withLock { state in
                    state.clients[key]?.sockets[namespace] = socket
                    state.sockets[socket.id] = socket
                    for room in restored?.rooms ?? [] { state.rooms[namespace, default: [:]][room, default: []].insert(socket.id) }
                }
                var ack: [String: JSONValue] = ["sid": .string(socket.id)]
                if let pid = socket.pid { ack["pid"] = .string(pid) }
                send(SocketIOPacket(kind: .connect, namespace: namespace, payload: .object(ack)), on: connection)
                // Missed events go out after the ack, each still carrying its offset.
                for missed in restored?.missed ?? [] {
                    send(SocketIOPacket(kind: .event, namespace: namespace,
                                        payload: .array([.string(missed.event)] + missed.arguments + [.string(missed.offset)])),
                         on: connection)
                }
            case .reject(let message, let data):
                var payload: [String: JSONValue] = ["message": .string(message)]
                if let data { payload["data"] = data }
                send(SocketIOPacket(kind: .connectError, namespace: namespace, payload: .object(payload)), on: connection)
            }

        case .disconnect:
            state.withLock { state in
                guard let socket = state.clients[key]?.sockets.removeValue(forKey: namespace) else { return }
                Self.remove(socket, from: &state)
            }

        case .event, .binaryEvent:
            guard let (name, arguments) = packet.eventNameAndArguments else { return }
            let found = state.withLock { state -> (SocketIOServerSocket, EventHandler?)? in
                guard let socket = state.clients[key]?.sockets[namespace] else { return nil }
                return (socket, state.eventHandlers[namespace]?[name])
            }
            guard let (socket, handler) = found, let handler else { return }
            let ack = packet.id.map { id in
                SocketIOServerAck { [weak self, weak connection] arguments in
                    guard let self, let connection else { return }
                    self.send(SocketIOPacket(kind: .ack, namespace: namespace, id: id, payload: .array(arguments)),
                              on: connection)
                }
            }
            handler(socket, arguments, ack)

        case .ack, .binaryAck:
            guard let id = packet.id else { return }
            let callback = state.withLock { $0.clients[key]?.pendingAcks[namespace]?.removeValue(forKey: id) }
            callback?(packet.payload?.arrayValue ?? [])

        case .connectError:
            return
        }
    }

    func send(_ packet: SocketIOPacket, on connection: WebSocketServerConnection) {
        connection.send(packet.encoded())
    }

    /// The next offset appended to an event without an ack, when recovery is on.
    func nextOffset() -> String {
        state.withLock { state in
            state.nextOffset += 1
            return "o\(state.nextOffset)"
        }
    }

    /// Allocates an ack id for a server→client request and remembers `reply`.
    func registerAck(on connection: WebSocketServerConnection, namespace: String,
                     reply: @escaping @Sendable ([JSONValue]) -> Void) -> Int64? {
        state.withLock { state in
            let key = ObjectIdentifier(connection)
            guard state.clients[key] != nil else { return nil }
            let id = state.clients[key]?.nextAckID[namespace] ?? 0
            state.clients[key]?.nextAckID[namespace] = id + 1
            state.clients[key]?.pendingAcks[namespace, default: [:]][id] = reply
            return id
        }
    }

    func join(_ socket: SocketIOServerSocket, room: String) {
        state.withLock { _ = $0.rooms[socket.namespace, default: [:]][room, default: []].insert(socket.id) }
    }

    func leave(_ socket: SocketIOServerSocket, room: String) {
        state.withLock { _ = $0.rooms[socket.namespace]?[room]?.remove(socket.id) }
    }

    func disconnect(_ socket: SocketIOServerSocket, connection: WebSocketServerConnection) {
        state.withLock { state in
            _ = state.clients[ObjectIdentifier(connection)]?.sockets.removeValue(forKey: socket.namespace)
            Self.remove(socket, from: &state)
        }
        send(SocketIOPacket(kind: .disconnect, namespace: socket.namespace), on: connection)
    }

    func silence(_ connection: WebSocketServerConnection) {
        state.withLock { $0.clients[ObjectIdentifier(connection)]?.silent = true }
    }
}

private struct WeakServer {
    weak var server: SocketIOServer?
}

/// One client's socket in one namespace of a ``SocketIOServer``.
public final class SocketIOServerSocket: Sendable {
    /// The socket id sent in the CONNECT ack (not the Engine.IO sid).
    public let id: String
    /// The namespace it joined (`/`, `/chat`).
    public let namespace: String
    /// The CONNECT payload.
    public let auth: JSONValue?
    /// The recovery session id when the server has recovery on.
    public let pid: String?
    private let connection: WebSocketServerConnection
    private weak let server: SocketIOServer?

    init(id: String, namespace: String, auth: JSONValue?, connection: WebSocketServerConnection,
         server: SocketIOServer, pid: String?) {
        self.id = id
        self.namespace = namespace
        self.auth = auth
        self.connection = connection
        self.server = server
        self.pid = pid
    }

    /// Sends an event; `.binary` values travel as attachments. With recovery on, an offset is appended.
    public func emit(_ event: String, _ arguments: [JSONValue]) {
        guard let server else { return }
        let offset: [JSONValue] = pid == nil ? [] : [.string(server.nextOffset())]
        server.send(SocketIOPacket(kind: .event, namespace: namespace, payload: .array([.string(event)] + arguments + offset)),
                    on: connection)
    }

    /// Sends an event that asks the client for an acknowledgement; `reply` gets its arguments.
    public func request(_ event: String, _ arguments: [JSONValue], reply: @escaping @Sendable ([JSONValue]) -> Void) {
        guard let server, let id = server.registerAck(on: connection, namespace: namespace, reply: reply) else { return }
        server.send(SocketIOPacket(kind: .event, namespace: namespace, id: id,
                                   payload: .array([.string(event)] + arguments)), on: connection)
    }

    /// Adds this socket to `room` of its namespace.
    public func join(_ room: String) { server?.join(self, room: room) }
    /// Removes this socket from `room`.
    public func leave(_ room: String) { server?.leave(self, room: room) }

    /// Ends this namespace for the client with a server DISCONNECT (it does not re-join on its own).
    public func disconnect() { server?.disconnect(self, connection: connection) }

    /// Ends the whole Engine.IO session with a CLOSE packet, then closes the WebSocket.
    public func closeConnection() {
        connection.send(text: "1")
        connection.close()
    }

    /// Drops the TCP connection without any close.
    public func dropConnection() { connection.abort() }

    /// Stops sending pings on this connection (and stops checking pongs), so the client sees silence.
    public func stopHeartbeat() { server?.silence(connection) }
}

/// Answers a client's acknowledgement request. Calling it more than once sends nothing more.
public struct SocketIOServerAck: Sendable {
    private let answered = Locked(false)
    private let reply: @Sendable ([JSONValue]) -> Void

    init(reply: @escaping @Sendable ([JSONValue]) -> Void) { self.reply = reply }

    /// Answers with `arguments`.
    public func callAsFunction(_ arguments: JSONValue...) { send(arguments) }

    /// Answers with an argument list.
    public func send(_ arguments: [JSONValue]) {
        let first = answered.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { reply(arguments) }
    }
}
