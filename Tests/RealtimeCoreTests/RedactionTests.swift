import RealtimeCore
import Testing

@Suite("Redaction")
struct RedactionTests {
    @Test("secrets in JSON, query strings and headers are masked", arguments: [
        (#"{"event":"pusher:subscribe","data":{"auth":"278d425bdf160c739803:58df8b0c","channel":"private-x"}}"#,
         #"{"event":"pusher:subscribe","data":{"auth":"<redacted>","channel":"private-x"}}"#),
        ("GET /cable?token=valid-alice&room=1", "GET /cable?token=<redacted>&room=1"),
        ("Authorization: Bearer abc.def.ghi\nHost: x", "Authorization: <redacted>\nHost: x"),
        (#"40{"token":"secret"}"#, #"40{"token":"<redacted>"}"#),
        (#"{"shared_secret":"/fXNISfW5oYP=","x":1}"#, #"{"shared_secret":"<redacted>","x":1}"#),
        ("nothing to hide here: author=bob", "nothing to hide here: author=bob"),
    ])
    func masks(input: String, expected: String) {
        #expect(Redaction.redact(input) == expected)
    }
}
