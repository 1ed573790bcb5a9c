import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// `realtime serve` started as a user starts it: its ready line gives the url and credentials.
struct ServedCLI {
    let process: CLIProcess
    let ready: JSONValue

    init(_ dialect: String, _ extra: [String] = []) async throws {
        process = try CLIProcess(["serve", dialect, "--port", "0", "--json"] + extra)
        guard let line = await process.line(where: { $0.hasPrefix(#"{"type":"ready""#) }) else {
            process.stop()
            throw RealtimeError(.connectTimedOut, "serve printed no ready line: \(process.transcript)")
        }
        ready = try JSONValue.parse(line)
    }

    var url: String { ready["url"]?.stringValue ?? "" }

    /// `--key … --secret …` as the ready line gives them.
    var credentials: [String] {
        ["--key", ready["key"]?.stringValue ?? "", "--secret", ready["secret"]?.stringValue ?? ""]
    }

    /// Types a command into the server and waits for its answer line.
    func command(_ line: String) async -> String? {
        let before = process.lines.count
        process.send(line)
        return await process.line { [process] candidate in
            process.lines.dropFirst(before).contains(candidate) && candidate.hasPrefix(#"{"type":"#)
        }
    }
}

/// `realtime listen` and `send` against the embedded Pusher server run by `realtime serve pusher` (and `bird`):
/// public, private (signed with `--secret`), presence, client events between two CLI processes, a wrong secret.
@Suite("CLI against the embedded Pusher server", .serialized)
struct CLIPusherTests {
    @Test("public channel: a triggered event, exactly; the ready line carries a paste-able listen line")
    func publicChannel() async throws {
        let server = try await ServedCLI("pusher")
        defer { server.process.stop() }
        #expect(server.ready["listen"]?.stringValue?.hasPrefix("realtime listen pusher \(server.url) --key app-key")
                == true, "\(server.process.transcript)")
        let listener = try CLIProcess(["listen", "pusher", server.url, "--key", "app-key", "--channel", "news",
                                       "--json", "--count", "1", "--timeout", "60"])
        defer { listener.stop() }
        #expect(await listener.subscribed("news"), "\(listener.transcript)")
        #expect(await server.command(#"trigger news flash {"n": 1, "text": "a b"}"#)
                == #"{"type":"triggered","channel":"news","event":"flash","receivers":1}"#)
        #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
        #expect(listener.lines == [CLILine.connecting, CLILine.connected, CLILine.subscribed("news"),
                                   CLILine.event("news", "flash", #"{"n":1,"text":"a b"}"#)], "\(listener.transcript)")
    }

    @Test("private channel signed with --secret: a triggered event and a client event from another CLI process",
          arguments: ["pusher", "bird"])
    func privateChannel(dialect: String) async throws {
        let server = try await ServedCLI(dialect)
        defer { server.process.stop() }
        let listener = try CLIProcess(["listen", dialect, server.url] + server.credentials
                                      + ["--channel", "private-chat", "--json", "--count", "2", "--timeout", "60"])
        defer { listener.stop() }
        #expect(await listener.subscribed("private-chat"), "\(listener.transcript)")
        #expect(await server.command(#"trigger private-chat notice "plain text""#)
                == #"{"type":"triggered","channel":"private-chat","event":"notice","receivers":1}"#)
        let send = try await runCLI(["send", dialect, server.url] + server.credentials
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

    @Test("presence: a second member joins and sends a client event; the first sees both")
    func presence() async throws {
        let server = try await ServedCLI("pusher")
        defer { server.process.stop() }
        let listener = try CLIProcess(["listen", "pusher", server.url] + server.credentials
                                      + ["--channel", "presence-room", "--user-data", #"{"user_id":"1"}"#, "--json",
                                         "--count", "2", "--timeout", "60"])
        defer { listener.stop() }
        #expect(await listener.subscribed("presence-room"), "\(listener.transcript)")
        let send = try await runCLI(["send", "pusher", server.url] + server.credentials
                                    + ["--channel", "presence-room",
                                       "--user-data", #"{"user_id":"2","user_info":{"name":"Bo"}}"#,
                                       "--event", "client-hello", "--data", #"{"text":"hi"}"#, "--json"])
        #expect(send.status == 0, "\(send.transcript)")
        #expect(await listener.exitStatus() == 0, "\(listener.transcript)")
        #expect(listener.lines == [
            CLILine.connecting, CLILine.connected, CLILine.subscribed("presence-room"),
            CLILine.event("presence-room", "pusher:member_added", #"{"user_id":"2","user_info":{"name":"Bo"}}"#),
            CLILine.event("presence-room", "client-hello", #"{"text":"hi"}"#),
        ], "\(listener.transcript)")
    }

    @Test("--auth-endpoint with --header signs through the app's backend; without the header: HTTP 403, exit 3")
    func authEndpoint() async throws {
        guard let python = RailsCableServer.executable("python3") else {
            Issue.record("python3 is needed for the auth endpoint fixture")
            return
        }
        let script = SocketIOPeer.repositoryRoot.appendingPathComponent("Tests/Fixtures/cli/auth_endpoint.py").path
        let backend = try CLIProcess([script, "app-secret", "app-key", "t0ken"], program: URL(fileURLWithPath: python))
        defer { backend.stop() }
        let ready = await backend.line { $0.hasPrefix("READY ") }
        let endpoint = "http://127.0.0.1:\(ready?.dropFirst(6) ?? "0")/pusher/auth"
        let server = try await ServedCLI("pusher")
        defer { server.process.stop() }

        let signed = try CLIProcess(["listen", "pusher", server.url, "--key", "app-key", "--auth-endpoint", endpoint,
                                     "--header", "Authorization: Bearer t0ken", "--channel", "private-x", "--json",
                                     "--count", "1", "--timeout", "60"])
        defer { signed.stop() }
        #expect(await signed.subscribed("private-x"), "\(signed.transcript)\n\(backend.transcript)")
        _ = await server.command(#"trigger private-x ping {}"#)
        #expect(await signed.exitStatus() == 0, "\(signed.transcript)")
        #expect(signed.lines == [CLILine.connecting, CLILine.connected, CLILine.subscribed("private-x"),
                                 CLILine.event("private-x", "ping", "{}")], "\(signed.transcript)")

        let refused = try await runCLI(["listen", "pusher", server.url, "--key", "app-key", "--auth-endpoint", endpoint,
                                        "--channel", "private-x", "--json", "--timeout", "60"])
        #expect(refused.status == 3, "\(refused.transcript)")
        #expect(refused.lines == [CLILine.connecting, CLILine.connected,
                                  CLILine.error("authorization-failed", "the auth endpoint answered HTTP 403")],
                "\(refused.transcript)")
    }

    @Test("a wrong secret: the error line and exit 3")
    func wrongSecret() async throws {
        let server = try await ServedCLI("pusher")
        defer { server.process.stop() }
        let run = try await runCLI(["listen", "pusher", server.url, "--key", "app-key", "--secret", "wrong",
                                    "--channel", "private-chat", "--json", "--timeout", "60"])
        #expect(run.status == 3, "\(run.transcript)")
        // The first connection of a fresh server has socket id 1.1001.
        #expect(run.lines == [
            CLILine.connecting, CLILine.connected,
            CLILine.error("subscription-rejected",
                          "Pusher refused the subscription to private-chat: Invalid signature: "
                            + "expected HMAC SHA256 hex digest of 1.1001:private-chat"),
        ], "\(run.transcript)")
    }
}
