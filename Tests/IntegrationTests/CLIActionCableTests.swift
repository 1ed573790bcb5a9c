import Foundation
import Testing

/// `realtime listen` and `send` against Rails Action Cable under puma (`Tests/Fixtures/actioncable`), run as a
/// user runs them: the built executable, its JSON lines compared exactly.
@Suite("CLI against Rails Action Cable", .serialized,
       .enabled(if: RailsCableServer.unavailableReason == nil || PeerRequirement.required,
                Comment(rawValue: RailsCableServer.unavailableReason ?? "")))
struct CLIActionCableTests {
    @Test("listen hears an HTTP broadcast, then a perform that another CLI process sends")
    func broadcastAndPerform() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let channel = #"EchoChannel{"room_id":42}"#
        let listener = try CLIProcess(["listen", "actioncable", "\(server.url.absoluteString)?token=valid-alice",
                                       "--channel", channel, "--json", "--count", "2", "--timeout", "60"])
        defer { listener.stop() }
        #expect(await listener.subscribed(channel), "\(listener.transcript)")

        try server.broadcast(stream: "echo:42", #"{"text":"from HTTP"}"#)
        // Rails delivers broadcasts on thread pools, so two may arrive in either order: the HTTP one is heard
        // before the perform is sent, so the listener's order is known.
        #expect(await listener.line { $0.contains("from HTTP") } != nil, "\(listener.transcript)")
        let send = try await runCLI(["send", "actioncable", server.url.absoluteString,
                                     "--header", "Authorization: Bearer valid-bob", "--channel", "EchoChannel",
                                     "--param", "room_id=42", "--event", "speak", "--data", #"{"text":"hi"}"#,
                                     "--json"])
        #expect(send.status == 0, "\(send.transcript)")
        #expect(send.lines == CLILine.sendTranscript(channel, "speak"), "\(send.transcript)")

        #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
        #expect(listener.lines == [
            CLILine.connecting, CLILine.connected, CLILine.subscribed(channel),
            CLILine.event(channel, "message", #"{"text":"from HTTP"}"#),
            CLILine.event(channel, "speak",
                          #"{"action":"speak","data":{"text":"hi"},"from":"bob","room_id":42}"#),
        ], "\(listener.transcript)")
    }

    @Test("listen prints a broadcast's own event name; --event-key chooses the member, '' means \"message\"")
    func eventNames() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let channel = #"EchoChannel{"room_id":42}"#
        let url = "\(server.url.absoluteString)?token=valid-alice"
        let byDefault = try CLIProcess(["listen", "actioncable", url, "--channel", channel, "--json",
                                        "--count", "2", "--timeout", "60"])
        defer { byDefault.stop() }
        let byKind = try CLIProcess(["listen", "actioncable", url, "--channel", channel, "--event-key", "kind",
                                     "--json", "--count", "2", "--timeout", "60"])
        defer { byKind.stop() }
        let unnamed = try CLIProcess(["listen", "actioncable", url, "--channel", channel, "--event-key=",
                                      "--json", "--count", "2", "--timeout", "60"])
        defer { unnamed.stop() }
        for listener in [byDefault, byKind, unnamed] {
            #expect(await listener.subscribed(channel), "\(listener.transcript)")
        }
        try server.broadcast(stream: "echo:42", #"{"event":"e","kind":"k"}"#)
        try server.broadcast(stream: "echo:42", #"{"event":"e"}"#)
        let expected: [(CLIProcess, [String])] = [(byDefault, ["e", "e"]), (byKind, ["k", "message"]),
                                                  (unnamed, ["message", "message"])]
        for (listener, names) in expected {
            #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
            #expect(Array(listener.lines.prefix(3)) == [CLILine.connecting, CLILine.connected, CLILine.subscribed(channel)],
                    "\(listener.transcript)")
            // Rails' async adapter may deliver the two broadcasts in either order.
            #expect(Set(listener.lines.dropFirst(3)) == [
                CLILine.event(channel, names[0], #"{"event":"e","kind":"k"}"#),
                CLILine.event(channel, names[1], #"{"event":"e"}"#),
            ], "\(listener.transcript)")
        }
    }

    @Test("a rejected subscription and an unauthorized connection print the error line and exit 3")
    func refusals() async throws {
        let server = try await RailsCableServer.start()
        defer { server.stop() }
        let rejected = try await runCLI(["listen", "actioncable", "\(server.url.absoluteString)?token=valid-alice",
                                         "--channel", "RejectChannel", "--json", "--timeout", "60"])
        #expect(rejected.status == 3, "\(rejected.transcript)")
        #expect(rejected.lines == [
            CLILine.connecting, CLILine.connected,
            CLILine.error("subscription-rejected", "the server rejected the subscription to RejectChannel"),
        ], "\(rejected.transcript)")

        let unauthorized = try await runCLI(["listen", "actioncable", "\(server.url.absoluteString)?token=nobody",
                                             "--channel", "EchoChannel", "--json", "--timeout", "60"])
        #expect(unauthorized.status == 3, "\(unauthorized.transcript)")
        #expect(unauthorized.lines == [
            CLILine.connecting, #"{"type":"state","from":"connecting","to":"failed"}"#,
            CLILine.error("connection-refused", "the server refused the connection (unauthorized)"),
        ], "\(unauthorized.transcript)")
    }
}
