import Foundation
import Realtime
import RealtimePusherTesting
import RealtimeTesting
import Testing

/// The Python peers of `Tests/Fixtures/pusher/peer.py` (pysher and the official `pusher` SDK), in the venv
/// `Tests/Fixtures/pusher/provision.sh` creates (run-all does).
final class PusherPythonPeer: Sendable {
    private let process: Process
    private let input: FileHandle
    private let collected = Locked<[String]>([])

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var python: URL {
        let peers = ProcessInfo.processInfo.environment["REALTIME_PEERS"].map { URL(fileURLWithPath: $0) }
            ?? repositoryRoot.appendingPathComponent(".peers")
        return peers.appendingPathComponent("pusher-venv/bin/python")
    }

    /// `nil` when the venv exists.
    static var unavailableReason: String? {
        FileManager.default.isExecutableFile(atPath: python.path)
            ? nil : "pusher peers missing: run Tests/Fixtures/pusher/provision.sh"
    }

    /// Starts `peer.py` with `arguments`; stdout lines are collected as they arrive.
    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = Self.python
        process.arguments = [Self.repositoryRoot.appendingPathComponent("Tests/Fixtures/pusher/peer.py").path] + arguments
        let output = Pipe()
        let inputPipe = Pipe()
        process.standardOutput = output
        process.standardInput = inputPipe
        process.standardError = FileHandle.nullDevice
        input = inputPipe.fileHandleForWriting
        try process.run()
        let reading = output.fileHandleForReading
        Thread.detachNewThread { [collected] in
            var buffer = Data()
            while true {
                let chunk = reading.availableData
                if chunk.isEmpty { return }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0a) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    collected.withLock { $0.append(line) }
                }
            }
        }
    }

    /// Every stdout line so far.
    var lines: [String] { collected.withLock { $0 } }

    var output: [JSONValue] { lines.compactMap { try? JSONValue.parse($0) } }

    func write(_ text: String) { input.write(Data(text.utf8)) }

    /// Ends the peer's stdin: `sign` answers then, `client` disconnects.
    func closeInput() { try? input.close() }

    /// Closes stdin (the peer exits on EOF), then kills and reaps it.
    func stop() {
        try? input.close()
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        usleep(150_000)
        Foundation.kill(pid, SIGKILL)
        var status: Int32 = 0
        for _ in 0..<500 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(10_000)
        }
    }
}

@Suite("Pusher cross-checked with pysher and the official pusher SDK",
       .enabled(if: PusherPythonPeer.unavailableReason == nil || PeerRequirement.required,
                "run Tests/Fixtures/pusher/provision.sh"))
struct PusherPeerTests {
    @Test("our inline signer matches the SDK's authenticate() and authenticate_user() on 60 random cases")
    func signaturesMatchSDK() async throws {
        var generator = SystemRandomNumberGenerator()
        var cases: [JSONValue] = []
        for index in 0..<60 {
            let socketID = "\(UInt32.random(in: 1...999_999, using: &generator)).\(UInt32.random(in: 1...999_999, using: &generator))"
            switch index % 3 {
            case 0:
                cases.append(["socket_id": .string(socketID), "channel": .string("private-r\(index)-\(UInt16.random(in: 0...999))")])
            case 1:
                cases.append(["socket_id": .string(socketID), "channel": .string("presence-p\(index)"),
                              "custom_data": ["user_id": .integer(Int64(index)), "user_info": ["name": .string("Zoë \(index)")]]])
            default:
                cases.append(["socket_id": .string(socketID),
                              "user_data": ["id": .string("u\(index)"), "watchlist": ["1", "2"]]])
            }
        }
        let peer = try PusherPythonPeer(["sign", PusherLive.key, PusherLive.secret])
        defer { peer.stop() }
        peer.write(JSONValue.array(cases).serialized())
        peer.closeInput()
        await pusherWait("SDK answers", seconds: 60) { !peer.output.isEmpty }
        let answers = peer.output.first?.arrayValue ?? []
        #expect(answers.count == cases.count)
        for (item, answer) in zip(cases, answers) {
            let socketID = item["socket_id"]!.stringValue!
            let ours: PusherAuthorization
            if item["user_data"] != nil {
                // Sign exactly the identity text the SDK produced, as an app's endpoint would hand it over.
                let userData = try #require(answer["user_data"]?.stringValue)
                ours = try PusherAuth.sign(PusherAuthRequest(connectionID: socketID, channel: nil, vendor: .pusher),
                                                 key: PusherLive.key, secret: PusherLive.secret, presenceData: nil,
                                                 userData: userData)
            } else {
                let channel = item["channel"]!.stringValue!
                ours = try PusherAuth.sign(PusherAuthRequest(connectionID: socketID, channel: channel, vendor: .pusher),
                                                 key: PusherLive.key, secret: PusherLive.secret,
                                                 presenceData: answer["channel_data"]?.stringValue, userData: nil)
                #expect(ours.channelData == answer["channel_data"]?.stringValue)
            }
            #expect(ours.auth == answer["auth"]?.stringValue, "case \(item.serialized())")
        }
    }

