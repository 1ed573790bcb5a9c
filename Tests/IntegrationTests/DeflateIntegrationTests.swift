import Foundation
import Realtime
import RealtimeTesting
import Testing

/// Opens one WebSocket with `transport`, returns what the 101 said, and closes it.
func upgradeInfo(_ transport: WebSocketTransport, _ request: ConnectionRequest) async throws -> TransportOpenInfo {
    let box = Locked<(any TransportConnection)?>(nil)
    let result: Result<TransportOpenInfo, RealtimeError> = await withCheckedContinuation { continuation in
        let resumed = Locked(false)
        let finish: @Sendable (Result<TransportOpenInfo, RealtimeError>) -> Void = { result in
            let first = resumed.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            if first { continuation.resume(returning: result) }
        }
        let connection = transport.open(request) { event in
            switch event {
            case .opened(let info): finish(.success(info))
            case .received: break
            case .closed(let closure):
                if case .failed(let error) = closure.kind {
                    finish(.failure(error))
                } else {
                    finish(.failure(RealtimeError(.connectionClosed, "closed before opening")))
                }
            }
        }
        box.withLock { $0 = connection }
    }
    box.withLock { $0 }?.close(code: 1000, reason: "")
    return try result.get()
}

/// A JSON document of about 8 KB that compresses well, as real payloads do.
let deflateDocument: JSONValue = .array((0..<120).map { index in
    ["id": .integer(Int64(index)), "name": .string("item \(index)"), "tags": ["realtime", "deflate"],
     "priceInCents": .integer(Int64(index * 150)), "inStock": .bool(index % 3 != 0)]
})

@Suite("permessage-deflate against real servers", .serialized, .timeLimit(.minutes(3)))
struct DeflateIntegrationTests {
    /// A Socket.IO session over WebSocket only, on `transport`.
    private func socketIOSession(_ peer: SocketIOPeer, transport: WebSocketTransport,
                                 errors: Locked<[RealtimeError]> = Locked([])) -> RealtimeSession {
        let session = RealtimeSession(dialect: .socketIO(url: peer.url, auth: ["token": "secret"], transports: [.websocket]),
                                      transport: transport, options: SessionOptions(requestTimeout: .seconds(10)))
        session.onError { error in errors.withLock { $0.append(error) } }
        return session
    }

    @Test("python-socketio (aiohttp) accepts deflate: the server sees the offer, answers it, and reads RSV1 frames; compress: false goes out plain")
    func socketIONegotiates() async throws {
        try await withSocketIOPeer { peer in
            let session = socketIOSession(peer, transport: WebSocketTransport())
            defer { session.disconnect() }
            try await session.connect()
            let channel = session.channel("/")
            try await channel.subscribed()
            // Compressed both ways: our request, and aiohttp's answer (it compresses every frame it sends).
            #expect(try await channel.request("echo", deflateDocument) == [deflateDocument])
            try await channel.send("echo", arguments: [deflateDocument], compress: false)
            let report = try #require(try await channel.request("deflate_report").first)

            #expect(report["offer"] == "permessage-deflate; client_max_window_bits")
            #expect(report["answer"]?.stringValue?.hasPrefix("permessage-deflate") == true)
            #expect(report["window_bits"] == 15)
            let frames = try #require(report["frames"]?.arrayValue)
            let documentSize = deflateDocument.serialized().utf8.count
            let compressed = frames.filter { $0["rsv1"] == true }
            let plainLarge = frames.filter { $0["rsv1"] == false && ($0["length"]?.doubleValue ?? 0) >= Double(documentSize) }
            // The echo request: RSV1 set, and much smaller on the wire than the document.
            #expect(compressed.contains { $0["opcode"] == 1 && ($0["length"]?.doubleValue ?? .infinity) < Double(documentSize) / 4 })
            // The compress: false send: the whole document, RSV1 clear.
            #expect(plainLarge.count == 1)
            // Small frames (Engine.IO pongs, CONNECT) stay under the 128-byte threshold, uncompressed.
            #expect(frames.filter { ($0["length"]?.doubleValue ?? 0) < 128 }.allSatisfy { $0["rsv1"] == false })
        }
    }

