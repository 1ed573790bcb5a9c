import Foundation
import Realtime
@_spi(DialectAuthoring) import RealtimeSocketIO
import RealtimeActionCableTesting
import RealtimeSocketIOTesting
import RealtimeTesting
import Testing

// Sessions through a FaultProxy: the session's promises (nothing acknowledged is lost, no handler runs twice,
// no subscription silently dropped, every failure a typed error) checked through our real WebSocket client,
// TLS included, against real servers while the network misbehaves. No timing is asserted: every wait is a
// bound on observation.

/// Fast reconnects, no jitter: the chaos stays short and its log readable.
let chaosReconnectPolicy = ReconnectPolicy(initialDelay: .milliseconds(50), multiplier: 2,
                                           maximumDelay: .milliseconds(400), jitter: .none)

/// The embedded server's heartbeat at 1 s + 2 s (the python fixture's): a silent link is declared dead in
/// about three seconds, and a healthy one under a loaded CI machine is not (300 ms + 600 ms once dropped one).
let fastHeartbeat = SocketIOServer.Configuration(pingInterval: .seconds(1), pingTimeout: .seconds(2))

extension ChannelState {
    /// Confirmed by the server, whatever the dialect says about recovery.
    var isSubscribed: Bool { if case .subscribed = self { true } else { false } }
}

/// Wraps a transport and records how each of its connections ended.
final class RecordingTransport: RealtimeTransport {
    let inner: any RealtimeTransport
    let closures = Locked<[TransportClosure]>([])

    init(_ inner: any RealtimeTransport) { self.inner = inner }

    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let closures = closures
        return inner.open(request) { event in
            if case .closed(let closure) = event { closures.withLock { $0.append(closure) } }
            handler(event)
        }
    }
}

/// Everything a session reports: state changes (old, new) and errors.
final class SessionWatch: Sendable {
    let changes = Locked<[(old: ConnectionState, new: ConnectionState)]>([])
    let errors = Locked<[RealtimeError]>([])

    init(_ session: RealtimeSession) {
        session.onStateChange { [changes] old, new in changes.withLock { $0.append((old, new)) } }
        session.onError { [errors] error in errors.withLock { $0.append(error) } }
    }

    var reconnects: Int {
        changes.withLock { $0 }.filter { if case .reconnecting = $0.new { true } else { false } }.count
    }

    var failed: Bool {
        changes.withLock { $0 }.contains { if case .failed = $0.new { true } else { false } }
    }

    /// What is wrong with the reported sequence: each change starts where the previous one ended, the first
    /// starts at `.initialized`, and `.connected` is only ever entered from `.connecting`.
    var stateSequenceProblems: [String] {
        let changes = changes.withLock { $0 }
        var problems: [String] = []
        var previous = ConnectionState.initialized
        for (index, change) in changes.enumerated() {
            if change.old != previous { problems.append("#\(index): \(change.old) → \(change.new) after \(previous)") }
            if change.new == .connected, change.old != .connecting {
                problems.append("#\(index): connected from \(change.old), not from connecting")
            }
            previous = change.new
        }
        return problems
    }
}

/// Runs `body` but stops waiting after `limit`: `nil` means it hung (the task is left behind).
func bounded<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async
    -> Result<T, any Error>? {
    await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>?, Never>) in
        let done = Locked(false)
        let finish: @Sendable (Result<T, any Error>?) -> Void = { result in
            let first = done.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            if first { continuation.resume(returning: result) }
        }
        let work = Task {
            do { finish(.success(try await body())) } catch { finish(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: limit)
            finish(nil)
            _ = work  // keep the hung task referenced, never cancelled: a hang must stay visible
        }
    }
}

/// Certificates for 127.0.0.1 (or the names given) from a throwaway CA, made with the `openssl` CLI.
struct ChaosCertificates: Sendable {
    let directory: URL
    var ca: String { directory.appendingPathComponent("ca.pem").path }
    var leaf: String { directory.appendingPathComponent("leaf.pem").path }
    var key: String { directory.appendingPathComponent("leaf.key").path }

