import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("JSON serializer")
struct JSONSerializerTests {
    @Test("output is compact with object members sorted by name")
    func compactSortedOutput() {
        let value: JSONValue = ["b": 1, "a": [true, nil, "x"], "c": ["z": 0, "y": .object([:])], "": .array([])]
        #expect(value.serialized() == #"{"":[],"a":[true,null,"x"],"b":1,"c":{"y":{},"z":0}}"#)
    }

    @Test("scalars at the top level")
    func scalars() {
        #expect(JSONValue.null.serialized() == "null")
        #expect(JSONValue.bool(true).serialized() == "true")
        #expect(JSONValue.bool(false).serialized() == "false")
        #expect(JSONValue.integer(0).serialized() == "0")
        #expect(JSONValue.integer(-42).serialized() == "-42")
        #expect(JSONValue.integer(.max).serialized() == "9223372036854775807")
        #expect(JSONValue.integer(.min).serialized() == "-9223372036854775808")
        #expect(JSONValue.string("hi").serialized() == #""hi""#)
    }

    @Test("strings escape quote, backslash and control characters, and nothing else")
    func stringEscaping() {
        #expect(JSONValue.string("a\"b\\c").serialized() == #""a\"b\\c""#)
        #expect(JSONValue.string("\n\r\t").serialized() == #""\n\r\t""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{8}\u{C}\u{1F}").serialized() == #""\u0000\u0001\u0008\u000c\u001f""#)
        #expect(JSONValue.string("/ é € 😀 \u{7F} \u{2028}").serialized() == "\"/ é € 😀 \u{7F} \u{2028}\"")
        #expect(JSONValue.object(["k\"\n": 1]).serialized() == #"{"k\"\n":1}"#)
    }

    @Test("doubles round-trip, stay doubles, and non-finite values become null")
    func doubles() throws {
        #expect(JSONValue.double(1.0).serialized() == "1.0")
        #expect(JSONValue.double(-0.0).serialized() == "-0.0")
        #expect(JSONValue.double(0.1).serialized() == "0.1")
        #expect(JSONValue.double(1e16).serialized() == "1e+16")
        #expect(JSONValue.double(.infinity).serialized() == "null")
        #expect(JSONValue.double(-.infinity).serialized() == "null")
        #expect(JSONValue.double(.nan).serialized() == "null")
        for value in [1.0, -0.0, 0.1, 1e16, 1e-7, 123456789.125, .greatestFiniteMagnitude,
                      .leastNonzeroMagnitude, .leastNormalMagnitude, -2.5e-300] {
            let text = JSONValue.double(value).serialized()
            let parsed = try JSONValue.parse(text)
            guard case .double(let back) = parsed else {
                Issue.record("\(text) parsed as \(parsed)")
                continue
            }
            #expect(back.bitPattern == value.bitPattern, "\(text)")
        }
    }

    @Test("binary attachments are written as base64 strings")
    func binary() {
        #expect(JSONValue.binary(Data([0, 1, 2, 0xFF])).serialized() == #""AAEC/w==""#)
        #expect(JSONValue.array([.binary(Data())]).serialized() == #"[""]"#)
    }

    @Test("write(into:) appends to what the buffer already holds")
    func writeAppends() {
        var buffer = Array("42".utf8)
        JSONValue.array([1, "a"]).write(into: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"42[1,"a"]"#)
    }

    @Test("description prints compact JSON, also inside ChannelID")
    func description() {
        let value: JSONValue = ["room": "lobby", "id": 7]
        #expect(value.description == #"{"id":7,"room":"lobby"}"#)
        #expect("\(value)" == value.serialized())
        let channel = ChannelID("ChatChannel", params: ["room": "lobby"])
        #expect(channel.description == #"ChatChannel{"room":"lobby"}"#)
    }

    @Test("parse(serialized()) gives back random values from a seeded generator")
    func randomRoundTrips() throws {
        var random = RandomJSONValues(seed: 0x5EED)
        for _ in 0..<2_000 {
            let value = random.value()
            let text = value.serialized()
            let parsed = try JSONValue.parse(text)
            #expect(parsed == value, "\(text)")
            // Serializing is deterministic: the same value always gives the same text.
            #expect(parsed.serialized() == text)
        }
    }

    @Test("serialized text is accepted by JSONSerialization too")
    func foundationAcceptsOutput() throws {
        var random = RandomJSONValues(seed: 7)
        for _ in 0..<300 {
            let value = random.value()
            let data = Data(value.serialized().utf8)
            #expect(throws: Never.self) {
                _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            }
        }
    }
}
