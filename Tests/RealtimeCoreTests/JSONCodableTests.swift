import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("JSON Codable bridge")
struct JSONCodableTests {
    struct Order: Codable, Equatable {
        var orderId: Int
        var customerName: String
        var total: Double
        var tags: [String]
        var shippedAt: Date?
        var note: String?
        var lines: [Line]

        struct Line: Codable, Equatable {
            var sku: String
            var unitCount: Int
        }
    }

    static let orderJSON = #"""
    {"order_id":12345,"customer_name":"Ada","total":99.95,"tags":["gift","express"],
     "shipped_at":1700000000,"note":null,"lines":[{"sku":"A-1","unit_count":2}]}
    """#

    static let order = Order(orderId: 12345, customerName: "Ada", total: 99.95, tags: ["gift", "express"],
                             shippedAt: Date(timeIntervalSince1970: 1_700_000_000), note: nil,
                             lines: [Order.Line(sku: "A-1", unitCount: 2)])

    @Test("decode honours snake_case keys and the date strategy")
    func decodeWithStrategies() throws {
        let value = try JSONValue.parse(Self.orderJSON)
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .secondsSince1970
        #expect(try value.decode(Order.self, decoder: decoder) == Self.order)
    }

    @Test("encode with snake_case gives the same value the text parses to")
    func encodeWithStrategies() throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .secondsSince1970
        let encoded = try JSONValue(encoding: Self.order, encoder: encoder)
        #expect(encoded["order_id"] == 12345)
        #expect(encoded["customer_name"] == "Ada")
        #expect(encoded["total"]?.doubleValue == 99.95)
        #expect(encoded["lines"]?[0]?["unit_count"] == 2)
        #expect(encoded["shipped_at"]?.doubleValue == 1_700_000_000)

        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .secondsSince1970
        #expect(try encoded.decode(Order.self, decoder: decoder) == Self.order)
    }

    @Test("decode with the default decoder uses the keys as written")
    func decodeDefault() throws {
        let value: JSONValue = ["sku": "B-2", "unitCount": 5]
        #expect(try value.decode(Order.Line.self) == Order.Line(sku: "B-2", unitCount: 5))
        #expect(try JSONValue.integer(3).decode(Int.self) == 3)
        #expect(try JSONValue.string("x").decode(String.self) == "x")
        #expect(try JSONValue.array([1, 2]).decode([Int].self) == [1, 2])
    }

    @Test("a value of the wrong shape throws DecodingError")
    func decodeMismatch() {
        let value: JSONValue = ["sku": 7, "unitCount": 5]
        #expect(throws: DecodingError.self) { try value.decode(Order.Line.self) }
        #expect(throws: DecodingError.self) { try JSONValue.string("x").decode(Int.self) }
    }

    @Test("binary attachments decode as base64 Data")
    func binaryDecodesAsData() throws {
        let bytes = Data([1, 2, 3, 250])
        #expect(try JSONValue.binary(bytes).decode(Data.self) == bytes)
    }
}