    /// - Parameter subjectAltName: the leaf's names, as openssl's `subjectAltName` extension spells them.
    static func make(subjectAltName: String = "DNS:localhost,IP:127.0.0.1") async throws -> ChaosCertificates {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("realtime-chaos-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = """
        set -e
        cd "\(directory.path)"
        printf 'subjectAltName=\(subjectAltName)\\nbasicConstraints=CA:FALSE\\n' > leaf.ext
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
            -days 2 -subj "/CN=Realtime Chaos CA" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr \
            -subj "/CN=localhost" 2>/dev/null
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 1 \
            -extfile leaf.ext 2>/dev/null
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        try process.run()
        // Not waitUntilExit: it can wait forever on a Swift concurrency thread on Linux.
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        guard process.terminationStatus == 0 else {
            throw RealtimeError(.operationFailed, "openssl exited with \(process.terminationStatus)")
        }
        return ChaosCertificates(directory: directory)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// A `wss` front for a plain `ws` server: a TLS WebSocketServer that relays every frame, both ways, to the
/// same path and query upstream. Lets the embedded Socket.IO server be reached over TLS.
final class TLSRelay: Sendable {
    let server: WebSocketServer

    init(certificates: ChaosCertificates, upstreamPort: Int) throws {
        let links = Locked<[ObjectIdentifier: any TransportConnection]>([:])
        let transport = WebSocketTransport()
        server = try WebSocketServer(
            configuration: .init(tls: TLSServerConfiguration(certificateChain: .file(certificates.leaf),
                                                             privateKey: .file(certificates.key))),
            handler: { connection, event in
                let key = ObjectIdentifier(connection)
                switch event {
                case .opened:
                    let target = connection.request?.target ?? "/"
                    let upstream = transport.open(
                        ConnectionRequest(url: URL(string: "ws://127.0.0.1:\(upstreamPort)\(target)")!)
                    ) { [weak connection] event in
                        switch event {
                        case .opened: break
                        case .received(let frames): connection?.send(frames)
                        case .closed: connection?.abort()
                        }
                    }
                    links.withLock { $0[key] = upstream }
                case .received(let frames):
                    links.withLock { $0[key] }?.send(frames)
                case .closed:
                    links.withLock { $0.removeValue(forKey: key) }?.abort()
                }
            })
    }

    var port: Int { server.port }
    func stop() { server.stop() }
}

/// At least one reconnect, and every connection after the first opened by one: a loaded machine may add a
/// reconnect (a handshake slower than its timeout, a pong late past the heartbeat), never a connection without
/// a reconnect behind it. Waits for a settled, connected session so a reconnect in flight is not miscounted.
func connectionsMatchReconnects(_ proxy: FaultProxy, _ watch: SessionWatch, _ session: RealtimeSession) async -> Bool {
    let settled = await eventually(timeout: .seconds(10)) {
        session.state == .connected && proxy.acceptedCount == watch.reconnects + 1
    }
    if !settled || proxy.acceptedCount < 2 {
        print("chaos: \(proxy.acceptedCount) connections, \(watch.reconnects) reconnects, state \(session.state)")
        return false
    }
    if proxy.acceptedCount > 2 { print("chaos: \(proxy.acceptedCount) connections (a loaded machine added a reconnect)") }
    return true
}

@Suite("Chaos: sessions through a fault proxy", .serialized)
struct ChaosTests {
    // MARK: Socket.IO, embedded server

    @Test("Socket.IO: a stalled link is found dead by liveness; the session reconnects and re-joins")
    func stallIsDetectedByLiveness() async throws {
        let server = try makeFixtureLikeServer(configuration: fastHeartbeat)
        defer { server.stop() }
        let proxy = try FaultProxy(upstream: server.url)
        defer { proxy.stop() }
        let transport = RecordingTransport(WebSocketTransport())
        let log = Locked<[String]>([])
        let session = RealtimeSession(dialect: .socketIO(url: proxy.url(for: server.url), auth: ["token": "secret"]),
                                      transport: transport,
                                      options: SessionOptions(reconnectPolicy: chaosReconnectPolicy,
                                                              logHandler: { record in log.withLock { $0.append(record.message) } }))
        let watch = SessionWatch(session)
        let events = EventLog()
        let chat = session.channel("/chat")
        chat.onAny { events.append($0) }
        try await session.connect()
        try await chat.subscribed()
        let firstID = session.connectionID

        proxy.stallAll()   // nothing moves, nothing closes: only the missing pings tell
        #expect(await eventually(timeout: .seconds(10)) {
            log.withLock { $0 }.contains { $0.contains("connection ended: the link went silent (liveness timeout)") }
        }, "log: \(log.withLock { $0 })")
        // The transport saw no failure of its own: the session dropped the silent link.
        #expect(transport.closures.withLock { $0 }.allSatisfy { $0.kind == .closedLocally(code: 1006, reason: "aborted") },
                "\(transport.closures.withLock { $0 })")
        #expect(await eventually(timeout: .seconds(10)) {
            session.state == .connected && session.connectionID != firstID && chat.state.isSubscribed
        }, "state \(session.state), chat \(chat.state)")
        #expect(await events.wait(for: "welcome", count: 2))
        #expect(try await chat.request("sum", [1, 2, 3], timeout: .seconds(5)) == [["sum": 6]])
        #expect(await connectionsMatchReconnects(proxy, watch, session), "log: \(log.withLock { $0 })")
        #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems)")
        session.disconnect()
    }

    @Test("Socket.IO: a reset in the middle of a burst reconnects; what arrived came once and in order")
    func resetMidStreamReconnects() async throws {
        let server = try makeFixtureLikeServer(configuration: fastHeartbeat)
        defer { server.stop() }
        let proxy = try FaultProxy(upstream: server.url)
        defer { proxy.stop() }
        let transport = RecordingTransport(WebSocketTransport())
        let session = RealtimeSession(dialect: .socketIO(url: proxy.url(for: server.url)), transport: transport,
                                      options: SessionOptions(reconnectPolicy: chaosReconnectPolicy))
        let watch = SessionWatch(session)
        let events = EventLog()
        let root = session.channel("/")
        root.onAny { events.append($0) }
        try await session.connect()
        try await root.subscribed()
        let firstID = session.connectionID

        proxy.inject(.reset(afterBytes: 20_000, direction: .downstream))
        try await root.send("burst", 5_000)
        #expect(await eventually(timeout: .seconds(10)) { watch.reconnects >= 1 })
        #expect(await eventually(timeout: .seconds(10)) {
            session.state == .connected && session.connectionID != firstID && root.state.isSubscribed
        }, "state \(session.state)")
        let items = events.named("burst_item").compactMap { $0.data.integerValue }
        #expect(items == Array(0..<Int64(items.count)), "a gap or a duplicate in \(items.count) items")
        #expect(items.count < 5_000, "the reset came after the whole burst: \(items.count)")
        let closures = transport.closures.withLock { $0 }
        #expect(closures.contains { if case .failed(let error) = $0.kind { error.code == .transportFailed } else { false } },
                "\(closures)")
        #expect(try await root.request("sum", [4, 5], timeout: .seconds(5)) == [["sum": 9]])
        #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems)")
        session.disconnect()
    }

    @Test("Socket.IO: a handshake and a session dribbled a byte at a time connect and answer intact")
    func dribbledHandshakeConnects() async throws {
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let proxy = try FaultProxy(upstream: server.url, plan: .always(.dribble(chunk: 1, pause: .zero)))
        defer { proxy.stop() }
        let session = RealtimeSession(dialect: .socketIO(url: proxy.url(for: server.url), auth: ["token": "secret"]),
                                      transport: WebSocketTransport())
        let chat = session.channel("/chat")
        try await session.connect()
        try await chat.subscribed()
        let blob: JSONValue = ["text": .string(String(repeating: "ü€𝄞x", count: 300)), "bytes": .binary(Data(0..<200))]
        #expect(try await chat.request("binary_echo", blob, timeout: .seconds(20)) == [blob])
        #expect(proxy.acceptedCount == 1)
        session.disconnect()
    }

    @Test("Socket.IO: refused, reset, closed and stalled inside the handshakes, connect() still succeeds on the fifth connection")
    func faultsInsideHandshakes() async throws {
        let server = try makeFixtureLikeServer(configuration: fastHeartbeat)
        defer { server.stop() }
        // Upstream the upgrade request is ~250 bytes; downstream the 101 answer ~130 and the Engine.IO open ~100.
        let proxy = try FaultProxy(upstream: server.url, plan: .sequence([
            .refuse, .reset(afterBytes: 60, direction: .downstream), .close(afterBytes: 40, direction: .upstream),
            .stall(afterBytes: 100, direction: .upstream),
        ]))
        defer { proxy.stop() }
        let transport = RecordingTransport(WebSocketTransport())
        let session = RealtimeSession(dialect: .socketIO(url: proxy.url(for: server.url), auth: ["token": "secret"]),
                                      transport: transport,
                                      options: SessionOptions(reconnectPolicy: chaosReconnectPolicy,
                                                              connectTimeout: .seconds(3)))
        let watch = SessionWatch(session)
        let chat = session.channel("/chat")
        let connected = await bounded(.seconds(30)) { try await session.connect() }
        guard case .success? = connected else {
            Issue.record("connect() through four broken handshakes: \(String(describing: connected)); \(proxy.records)")
            return
        }
        try await chat.subscribed()
        #expect(try await chat.request("sum", [1, 1], timeout: .seconds(5)) == [["sum": 2]])
        #expect(proxy.acceptedCount == 5, "\(proxy.records)")
        // connect() returns on the state; its observers report the reconnects on the delivery queue.
        #expect(await eventually { watch.reconnects >= 4 })
        #expect(watch.reconnects == 4)
        // Each broken attempt ended with a typed failure during open; the stalled one by the connect timeout.
        let failures = transport.closures.withLock { $0 }.prefix(4).map { closure -> String in
            if case .failed(let error) = closure.kind { return "\(error.code)\(closure.duringOpen ? "" : " (after open)")" }
            return "\(closure.kind)"
        }
        print("handshake faults ended as: \(failures)")
        #expect(failures.count == 4 && failures.prefix(3).allSatisfy { $0 == "transport-failed" || $0 == "handshake-invalid" },
                "\(failures)")
        #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems)")
        session.disconnect()
    }

    // MARK: Seeded chaos run

    @Test("Socket.IO chaos: random faults per connection and on the fly while 200 requests and a numbered stream run")
    func seededChaosRun() async throws {
        let seed = ProcessInfo.processInfo.environment["REALTIME_CHAOS_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        let plan = FaultPlan.random(seed: seed, faultyConnections: 12, maximumOffset: 3_000)
        print("chaos: \(plan) (rerun with REALTIME_CHAOS_SEED=\(seed))")

        let server = try makeFixtureLikeServer(configuration: fastHeartbeat)
        defer { server.stop() }
        let handled = Locked<[Int64]>([])   // request ids the server handled, in order
        for namespace in ["/", "/chat"] {
            server.on("echo", in: namespace) { _, arguments, ack in
                if let id = arguments.first?["id"]?.integerValue { handled.withLock { $0.append(id) } }
                ack?.send(arguments)
            }
            server.on("sum", in: namespace) { _, arguments, ack in
                let numbers = arguments.first?.arrayValue?.compactMap(\.integerValue) ?? []
                let id = arguments.dropFirst().first?["id"]?.integerValue ?? -1
                handled.withLock { $0.append(id) }
                ack?(["sum": .integer(numbers.reduce(0, +)), "id": .integer(id)])
            }
        }
        let proxy = try FaultProxy(upstream: server.url, plan: plan)
        defer { proxy.stop() }
        let transport = RecordingTransport(WebSocketTransport())
        // Short connect timeouts: a stall inside a handshake costs 2 s, not 20.
        let session = RealtimeSession(dialect: .socketIO(url: proxy.url(for: server.url), auth: ["token": "secret"]),
                                      transport: transport,
                                      options: SessionOptions(reconnectPolicy: chaosReconnectPolicy,
                                                              connectTimeout: .seconds(2)))
        let watch = SessionWatch(session)
        let channels = [session.channel("/"), session.channel("/chat")]
        let ticks = Locked<[Int64]>([])
        for channel in channels {
            channel.on("tick") { event in
                if let number = event.data.integerValue { ticks.withLock { $0.append(number) } }
            }
        }
        session.start()

        // The server emits numbered events to whoever is connected, every 5 ms.
        let emitting = Locked(true)
        let emitter = Task.detached {
            var number: Int64 = 0
            while emitting.withLock({ $0 }) {
                for namespace in ["/", "/chat"] {
                    for socket in server.sockets(in: namespace) {
                        number += 1
                        socket.emit("tick", [.integer(number)])
                    }
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        // Faults on the fly, on top of the plan: resets, stalls, cuts a few bytes ahead.
        let driver = Task.detached {
            var generator = SeededRandomNumberGenerator(seed: seed ^ 0x5EED)
            for _ in 0..<8 {
                try? await Task.sleep(for: .milliseconds(Int.random(in: 150...600, using: &generator)))
                let offset = Int.random(in: 0...2_000, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: proxy.resetAll()
                case 1: proxy.stallAll()
                case 2: proxy.inject(.reset(afterBytes: offset, direction: .downstream))
                default: proxy.inject(.close(afterBytes: offset, direction: .upstream))
                }
            }
        }

        enum Outcome: Sendable {
            case answered(id: Int64, correct: Bool)
            case failed(id: Int64, RealtimeError)
            case foreign(id: Int64, String)
            case hung(id: Int64)
        }
        let outcomes = await withTaskGroup(of: [Outcome].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var outcomes: [Outcome] = []
                    for index in 0..<25 {
                        let id = Int64(worker * 1_000 + index)
                        let channel = channels[index % 2]
                        let echo = index % 3 != 0
                        let arguments: [JSONValue] = echo
                            ? [["id": .integer(id), "pad": .string(String(repeating: "x", count: Int(id) % 700))]]
                            : [[.integer(id), 1, 2], ["id": .integer(id)]]
                        let expected: [JSONValue] = echo ? arguments : [["sum": .integer(id + 3), "id": .integer(id)]]
                        let result = await bounded(.seconds(12)) {
                            try await channel.request(echo ? "echo" : "sum", arguments: arguments, timeout: .seconds(4))
                        }
                        switch result {
                        case .success(let answer)?: outcomes.append(.answered(id: id, correct: answer == expected))
                        case .failure(let error as RealtimeError)?: outcomes.append(.failed(id: id, error))
                        case .failure(let error)?: outcomes.append(.foreign(id: id, "\(type(of: error)): \(error)"))
                        case nil: outcomes.append(.hung(id: id))
                        }
                    }
                    return outcomes
                }
            }
            var all: [Outcome] = []
            for await outcomes in group { all += outcomes }
            return all
        }
        await driver.value

        // Faults stop: new connections pass, and the open ones (which may hold a stall or a cut not reached
        // yet) are reset once. The session must come back on a clean connection with every channel.
        proxy.plan = .pass
        let before = session.connectionID
        proxy.resetAll()
        let settled = await eventually(timeout: .seconds(20)) {
            session.state == .connected && session.connectionID != before && channels.allSatisfy { $0.state.isSubscribed }
        }
        let context = "\(plan); connections: \(proxy.records); state \(session.state); "
            + "channels \(channels.map(\.state))"
        #expect(settled, "\(context)")
        for (index, channel) in channels.enumerated() {
            let id = JSONValue.integer(Int64(90_000 + index))
            let final = await bounded(.seconds(10)) {
                try await channel.request("sum", arguments: [[40, 2], ["id": id]], timeout: .seconds(5))
            }
            if case .success(let answer)? = final {
                #expect(answer == [["sum": 42, "id": id]], "\(context)")
            } else {
                Issue.record("the request after the chaos on \(channel.id): \(String(describing: final)); \(context)")
            }
        }
        emitting.withLock { $0 = false }
        await emitter.value

        var answered: [Int64] = []
        var failures: [String: Int] = [:]
        for outcome in outcomes {
            switch outcome {
            case .answered(let id, let correct):
                answered.append(id)
                #expect(correct, "request \(id) got a wrong answer; \(context)")
            case .failed(_, let error):
                failures[error.code.rawValue, default: 0] += 1
            case .foreign(let id, let description):
                Issue.record("request \(id) failed with an untyped error \(description); \(context)")
            case .hung(let id):
                Issue.record("request \(id) neither answered nor failed within 12 s; \(context)")
            }
        }
        let handledIDs = handled.withLock { $0 }
        let handledSet = Set(handledIDs)
        #expect(outcomes.count == 200)
        let unhandled = answered.filter { !handledSet.contains($0) }
        #expect(unhandled.isEmpty, "acknowledged but never handled: \(unhandled); \(context)")
        #expect(handledIDs.count == handledSet.count, "a request handled twice by the server; \(context)")
        let delivered = ticks.withLock { $0 }
        #expect(delivered.count == Set(delivered).count, "a server event delivered twice; \(context)")
        // One counter, emitted in order: delivered in wire order, and nothing from a connection the session
        // already left after the next one's events.
        let disorder = zip(delivered, delivered.dropFirst()).filter { $0 >= $1 }
        #expect(disorder.isEmpty, "ticks out of order: \(disorder.prefix(5)); \(context)")
        #expect(!watch.failed, "\(context)")
        #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems); \(context)")
        #expect(watch.reconnects >= 1, "the chaos did not break a single connection; \(context)")
        print("chaos: seed \(seed): \(proxy.acceptedCount) connections, \(watch.reconnects) reconnects, "
            + "\(answered.count) answered, failed \(failures.sorted { $0.key < $1.key }), "
            + "\(delivered.count) ticks delivered, \(handledIDs.count) requests handled by the server")
        session.disconnect()
    }

    @Test("Action Cable chaos (embedded server): ten rooms joined while connections break; all confirmed at the end, each broadcast heard once")
    func actionCableChaosRun() async throws {
        let seed = ProcessInfo.processInfo.environment["REALTIME_CHAOS_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 1...UInt64(UInt32.max))
        // Action Cable notices a dead link only after 6 s without a frame: stalls become resets here.
        let random = FaultPlan.random(seed: seed, faultyConnections: 10, maximumOffset: 1_500)
        let plan = FaultPlan("\(random), stalls as resets") { index in
            if case .stall(let bytes, let direction) = random.fault(forConnection: index) {
                return .reset(afterBytes: bytes, direction: direction)
            }
            return random.fault(forConnection: index)
        }
        print("chaos (action cable): \(plan) (rerun with REALTIME_CHAOS_SEED=\(seed))")
        let server = ActionCableEmbeddedServerTests.makeServer()
        let listener = try server.listen()
        defer { listener.stop() }
        let upstream = URL(string: "ws://127.0.0.1:\(listener.port)/cable?token=valid-alice")!
        let proxy = try FaultProxy(upstream: upstream, plan: plan)
        defer { proxy.stop() }
        let session = RealtimeSession(dialect: .actionCable(url: proxy.url(for: upstream)),
                                      transport: WebSocketTransport(),
                                      options: SessionOptions(reconnectPolicy: chaosReconnectPolicy,
                                                              connectTimeout: .seconds(2)))
        let watch = SessionWatch(session)
        let heard = Locked<[String: [JSONValue]]>([:])
        session.onAny { event in heard.withLock { $0[event.channel?.description ?? "", default: []].append(event.data) } }
        session.start()

        let rooms = (1...10).map { ChannelID("EchoChannel", params: ["room_id": .integer(Int64($0))]) }
        let driver = Task.detached {
            var generator = SeededRandomNumberGenerator(seed: seed ^ 0xCAB1E)
            for _ in 0..<6 {
                try? await Task.sleep(for: .milliseconds(Int.random(in: 100...400, using: &generator)))
                if Bool.random(using: &generator) {
                    proxy.resetAll()
                } else {
                    proxy.inject(.reset(afterBytes: Int.random(in: 0...400, using: &generator), direction: .downstream))
                }
            }
        }
        for room in rooms {   // joined one by one while the driver breaks connections
            _ = session.channel(room)
            try await Task.sleep(for: .milliseconds(60))
        }
        await driver.value
        // Faults stop; the open connection is reset once, so the session ends on a clean one (Action Cable has
        // no connection id: a connection accepted after the reset tells).
        proxy.plan = .pass
        let accepted = proxy.acceptedCount
        proxy.resetAll()
        let context = "\(plan); connections \(proxy.records); state \(session.state)"
        let settled = await eventually(timeout: .seconds(20)) {
            session.state == .connected && proxy.acceptedCount > accepted
                && rooms.allSatisfy { session.channel($0).state.isSubscribed }
        }
        #expect(settled, "rooms \(rooms.map { session.channel($0).state }); \(context)")
        #expect(await eventually { server.connectedUsers == ["alice"] }, "server sees \(server.connectedUsers); \(context)")
        for index in rooms.indices { server.broadcast(to: "echo:\(index + 1)", ["n": .integer(Int64(index + 1))]) }
        let everyRoomOnce = await eventually(timeout: .seconds(10)) {
            let heard = heard.withLock { $0 }
            return rooms.enumerated().allSatisfy { heard[$0.element.description]?.contains(["n": .integer(Int64($0.offset + 1))]) == true }
        }
        #expect(everyRoomOnce, "heard \(heard.withLock { $0 }); \(context)")
        try await Task.sleep(for: .milliseconds(200))   // room for a duplicate to show up
        for (index, room) in rooms.enumerated() {
            let copies = heard.withLock { $0[room.description] ?? [] }.filter { $0 == ["n": .integer(Int64(index + 1))] }.count
            #expect(copies == 1, "\(room) heard its broadcast \(copies) times; \(context)")
        }
        #expect(!watch.failed, "\(context)")
        #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems); \(context)")
        print("chaos (action cable): seed \(seed): \(proxy.acceptedCount) connections, \(watch.reconnects) reconnects")
        session.disconnect()
    }

    // MARK: Real servers

    @Test("python-socketio through the proxy: a reset mid-burst reconnects and re-joins both namespaces",
          .enabled(if: FileManager.default.isExecutableFile(atPath: SocketIOPeer.python.path) || PeerRequirement.required,
                   "python-socketio peer not provisioned: run Tests/Fixtures/socketio/provision.sh"))
    func pythonSocketIOResetMidStream() async throws {
        try await withSocketIOPeer(fastPing: true) { peer in
            let proxy = try FaultProxy(upstream: peer.url)
            defer { proxy.stop() }
            let session = RealtimeSession(dialect: .socketIO(url: proxy.url(for: peer.url), auth: ["token": "secret"]),
                                          transport: WebSocketTransport(),
                                          options: SessionOptions(reconnectPolicy: chaosReconnectPolicy))
            let watch = SessionWatch(session)
            let events = EventLog()
            let channels = [session.channel("/"), session.channel("/chat")]
            for channel in channels { channel.onAny { events.append($0) } }
            try await session.connect()
            for channel in channels { try await channel.subscribed() }
            #expect(await events.wait(for: "welcome", count: 2))
            let firstID = session.connectionID

            proxy.inject(.reset(afterBytes: 2_000, direction: .downstream))
            try await channels[0].send("burst", 2_000)
            #expect(await eventually(timeout: .seconds(10)) { watch.reconnects >= 1 })
            #expect(await eventually(timeout: .seconds(15)) {
                session.state == .connected && session.connectionID != firstID
                    && channels.allSatisfy { $0.state == .subscribed(recovered: nil) }
            }, "state \(session.state), channels \(channels.map(\.state))")
            #expect(await events.wait(for: "welcome", count: 4))   // each namespace welcomed again
            let items = events.named("burst_item").compactMap { $0.data.integerValue }
            #expect(items == Array(0..<Int64(items.count)), "a gap or a duplicate in \(items.count) items")
            #expect(try await channels[1].request("sum", [1, 2], timeout: .seconds(5)) == [["sum": 3]])
            #expect(await connectionsMatchReconnects(proxy, watch, session))
            #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems)")
            session.disconnect()
        }
    }

    @Test("Rails Action Cable through the proxy: a reset mid-frame reconnects, the server confirms again, a perform after it arrives",
          .enabled(if: RailsCableServer.unavailableReason == nil || PeerRequirement.required,
                   Comment(rawValue: RailsCableServer.unavailableReason ?? "")))
    func railsActionCableResetMidFrame() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let upstream = URL(string: "ws://127.0.0.1:\(server.port)/cable?token=valid-alice")!
        let proxy = try FaultProxy(upstream: upstream)
        defer { proxy.stop() }
        let session = RealtimeSession(dialect: .actionCable(url: proxy.url(for: upstream)),
                                      transport: WebSocketTransport(),
                                      options: SessionOptions(reconnectPolicy: chaosReconnectPolicy,
                                                              connectTimeout: .seconds(5)))
        let watch = SessionWatch(session)
        let messages = Locked<[JSONValue]>([])
        session.onAny { event in messages.withLock { $0.append(event.data) } }
        try await session.connect()
        let room = session.channel(cableRoom42)
        try await room.subscribed()
        let firstAccepted = proxy.acceptedCount

        // A 2 KB broadcast, cut 100 bytes in: the reset lands inside its WebSocket frame.
        proxy.inject(.reset(afterBytes: 100, direction: .downstream))
        let long = String(repeating: "y", count: 2_000)
        try server.broadcast(stream: "echo:42", "{\"long\":\"\(long)\"}")
        try await cableWaitUntil("a reconnect") { watch.reconnects >= 1 }
        try await cableWaitUntil("connected and confirmed again", timeout: .seconds(15)) {
            session.state == .connected && room.state == .subscribed(recovered: nil) && proxy.acceptedCount > firstAccepted
        }
        try await room.perform("whisper", ["text": "after the reset"])
        try await cableWaitUntil("the whisper's answer") {
            messages.withLock { $0 }.contains { $0["whisper"]?["text"] == "after the reset" }
        }
        try server.broadcast(stream: "echo:42", #""still streaming""#)
        try await cableWaitUntil("a broadcast on the new subscription") {
            messages.withLock { $0 }.contains("still streaming")
        }
        #expect(messages.withLock { $0 }.filter { $0 == "still streaming" }.count == 1)
        #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems)")
        session.disconnect()
    }

    // MARK: TLS

    /// How the TLS test cuts the link inside a record.
    enum RecordCut: String, Sendable, CaseIterable, CustomStringConvertible {
        case reset, close
        var description: String { rawValue }
    }

    @Test("wss through the proxy: TLS records split at every byte, then a reset or a FIN inside a record: a typed error, a reconnect",
          arguments: [TLSRecordReading.directDecryptionOptimization, .openSSL], RecordCut.allCases)
    func tlsDribbleAndCutMidRecord(reading: TLSRecordReading, cut kind: RecordCut) async throws {
        let certificates = try await ChaosCertificates.make()
        defer { certificates.remove() }
        // The default heartbeat: 35 KB dribbled a byte at a time may hold a pong back longer than 600 ms.
        let server = try makeFixtureLikeServer()
        defer { server.stop() }
        let relay = try TLSRelay(certificates: certificates, upstreamPort: server.port)
        defer { relay.stop() }
        let proxy = try FaultProxy(upstreamPort: relay.port, plan: .always(.dribble(chunk: 1, pause: .zero)))
        defer { proxy.stop() }
        let transport = RecordingTransport(WebSocketTransport(configuration: .init(
            tls: TLSConfiguration(additionalTrustRoots: [.file(certificates.ca)], recordReading: reading))))
        let session = RealtimeSession(dialect: .socketIO(url: URL(string: "https://127.0.0.1:\(proxy.port)")!),
                                      transport: transport,
                                      options: SessionOptions(reconnectPolicy: chaosReconnectPolicy))
        let watch = SessionWatch(session)
        let root = session.channel("/")
        try await session.connect()
        try await root.subscribed()
        let payload: JSONValue = ["text": .string(String(repeating: "record ", count: 5_000))]   // 35 KB: three records
        #expect(try await root.request("echo", payload, timeout: .seconds(30)) == [payload])
        let firstID = session.connectionID

        // The next answer starts a fresh record; 100 bytes into it the link is reset, or closed with a FIN and
        // no close_notify (a truncation, which must not pass for a clean close).
        proxy.inject(kind == .reset ? .reset(afterBytes: 100, direction: .downstream)
                                    : .close(afterBytes: 100, direction: .downstream))
        let cut = await bounded(.seconds(30)) { try await root.request("echo", payload, timeout: .seconds(20)) }
        switch cut {
        case .failure(let error as RealtimeError)?: #expect(error.code == .connectionClosed, "\(error)")
        default: Issue.record("the request cut by the reset: \(String(describing: cut))")
        }
        let closures = transport.closures.withLock { $0 }
        let failure = closures.compactMap { if case .failed(let error) = $0.kind { error } else { nil } }.first
        #expect([.transportFailed, .tlsFailed, .protocolViolation].contains(failure?.code), "\(closures)")
        if kind == .close {
            // A FIN 100 bytes into a record: the error says the record was cut, not just that the socket closed.
            #expect(failure?.context.detail == "TLS record cut short", "\(closures)")
        }
        print("wss \(kind) inside a record (\(reading)): \(closures.map(\.kind))")
        #expect(await eventually(timeout: .seconds(20)) {
            session.state == .connected && session.connectionID != firstID && root.state.isSubscribed
        }, "state \(session.state)")
        #expect(try await root.request("sum", [20, 22], timeout: .seconds(20)) == [["sum": 42]])
        #expect(watch.stateSequenceProblems.isEmpty, "\(watch.stateSequenceProblems)")
        session.disconnect()
    }
}
