import Foundation

/// A `Decoder` that reads a `JSONValue` tree directly, so typed decoding skips writing and
/// re-parsing text. It follows `JSONDecoder`'s rules: its key, date, data and non-conforming float
/// strategies, its `userInfo`, its error kinds, and its special handling of `Date`, `Data`, `URL`,
/// `Decimal` and `[String: T]` (whose keys are never converted).
struct JSONValueDecoder: Decoder {
    let value: JSONValue
    let options: Options
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }

    /// The strategies of one `JSONDecoder`, read once per `decode` call.
    final class Options {
        enum KeyRule {
            case useDefaultKeys
            case convertFromSnakeCase
            case custom(([any CodingKey]) -> any CodingKey)
        }

        enum DateRule {
            case deferredToDate
            case secondsSince1970
            case millisecondsSince1970
            case iso8601
            case custom((any Decoder) throws -> Date)
        }

        enum DataRule {
            case deferredToData
            case base64
            case custom((any Decoder) throws -> Data)
        }

        let keyRule: KeyRule
        let dateRule: DateRule
        let dataRule: DataRule
        /// Strings standing for +infinity, -infinity and NaN, when the decoder accepts them.
        let nonConformingFloats: (positiveInfinity: String, negativeInfinity: String, nan: String)?
        let userInfo: [CodingUserInfoKey: Any]

        /// `nil` when `decoder` uses a strategy this type does not handle (such as a case a newer
        /// Foundation adds), so the caller can let `JSONDecoder` itself do the work.
        init?(_ decoder: JSONDecoder) {
            // `if case` rather than `switch`: the strategy enums differ between Foundation versions.
            let keys = decoder.keyDecodingStrategy
            if case .useDefaultKeys = keys {
                keyRule = .useDefaultKeys
            } else if case .convertFromSnakeCase = keys {
                keyRule = .convertFromSnakeCase
            } else if case .custom(let convert) = keys {
                keyRule = .custom(convert)
            } else {
                return nil
            }

            let dates = decoder.dateDecodingStrategy
            if case .deferredToDate = dates {
                dateRule = .deferredToDate
            } else if case .secondsSince1970 = dates {
                dateRule = .secondsSince1970
            } else if case .millisecondsSince1970 = dates {
                dateRule = .millisecondsSince1970
            } else if case .iso8601 = dates {
                dateRule = .iso8601
            } else if case .custom(let decodeDate) = dates {
                dateRule = .custom(decodeDate)
            } else {
                return nil
            }

            let data = decoder.dataDecodingStrategy
            if case .base64 = data {
                dataRule = .base64
            } else if case .deferredToData = data {
                dataRule = .deferredToData
            } else if case .custom(let decodeData) = data {
                dataRule = .custom(decodeData)
            } else {
                return nil
            }

            let floats = decoder.nonConformingFloatDecodingStrategy
            if case .throw = floats {
                nonConformingFloats = nil
            } else if case .convertFromString(let positive, let negative, let nan) = floats {
                nonConformingFloats = (positive, negative, nan)
            } else {
                return nil
            }
            userInfo = decoder.userInfo
        }
    }

    init(value: JSONValue, options: Options, codingPath: [any CodingKey]) {
        self.value = value
        self.options = options
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw mismatch([String: JSONValue].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, members: convertedKeys(members)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw mismatch([JSONValue].self, value, codingPath)
        }
        return UnkeyedContainer(decoder: self, elements: elements)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self)
    }

    // MARK: Keys

    private func convertedKeys(_ members: [String: JSONValue]) -> [String: JSONValue] {
        switch options.keyRule {
        case .useDefaultKeys:
            return members
        case .convertFromSnakeCase:
            guard members.keys.contains(where: { $0.utf8.contains(UInt8(ascii: "_")) }) else { return members }
            return Dictionary(members.map { (Self.camelCase(fromSnakeCase: $0.key), $0.value) },
                              uniquingKeysWith: { first, _ in first })
        case .custom(let convert):
            return Dictionary(members.map { (convert(codingPath + [JSONCodingKey($0.key)]).stringValue, $0.value) },
                              uniquingKeysWith: { first, _ in first })
        }
    }

    /// `JSONDecoder`'s snake-case rule: leading and trailing underscores stay, inner words are joined
    /// with the first lowercased and the rest capitalized; a key without inner underscores is unchanged.
    static func camelCase(fromSnakeCase key: String) -> String {
        guard let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        var last = key.index(before: key.endIndex)
        while last > first && key[last] == "_" { key.formIndex(before: &last) }
        let words = key[first...last].split(separator: "_")
        guard words.count > 1 else { return key }
        let joined = words[0].lowercased() + words.dropFirst().map(\.capitalized).joined()
        return String(key[..<first]) + joined + String(key[key.index(after: last)...])
    }

    // MARK: Values

    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, at path: [any CodingKey]) throws -> T {
        if T.self == JSONValue.self { return value as! T }
        if T.self == Date.self { return try decodeDate(value, at: path) as! T }
        if T.self == Data.self { return try decodeData(value, at: path) as! T }
        if T.self == URL.self {
            let text = try decodeString(value, at: path)
            guard let url = URL(string: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Invalid URL string."))
            }
            return url as! T
        }
        if T.self == Decimal.self { return try decodeDecimal(value, at: path) as! T }
        if let dictionary = T.self as? any StringKeyedDictionary.Type {
            return try dictionary.decodeMembers(value, decoder: self, at: path) as! T
        }
        return try T(from: JSONValueDecoder(value: value, options: options, codingPath: path))
    }

    func decodeBool(_ value: JSONValue, at path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(Bool.self, value, path()) }
        return bool
    }

    func decodeString(_ value: JSONValue, at path: @autoclosure () -> [any CodingKey]) throws -> String {
        switch value {
        case .string(let string): return string
        case .binary(let data): return data.base64EncodedString()
        default: throw mismatch(String.self, value, path())
        }
    }

    func decodeInteger<I: FixedWidthInteger>(_ value: JSONValue, as type: I.Type, at path: @autoclosure () -> [any CodingKey]) throws -> I {
        let result: I?
        switch value {
        case .integer(let integer): result = I(exactly: integer)
        case .double(let double): result = I(exactly: double)
        default: throw mismatch(I.self, value, path())
        }
        guard let result else {
            throw DecodingError.dataCorrupted(.init(codingPath: path(),
                debugDescription: "Parsed JSON number <\(value)> does not fit in \(I.self)."))
        }
        return result
    }

    func decodeFloat<F: BinaryFloatingPoint>(_ value: JSONValue, as type: F.Type,
                                             at path: @autoclosure () -> [any CodingKey]) throws -> F {
        switch value {
        case .integer(let integer):
            return F(integer)
        case .double(let double):
            guard double.isNaN || abs(double) <= Double(F.greatestFiniteMagnitude) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path(),
                    debugDescription: "Parsed JSON number <\(double)> does not fit in \(F.self)."))
            }
            return F(double)
        case .string(let string):
            if let names = options.nonConformingFloats {
                if string == names.positiveInfinity { return .infinity }
                if string == names.negativeInfinity { return -.infinity }
                if string == names.nan { return .nan }
            }
            throw mismatch(F.self, value, path())
        default:
            throw mismatch(F.self, value, path())
        }
    }

    private func decodeDate(_ value: JSONValue, at path: [any CodingKey]) throws -> Date {
        switch options.dateRule {
        case .deferredToDate:
            return try Date(from: JSONValueDecoder(value: value, options: options, codingPath: path))
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try decodeFloat(value, as: Double.self, at: path))
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: try decodeFloat(value, as: Double.self, at: path) / 1000)
        case .iso8601:
            let text = try decodeString(value, at: path)
            guard let date = try? Date.ISO8601FormatStyle().parse(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path,
                    debugDescription: "Expected date string to be ISO8601-formatted."))
            }
            return date
        case .custom(let decodeDate):
            return try decodeDate(JSONValueDecoder(value: value, options: options, codingPath: path))
        }
    }

    private func decodeData(_ value: JSONValue, at path: [any CodingKey]) throws -> Data {
        if case .binary(let data) = value { return data }
        switch options.dataRule {
        case .base64:
            let text = try decodeString(value, at: path)
            guard let data = Data(base64Encoded: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path,
                    debugDescription: "Encountered Data is not valid Base64."))
            }
            return data
        case .deferredToData:
            return try Data(from: JSONValueDecoder(value: value, options: options, codingPath: path))
        case .custom(let decodeData):
            return try decodeData(JSONValueDecoder(value: value, options: options, codingPath: path))
        }
    }

    private func decodeDecimal(_ value: JSONValue, at path: [any CodingKey]) throws -> Decimal {
        switch value {
        case .integer(let integer):
            return Decimal(integer)
        case .double(let double) where double.isFinite:
            // The shortest text that round-trips is what the sender most likely wrote.
            guard let decimal = Decimal(string: double.description, locale: Locale(identifier: "en_US_POSIX")) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path,
                    debugDescription: "Parsed JSON number <\(double)> does not fit in Decimal."))
            }
            return decimal
        default:
            throw mismatch(Decimal.self, value, path)
        }
    }

    /// `valueNotFound` for null, `typeMismatch` for anything else, worded like `JSONDecoder`.
    func mismatch(_ expected: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        if case .null = value {
            return DecodingError.valueNotFound(expected, .init(codingPath: path,
                debugDescription: "Cannot get value of type \(expected) -- found null value instead"))
        }
        let found: String
        switch value {
        case .null: found = "null"
        case .bool: found = "bool"
        case .integer, .double: found = "number"
        case .string: found = "a string"
        case .array: found = "an array"
        case .object: found = "a dictionary"
        case .binary: found = "binary data"
        }
        return DecodingError.typeMismatch(expected, .init(codingPath: path,
            debugDescription: "Expected to decode \(expected) but found \(found) instead."))
    }
}

