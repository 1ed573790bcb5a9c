/// Finds the text of one top-level member's value inside JSON text that already parsed, so an event can
/// carry the payload exactly as the server wrote it (`RealtimeEvent.rawData`).
///
/// It only skips over values (strings with their escapes, nested brackets), so it costs one pass over the
/// bytes and no allocation beyond the result. Keys are compared as written: a key spelled with escapes is
/// not found, and the caller falls back to serializing the parsed value.
enum RawMemberScanner {
    /// The text of the value of top-level member `key` in the JSON object `text`, or `nil`.
    static func value(of key: String, in text: String) -> Substring? {
        let bytes = text.utf8
        var index = bytes.startIndex
        skipWhitespace(bytes, &index)
        guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "{") else { return nil }
        bytes.formIndex(after: &index)
        let wanted = Array(key.utf8)
        while true {
            skipWhitespace(bytes, &index)
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") else { return nil }
            let keyStart = bytes.index(after: index)
            guard let keyEnd = endOfString(bytes, from: index) else { return nil }
            let keyMatches = bytes[keyStart..<bytes.index(before: keyEnd)].elementsEqual(wanted)
            index = keyEnd
            skipWhitespace(bytes, &index)
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: ":") else { return nil }
            bytes.formIndex(after: &index)
            skipWhitespace(bytes, &index)
            let valueStart = index
            guard let valueEnd = endOfValue(bytes, from: index) else { return nil }
            if keyMatches { return text[valueStart..<valueEnd] }
            index = valueEnd
            skipWhitespace(bytes, &index)
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: ",") else { return nil }
            bytes.formIndex(after: &index)
        }
    }

    private static func skipWhitespace(_ bytes: String.UTF8View, _ index: inout String.Index) {
        while index < bytes.endIndex {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: bytes.formIndex(after: &index)
            default: return
            }
        }
    }

    /// The index just past the closing quote of the string that starts at `start`.
    private static func endOfString(_ bytes: String.UTF8View, from start: String.Index) -> String.Index? {
        var index = bytes.index(after: start)
        while index < bytes.endIndex {
            switch bytes[index] {
            case UInt8(ascii: "\\"):
                bytes.formIndex(after: &index)
                guard index < bytes.endIndex else { return nil }
                bytes.formIndex(after: &index)
            case UInt8(ascii: "\""):
                return bytes.index(after: index)
            default:
                bytes.formIndex(after: &index)
            }
        }
        return nil
    }

    /// The index just past the value that starts at `start`.
    private static func endOfValue(_ bytes: String.UTF8View, from start: String.Index) -> String.Index? {
        guard start < bytes.endIndex else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return endOfString(bytes, from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < bytes.endIndex {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = endOfString(bytes, from: index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return bytes.index(after: index) }
                default:
                    break
                }
                bytes.formIndex(after: &index)
            }
            return nil
        default:
            // A number, true, false or null runs to the next delimiter.
            var index = start
            while index < bytes.endIndex {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D:
                    return index == start ? nil : index
                default:
                    bytes.formIndex(after: &index)
                }
            }
            return nil
        }
    }
}
