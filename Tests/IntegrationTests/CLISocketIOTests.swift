import Foundation
import Testing

/// `realtime listen` and `send` against python-socketio (`Tests/Fixtures/socketio/server.py`), run as a user runs
/// them: the built executable, its JSON lines compared exactly.
@Suite("CLI against python-socketio", .serialized,
       .enabled(if: FileManager.default.isExecutableFile(atPath: SocketIOPeer.python.path) || PeerRequirement.required,
                "python-socketio peer missing: run Tests/Fixtures/socketio/provision.sh"))
struct CLISocketIOTests {
    @Test("listen on each transport: state, subscribed and the welcome event, then exit 0 at --count",
          arguments: ["websocket", "polling", "upgrade"])
    func listenOnEveryTransport(transport: String) async throws {
        try await withSocketIOPeer { peer in
            let run = try await runCLI(["listen", "socketio", peer.url.absoluteString, "--channel", "/chat",
                                        "--auth", #"{"token":"secret"}"#, "--transport", transport, "--json",
                                        "--count", "1", "--timeout", "30"])
            #expect(run.status == 0, "\(run.transcript)")
            #expect(run.lines == [
                CLILine.connecting, CLILine.connected, CLILine.subscribed("/chat"),
                CLILine.event("/chat", "welcome", #"{"auth":{"token":"secret"},"namespace":"/chat"}"#),
            ], "\(run.transcript)")
        }
    }

    @Test("send --ack prints the server's acknowledgement: one argument, and several with --args on polling")
    func sendWithAck() async throws {
        try await withSocketIOPeer { peer in
            let sum = try await runCLI(["send", "socketio", peer.url.absoluteString, "--channel", "/chat",
                                        "--auth", #"{"token":"secret"}"#, "--event", "sum", "--data", "[1,2,3]",
                                        "--ack", "--json"])
            #expect(sum.status == 0, "\(sum.transcript)")
            #expect(sum.lines == [CLILine.connecting, CLILine.connected, CLILine.subscribed("/chat"),
                                  CLILine.ack(#"[{"sum":6}]"#)], "\(sum.transcript)")

            let echo = try await runCLI(["send", "socketio", peer.url.absoluteString, "--event", "echo",
                                         "--args", #"[1,"two",{"three":3}]"#, "--ack", "--transport", "polling",
                                         "--json"])
            #expect(echo.status == 0, "\(echo.transcript)")
            #expect(echo.lines == [CLILine.connecting, CLILine.connected, CLILine.subscribed("/"),
                                   CLILine.ack(#"[1,"two",{"three":3}]"#)], "\(echo.transcript)")
        }
    }

    @Test("a refused namespace prints the error line and exits 3")
    func refusedNamespace() async throws {
        try await withSocketIOPeer { peer in
            let run = try await runCLI(["listen", "socketio", peer.url.absoluteString, "--channel", "/chat",
                                        "--auth", #"{"token":"wrong"}"#, "--json", "--timeout", "30"])
            #expect(run.status == 3, "\(run.transcript)")
            #expect(run.lines == [CLILine.connecting, CLILine.connected,
                                  CLILine.error("subscription-rejected", "invalid token")], "\(run.transcript)")
        }
    }

    @Test("connected but a namespace never confirmed: --timeout exits 4 naming it")
    func unconfirmedNamespace() async throws {
        try await withSocketIOPeer { peer in
            // The fixture's /slow namespace answers CONNECT only after 30 s.
            let run = try await runCLI(["listen", "socketio", peer.url.absoluteString, "--channel", "/slow",
                                        "--json", "--timeout", "2"])
            #expect(run.status == 4, "\(run.transcript)")
            #expect(run.lines == [CLILine.connecting, CLILine.connected,
                                  CLILine.error("timed-out", "timed out after 2 s: the server never confirmed /slow")],
                    "\(run.transcript)")
        }
    }

    @Test("--timeout before --count exits 4 after the events that came, saying how many of how many")
    func timeoutBeforeCount() async throws {
        try await withSocketIOPeer { peer in
            let run = try await runCLI(["listen", "socketio", peer.url.absoluteString, "--json", "--count", "2",
                                        "--timeout", "6"])
            #expect(run.status == 4, "\(run.transcript)")
            #expect(run.lines == [CLILine.connecting, CLILine.connected, CLILine.subscribed("/"),
                                  CLILine.event("/", "welcome", #"{"auth":null,"namespace":"/"}"#),
                                  CLILine.error("timed-out", "timed out after 6 s: 1 of 2 events arrived")],
                    "\(run.transcript)")
        }
    }
}
