/// Finds the text of one top-level member's value inside JSON text that already parsed, so an event can
/// carry the payload exactly as the server wrote it (`RealtimeEvent.rawData`).
///
/// It only skips over values (strings with their escapes, nested brackets), so it costs one pass over the
/// bytes and no allocation beyond the result. It walks the UTF-8 buffer by offsets (String indices cost a
/// bounds and encoding check per byte), and inside strings it only looks for the quote and the backslash.
/// Keys are compared as written: a key spelled with escapes is not found, and the caller falls back to
/// serializing the parsed value.
enum RawMemberScanner {
    /// The text of the value of top-level member `key` in the JSON object `text`, or `nil`.
    static func value(of key: String, in text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes in
            var key = key
            return key.withUTF8 { wanted in
                guard let range = valueRange(of: wanted, in: bytes) else { return nil }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
            }
        }
    }

    /// The offsets of the value of top-level member `wanted` in `bytes`, or `nil`.
    static func valueRange(of wanted: UnsafeBufferPointer<UInt8>,
                           in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        let end = bytes.count
        var index = skipWhitespace(bytes, 0)
        guard index < end, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        while true {
            index = skipWhitespace(bytes, index)
            guard index < end, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let keyStart = index + 1
            guard let keyEnd = endOfString(bytes, from: index) else { return nil }
            let keyMatches = keyEnd - 1 - keyStart == wanted.count
                && UnsafeBufferPointer(rebasing: bytes[keyStart..<keyEnd - 1]).elementsEqual(wanted)
            index = skipWhitespace(bytes, keyEnd)
            guard index < end, bytes[index] == UInt8(ascii: ":") else { return nil }
            index = skipWhitespace(bytes, index + 1)
            let valueStart = index
            guard let valueEnd = endOfValue(bytes, from: index) else { return nil }
            if keyMatches { return valueStart..<valueEnd }
            index = skipWhitespace(bytes, valueEnd)
            guard index < end, bytes[index] == UInt8(ascii: ",") else { return nil }
            index += 1
        }
    }

    private static func skipWhitespace(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return index
            }
        }
        return index
    }

    /// The offset just past the closing quote of the string that starts at `start`.
    private static func endOfString(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start + 1
        let end = bytes.count
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { return index + 1 }
            index += byte == UInt8(ascii: "\\") ? 2 : 1
        }
        return nil
    }

    /// The offset just past the value that starts at `start`.
    private static func endOfValue(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        let end = bytes.count
        guard start < end else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return endOfString(bytes, from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < end {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let after = endOfString(bytes, from: index) else { return nil }
                    index = after
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return nil
        default:
            // A number, true, false or null runs to the next delimiter.
            var index = start
            while index < end {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D:
                    return index == start ? nil : index
                default:
                    index += 1
                }
            }
            return nil
        }
    }
}
