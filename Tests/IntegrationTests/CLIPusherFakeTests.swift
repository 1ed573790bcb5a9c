import Foundation
import Realtime
import Testing

/// `realtime listen` and `send` run as a user runs them against pusher-fake, a Pusher server we did not write
/// (the scenarios of `CLIPusherTests`, which runs them against our embedded server). Events come from the
/// official `pusher` SDK over pusher-fake's REST API; every line the CLI prints is checked exactly.
@Suite("CLI against pusher-fake (third-party server)", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: PusherFakeServer.unavailableReason == nil || PeerRequirement.required,
                "run Tests/Fixtures/pusher-fake/provision.sh"))
struct CLIPusherFakeTests {
    static func url(_ server: PusherFakeServer) -> String { "ws://127.0.0.1:\(server.wsPort)" }

    /// `--key … --secret …` of pusher-fake's app: channels are signed by the CLI itself.
    static let signed = ["--key", PusherFakeServer.key, "--secret", PusherFakeServer.secret]

    @Test("public channel: an event the SDK triggers over REST, exactly")
    func publicChannel() async throws {
        try await withPusherFake { server, app in
            let listener = try CLIProcess(["listen", "pusher", Self.url(server), "--key", PusherFakeServer.key,
                                           "--channel", "news", "--json", "--count", "1", "--timeout", "60"])
            defer { listener.stop() }
            #expect(await listener.subscribed("news"), "\(listener.transcript)\n\(server.log)")
            try await app.trigger("news", "flash", ["n": 1, "text": "a b"])
            #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
            #expect(listener.lines == [CLILine.connecting, CLILine.connected, CLILine.subscribed("news"),
                                       CLILine.event("news", "flash", #"{"n":1,"text":"a b"}"#)],
                    "\(listener.transcript)")
        }
    }

    @Test("--ping: the round trip to pusher-fake, measured and printed while connected")
    func ping() async throws {
        try await withPusherFake { server, _ in
            let listener = try CLIProcess(["listen", "pusher", Self.url(server), "--key", PusherFakeServer.key,
                                           "--channel", "news", "--json", "--ping", "0.2", "--timeout", "2"])
            defer { listener.stop() }
            #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
            let lines = listener.lines
            #expect(Array(lines.prefix(2)) == [CLILine.connecting, CLILine.connected], "\(listener.transcript)")
            #expect(lines.contains(CLILine.subscribed("news")), "\(listener.transcript)")
            let pings = lines.filter { $0.hasPrefix(#"{"type":"ping","round_trip_ms":"#) }
            #expect(pings.count >= 2, "\(listener.transcript)")
            for line in pings {
                let value = try JSONValue.parse(line)["round_trip_ms"]?.doubleValue
                #expect(value.map { $0 > 0 && $0 < 10_000 } == true, "\(line)")
            }
            #expect(lines.count == 3 + pings.count, "\(listener.transcript)")
        }
    }

    @Test("private channel signed with --secret: an SDK-triggered event and a client event from another CLI process")
    func privateChannel() async throws {
        try await withPusherFake { server, app in
            let listener = try CLIProcess(["listen", "pusher", Self.url(server)] + Self.signed
                                          + ["--channel", "private-chat", "--json", "--count", "2", "--timeout", "60"])
            defer { listener.stop() }
            #expect(await listener.subscribed("private-chat"), "\(listener.transcript)\n\(server.log)")
            try await app.trigger("private-chat", "notice", "plain text")
            // The triggered event first, so the listener's order is known.
            #expect(await listener.line { $0.contains(#""event":"notice""#) } != nil, "\(listener.transcript)")
            let send = try await runCLI(["send", "pusher", Self.url(server)] + Self.signed
                                        + ["--channel", "private-chat", "--event", "client-typing", "--data",
                                           #"{"on":true}"#, "--json"])
            #expect(send.status == 0, "\(send.transcript)")
            #expect(send.lines == CLILine.sendTranscript("private-chat", "client-typing"), "\(send.transcript)")
            #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
            #expect(listener.lines == [
                CLILine.connecting, CLILine.connected, CLILine.subscribed("private-chat"),
                CLILine.event("private-chat", "notice", #""plain text""#),
                CLILine.event("private-chat", "client-typing", #"{"on":true}"#),
            ], "\(listener.transcript)")
        }
    }

    @Test("presence: a second CLI process joins as another member and sends a client event; the first sees both")
    func presence() async throws {
        try await withPusherFake { server, _ in
            let listener = try CLIProcess(["listen", "pusher", Self.url(server)] + Self.signed
                                          + ["--channel", "presence-room", "--user-data", #"{"user_id":"1"}"#,
                                             "--json", "--count", "2", "--timeout", "60"])
            defer { listener.stop() }
            #expect(await listener.subscribed("presence-room"), "\(listener.transcript)\n\(server.log)")
            let send = try await runCLI(["send", "pusher", Self.url(server)] + Self.signed
                                        + ["--channel", "presence-room",
                                           "--user-data", #"{"user_id":"2","user_info":{"name":"Bo"}}"#,
                                           "--event", "client-hello", "--data", #"{"text":"hi"}"#, "--json"])
            #expect(send.status == 0, "\(send.transcript)")
            #expect(send.lines == CLILine.sendTranscript("presence-room", "client-hello"), "\(send.transcript)")
            #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
            #expect(listener.lines == [
                CLILine.connecting, CLILine.connected, CLILine.subscribed("presence-room"),
                CLILine.event("presence-room", "pusher:member_added", #"{"user_id":"2","user_info":{"name":"Bo"}}"#),
                CLILine.event("presence-room", "client-hello", #"{"text":"hi"}"#),
            ], "\(listener.transcript)")
        }
    }

    @Test("a wrong secret: pusher-fake's subscription_error becomes the error line, and exit 3")
    func wrongSecret() async throws {
        try await withPusherFake { server, _ in
            let run = try await runCLI(["listen", "pusher", Self.url(server), "--key", PusherFakeServer.key,
                                        "--secret", "wrong", "--channel", "private-chat", "--json", "--timeout", "60"])
            #expect(run.status == 3, "\(run.transcript)")
            #expect(run.lines == [
                CLILine.connecting, CLILine.connected,
                CLILine.error("subscription-rejected", "Pusher refused the subscription to private-chat"),
            ], "\(run.transcript)")
        }
    }
}
