@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Loopback")
struct LoopbackTests {
    @Test("one rule for this machine: localhost names, 127/8, ::1 — and nothing that only looks like them", arguments: [
        ("localhost", true), ("LOCALHOST", true), ("api.localhost", true), ("localhost.", true),
        ("127.0.0.1", true), ("127.9.9.9", true), ("::1", true), ("[::1]", true), ("0:0:0:0:0:0:0:1", true),
        ("::ffff:127.0.0.1", true),
        // Names that start like a loopback address are resolved by DNS: not loopback.
        ("127.evil.example", false), ("127.0.0.1.nip.io", false), ("127.1", false),
        ("10.0.0.1", false), ("128.0.0.1", false), ("localhost.example.com", false), ("::2", false),
        ("::ffff:10.0.0.1", false), ("", false),
    ])
    func rule(host: String, expected: Bool) {
        #expect(Loopback.contains(host: host) == expected)
    }
}
