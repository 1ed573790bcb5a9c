import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Redaction")
struct RedactionTests {
    @Test("secrets outside JSON: query items, headers whole, name=value pairs", arguments: [
        ("GET /cable?token=valid-alice&room=1", "GET /cable?token=<redacted>&room=1"),
        ("Authorization: Bearer abc.def.ghi\nHost: x", "Authorization: <redacted>\nHost: x"),
        ("X-Api-Key: k-123 k-456", "X-Api-Key: <redacted>"),
        ("opening wss://h/app?access_token=T0K&v=2", "opening wss://h/app?access_token=<redacted>&v=2"),
        ("nothing to hide here: author=bob", "nothing to hide here: author=bob"),
        ("reason: token expired", "reason: token expired"),
        // Commas, semicolons and parentheses may stand unencoded in a query value (found by the fuzzer).
        ("opening wss://h/c?token=a,b;c(d)'e&v=2", "opening wss://h/c?token=<redacted>&v=2"),
        ("opening wss://h/c?token='a'b'c&v=2", "opening wss://h/c?token='<redacted>&v=2"),
        ("token='a b' rest", "token='<redacted>' rest"),
    ])
    func masksText(input: String, expected: String) {
        #expect(Redaction.redact(input) == expected)
    }

    @Test("names are secret by whole words, camelCase and compounds", arguments: [
        ("auth", true), ("access_token", true), ("X-Auth-Token", true), ("authToken", true), ("jwt", true),
        ("api_key", true), ("X-Api-Key", true), ("session", true), ("sessionId", true), ("privateKey", true), ("shared_secret", true), ("Cookie", true),
        ("author", false), ("channel", false), ("tokenizer", false), ("keyboard", false), ("user_id", false),
    ])
    func secretNames(name: String, secret: Bool) {
        #expect(Redaction.isSecretName(name) == secret)
    }

    @Test("every bypass from the security review is closed")
    func reviewBypasses() throws {
        let secret = "S3CRETvalue"
        let cases = [
            // A member outside any fixed key list.
            #"40{"jwt":"S3CRETvalue"}"#,
            // A secret inside a JSON-encoded string (Action Cable identifier).
            #"{"command":"subscribe","identifier":"{\"channel\":\"Room\",\"token\":\"S3CRETvalue\"}"}"#,
            // Pusher's string data.
            #"{"event":"client-x","channel":"private-a","data":"{\"password\":\"S3CRETvalue\"}"}"#,
            // A header value with a space in it.
            "Authorization: Bearer S3CRETvalue",
            // An object as a secret member's value.
            #"{"auth":{"key":"S3CRETvalue"}}"#,
            // Encoded twice.
            #"{"data":"{\"identifier\":\"{\\\"token\\\":\\\"S3CRETvalue\\\"}\"}"}"#,
        ]
        for text in cases {
            let redacted = Redaction.redact(text)
            #expect(!redacted.contains(secret), "\(text) → \(redacted)")
            #expect(redacted.contains(Redaction.placeholder), "\(text) → \(redacted)")
        }
    }