    @Test("pysher and our client meet on the embedded server: presence, client events both ways, triggers")
    func pysherMeetsUs() async throws {
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        let peer = try PusherPythonPeer(["client", String(server.port), PusherLive.key, PusherLive.secret])
        defer { peer.stop() }
        // A cold Python start under a loaded CI run once took over 10 s.
        await pusherWait("pysher subscribed", seconds: 60) {
            peer.output.filter { $0["type"] == "subscribed" }.count == 2
        }
        // pysher signs presence channel_data with spaced json.dumps; the server verified it byte for byte.
        #expect(server.members(of: "presence-room") == ["py": ["name": "pysher"]])

        let session = PusherLive.session(server, userID: "1")
        defer { session.disconnect() }
        let replies = Locked<[RealtimeEvent]>([])
        session.channel("private-room").on("client-reply") { event in replies.withLock { $0.append(event) } }
        let roster = try session.presence("presence-room")
        try await session.connect()
        _ = try await session.channel("private-room").subscribed()
        _ = try await session.channel("presence-room").subscribed()
        await pusherWait("roster") { roster.members.ids == ["1", "py"] }
        await pusherWait("pysher saw us join") {
            peer.output.contains { $0["type"] == "member_added" && $0["data"]?["user_id"] == "1" }
        }

        try await session.channel("private-room").send("client-hello", ["n": 42])
        await pusherWait("pysher got hello") {
            peer.output.contains { $0["event"] == "client-hello" && $0["data"] == ["n": 42] }
        }
        await pusherWait("pysher replied") { replies.withLock { $0.count } == 1 }
        #expect(replies.withLock { $0.first?.data } == ["echo": ["n": 42]])

        server.trigger("private-room", event: "server-news", data: ["v": 1])
        await pusherWait("pysher got the trigger") {
            peer.output.contains { $0["event"] == "server-news" && $0["data"] == ["v": 1] }
        }
        #expect(!peer.output.contains { $0["type"] == "error" })
    }

    @Test("the HTTP endpoint auth: form POST with headers and params to an SDK-backed endpoint; 403 is typed")
    func httpEndpoint() async throws {
        let auth = try PusherPythonPeer(["auth-server", PusherLive.key, PusherLive.secret])
        defer { auth.stop() }
        await pusherWait("auth server", seconds: 60) { auth.lines.contains { $0.hasPrefix("READY ") } }
        let port = try #require(auth.lines.first { $0.hasPrefix("READY ") }.flatMap { Int($0.dropFirst(6)) })
        let server = try PusherTestServer(key: PusherLive.key, secret: PusherLive.secret)
        func session(token: String) -> RealtimeSession {
            let endpoint = PusherAuth.endpoint(URL(string: "http://127.0.0.1:\(port)/pusher/auth")!,
                                               userURL: URL(string: "http://127.0.0.1:\(port)/pusher/user-auth")!,
                                               headers: [HTTPHeader("Authorization", "Bearer \(token)")],
                                               params: ["team": "blue"])
            return RealtimeSession(dialect: .pusher(key: PusherLive.key, auth: endpoint, host: "127.0.0.1",
                                                    port: server.port),
                                   transport: PusherLive.transport,
                                   options: SessionOptions(reconnectPolicy: PusherLive.policy,
                                                           connectTimeout: .seconds(3)))
        }
        let good = session(token: "ok")
        defer { good.disconnect() }
        try await good.connect()
        _ = try await good.channel("private-room").subscribed()
        _ = try await good.channel("presence-room").subscribed()
        #expect(server.members(of: "presence-room") == ["http": ["team": "blue"]])
        #expect(try await good.signIn().id == "blue")
        do {
            _ = try await good.channel("private-forbidden").subscribed()
            Issue.record("private-forbidden must fail")
        } catch let error as RealtimeError {
            #expect(error.code == .authorizationFailed)
            #expect(error.context.httpStatus == 403)
        }
        let bad = session(token: "nope")
        defer { bad.disconnect() }
        try await bad.connect()
        do {
            _ = try await bad.channel("private-room").subscribed()
            Issue.record("a 401 must fail the channel")
        } catch let error as RealtimeError {
            #expect(error.context.httpStatus == 401)
        }
        #expect(bad.state == .connected)
    }

    @Test("our secretbox matches PyNaCl on random keys, nonces and lengths 0-1100, and opens PyNaCl's boxes")
    func secretboxMatchesPyNaCl() async throws {
        var generator = SystemRandomNumberGenerator()
        func random(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        var cases: [(key: [UInt8], nonce: [UInt8], plain: [UInt8])] = []
        for length in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 500, 1100] {
            cases.append((random(32), random(24), random(length)))
        }
        let peer = try PusherPythonPeer(["box"])
        defer { peer.stop() }
        peer.write(JSONValue.array(cases.map { item in
            ["key": .string(Data(item.key).base64EncodedString()), "nonce": .string(Data(item.nonce).base64EncodedString()),
             "plain": .string(Data(item.plain).base64EncodedString())]
        }).serialized())
        peer.closeInput()
        await pusherWait("PyNaCl answers", seconds: 60) { !peer.output.isEmpty }
        let boxes = peer.output.first?.arrayValue ?? []
        #expect(boxes.count == cases.count)
        for (item, box) in zip(cases, boxes) {
            let theirs = Array(Data(base64Encoded: box.stringValue ?? "") ?? Data())
            #expect(SecretBox.seal(item.plain, nonce: item.nonce, key: item.key) == theirs, "length \(item.plain.count)")
            #expect(SecretBox.open(theirs, nonce: item.nonce, key: item.key) == item.plain)
        }
    }
}
