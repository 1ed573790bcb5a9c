import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// `JSONValue.decode` reads the tree directly; these tests hold it to what `JSONDecoder` does with
/// the same text and the same strategies, for results and for errors.
@Suite("JSONValue direct decoder")
struct JSONValueDecoderTests {
    struct Everything: Codable, Equatable {
        enum Mood: String, Codable { case happy, grumpy }
        enum Shape: Codable, Equatable {
            case circle(radius: Double)
            case square(side: Int)
            case none
        }

        var flag: Bool
        var text: String
        var double: Double
        var float: Float
        var int: Int
        var int8: Int8
        var int16: Int16
        var int32: Int32
        var int64: Int64
        var uint: UInt
        var uint8: UInt8
        var uint16: UInt16
        var uint32: UInt32
        var uint64: UInt64
        var optionalPresent: String?
        var optionalNull: Int?
        var optionalMissing: Int?
        var list: [Int]
        var nested: [[String]]
        var map: [String: Int]
        var mood: Mood
        var shapes: [Shape]
        var url: URL
        var when: Date
        var bytes: Data
        var price: Decimal
    }

    static let everythingJSON = #"""
    {"flag":true,"text":"héllo \"x\"","double":-2.5e-3,"float":1.5,"int":-7,"int8":-128,"int16":32767,
     "int32":-2147483648,"int64":9223372036854775807,"uint":7,"uint8":255,"uint16":65535,"uint32":4294967295,
     "uint64":9007199254740992,"optionalPresent":"here","optionalNull":null,"list":[1,2,3],"nested":[["a"],[]],
     "map":{"snake_key":1,"camelKey":2},"mood":"grumpy",
     "shapes":[{"circle":{"radius":2.5}},{"square":{"side":3}},{"none":{}}],
     "url":"https://example.com/a?b=c","when":722470000.5,"bytes":"AAEC/w==","price":12.5}
    """#

    /// Decodes `text` both ways and checks the results agree.
    func agree<T: Decodable & Equatable>(_ type: T.Type, _ text: String, _ decoder: JSONDecoder = JSONDecoder(),
                                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reference = try decoder.decode(T.self, from: Data(text.utf8))
        let direct = try JSONValue.parse(text).decode(T.self, decoder: decoder)
        #expect(direct == reference, sourceLocation: sourceLocation)
    }

    /// Decodes `text` both ways and checks both fail the same way.
    func failAlike<T: Decodable>(_ type: T.Type, _ text: String, _ decoder: JSONDecoder = JSONDecoder(),
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        var referenceFailure: String?
        do { _ = try decoder.decode(T.self, from: Data(text.utf8)) } catch { referenceFailure = Self.summary(error) }
        var directFailure: String?
        do { _ = try JSONValue.parse(text).decode(T.self, decoder: decoder) } catch { directFailure = Self.summary(error) }
        #expect(referenceFailure != nil, "JSONDecoder accepted \(text)", sourceLocation: sourceLocation)
        #expect(directFailure == referenceFailure, sourceLocation: sourceLocation)
    }

    /// The error kind and coding path, which callers rely on; the wording may differ.
    static func summary(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not a DecodingError: \(error)" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) at \(path(context))"
        case .typeMismatch(_, let context): return "typeMismatch at \(path(context))"
        case .valueNotFound(_, let context): return "valueNotFound at \(path(context))"
        case .dataCorrupted(let context): return "dataCorrupted at \(path(context))"
        @unknown default: return "unknown"
        }
    }

    @Test("every primitive, optional, nested, enum and special type decodes as JSONDecoder decodes it")
    func everything() throws {
        try agree(Everything.self, Self.everythingJSON)
        let value = try JSONValue.parse(Self.everythingJSON).decode(Everything.self)
        #expect(value.int64 == .max)
        #expect(value.map == ["snake_key": 1, "camelKey": 2])
        #expect(value.shapes == [.circle(radius: 2.5), .square(side: 3), .none])
        #expect(value.bytes == Data([0, 1, 2, 255]))
    }

    @Test("snake_case keys convert like JSONDecoder's, but [String: T] keys stay as written")
    func snakeCase() throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        try agree(Everything.self, Self.everythingJSON
            .replacingOccurrences(of: "optionalPresent", with: "optional_present")
            .replacingOccurrences(of: "optionalNull", with: "optional_null"), decoder)

        let keys = ["a_b", "_c_d_", "ALL_CAPS", "plain", "x__y", "__", "_", "", "a_b_c", "snake_Case_Key",
                    "url_ID", "é_ñandú", "already_camelCase", "trailing_", "_leading", "a1_b2", "HTTP_status_code"]
        let object = JSONValue.object(Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, .integer(Int64($0))) }))
        try agree(KeyNames.self, object.serialized(), decoder)
        let converted = try object.decode(KeyNames.self, decoder: decoder).names
        #expect(converted.contains("aBC"))
        #expect(converted.contains("_cD_"))
        #expect(converted.contains("allCaps"))
    }

    @Test("a custom key strategy gets the coding path and its result is used")
    func customKeys() throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in
            let last = path.last!.stringValue
            return AnyKey(stringValue: last.prefix(1).lowercased() + last.dropFirst())
        }
        try agree(JSONCodableTests.Order.Line.self, #"{"Sku":"A","UnitCount":3}"#, decoder)
    }

    @Test("every date strategy agrees with JSONDecoder")
    func dateStrategies() throws {
        struct Stamp: Codable, Equatable { var at: Date }
        let decoder = JSONDecoder()
        try agree(Stamp.self, #"{"at":722470000.25}"#, decoder)
        decoder.dateDecodingStrategy = .secondsSince1970
        try agree(Stamp.self, #"{"at":1700000000}"#, decoder)
        decoder.dateDecodingStrategy = .millisecondsSince1970
        try agree(Stamp.self, #"{"at":1700000000123}"#, decoder)
        decoder.dateDecodingStrategy = .iso8601
        try agree(Stamp.self, #"{"at":"2023-11-14T22:13:20Z"}"#, decoder)
        try agree(Stamp.self, #"{"at":"2023-11-14T23:13:20+01:00"}"#, decoder)
        // Same kind of error; JSONDecoder leaves the path empty here, the direct decoder names "at".
        #expect(throws: DecodingError.self) { try JSONValue.parse(#"{"at":"yesterday"}"#).decode(Stamp.self, decoder: decoder) }
        do {
            _ = try JSONValue.parse(#"{"at":"yesterday"}"#).decode(Stamp.self, decoder: decoder)
        } catch {
            #expect(Self.summary(error) == "dataCorrupted at at")
        }
        decoder.dateDecodingStrategy = .custom { decoder in
            let days = try decoder.singleValueContainer().decode(Int.self)
            return Date(timeIntervalSince1970: Double(days) * 86_400)
        }
        try agree(Stamp.self, #"{"at":19000}"#, decoder)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy/MM/dd"
        decoder.dateDecodingStrategy = .formatted(formatter)
        try agree(Stamp.self, #"{"at":"2024/02/29"}"#, decoder)
    }

    @Test("data strategies, .binary values and non-conforming floats")
    func dataAndFloats() throws {
        struct Blob: Codable, Equatable { var data: Data }
        let decoder = JSONDecoder()
        try agree(Blob.self, #"{"data":"aGk="}"#, decoder)
        try failAlike(Blob.self, #"{"data":"not base64!"}"#, decoder)
        decoder.dataDecodingStrategy = .deferredToData
        try agree(Blob.self, #"{"data":[104,105]}"#, decoder)
        #expect(try JSONValue.object(["data": .binary(Data("hi".utf8))]).decode(Blob.self).data == Data("hi".utf8))

        struct Measure: Codable, Equatable { var value: Double }
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        try agree(Measure.self, #"{"value":"+inf"}"#, decoder)
        try agree(Measure.self, #"{"value":"-inf"}"#, decoder)
        let nan = try JSONValue.parse(#"{"value":"nan"}"#).decode(Measure.self, decoder: decoder)
        #expect(nan.value.isNaN)
        try failAlike(Measure.self, #"{"value":"+inf"}"#)
    }

    @Test("errors have the same kind and coding path as JSONDecoder's")
    func errors() throws {
        typealias Line = JSONCodableTests.Order.Line
        try failAlike(Line.self, #"{"sku":"A"}"#)
        try failAlike(Line.self, #"{"sku":1,"unitCount":2}"#)
        try failAlike(Line.self, #"{"sku":null,"unitCount":2}"#)
        try failAlike(Line.self, #"["A",2]"#)
        try failAlike([Line].self, #"[{"sku":"A","unitCount":1},{"sku":"B","unitCount":"2"}]"#)
        try failAlike([String: [Int]].self, #"{"a":[1,2],"b":[3,null]}"#)
        try failAlike(Int8.self, "300")
        try failAlike(UInt.self, "-1")
        try failAlike(Int.self, "1.5")
        try failAlike(Float.self, "1e300")
        try failAlike(Bool.self, "1")
        try failAlike(String.self, "null")
        try failAlike(Everything.Mood.self, #""sad""#)
        try failAlike(OptionalBox.self, #"{"count":"3"}"#)
        try failAlike(OptionalBox.self, #"{"count":1,"line":{"sku":2}}"#)
        try agree(OptionalBox.self, #"{"count":null,"line":{"sku":"A","unitCount":1},"flag":false}"#)
        try agree(OptionalBox.self, "{}")
        try failAlike(Pair.self, "[1]")
        try agree(Pair.self, "[1,2]")
        try agree(Int.self, "1.0")
        try agree(Double.self, "12")
    }

    @Test("a Codable class hierarchy decodes through superDecoder")
    func superDecoders() throws {
        try agree(Derived.self, #"{"extra":"x","super":{"base":4}}"#)
        #expect(try JSONValue.parse(#"{"extra":"x","super":{"base":4}}"#).decode(Derived.self).base == 4)
    }

    @Test("userInfo reaches the decoded types")
    func userInfo() throws {
        let decoder = JSONDecoder()
        let key = CodingUserInfoKey(rawValue: "scale")!
        decoder.userInfo[key] = 10
        try agree(Scaled.self, "4", decoder)
        #expect(try JSONValue.integer(4).decode(Scaled.self, decoder: decoder).value == 40)
    }

    // MARK: Types for the tests above

    struct KeyNames: Decodable, Equatable {
        var names: Set<String>
        init(from decoder: any Decoder) throws {
            names = Set(try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    struct OptionalBox: Decodable, Equatable {
        var count: UInt8?
        var line: JSONCodableTests.Order.Line?
        var flag: Bool?
    }

    struct Pair: Decodable, Equatable {
        var first: Int
        var second: Int
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            first = try container.decode(Int.self)
            second = try container.decode(Int.self)
        }
    }

    class Base: Decodable {
        var base: Int
    }

    final class Derived: Base, Equatable {
        var extra: String
        enum CodingKeys: String, CodingKey { case extra }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            extra = try container.decode(String.self, forKey: .extra)
            try super.init(from: container.superDecoder())
        }
        static func == (left: Derived, right: Derived) -> Bool { left.base == right.base && left.extra == right.extra }
    }

    struct Scaled: Decodable, Equatable {
        var value: Int
        init(from decoder: any Decoder) throws {
            let scale = decoder.userInfo[CodingUserInfoKey(rawValue: "scale")!] as? Int ?? 1
            value = try decoder.singleValueContainer().decode(Int.self) * scale
        }
    }
}
