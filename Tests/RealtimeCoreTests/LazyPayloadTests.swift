import Dispatch
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Event payload parsed on first read")
struct LazyPayloadTests {
    @Test("a JSON payload is parsed on first read, once, and 8 threads reading at once all see the same value")
    func parsedOnceUnderConcurrentReaders() {
        for _ in 0..<50 {
            let event = RealtimeEvent(channel: "room", name: "tick", json: #"{"n":1,"text":"hello","ok":true}"#)
            #expect(!event.isPayloadParsed)
            #expect(event.rawData == #"{"n":1,"text":"hello","ok":true}"#)
            let seen = Locked<[JSONValue]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                let value = index % 2 == 0 ? event.data : event.arguments[0]
                seen.withLock { $0.append(value) }
            }
            #expect(event.isPayloadParsed)
            let expected: JSONValue = ["n": 1, "text": "hello", "ok": true]
            #expect(seen.withLock { $0 } == Array(repeating: expected, count: 8))
        }
    }

    @Test("a copy shares the parse; text that is not JSON reads as a string")
    func copiesAndNonJSON() {
        let event = RealtimeEvent(channel: nil, name: "e", json: #"[1,2]"#)
        let copy = event
        #expect(copy.data == [1, 2])
        #expect(event.isPayloadParsed)
        #expect(event.arguments == [[1, 2]])
        let text = RealtimeEvent(channel: nil, name: "e", json: "not json {")
        #expect(text.data == .string("not json {"))
        #expect(text.rawData == "not json {")
    }

    @Test("changing another field keeps the payload lazy until read, and a parsed one parsed; the original is untouched")
    func changesKeepThePayload() {
        let event = RealtimeEvent(channel: "room", name: "tick", json: #"{"n":1}"#)
        var renamed = event
        renamed.name = "tock"
        #expect(!renamed.isPayloadParsed)
        #expect(renamed.data == ["n": 1])
        #expect(renamed.isPayloadParsed)
        #expect(!event.isPayloadParsed)  // its own box: the rename made a new one
        #expect(event.name == "tick")
        var moved = renamed
        moved.channel = "lobby"
        #expect(moved.isPayloadParsed)  // parsed before the change, so carried over
        #expect(moved.data == ["n": 1])
        #expect(moved.rawData == #"{"n":1}"#)
        #expect(moved.channel == "lobby" && renamed.channel == "room")
    }

    @Test("a payload held as a JSON string literal is decoded only when read: data parses its content, rawData is it")
    func stringLiteralPayload() {
        let literal = #""{\"s\":\"caf\u00e9 \\\"q\\\"\",\"n\":[1]}""#[...]
        let event = RealtimeEvent(channel: "c", name: "e", jsonInStringLiteral: literal)
        #expect(!event.isPayloadParsed)
        #expect(event.rawData == #"{"s":"café \"q\"","n":[1]}"#)
        #expect(!event.isPayloadParsed)
        #expect(event.data == ["s": "café \"q\"", "n": [1]])
        #expect(event.arguments == [["s": "café \"q\"", "n": [1]]])
        let text = RealtimeEvent(channel: nil, name: "e", jsonInStringLiteral: #""caf\u00e9 {""#[...])
        #expect(text.data == .string("café {"))
        #expect(text.rawData == "café {")
        var replaced = RealtimeEvent(channel: nil, name: "e", jsonInStringLiteral: #""[1]""#[...])
        replaced.rawData = #""quoted""#
        #expect(replaced.rawData == #""quoted""#)  // the new text is taken as it is, not decoded
        #expect(replaced.data == [1])
    }

    @Test("setting data keeps the arguments as they were, and the other way round, as stored fields would")
    func settersKeepTheOtherField() {
        var event = RealtimeEvent(channel: nil, name: "e", json: #"{"a":1}"#)
        event.data = "replaced"
        #expect(event.data == "replaced")
        #expect(event.arguments == [["a": 1]])
        event.arguments = [1, 2]
        #expect(event.data == "replaced")
        #expect(event.arguments == [1, 2])
        var plain = RealtimeEvent(channel: nil, name: "e", data: 7)
        #expect(plain.arguments == [7])
        plain.data = 8
        #expect(plain.arguments == [7])
        let explicit = RealtimeEvent(channel: nil, name: "e", data: 1, arguments: [1, 2])
        #expect(explicit.arguments == [1, 2])
    }
}
