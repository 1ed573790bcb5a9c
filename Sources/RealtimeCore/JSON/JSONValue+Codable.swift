import Foundation

extension JSONValue {
    /// Decodes this value into `T` with `decoder`, honouring its strategies (keys, dates, data,
    /// non-conforming floats).
    ///
    /// - Throws: whatever `decoder` throws (`DecodingError`) when the value does not fit `T`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        var bytes: [UInt8] = []
        write(into: &bytes)
        return try decoder.decode(T.self, from: Data(bytes))
    }

    /// Encodes `value` with `encoder` and parses the result.
    ///
    /// - Throws: `EncodingError` from `encoder`, or `RealtimeError` (`.invalidJSON`) if its output
    ///   cannot be parsed (for example a non-finite number written with a custom strategy).
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws {
        let data = try encoder.encode(value)
        self = try data.withUnsafeBytes { bytes throws(RealtimeError) in try JSONValue.parse(bytes) }
    }
}