    @Test("compression: nil offers nothing; python-socketio then reads plain frames only")
    func socketIOOff() async throws {
        try await withSocketIOPeer { peer in
            let transport = WebSocketTransport(configuration: .init(compression: nil))
            let session = socketIOSession(peer, transport: transport)
            defer { session.disconnect() }
            try await session.connect()
            let channel = session.channel("/")
            try await channel.subscribed()
            #expect(try await channel.request("echo", deflateDocument) == [deflateDocument])
            let report = try #require(try await channel.request("deflate_report").first)
            #expect(report["offer"] == .null)
            #expect(report["window_bits"] == 0)
            #expect(report["frames"]?.arrayValue?.allSatisfy { $0["rsv1"] == false } == true)
        }
    }

    @Test("a decompression bomb from a real server: 8 MiB that aiohttp squeezes into a few KB fails the connection as limit-exceeded")
    func socketIOBomb() async throws {
        try await withSocketIOPeer { peer in
            let errors = Locked<[RealtimeError]>([])
            let limits = WebSocketLimits(maximumFrameSize: 1 << 20, maximumMessageSize: 1 << 20)
            let session = socketIOSession(peer, transport: WebSocketTransport(configuration: .init(limits: limits)),
                                          errors: errors)
            defer { session.disconnect() }
            try await session.connect()
            let channel = session.channel("/")
            try await channel.subscribed()
            try await channel.send("bomb", arguments: [.integer(8 << 20)])
            // Refused while inflating (the compressed frame itself is far below the 1 MiB frame limit).
            let refused = await fakeEventually(seconds: 20) {
                errors.withLock {
                    $0.contains { $0.code == .limitExceeded && $0.context.closeCode == 1009 && $0.message.contains("inflates") }
                }
            }
            #expect(refused, "errors: \(errors.withLock { $0 })")
        }
    }

    @Test("Rails Action Cable (puma) declines deflate: no extension in the 101, and sessions work end to end",
          .enabled(if: RailsCableServer.unavailableReason == nil || PeerRequirement.required))
    func actionCableDeclines() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        var components = URLComponents(url: server.url, resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "token", value: "valid-alice")]
        let info = try await upgradeInfo(WebSocketTransport(), ConnectionRequest(
            url: components.url!, subprotocols: ["actioncable-v1-json", "actioncable-unsupported"],
            origin: "http://127.0.0.1"))
        #expect(info.subprotocol == "actioncable-v1-json")
        #expect(!info.headers.contains { $0.name == "sec-websocket-extensions" })

        let alice = CableLiveClient(server, token: "valid-alice")
        try await alice.session.connect()
        let room = try await alice.join(cableRoom42)
        let text = String(repeating: "compressible whisper ", count: 100)
        try await room.perform("whisper", ["text": .string(text)])
        try await cableWaitUntil("the whisper") { alice.messages(on: cableRoom42).count == 1 }
        #expect(alice.messages(on: cableRoom42) == [["whisper": ["text": .string(text)], "from": "alice"]])
    }

    @Test("pusher-fake declines deflate: no extension in the 101, and client events between two sessions arrive whole",
          .enabled(if: PusherFakeServer.unavailableReason == nil || PeerRequirement.required))
    func pusherFakeDeclines() async throws {
        try await withPusherFake { server, _ in
            let url = URL(string: "ws://127.0.0.1:\(server.wsPort)/app/\(PusherFakeServer.key)?protocol=7&client=test&version=1")!
            let info = try await upgradeInfo(WebSocketTransport(), ConnectionRequest(url: url))
            #expect(!info.headers.contains { $0.name == "sec-websocket-extensions" })

            let alice = PusherFake.session(server, auth: PusherFake.inline())
            let bob = PusherFake.session(server, auth: PusherFake.inline())
            defer { alice.disconnect(); bob.disconnect() }
            let bobLog = FakeEventLog(bob.channel("private-chat"), "client-doc")
            try await alice.connect()
            try await bob.connect()
            _ = try await alice.channel("private-chat").subscribed()
            _ = try await bob.channel("private-chat").subscribed()
            let document: JSONValue = ["items": .array(Array(deflateDocument.arrayValue!.prefix(20)))]
            try await alice.channel("private-chat").send("client-doc", document)
            await pusherWait("bob got the document", seconds: 20) { bobLog.count == 1 }
            #expect(bobLog.data() == [document])
        }
    }
}
