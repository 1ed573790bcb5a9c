import Foundation

extension JSONValue {
    /// Decodes this value into `T` as `decoder` would decode the same JSON text.
    ///
    /// The value is read directly, without writing and re-parsing text, following `decoder`'s key,
    /// date, data and non-conforming float strategies and its `userInfo`. `.binary` decodes as `Data`
    /// (or as its base64 text where a `String` is wanted). Because `JSONValue` keeps integers beyond
    /// the `Int64` range as doubles, a `UInt64` above `Int64.max` decodes only if the double is exact.
    ///
    /// - Throws: `DecodingError`, as `JSONDecoder` would, when the value does not fit `T`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        guard let options = JSONValueDecoder.Options(decoder) else {
            // A strategy this package does not know yet: let JSONDecoder apply it to the text.
            var bytes: [UInt8] = []
            write(into: &bytes)
            return try decoder.decode(T.self, from: Data(bytes))
        }
        return try JSONValueDecoder(value: self, options: options, codingPath: []).decode(T.self, from: self, at: [])
    }

    /// Encodes `value` with `encoder` and parses the result.
    ///
    /// - Throws: `EncodingError` from `encoder`, or `RealtimeError` (`.invalidJSON`) if its output
    ///   cannot be parsed (for example a non-finite number written with a custom strategy).
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws {
        let data = try encoder.encode(value)
        self = try JSONValue.parse(data)
    }
}

/// `JSONValue` fields inside app `Codable` types (`struct Reply: Decodable { let message: JSONValue }`).
extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// `.binary` encodes as `Data` (the encoder's data strategy decides its form).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        case .binary(let value): try container.encode(value)
        }
    }
}
