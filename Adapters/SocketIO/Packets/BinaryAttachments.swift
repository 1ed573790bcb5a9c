import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// Moves byte buffers out of (and back into) Socket.IO payloads.
///
/// Each `.binary` value, in document order, becomes `{"_placeholder":true,"num":N}` and travels as a
/// separate binary message.
package enum BinaryAttachments {
    /// Deepest nesting walked; deeper payloads are refused by the JSON parser's own depth limit first.
    static let maximumDepth = 512

    /// The payload with every `.binary` replaced by a placeholder; the bytes are appended to `attachments`.
    package static func deconstruct(_ value: JSONValue, into attachments: inout [Data]) -> JSONValue {
        switch value {
        case .binary(let data):
            attachments.append(data)
            return .object(["_placeholder": true, "num": .integer(Int64(attachments.count - 1))])
        case .array(let elements):
            return .array(elements.map { deconstruct($0, into: &attachments) })
        case .object(let members):
            return .object(members.mapValues { deconstruct($0, into: &attachments) })
        default:
            return value
        }
    }

    /// Counts the `.binary` values in `value`.
    package static func count(in value: JSONValue) -> Int {
        switch value {
        case .binary: return 1
        case .array(let elements): return elements.reduce(0) { $0 + count(in: $1) }
        case .object(let members): return members.values.reduce(0) { $0 + count(in: $1) }
        default: return 0
        }
    }

    /// The payload with every placeholder replaced by its attachment.
    package static func reconstruct(_ value: JSONValue, attachments: [Data]) throws(RealtimeError) -> JSONValue {
        try reconstruct(value, attachments: attachments, depth: 0)
    }

    private static func reconstruct(_ value: JSONValue, attachments: [Data], depth: Int) throws(RealtimeError)
        -> JSONValue {
        guard depth < maximumDepth else {
            throw RealtimeError(.limitExceeded, "payload nesting deeper than \(maximumDepth)")
        }
        switch value {
        case .object(let members):
            if members["_placeholder"] == .bool(true), let number = members["num"]?.integerValue {
                guard number >= 0, number < Int64(attachments.count) else {
                    throw RealtimeError(.protocolViolation,
                                        "placeholder \(number) refers to a missing attachment (\(attachments.count) sent)")
                }
                return .binary(attachments[Int(number)])
            }
            var rebuilt: [String: JSONValue] = [:]
            rebuilt.reserveCapacity(members.count)
            for (key, member) in members {
                rebuilt[key] = try reconstruct(member, attachments: attachments, depth: depth + 1)
            }
            return .object(rebuilt)
        case .array(let elements):
            var rebuilt: [JSONValue] = []
            rebuilt.reserveCapacity(elements.count)
            for element in elements {
                rebuilt.append(try reconstruct(element, attachments: attachments, depth: depth + 1))
            }
            return .array(rebuilt)
        default:
            return value
        }
    }
}