/// A coding key for array positions and for names that have no `CodingKey` type of their own.
struct JSONCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ string: String) {
        stringValue = string
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}

/// `[String: T]` decodes member by member with its keys as written, as `JSONDecoder` does.
protocol StringKeyedDictionary {
    static func decodeMembers(_ value: JSONValue, decoder: JSONValueDecoder, at path: [any CodingKey]) throws -> Self
}

extension Dictionary: StringKeyedDictionary where Key == String, Value: Decodable {
    static func decodeMembers(_ value: JSONValue, decoder: JSONValueDecoder, at path: [any CodingKey]) throws -> Self {
        guard case .object(let members) = value else { throw decoder.mismatch(Self.self, value, path) }
        var result = Self(minimumCapacity: members.count)
        for (name, member) in members {
            result[name] = try decoder.decode(Value.self, from: member, at: path + [JSONCodingKey(name)])
        }
        return result
    }
}

// MARK: Containers

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: JSONValueDecoder
    let members: [String: JSONValue]
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return value
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.decodeBool(member(key), at: path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder.decodeString(member(key), at: path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder.decodeFloat(member(key), as: type, at: path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder.decodeFloat(member(key), as: type, at: path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder.decodeInteger(member(key), as: type, at: path(key)) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder.decode(type, from: member(key), at: path(key)) }

    // One lookup per optional member instead of the default's three (contains, decodeNil, decode).
    private func presentMember(_ key: Key) -> JSONValue? {
        guard let value = members[key.stringValue], !value.isNull else { return nil }
        return value
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeBool(value, at: path(key))
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeString(value, at: path(key))
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeFloat(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeFloat(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decodeInteger(value, as: type, at: path(key))
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = presentMember(key) else { return nil }
        return try decoder.decode(type, from: value, at: path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try JSONValueDecoder(value: member(key), options: decoder.options, codingPath: path(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONValueDecoder(value: member(key), options: decoder.options, codingPath: path(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = JSONCodingKey("super")
        return JSONValueDecoder(value: members[key.stringValue] ?? .null, options: decoder.options, codingPath: codingPath + [key])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONValueDecoder(value: members[key.stringValue] ?? .null, options: decoder.options, codingPath: path(key))
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: JSONValueDecoder
    let elements: [JSONValue]
    private(set) var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    init(decoder: JSONValueDecoder, elements: [JSONValue]) {
        self.decoder = decoder
        self.elements = elements
    }

    /// Hands the current element to `body` and moves on only if decoding it succeeded.
    private mutating func next<T>(_ type: T.Type, _ body: (JSONValue, [any CodingKey]) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath + [JSONCodingKey(index: currentIndex)],
                debugDescription: "Unkeyed container is at end."))
        }
        let result = try body(elements[currentIndex], codingPath + [JSONCodingKey(index: currentIndex)])
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: codingPath + [JSONCodingKey(index: currentIndex)],
                debugDescription: "Unkeyed container is at end."))
        }
        guard elements[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { [decoder] in try decoder.decodeBool($0, at: $1) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { [decoder] in try decoder.decodeString($0, at: $1) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { [decoder] in try decoder.decodeFloat($0, as: type, at: $1) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { [decoder] in try decoder.decodeFloat($0, as: type, at: $1) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { [decoder] in try decoder.decodeInteger($0, as: type, at: $1) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) { [decoder] in try decoder.decode(type, from: $0, at: $1) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) { [decoder] value, path in
            try JSONValueDecoder(value: value, options: decoder.options, codingPath: path).container(keyedBy: type)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { [decoder] value, path in
            try JSONValueDecoder(value: value, options: decoder.options, codingPath: path).unkeyedContainer()
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { [decoder] value, path in
            JSONValueDecoder(value: value, options: decoder.options, codingPath: path)
        }
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: JSONValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var value: JSONValue { decoder.value }

    init(decoder: JSONValueDecoder) { self.decoder = decoder }

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try decoder.decodeBool(value, at: codingPath) }
    func decode(_ type: String.Type) throws -> String { try decoder.decodeString(value, at: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.decodeFloat(value, as: type, at: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.decodeFloat(value, as: type, at: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.decodeInteger(value, as: type, at: codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(type, from: value, at: codingPath) }
}
