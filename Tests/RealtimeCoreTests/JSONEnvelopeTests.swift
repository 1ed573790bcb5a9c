@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("JSON envelope")
struct JSONEnvelopeTests {
    @Test("keeps a top-level member's value text exactly as written",
          arguments: [
              (#"{"identifier":"{\"channel\":\"E\"}","message":{"a": [1, "}"] ,"b":"x\"y"}}"#, #"{"a": [1, "}"] ,"b":"x\"y"}"#),
              (#"{"message":12345,"identifier":"x"}"#, "12345"),
              (#"{ "identifier" : "x" , "message" : "hi \\ there" }"#, #""hi \\ there""#),
              (#"{"identifier":"x","message":null}"#, "null"),
              (#"{"identifier":"x","message":[{"message":1}]}"#, #"[{"message":1}]"#),
              (#"{"nested":{"message":1},"message":-2.5e3}"#, "-2.5e3"),
              (#"{"identifier":"é✓","message":{"text":"héllo ✓ \"🎉\""}}"#, #"{"text":"héllo ✓ \"🎉\""}"#),
              (#"{"message":"","identifier":"x"}"#, #""""#),
              (#"{"mess\u0061ge":true}"#, "true"),
              (#"{"message":1,"message":[2]}"#, "[2]"),
          ])
    func rawText(text: String, expected: String) throws {
        let envelope = try JSONEnvelope(parsing: text)
        #expect(envelope.rawText(of: "message") == expected)
        #expect(envelope["message"] == (try JSONValue.parse(expected)))
    }

    @Test("has no member for an absent name or a document that is not an object",
          arguments: [#"{"identifier":"x"}"#, #"[1,2]"#, #""message""#, #"{"nested":{"message":1}}"#, "{}", " 7 "])
    func absent(text: String) throws {
        let envelope = try JSONEnvelope(parsing: text)
        #expect(envelope["message"] == nil)
        #expect(envelope.rawText(of: "message") == nil)
        #expect(envelope.document == (try JSONValue.parse(text)))
        #expect(envelope.isObject == text.contains("{"))
    }

    @Test("reads the same value as the parser, the last of a repeated name winning")
    func sameValue() throws {
        let text = #"{"event":"a","channel":"c","data":"{\"x\":1}","event":"b","n":[1,{"k":null}]}"#
        let envelope = try JSONEnvelope(parsing: text)
        #expect(envelope.document == (try JSONValue.parse(text)))
        #expect(envelope["event"] == .string("b"))
        #expect(envelope["data"] == .string(#"{"x":1}"#))
        #expect(envelope.members?.map(\.name) == ["event", "channel", "data", "event", "n"])
    }

    @Test("throws exactly the parser's error for text that is not JSON",
          arguments: ["", "{", #"{"a"}"#, #"{"a":1,}"#, #"{"a":1} x"#, #"{"a":[1,2}"#, #"{"a":"\u"}"#,
                      #"{"a":01}"#, "{\"a\":\"\u{01}\"}", #"{"a":1 "b":2}"#, #"{1:2}"#, "[1,2", "nul"])
    func sameError(text: String) {
        let expected = Result(catching: { () throws(RealtimeError) in try JSONValue.parse(text) })
        let envelope = Result(catching: { () throws(RealtimeError) in try JSONEnvelope(parsing: text) })
        guard case .failure(let wanted) = expected, case .failure(let got) = envelope else {
            Issue.record("both should fail: \(text)")
            return
        }
        #expect(got.code == .invalidJSON)
        #expect(got.message == wanted.message)
        #expect(got.context.offset == wanted.context.offset)
    }

    @Test("counts the top-level object as one level of nesting, as the parser does")
    func depth() throws {
        let one = JSONLimits(maximumDepth: 1)
        #expect(try JSONEnvelope(parsing: #"{"a":1}"#, limits: one)["a"] == .integer(1))
        #expect(throws: RealtimeError.self) { try JSONEnvelope(parsing: #"{"a":[]}"#, limits: one) }
        #expect(throws: RealtimeError.self) { try JSONEnvelope(parsing: "{}", limits: JSONLimits(maximumDepth: 0)) }
        let two = JSONLimits(maximumDepth: 2)
        #expect(try JSONEnvelope(parsing: #"{"a":{"b":[]}}"#, limits: JSONLimits(maximumDepth: 3)).isObject)
        #expect(throws: RealtimeError.self) { try JSONEnvelope(parsing: #"{"a":{"b":[]}}"#, limits: two) }
    }
}

@Suite("JSON parse scratch")
struct JSONParseScratchTests {
    /// Valid, invalid, deep and wide documents in turn: a failed parse must not leave elements behind.
    static let documents = [
        #"["event",{"a":1,"b":[1,2,3]}]"#, #"[1,[2,[3,[4]]]"#, #"{"x":[true,false,null]}"#, #"[1,2,"#,
        "[" + (0..<300).map(String.init).joined(separator: ",") + "]", #"["a",{"k":[1,{"z":"\u00e9"}]}]"#,
        String(repeating: "[", count: 40) + String(repeating: "]", count: 40), #"{"a":"#, "[]", "{}", #""s""#,
        #"{"a":1,"k":{"event":"x"},"b":[2]}"#, #"{"k":"v","k":[1]}"#, #"{"k":[1,}"#,
        "{" + (0..<20).map { #""m\#($0)":\#($0)"# }.joined(separator: ",") + "}",  // more room than is kept
    ]

    @Test("parsing document after document with one scratch, envelopes recycled, gives what fresh parses give")
    func reuse() throws {
        var scratch = JSONParseScratch()
        for _ in 0..<3 {
            for text in Self.documents {
                let fresh = Result(catching: { () throws(RealtimeError) in try JSONValue.parse(text) })
                let reused = Result(catching: { () throws(RealtimeError) in
                    try JSONValue.parse(text[...].utf8, scratch: &scratch)
                })
                let envelope = Result(catching: { () throws(RealtimeError) in
                    // Recycled as the dialects do, so each envelope reuses the last one's member storage.
                    var envelope = try JSONEnvelope(parsing: text, deferring: ["k"], scratch: &scratch)
                    let document = envelope.document
                    envelope.recycle(into: &scratch)
                    #expect(!envelope.isObject && envelope["a"] == nil, "a recycled envelope reads as empty")
                    return document
                })
                switch (fresh, reused, envelope) {
                case (.success(let a), .success(let b), .success(let c)):
                    #expect(a == b && a == c, "\(text)")
                case (.failure(let a), .failure(let b), .failure(let c)):
                    #expect(a.message == b.message && a.message == c.message, "\(text)")
                    #expect(a.context.offset == b.context.offset && a.context.offset == c.context.offset, "\(text)")
                default:
                    Issue.record("the parses disagree on \(text)")
                }
            }
        }
    }
}
