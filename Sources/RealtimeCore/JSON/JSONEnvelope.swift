/// A protocol frame's JSON text parsed for reading a few top-level members: an object's members stay in
/// document order, each with where its value's text lies, instead of going into a dictionary. Dialects read
/// an envelope by three or four names once, so hashing every name into a dictionary and hashing again to
/// look it up costs more than comparing a few short strings; the value text lets them keep a member as the
/// server wrote it without scanning the frame again.
///
/// It accepts exactly what `JSONValue.parse` accepts, and throws the same error for the rest (checked on
/// every input of the `json` fuzz target).
package struct JSONEnvelope: Sendable {
    package struct Member: Sendable {
        package var name: String
        package var value: JSONValue
        /// UTF-8 offsets of the value's text in ``JSONEnvelope/text``.
        package var range: Range<Int>
    }

    /// The JSON text, as received.
    package let text: String
    /// The top-level object's members; `nil` when the document is not an object.
    package let members: [Member]?
    /// The document when it is not an object.
    private let nonObject: JSONValue

    /// Parses `text` (RFC 8259, with the same rules and errors as `JSONValue.parse`).
    package init(parsing text: String, limits: JSONLimits = .default) throws(RealtimeError) {
        var scratch = JSONParseScratch()
        try self.init(parsing: text, limits: limits, scratch: &scratch)
    }

    /// Parses `text`, with the parser's stacks kept in `scratch` between calls.
    package init(parsing text: String, limits: JSONLimits = .default,
                 scratch: inout JSONParseScratch) throws(RealtimeError) {
        var utf8 = text
        let members = utf8.withUTF8 { bytes in
            var parser = JSONParser(bytes: bytes, maximumDepth: limits.maximumDepth)
            swap(&parser.scratch, &scratch)
            defer { swap(&parser.scratch, &scratch) }
            return try? parser.parseTopLevelMembers()
        }
        self.text = text
        if let members {
            self.members = members
            self.nonObject = .null
        } else {
            // Not an object, or not JSON: the full parser gives the value or the canonical error.
            self.members = nil
            self.nonObject = try JSONValue.parse(text, limits: limits)
        }
    }

    /// The value of top-level member `name` (the last one when the name repeats, as in a parsed object);
    /// `nil` when there is none or the document is not an object.
    package subscript(name: String) -> JSONValue? {
        guard let members else { return nil }
        for member in members.reversed() where member.name == name { return member.value }
        return nil
    }

    /// The text of member `name`'s value exactly as the server wrote it.
    package func rawText(of name: String) -> String? {
        rawSlice(of: name).map(String.init)
    }

    /// `rawText(of:)` as a slice of ``text``, without a copy.
    package func rawSlice(of name: String) -> Substring? {
        guard let member = members?.last(where: { $0.name == name }) else { return nil }
        let utf8 = text.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: member.range.lowerBound)
        let end = utf8.index(start, offsetBy: member.range.count)
        return text[start..<end]
    }

    /// Whether the document is an object.
    package var isObject: Bool { members != nil }

    /// The whole document as a `JSONValue`, for error reports and rare frames.
    package var document: JSONValue {
        guard let members else { return nonObject }
        var object: [String: JSONValue] = [:]
        for member in members { object[member.name] = member.value }
        return .object(object)
    }
}
