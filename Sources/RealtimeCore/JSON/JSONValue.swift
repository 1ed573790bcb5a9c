import Foundation

/// A JSON document held in memory, plus one non-JSON case for binary attachments.
///
/// Integers that fit in 64 bits stay exact in `.integer`; every other number is a `.double`.
/// Object keys are unordered; `serialized()` writes them sorted so output is stable.
/// `.binary` exists because Socket.IO carries byte buffers inside its argument lists: dialects that
/// support attachments extract them, and plain JSON serialization writes them as base64 strings.
public enum JSONValue: Sendable, Hashable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer that fits in `Int64`, kept exact: what the parser makes of every number without a
    /// fraction or exponent, except `-0`.
    case integer(Int64)
    /// Any other number: one with a fraction or exponent, an integer beyond `Int64`, or `-0`. Infinity
    /// and NaN have no JSON form: a send refuses them, `serialized()` writes `null`.
    case double(Double)
    /// A string, its escapes decoded.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object: its members by name, in no order (`serialized()` sorts them); when the parser
    /// meets a name twice, the last value wins.
    case object([String: JSONValue])
    /// Bytes carried next to the JSON text (Socket.IO attachments). Not part of RFC 8259.
    case binary(Data)
}

extension JSONValue {
    /// The member named `key` when this is an object, otherwise `nil`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The element at `index` when this is an array and the index is in range, otherwise `nil`.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    /// The string payload, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The number as an `Int64` when it is integral and in range.
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.2e18: return Int64(value)
        default: return nil
        }
    }

    /// The number as a `Double`.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The Boolean payload, if this is a Boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The bytes, if this is a binary attachment.
    public var binaryValue: Data? {
        if case .binary(let value) = self { return value }
        return nil
    }

    /// `true` for `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// What kind of value this is, for messages that say what was given instead of what was wanted
    /// ("an object", "a string"); never the value itself, which may be a secret.
    package var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        case .binary: "binary data"
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral {
    /// `nil` as JSON `null`.
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// A Boolean literal as `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// An integer literal as `.integer`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A floating-point literal as `.double`, even a whole one (`1.0`).
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string literal as `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array literal as `.array`.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// A dictionary literal as `.object`; a name given twice keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
