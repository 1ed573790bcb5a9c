@_spi(DialectAuthoring) @testable import RealtimeActionCable
import Testing

@Suite("Raw member scanner")
struct RawMemberScannerTests {
    @Test("finds the value text of a top-level member exactly as written",
          arguments: [
              (#"{"identifier":"{\"channel\":\"E\"}","message":{"a": [1, "}"] ,"b":"x\"y"}}"#, #"{"a": [1, "}"] ,"b":"x\"y"}"#),
              (#"{"message":12345,"identifier":"x"}"#, "12345"),
              (#"{ "identifier" : "x" , "message" : "hi \\ there" }"#, #""hi \\ there""#),
              (#"{"identifier":"x","message":null}"#, "null"),
              (#"{"identifier":"x","message":[{"message":1}]}"#, #"[{"message":1}]"#),
              (#"{"nested":{"message":1},"message":-2.5e3}"#, "-2.5e3"),
              (#"{"identifier":"é✓","message":{"text":"héllo ✓ \"🎉\""}}"#, #"{"text":"héllo ✓ \"🎉\""}"#),
              (#"{"message":"","identifier":"x"}"#, #""""#),
          ])
    func finds(text: String, expected: String) {
        #expect(RawMemberScanner.value(of: "message", in: text) == expected)
    }

    @Test("answers nil when the member is absent or the text is not an object",
          arguments: [#"{"identifier":"x"}"#, #"{"identifier":"x","mess\u0061ge":1}"#, #"[1,2]"#, #""message""#, #"{"nested":{"message":1}}"#, "",
                     #"{"message":"unterminated \"#, #"{"message":{"open":[1,2}"#, #"{"message":"#, #"{"messag"#])
    func absent(text: String) {
        #expect(RawMemberScanner.value(of: "message", in: text) == nil)
    }
}
