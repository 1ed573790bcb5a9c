import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("JSONValue as a Codable field")
struct JSONValueCodableTests {
    private struct Envelope: Codable, Equatable {
        var identifier: String
        var message: JSONValue
    }

    @Test("decodes through JSONValue.decode and JSONDecoder alike, and encodes back", arguments: [
        #"{"identifier":"x","message":{"a":[1,2.5,"s",null,true]}}"#,
        #"{"identifier":"x","message":12345}"#,
        #"{"identifier":"x","message":null}"#,
    ])
    func roundTrip(text: String) throws {
        let direct: Envelope = try JSONValue.parse(text).decode()
        let viaFoundation = try JSONDecoder().decode(Envelope.self, from: Data(text.utf8))
        #expect(direct == viaFoundation)
        let encoded = try JSONValue(encoding: direct)
        #expect(encoded == (try JSONValue.parse(text)))
    }

    @Test("integers stay exact, fractions stay doubles")
    func numbers() throws {
        let value = try JSONDecoder().decode(JSONValue.self, from: Data("[9007199254740993, 1.5]".utf8))
        #expect(value == [.integer(9_007_199_254_740_993), .double(1.5)])
    }
}
