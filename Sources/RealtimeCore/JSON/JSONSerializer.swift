import Foundation

extension JSONValue {
    /// Compact JSON text with object members sorted by name, so equal values give equal text.
    ///
    /// Doubles are written in their shortest form that reads back to the same value, and always with
    /// a fraction or exponent (`1.0`, `1e+16`), so they parse back as `.double`. Infinity and NaN have
    /// no JSON form and are written as `null`. `.binary` is written as a base64 string.
    public func serialized() -> String {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(64)
        write(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Appends the JSON string literal of the UTF-8 text `utf8` to `buffer`: the bytes `.string` of the same
    /// text writes, without making a `String`.
    package static func writeString(utf8: UnsafeBufferPointer<UInt8>, into buffer: inout [UInt8]) {
        JSONSerializer.writeString(utf8: utf8, into: &buffer)
    }

    /// Appends the compact JSON text of ``serialized()`` to `buffer` as UTF-8.
    package func write(into buffer: inout [UInt8]) {
        switch self {
        case .null:
            buffer.append(contentsOf: "null".utf8)
        case .bool(let value):
            buffer.append(contentsOf: value ? "true".utf8 : "false".utf8)
        case .integer(let value):
            JSONSerializer.writeInteger(value, into: &buffer)
        case .double(let value):
            if value.isFinite {
                buffer.append(contentsOf: value.description.utf8)
            } else {
                buffer.append(contentsOf: "null".utf8)
            }
        case .string(let value):
            JSONSerializer.writeString(value, into: &buffer)
        case .binary(let data):
            JSONSerializer.writeString(data.base64EncodedString(), into: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                element.write(into: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        case .object(let members):
            buffer.append(UInt8(ascii: "{"))
            var first = true
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                if !first { buffer.append(UInt8(ascii: ",")) }
                first = false
                JSONSerializer.writeString(name, into: &buffer)
                buffer.append(UInt8(ascii: ":"))
                value.write(into: &buffer)
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text, as ``serialized()`` writes it.
    public var description: String { serialized() }
}

/// Byte-level writers shared by the serializer.
enum JSONSerializer {
    static func writeInteger(_ value: Int64, into buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // 20 digits hold UInt64.max; fill from the right, then copy once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var position = 20
            repeat {
                position -= 1
                digits[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[position..<20]))
        }
    }

    /// Writes `string` quoted, escaping `"`, `\` and the control characters U+0000–U+001F
    /// (`\n`, `\r`, `\t` in short form, the rest as `\u00XX`).
    static func writeString(_ string: String, into buffer: inout [UInt8]) {
        let wroteContiguous: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            writeString(utf8: utf8, into: &buffer)
        }
        if wroteContiguous == nil {
            buffer.append(UInt8(ascii: "\""))
            for byte in string.utf8 {
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    writeEscape(byte, into: &buffer)
                } else {
                    buffer.append(byte)
                }
            }
            buffer.append(UInt8(ascii: "\""))
        }
    }

    /// ``writeString(_:into:)`` for text already in UTF-8: the same bytes, without making a `String`.
    static func writeString(utf8: UnsafeBufferPointer<UInt8>, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        var runStart = 0
        for position in 0..<utf8.count {
            let byte = utf8[position]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<position]))
            writeEscape(byte, into: &buffer)
            runStart = position + 1
        }
        buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        buffer.append(UInt8(ascii: "\""))
    }

    private static func writeEscape(_ byte: UInt8, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): buffer.append(byte)
        case 0x0A: buffer.append(UInt8(ascii: "n"))
        case 0x0D: buffer.append(UInt8(ascii: "r"))
        case 0x09: buffer.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            buffer.append(contentsOf: "u00".utf8)
            buffer.append(hex.utf8Start[Int(byte >> 4)])
            buffer.append(hex.utf8Start[Int(byte & 0xF)])
        }
    }
}