    @Test("JSON keeps everything that is not secret")
    func keepsTheRest() throws {
        let text = #"{"event":"pusher:subscribe","data":{"auth":"278d425bdf160c739803:58df8b0c","channel":"private-x"}}"#
        let redacted = try JSONValue.parse(Redaction.redact(text))
        #expect(redacted == .object([
            "event": "pusher:subscribe",
            "data": .object(["auth": .string(Redaction.placeholder), "channel": "private-x"]),
        ]))
        let identifier = #"{"identifier":"{\"channel\":\"Room\",\"token\":\"x\"}"}"#
        let nested = try JSONValue.parse(Redaction.redact(identifier))
        #expect(try JSONValue.parse(nested["identifier"]?.stringValue ?? "") == .object([
            "channel": "Room", "token": .string(Redaction.placeholder),
        ]))
    }

    @Test("text cut mid-secret is masked to the end, never shown")
    func truncatedText() {
        let cut = #"→ {"identifier":"{\"channel\":\"Room\",\"token\":\"S3CRETval"#
        #expect(!Redaction.redact(cut).contains("S3CRET"))
        let unterminated = #"{"password":"S3CRETval"#
        #expect(!Redaction.redact(unterminated).contains("S3CRET"))
        // A long frame is redacted before it is cut, so the cut cannot split a secret from its name.
        let long = #"{"pad":""# + String(repeating: "x", count: 500) + #"","token":"S3CRETvalue"}"#
        #expect(!Redaction.describeForLog(long).contains("S3CRET"))
    }

    @Test("whole payloads: every string and number, except named members")
    func everyString() {
        let auth: JSONValue = ["user": "alice", "pin": 1234, "nested": ["code": "S3CRET"], "remember": true]
        #expect(Redaction.redactingEveryString(in: auth) == [
            "user": .string(Redaction.placeholder), "pin": .string(Redaction.placeholder),
            "nested": ["code": .string(Redaction.placeholder)], "remember": true,
        ])
        let identifier: JSONValue = ["channel": "RoomChannel", "room_key": "S3CRET"]
        #expect(Redaction.redactingEveryString(in: identifier, keeping: ["channel"]) == [
            "channel": "RoomChannel", "room_key": .string(Redaction.placeholder),
        ])
    }

    /// Random documents with a secret planted under a secret name at a random depth, inside JSON that
    /// may be encoded into strings once or twice and embedded in log text: the secret never survives.
    @Test("a planted secret never appears (5,000 random documents)")
    func plantedSecretNeverAppears() {
        var random = JSONSeededGenerator(seed: 0x5EC_2E7)
        let secretNames = ["token", "X-Auth-Token", "accessToken", "api_key", "jwt", "password", "Authorization",
                           "client_secret", "auth", "Cookie", "signature", "privateKey"]
        let plainNames = ["channel", "event", "data", "user", "room", "id", "author", "text", "items"]
        for round in 0..<5_000 {
            let secret = "S3" + String((0..<10).map { _ in "abcdefghijkmnpqrstuvwxyz23456789".randomElement(using: &random)! })
            func plant(depth: Int) -> JSONValue {
                var members: [String: JSONValue] = [:]
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    members[plainNames.randomElement(using: &random)!] = .string("v\(Int.random(in: 0...99, using: &random))")
                }
                let inner: JSONValue
                if depth == 0 {
                    let value: JSONValue = switch Int.random(in: 0...3, using: &random) {
                    case 0: .string(secret)
                    case 1: .string("Bearer " + secret)
                    case 2: .array([.string(secret)])
                    default: .object(["value": .string(secret)])
                    }
                    members[secretNames.randomElement(using: &random)!] = value
                    return .object(members)
                }
                inner = plant(depth: depth - 1)
                // Sometimes the subtree travels as JSON text inside a string, as identifiers and Pusher data do.
                members[plainNames.randomElement(using: &random)!] = Bool.random(using: &random)
                    ? .string(inner.serialized()) : inner
                return .object(members)
            }
            let document = plant(depth: Int.random(in: 0...4, using: &random))
            let prefixes = ["", "→ ", "← 42/chat,", "42[\"event\",", "log: ", "{\"wrapped\":"]
            let text: String = switch Int.random(in: 0...3, using: &random) {
            case 0: prefixes.randomElement(using: &random)! + document.serialized()
            case 1: "GET /x?room=1&\(secretNames.randomElement(using: &random)!)=\(secret)&v=2"
            case 2: "\(secretNames.randomElement(using: &random)!): Bearer \(secret)\r\nHost: h"
            default: Redaction.describeForLog(document.serialized(), limit: Int.random(in: 8...200, using: &random))
            }
            let redacted = Redaction.redact(text)
            #expect(!redacted.contains(secret), "round \(round): \(text) → \(redacted)")
            if redacted.contains(secret) { return }
        }
    }

    @Test("JSON that never closes does not make redaction quadratic", .timeLimit(.minutes(1)))
    func linearOnBrackets() {
        // 100,000 nested arrays: a parse attempt at every bracket would take minutes.
        let text = "x " + String(repeating: "[1,", count: 100_000)
        #expect(Redaction.redact(text) == text)
    }
}
