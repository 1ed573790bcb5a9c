import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

/// A scripted Pusher server on an in-memory connection: handshake on open, checks auth signatures,
/// answers subscribe and signin, records everything.
final class FakePusher: Sendable {
    static let key = "app-key"
    static let secret = "secret"

    func attach(_ peer: InMemoryPeer) {
        peer.onReceive { [self] frame, peer in self.received(frame, on: peer) }
        peer.accept()
        let data = JSONValue.object(["socket_id": .string(socketID(peer)), "activity_timeout": 120]).serialized()
        peer.send(text: JSONValue.object(["event": "pusher:connection_established", "data": .string(data)]).serialized())
    }

    func socketID(_ peer: InMemoryPeer) -> String { "\(peer.index + 1).\(peer.index + 10)" }

    private func received(_ frame: TransportFrame, on peer: InMemoryPeer) {
        guard case .text(let text) = frame, let message = try? JSONValue.parse(text),
              let event = message["event"]?.stringValue else { return }
        let data = message["data"]
        switch event {
        case "pusher:subscribe":
            guard let channel = data?["channel"]?.stringValue else { return }
            if channel.hasPrefix("private-") || channel.hasPrefix("presence-") {
                let identity = data?["channel_data"]?.stringValue
                let signed = identity.map { "\(socketID(peer)):\(channel):\($0)" } ?? "\(socketID(peer)):\(channel)"
                guard data?["auth"]?.stringValue == "\(Self.key):\(HMACSHA256.hex(signed, key: Self.secret))" else {
                    peer.send(text: #"{"event":"pusher:error","data":{"code":null,"message":"Invalid signature"}}"#)
                    return
                }
            }
            var payload = "{}"
            if channel.hasPrefix("presence-") {
                payload = #"{"presence":{"ids":["1",7],"hash":{"1":{"name":"Zed"},"7":{"name":"Ann"}},"count":2}}"#
            }
            peer.send(text: JSONValue.object(["event": "pusher_internal:subscription_succeeded",
                                              "channel": .string(channel), "data": .string(payload)]).serialized())
        case "pusher:signin":
            guard let userData = data?["user_data"]?.stringValue,
                  data?["auth"]?.stringValue == "\(Self.key):\(HMACSHA256.hex("\(socketID(peer))::user::\(userData)", key: Self.secret))"
            else {
                peer.send(text: #"{"event":"pusher:error","data":{"code":null,"message":"Invalid signature"}}"#)
                return
            }
            let reply = JSONValue.object(["user_data": .string(userData)]).serialized()
            peer.send(text: JSONValue.object(["event": "pusher:signin_success", "data": .string(reply)]).serialized())
        default:
            return
        }
    }
}

final class PusherHarness: Sendable {
    let clock = ManualClock()
    let transport = InMemoryTransport(autoAccept: false)
    let session: RealtimeSession
    let errors = Locked<[RealtimeError]>([])

    static let policy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(30), jitter: .none)

    init(auth: PusherAuth? = .inline(secret: FakePusher.secret, presenceData: #"{"user_id":"7"}"#,
                                     userData: #"{"id":"7"}"#),
         options: (inout SessionOptions) -> Void = { _ in }) {
        let dialect = PusherDialect.pusher(key: FakePusher.key, auth: auth, host: "127.0.0.1", port: 6001)
        var settings = SessionOptions(delivery: .inline, reconnectPolicy: Self.policy, clock: clock,
                                      randomSource: .seeded(3))
        options(&settings)
        session = RealtimeSession(dialect: dialect, transport: transport, options: settings)
        let server = FakePusher()
        transport.onOpen { server.attach($0) }
        session.onError { [errors] error in errors.withLock { $0.append(error) } }
    }

    var peers: [InMemoryPeer] { transport.peers }
}

func eventually(_ description: String = "condition", sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: () -> Bool) async {
    for _ in 0..<200_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("timed out waiting for \(description)", sourceLocation: sourceLocation)
}

@Suite("Pusher over the session engine")
struct PusherSessionTests {
    @Test("private channel: auth runs through the engine, subscribe carries the signature, client events flow")
    func privateChannel() async throws {
        let harness = PusherHarness()
        let room = harness.session.channel("private-room")
        try await harness.session.connect()
        #expect(harness.session.connectionID == "1.10")
        #expect(try await room.subscribed() == nil)
        try await room.send("client-typing", ["on": true])
        let sent = harness.peers[0].receivedTexts
        #expect(sent.last == #"{"channel":"private-room","data":{"on":true},"event":"client-typing"}"#)
        await #expect(throws: RealtimeError.self) { try await room.send("typing", ["on": true]) }
    }

    @Test("after a reconnect every private channel is authorized afresh for the new socket id")
    func reauthOnReconnect() async throws {
        let harness = PusherHarness()
        let room = harness.session.channel("private-room")
        try await harness.session.connect()
        _ = try await room.subscribed()
        harness.peers[0].close(code: 4200, reason: "reconnect now")
        await eventually("second connection") { harness.peers.count == 2 }
        await eventually("resubscribed") { room.state == .subscribed(recovered: nil) && harness.session.connectionID == "2.11" }
        let subscribe = harness.peers[1].receivedTexts.first { $0.contains("pusher:subscribe") }
        #expect(subscribe?.contains(HMACSHA256.hex("2.11:private-room", key: FakePusher.secret)) == true)
    }

    @Test("a bad signature fails the channel through the channel-less error; the session stays up")
    func badSignature() async throws {
        let harness = PusherHarness(auth: .inline(secret: "wrong"))
        let room = harness.session.channel("private-room")
        try await harness.session.connect()
        await #expect(throws: RealtimeError.self) { _ = try await room.subscribed() }
        if case .rejected(let error) = room.state { #expect(error.code == .subscriptionRejected) }
        else { Issue.record("expected a failed channel, got \(room.state)") }
        #expect(harness.session.state == .connected)
    }

    @Test("presence roster: members with 'me', cleared when the connection drops, refilled after")
    func presenceRoster() async throws {
        let harness = PusherHarness()
        let roster = try harness.session.presence("presence-room")
        try await harness.session.connect()
        await eventually("members") { roster.members.count == 2 }
        #expect(roster.members.myID == "7")
        #expect(roster.members.members["1"] == ["name": "Zed"])
        harness.peers[0].send(text: #"{"event":"pusher_internal:member_added","channel":"presence-room","data":"{\"user_id\":3,\"user_info\":{}}"}"#)
        #expect(roster.members.ids == ["1", "3", "7"])
        harness.peers[0].close(code: 4100, reason: "over capacity")
        await eventually("reset") { roster.members.count == 0 && !harness.session.state.isConnected }
        harness.clock.advance(by: .seconds(1))
        await eventually("refilled") { roster.members.count == 2 }
    }

    @Test("presence roster: empty after leave() (no event says so), refilled when joined again")
    func presenceRosterAfterLeave() async throws {
        let harness = PusherHarness()
        let roster = try harness.session.presence("presence-room")
        let room = harness.session.channel("presence-room")
        try await harness.session.connect()
        await eventually("members") { roster.members.count == 2 }
        room.leave()
        await eventually("left") { room.state == .unsubscribed }
        #expect(roster.members == PusherMembers())
        _ = try await harness.session.channel("presence-room").subscribed()
        await eventually("refilled") { roster.members.count == 2 }
        #expect(roster.members.myID == "7")
    }

    @Test("signin() resolves with the identity and runs again after a reconnect")
    func signin() async throws {
        let harness = PusherHarness()
        try await harness.session.connect()
        let user = try await harness.session.signIn()
        #expect(user.id == "7")
        #expect(user.channel == "#server-to-user-7")
        let notices = Locked<[JSONValue]>([])
        harness.session.on("notice") { event in
            if event.channel == user.channel { notices.withLock { $0.append(event.data) } }
        }
        harness.peers[0].send(text: ##"{"event":"notice","channel":"#server-to-user-7","data":"{\"n\":1}"}"##)
        #expect(notices.withLock { $0 } == [["n": 1]])
        harness.peers[0].close(code: 4201, reason: "pong missed")
        await eventually("second connection") { harness.peers.count == 2 }
        await eventually("re-signin") {
            harness.peers[1].receivedTexts.contains { $0.contains("pusher:signin") }
                && harness.peers[1].receivedTexts.contains { $0.contains("#server-to-user-7") }
        }
        #expect(harness.errors.withLock { $0 }.isEmpty)
    }

    @Test("a 40xx close fails the session with connectionRefused and the close code")
    func refusedClose() async throws {
        let harness = PusherHarness()
        try await harness.session.connect()
        harness.peers[0].close(code: 4001, reason: "App key not in this cluster")
        await eventually("failed") { if case .failed = harness.session.state { true } else { false } }
        if case .failed(let error) = harness.session.state {
            #expect(error.code == .connectionRefused)
            #expect(error.context.closeCode == 4001)
        }
        #expect(harness.peers.count == 1)
    }
}
