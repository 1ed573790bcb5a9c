import RealtimeCore

/// The start line and header fields of an HTTP/1.1 message, as the upgrade exchange needs them.
struct HTTPHead: Sendable, Hashable {
    var startLine: String
    /// In order of appearance, names lower-cased, values trimmed.
    var headers: [HTTPHeader]

    /// Every value of `name` (lower-case), in order.
    func values(_ name: String) -> [String] {
        headers.lazy.filter { $0.name == name }.map(\.value)
    }

    /// All values of `name` joined as one list, or `nil` when the field is absent.
    func value(_ name: String) -> String? {
        let all = values(name)
        return all.isEmpty ? nil : all.joined(separator: ", ")
    }

    /// The comma-separated tokens of `name`, lower-cased.
    func tokens(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }
            .map { $0.trimmingHTTPWhitespace().lowercased() }
            .filter { !$0.isEmpty }
    }

    /// Where the head ends: the index just past the first CR LF CR LF at or after `start - 3`.
    static func endIndex(in bytes: [UInt8], searchingFrom start: Int) -> Int? {
        var index = max(start - 3, 0)
        while index + 4 <= bytes.count {
            if bytes[index] == 13, bytes[index + 1] == 10, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                return index + 4
            }
            index += 1
        }
        return nil
    }

    /// Parses the bytes of a head, without its final empty line.
    static func parse(_ bytes: ArraySlice<UInt8>, failure: RealtimeError.Code) throws(RealtimeError) -> HTTPHead {
        var lines = bytes.split(separator: 10, omittingEmptySubsequences: false).map { line -> ArraySlice<UInt8> in
            line.last == 13 ? line.dropLast() : line
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first, !first.isEmpty else {
            throw RealtimeError(failure, "the HTTP message has no start line")
        }
        var headers: [HTTPHeader] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw RealtimeError(failure, "malformed HTTP header line",
                                    context: .init(detail: printable(line, limit: 80)))
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenCharacter) else {
                // Also rejects obsolete line folding (a line starting with a space).
                throw RealtimeError(failure, "malformed HTTP header name",
                                    context: .init(detail: printable(line, limit: 80)))
            }
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingHTTPWhitespace()
            headers.append(HTTPHeader(String(decoding: name, as: UTF8.self).lowercased(), value))
        }
        return HTTPHead(startLine: String(decoding: first, as: UTF8.self), headers: headers)
    }

    /// RFC 9110 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenCharacter)
    }

    /// A header value we can send: no CR, LF or NUL (which would split or end the header).
    static func isSafeFieldValue(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
    }

    /// At most `limit` bytes as one line of readable text: controls become spaces, runs of space collapse.
    static func printable(_ bytes: some Collection<UInt8>, limit: Int) -> String {
        var text = String(decoding: bytes.prefix(limit), as: UTF8.self)
        text = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
        return text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}

extension StringProtocol {
    func trimmingHTTPWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
