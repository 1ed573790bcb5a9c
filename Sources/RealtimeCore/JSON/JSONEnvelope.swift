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
        /// `nil` for a member the envelope was told to defer: its text was checked, and is parsed when read.
        package var value: JSONValue?
        /// UTF-8 offsets of the value's text in ``JSONEnvelope/text``.
        package var range: Range<Int>
    }

    /// The JSON text, as received.
    package let text: String
    /// The top-level object's members; `nil` when the document is not an object.
    package private(set) var members: [Member]?
    /// The document when it is not an object.
    private let nonObject: JSONValue

    /// Parses `text` (RFC 8259, with the same rules and errors as `JSONValue.parse`).
    package init(parsing text: String, limits: JSONLimits = .default) throws(RealtimeError) {
        var scratch = JSONParseScratch()
        try self.init(parsing: text, limits: limits, scratch: &scratch)
    }

    /// A string to find inside a deferred member's object while it is checked, so that it need not be
    /// parsed: the first of `keys` that names a non-empty string member of the object.
    package struct Pick: Sendable {
        package let member: String
        package let keys: [String]
        /// `keys` in UTF-8, to compare names without making strings of them; `nil` when a key is not ASCII,
        /// since such a key can equal a name spelled with other bytes (canonical equivalence).
        let keyBytes: [[UInt8]]?
        package init(member: String, keys: [String]) {
            self.member = member
            self.keys = keys
            self.keyBytes = keys.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } } ? keys.map { Array($0.utf8) } : nil
        }
    }

    /// What ``Pick`` found: the value of the first of its `keys` whose member of the deferred member's object
    /// (the last one, when a name repeats) is a non-empty string; `nil` when there is none, when the
    /// member is not an object, or when no pick was asked for.
    package let picked: String?

    /// Parses `text`, with the parser's stacks kept in `scratch` between calls. The values of top-level
    /// members named in `deferred` are checked but not built: reading one parses its text (for a payload
    /// that is handed on as text and parsed only if someone reads it). `pick` names one of them to read a
    /// string from on the way.
    package init(parsing text: String, limits: JSONLimits = .default, deferring deferred: [String] = [],
                 pick: Pick? = nil, scratch: inout JSONParseScratch) throws(RealtimeError) {
        var utf8 = text
        let parsed = utf8.withUTF8 { bytes in
            JSONParser.withParser(over: bytes, limits: limits, scratch: &scratch) { parser in
                try? parser.parseTopLevelMembers(deferring: deferred, pick: pick)
            }
        }
        self.text = text
        if let parsed {
            self.members = parsed.members
            self.picked = parsed.picked
            self.nonObject = .null
        } else {
            // Not an object, or not JSON: the full parser gives the value or the canonical error.
            self.members = nil
            self.picked = nil
            self.nonObject = try JSONValue.parse(text, limits: limits)
        }
    }

    /// The value of top-level member `name` (the last one when the name repeats, as in a parsed object);
    /// `nil` when there is none or the document is not an object.
    package subscript(name: String) -> JSONValue? {
        guard let members else { return nil }
        for member in members.reversed() where member.name == name { return value(of: member) }
        return nil
    }

    private func value(of member: Member) -> JSONValue {
        if let value = member.value { return value }
        // Checked with the document's limits one level down, so it parses; `.null` is unreachable.
        return (try? JSONValue.parse(slice(member.range).utf8)) ?? .null
    }

    private func slice(_ range: Range<Int>) -> Substring {
        let utf8 = text.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: range.lowerBound)
        let end = utf8.index(start, offsetBy: range.count)
        return text[start..<end]
    }

    /// The text of member `name`'s value exactly as the server wrote it.
    package func rawText(of name: String) -> String? {
        rawSlice(of: name).map(String.init)
    }

    /// `rawText(of:)` as a slice of ``text``, without a copy.
    package func rawSlice(of name: String) -> Substring? {
        guard let member = members?.last(where: { $0.name == name }) else { return nil }
        return slice(member.range)
    }

    /// Gives the members' storage to `scratch` for the next envelope parsed with it, so that a dialect
    /// parsing frame after frame allocates it once; the envelope reads as not an object afterwards.
    package mutating func recycle(into scratch: inout JSONParseScratch) {
        guard var taken = members else { return }
        members = nil  // `taken` is now the only reference, so its room can be kept without a copy
        scratch.keep(members: &taken)
    }

    /// Whether the document is an object.
    package var isObject: Bool { members != nil }

    /// The whole document as a `JSONValue`, for error reports and rare frames.
    package var document: JSONValue {
        guard let members else { return nonObject }
        var object: [String: JSONValue] = [:]
        for member in members { object[member.name] = value(of: member) }
        return .object(object)
    }
}
