import Foundation

// INTERIM: Foundation-backed bodies so the API compiles while the package's own parser is written.
// Replaced by JSONParser.swift / JSONSerializer.swift (same signatures).

/// Limits applied while parsing untrusted JSON.
public struct JSONLimits: Sendable, Hashable {
    /// Deepest allowed nesting of arrays and objects.
    public var maximumDepth: Int
    public init(maximumDepth: Int = 512) { self.maximumDepth = maximumDepth }
    public static let `default` = JSONLimits()
}

extension JSONValue {
    /// Parses RFC 8259 JSON text. Errors carry code `.invalidJSON` and the byte offset.
    public static func parse(_ text: String, limits: JSONLimits = .default) throws(RealtimeError) -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }

    /// Parses RFC 8259 JSON from UTF-8 bytes.
    public static func parse(_ bytes: [UInt8], limits: JSONLimits = .default) throws(RealtimeError) -> JSONValue {
        do {
            let object = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            return JSONValue(foundation: object)
        } catch {
            throw RealtimeError(.invalidJSON, "invalid JSON", context: .init(offset: 0))
        }
    }

    private init(foundation object: Any) {
        switch object {
        case let number as NSNumber where String(cString: number.objCType) == "c" && (number == 0 || number == 1) && "\(type(of: number))".contains("Bool"):
            self = .bool(number.boolValue)
        case let number as NSNumber:
            self = Double(number.int64Value) == number.doubleValue ? .integer(number.int64Value) : .double(number.doubleValue)
        case let string as String: self = .string(string)
        case let array as [Any]: self = .array(array.map(JSONValue.init(foundation:)))
        case let dict as [String: Any]: self = .object(dict.mapValues(JSONValue.init(foundation:)))
        default: self = .null
        }
    }

    /// Compact JSON text with object keys sorted. `.binary` is written as a base64 string.
    public func serialized() -> String {
        var out = [UInt8]()
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends compact JSON text (sorted keys) to `buffer`.
    public func write(into buffer: inout [UInt8]) {
        switch self {
        case .null: buffer.append(contentsOf: "null".utf8)
        case .bool(let value): buffer.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): buffer.append(contentsOf: String(value).utf8)
        case .double(let value): buffer.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .string(let value): Self.writeString(value, into: &buffer)
        case .binary(let data): Self.writeString(data.base64EncodedString(), into: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                element.write(into: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let members):
            buffer.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &buffer)
                buffer.append(UInt8(ascii: ":"))
                members[key]!.write(into: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ string: String, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): buffer.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): buffer.append(contentsOf: "\\\\".utf8)
            case 0x0A: buffer.append(contentsOf: "\\n".utf8)
            case 0x0D: buffer.append(contentsOf: "\\r".utf8)
            case 0x09: buffer.append(contentsOf: "\\t".utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                buffer.append(contentsOf: "\\u00".utf8)
                buffer.append(hex[Int(byte >> 4)])
                buffer.append(hex[Int(byte & 0xF)])
            default: buffer.append(byte)
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Decodes this value into `T` with `decoder`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        var bytes = [UInt8]()
        write(into: &bytes)
        return try decoder.decode(T.self, from: Data(bytes))
    }

    /// Encodes `value` with `encoder` and parses the result.
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws {
        let data = try encoder.encode(value)
        self = try JSONValue.parse([UInt8](data))
    }
}
