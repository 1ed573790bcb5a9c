import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("permessage-deflate: negotiation")
struct DeflateNegotiationTests {
    private static let key = Base64.decode("dGhlIHNhbXBsZSBub25jZQ==")!

    private func handshake(_ options: PerMessageDeflateOptions? = PerMessageDeflateOptions()) -> WebSocketClientHandshake {
        WebSocketClientHandshake(url: URL(string: "ws://example.com/chat")!, key: Self.key, deflate: options)
    }

    /// Feeds a 101 carrying `extensions` (one header line each) to a handshake offering `options`.
    private func answer(_ extensions: [String], offering options: PerMessageDeflateOptions? = PerMessageDeflateOptions())
        -> Result<PerMessageDeflateParameters?, RealtimeError> {
        var client = handshake(options)
        let lines = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
                     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]
            + extensions.map { "Sec-WebSocket-Extensions: \($0)" }
        let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        return bytes.withUnsafeBytes { buffer in
            do throws(RealtimeError) {
                guard try client.receive(buffer) != nil else { return .failure(RealtimeError(.unsupported, "incomplete")) }
                return .success(client.negotiatedDeflate)
            } catch {
                return .failure(error)
            }
        }
    }

    @Test("the offer: client_max_window_bits always, the rest as configured; none without options")
    func offer() {
        func offerLine(_ options: PerMessageDeflateOptions?) -> String? {
            String(decoding: handshake(options).requestBytes(), as: UTF8.self).components(separatedBy: "\r\n")
                .first { $0.hasPrefix("Sec-WebSocket-Extensions:") }
        }
        #expect(offerLine(PerMessageDeflateOptions()) == "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits")
        #expect(offerLine(PerMessageDeflateOptions(clientMaxWindowBits: 10, serverMaxWindowBits: 12,
                                                   clientNoContextTakeover: true, serverNoContextTakeover: true))
            == "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=10; server_max_window_bits=12; "
            + "client_no_context_takeover; server_no_context_takeover")
        #expect(offerLine(nil) == nil)
    }

    @Test("options out of range are an invalid argument before anything is sent")
    func invalidOptions() {
        for options in [PerMessageDeflateOptions(clientMaxWindowBits: 8), PerMessageDeflateOptions(clientMaxWindowBits: 16),
                        PerMessageDeflateOptions(serverMaxWindowBits: 7), PerMessageDeflateOptions(compressionLevel: 0),
                        PerMessageDeflateOptions(minimumMessageSize: -1)] {
            #expect(throws: RealtimeError.self) { try handshake(options).validate() }
        }
        #expect(throws: Never.self) { try handshake(PerMessageDeflateOptions(serverMaxWindowBits: 8)).validate() }
    }

    @Test("accepted answers and what they settle", arguments: [
        (["permessage-deflate"], PerMessageDeflateParameters()),
        (["Permessage-Deflate"], PerMessageDeflateParameters()),
        (["permessage-deflate; server_no_context_takeover"], PerMessageDeflateParameters(serverNoContextTakeover: true)),
        (["permessage-deflate;client_no_context_takeover"], PerMessageDeflateParameters(clientNoContextTakeover: true)),
        (["permessage-deflate; client_max_window_bits=9"], PerMessageDeflateParameters(clientMaxWindowBits: 9)),
        (["permessage-deflate; client_max_window_bits=8"], PerMessageDeflateParameters(clientMaxWindowBits: 8)),
        // server_max_window_bits answered though not offered is fine (RFC 7692 §7.1.2.1).
        (["permessage-deflate; server_max_window_bits=10"], PerMessageDeflateParameters(serverMaxWindowBits: 10)),
        (["permessage-deflate; server_max_window_bits=\"10\""], PerMessageDeflateParameters(serverMaxWindowBits: 10)),
        (["permessage-deflate ; client_max_window_bits = 12 ; server_no_context_takeover"],
         PerMessageDeflateParameters(clientMaxWindowBits: 12, serverNoContextTakeover: true)),
        ([", permessage-deflate,"], PerMessageDeflateParameters()),
        (["", "permessage-deflate"], PerMessageDeflateParameters()),
    ] as [([String], PerMessageDeflateParameters)])
    func accepted(_ extensions: [String], _ expected: PerMessageDeflateParameters) throws {
        #expect(try answer(extensions).get() == expected)
    }

    @Test("declined: no header, or an empty one, leaves deflate off")
    func declined() throws {
        #expect(try answer([]).get() == nil)
        #expect(try answer([" "]).get() == nil)
    }

    @Test("what we asked for the server's direction has to come back, at most as large")
    func requestedParameters() throws {
        let asking = PerMessageDeflateOptions(serverMaxWindowBits: 10, serverNoContextTakeover: true)
        #expect(try answer(["permessage-deflate; server_max_window_bits=9; server_no_context_takeover"], offering: asking).get()
            == PerMessageDeflateParameters(serverMaxWindowBits: 9, serverNoContextTakeover: true))
        for refused in ["permessage-deflate; server_max_window_bits=11; server_no_context_takeover",
                        "permessage-deflate; server_no_context_takeover",
                        "permessage-deflate; server_max_window_bits=10"] {
            #expect(throws: RealtimeError.self, "\(refused)") { try answer([refused], offering: asking).get() }
        }
        // A client_max_window_bits above our own hint changes nothing: we compress with ours.
        let small = PerMessageDeflateOptions(clientMaxWindowBits: 10)
        #expect(try answer(["permessage-deflate; client_max_window_bits=12"], offering: small).get()?.clientMaxWindowBits == 10)
        // Our client_no_context_takeover hint binds us whatever the server says.
        let hint = PerMessageDeflateOptions(clientNoContextTakeover: true)
        #expect(try answer(["permessage-deflate"], offering: hint).get()?.clientNoContextTakeover == true)
    }

    @Test("refused answers fail the handshake with handshake-invalid", arguments: [
        ("permessage-deflate; foo", "unknown parameter foo"),
        ("permessage-deflate; foo=1", "unknown parameter foo"),
        ("permessage-deflate; server_no_context_takeover; server_no_context_takeover", "repeats server_no_context_takeover"),
        ("permessage-deflate; client_max_window_bits=10; client_max_window_bits=10", "repeats client_max_window_bits"),
        ("permessage-deflate; server_no_context_takeover=1", "gives server_no_context_takeover a value"),
        ("permessage-deflate; client_no_context_takeover=\"x\"", "gives client_no_context_takeover a value"),
        ("permessage-deflate; server_max_window_bits", "must be 8…15, not missing"),
        ("permessage-deflate; client_max_window_bits", "must be 8…15, not missing"),
        ("permessage-deflate; server_max_window_bits=7", "must be 8…15, not 7"),
        ("permessage-deflate; server_max_window_bits=16", "must be 8…15, not 16"),
        ("permessage-deflate; client_max_window_bits=08", "must be 8…15, not 08"),
        ("permessage-deflate; client_max_window_bits=+9", "must be 8…15, not +9"),
        ("permessage-deflate; client_max_window_bits=nine", "must be 8…15, not nine"),
        ("permessage-deflate; server_max_window_bits=\"1 0\"", "malformed"),
        ("permessage-deflate; server_max_window_bits=\"10", "malformed"),
        ("permessage-deflate; ;", "malformed"),
        ("permessage-deflate server_no_context_takeover", "malformed"),
        ("permessage-deflate, permessage-deflate", "more than once"),
        ("x-webkit-deflate-frame", "did not offer (x-webkit-deflate-frame)"),
        ("permessage-deflate, x-custom", "did not offer (x-custom)"),
    ])
    func refused(_ extensions: String, _ reason: String) {
        switch answer([extensions]) {
        case .success(let negotiated):
            Issue.record("accepted \(extensions) as \(String(describing: negotiated))")
        case .failure(let error):
            #expect(error.code == .handshakeInvalid)
            #expect(error.message.contains(reason), "\(error.message)")
            #expect(error.context.detail == extensions)
        }
    }

    @Test("permessage-deflate answered twice across header lines is refused too")
    func twoHeaderLines() {
        #expect(throws: RealtimeError.self) { try answer(["permessage-deflate", "permessage-deflate"]).get() }
    }

    @Test("an extension answered when we offered none fails as before")
    func notOffered() {
        guard case .failure(let error) = answer(["permessage-deflate"], offering: nil) else {
            Issue.record("accepted an extension we did not offer")
            return
        }
        #expect(error.message == "the server enabled an extension we did not offer")
    }

    @Test("the machine turns deflate on when the 101 accepts it: compressed frames in, compressed frames out")
    func machine() {
        var harness = MachineHarness()
        harness.handshake = handshake(PerMessageDeflateOptions(minimumMessageSize: 0))
        harness.machine = WebSocketConnectionMachine(upgrade: .client(harness.handshake), options: MachineHarness.options)
        _ = harness.run { machine, _, output in machine.streamReady(into: &output) }
        let response = Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              + "Sec-WebSocket-Accept: \(harness.handshake.expectedAccept)\r\n"
                              + "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n").utf8)
        var output = WebSocketConnectionMachine.Output()
        (response + RFC7692Examples.hello).withUnsafeBytes { harness.machine.receive($0, now: 1, into: &output) }
        harness.machine.readFinished(into: &output)
        #expect(output.actions.map(MachineHarness.describe) == ["opened", "deliver Hello"])
        var sent = WebSocketConnectionMachine.Output()
        harness.machine.send([.text("Hello")], into: &sent)
        #expect(WireFrame.parse(sent.bytes) == [WireFrame(fin: true, rsv: 4, opcode: 1, payload: RFC7692Examples.helloPayload)])
    }
}
