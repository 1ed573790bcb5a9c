import Foundation

/// Limits applied while parsing untrusted JSON.
public struct JSONLimits: Sendable, Hashable {
    /// Deepest allowed nesting of arrays and objects. A document at exactly this depth parses; one
    /// level deeper fails with `.invalidJSON`. The parser keeps its own stack, so parsing cannot
    /// overflow the thread's stack whatever the limit; but comparing, serializing and freeing a
    /// `JSONValue` recurse, so a tree tens of thousands of levels deep is unsafe on small stacks.
    public var maximumDepth: Int

    /// - Parameter maximumDepth: deepest allowed nesting of arrays and objects (512 by default).
    public init(maximumDepth: Int = 512) { self.maximumDepth = maximumDepth }

    /// 512 levels of nesting.
    public static let `default` = JSONLimits()
}

extension JSONValue {
    /// Parses one RFC 8259 JSON text (any value type at the top level, surrounded only by whitespace).
    ///
    /// The grammar is strict: no comments, trailing commas, leading zeros, `NaN`/`Infinity`, unescaped
    /// control characters or escapes other than the eight short ones and `\uXXXX`. A `\uXXXX` escape of a
    /// UTF-16 surrogate must be a high surrogate immediately followed by an escaped low surrogate; a lone
    /// surrogate is an error because it cannot be held in a `String`. Bytes that are not well-formed
    /// UTF-8 are an error.
    ///
    /// Integers that fit in `Int64` become `.integer`; numbers with a fraction or exponent, integers out
    /// of `Int64` range and `-0` become `.double` (so the sign of `-0` survives). A number too large for
    /// a `Double` (such as `1e400`) is an error. If a name repeats inside an object, the last one wins.
    ///
    /// - Throws: `RealtimeError` with code `.invalidJSON`, a message saying what was expected, and
    ///   `context.offset` set to the byte offset (in the UTF-8 encoding) of the problem. For bad UTF-8
    ///   the offset is the first byte of the ill-formed sequence.
    public static func parse(_ text: String, limits: JSONLimits = .default) throws(RealtimeError) -> JSONValue {
        try parse(text.utf8[...], limits: limits)
    }

    /// Parses RFC 8259 JSON from UTF-8 bytes, by the rules of the `String` overload.
    public static func parse(_ bytes: [UInt8], limits: JSONLimits = .default) throws(RealtimeError) -> JSONValue {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(RealtimeError) in try parse(buffer, limits: limits) }
        }
        return try result.get()
    }

    /// Parses RFC 8259 JSON from UTF-8 bytes such as an HTTP response body, by the rules of the
    /// `String` overload.
    public static func parse(_ data: Data, limits: JSONLimits = .default) throws(RealtimeError) -> JSONValue {
        let result = data.withUnsafeBytes { buffer in
            Result { () throws(RealtimeError) in try parse(buffer, limits: limits) }
        }
        return try result.get()
    }

    /// Parses RFC 8259 JSON from a slice of a string, for example a frame body after a packet prefix.
    /// Offsets in errors are counted from the start of the slice.
    public static func parse(_ utf8: Substring.UTF8View, limits: JSONLimits = .default) throws(RealtimeError) -> JSONValue {
        let contiguous = utf8.withContiguousStorageIfAvailable { buffer in
            Result { () throws(RealtimeError) in try parse(UnsafeRawBufferPointer(buffer), limits: limits) }
        }
        if let contiguous { return try contiguous.get() }
        return try parse(Array(utf8), limits: limits)
    }

    /// `parse(_:limits:)` on a slice of a string, with stacks kept in `scratch` between calls.
    package static func parse(_ utf8: Substring.UTF8View, limits: JSONLimits = .default,
                              scratch: inout JSONParseScratch) throws(RealtimeError) -> JSONValue {
        var slice = Substring(utf8)
        let result = slice.withUTF8 { bytes in
            JSONParser.withParser(over: bytes, limits: limits, scratch: &scratch) { parser in
                Result { () throws(RealtimeError) in try parser.parseDocument() }
            }
        }
        return try result.get()
    }

    /// The first element of the JSON array in `utf8`, built, with the rest of the document checked as
    /// `parse` checks it but not built: for a Socket.IO event, whose first element is its name and whose
    /// arguments are parsed only if someone reads them. `nil` when the document is not an array (nothing
    /// is read); `.some(nil)` for an empty array. Text that `parse` refuses throws the same error.
    package static func firstElement(ofArray utf8: Substring.UTF8View, limits: JSONLimits = .default,
                                     scratch: inout JSONParseScratch) throws(RealtimeError) -> JSONValue?? {
        var slice = Substring(utf8)
        let head = slice.withUTF8 { bytes in
            JSONParser.withParser(over: bytes, limits: limits, scratch: &scratch) { parser in
                try? parser.parseArrayHead()
            }
        }
        guard let head else {
            // The canonical error; the json fuzz target checks that a document is never accepted here.
            guard case .array(let elements) = try parse(utf8, limits: limits, scratch: &scratch) else { return nil }
            return .some(elements.first)
        }
        return head
    }

    /// Parses RFC 8259 JSON from raw UTF-8 bytes. The bytes are only read during the call.
    public static func parse(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default) throws(RealtimeError) -> JSONValue {
        var parser = JSONParser(bytes: bytes.bindMemory(to: UInt8.self), maximumDepth: limits.maximumDepth)
        return try parser.parseDocument()
    }
}

/// The stacks a parse uses, kept by a caller that parses document after document (a dialect, frame after
/// frame) so they are not allocated for each one. Emptied after every parse; room beyond
/// `retainedElements` elements or `retainedContainers` containers is let go, so one huge document does
/// not stay held.
package struct JSONParseScratch: Sendable {
    fileprivate var containers: [JSONParser.Container] = []
    fileprivate var elements: [JSONValue] = []
    /// Whether each container open in a value being checked (not built) is an object.
    fileprivate var openKinds: [Bool] = []
    /// The storage of the last envelope's members, handed back by ``JSONEnvelope/recycle(into:)``.
    fileprivate var members: [JSONEnvelope.Member] = []
    static let retainedMembers = 16
    static let retainedElements = 256
    static let retainedContainers = 32

    package init() {}

    /// Keeps an envelope's member storage, emptied, for the next envelope.
    mutating func keep(members: inout [JSONEnvelope.Member]) {
        guard members.capacity <= Self.retainedMembers else { return }
        members.removeAll(keepingCapacity: true)
        swap(&members, &self.members)
    }

    fileprivate mutating func keep(containers: inout [JSONParser.Container], elements: inout [JSONValue]) {
        if containers.capacity <= Self.retainedContainers {
            containers.removeAll(keepingCapacity: true)
            swap(&containers, &self.containers)
        }
        if elements.capacity <= Self.retainedElements {
            elements.removeAll(keepingCapacity: true)
            swap(&elements, &self.elements)
        }
    }
}

/// A strict RFC 8259 parser over contiguous UTF-8 bytes.
///
/// It is iterative: open containers live on explicit stacks, so nesting depth costs heap, not call
/// frames. Strings are built once each, straight from the input when they hold no escapes.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var maximumDepth: Int
    private var index = 0
    /// The container and element stacks, lent by the caller when it parses document after document.
    var scratch = JSONParseScratch()

    /// One open array or object. Objects fill their dictionary in place; arrays keep their elements
    /// on a shared stack from `firstElement` on, so each array is allocated once, at its exact size.
    /// An empty object with room for a few members, copied by each object that opens: its first insertion
    /// copies the storage with the type already known, where `Dictionary(minimumCapacity:)` looked the
    /// storage type's generic metadata up on every object (3-4 % of an Action Cable event).
    private static let emptyObject = [String: JSONValue](minimumCapacity: 4)

    fileprivate struct Container {
        var isObject: Bool
        var firstElement = 0
        var members: [String: JSONValue] = [:]
        /// The name whose value is being parsed.
        var pendingName = ""
    }

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    /// Runs `body` with a parser over `bytes` that borrows `scratch`'s stacks for the call, for callers
    /// that parse document after document.
    @inline(__always)
    static func withParser<Result>(over bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits,
                                   scratch: inout JSONParseScratch, _ body: (inout JSONParser) -> Result) -> Result {
        var parser = JSONParser(bytes: bytes, maximumDepth: limits.maximumDepth)
        swap(&parser.scratch, &scratch)
        defer { swap(&parser.scratch, &scratch) }
        return body(&parser)
    }

    // MARK: Document and containers

    mutating func parseDocument() throws(RealtimeError) -> JSONValue {
        let value = try parseValueTree()
        skipWhitespace()
        if index < bytes.count {
            throw error("expected end of input after the top-level value, found \(describe(bytes[index]))")
        }
        return value
    }

    /// Parses the value at the start of the input and stops after it, leaving `offset` there; for JSON
    /// embedded in other text (log lines).
    mutating func parseLeadingValue() throws(RealtimeError) -> JSONValue {
        try parseValueTree()
    }

    /// The members of a top-level object in document order, each with the byte range of its value's text;
    /// `nil` when the document is not an object. Values, limits and the end of input are checked as
    /// `parseDocument` checks them, but no dictionary is built for the top level, and the value of a member
    /// named in `deferred` is only checked, not built (its `value` is `nil`). When such a member is named
    /// `pick.member`, `picked` is what ``JSONEnvelope/picked`` documents.
    mutating func parseTopLevelMembers(
        deferring deferred: [String], pick: JSONEnvelope.Pick?
    ) throws(RealtimeError) -> (members: [JSONEnvelope.Member], picked: String?)? {
        var members: [JSONEnvelope.Member] = []
        swap(&members, &scratch.members)  // empty, with the room the last envelope had
        var picked: String?
        let isObject = try walkTopLevel(object: true) { (parser, name) throws(RealtimeError) in
            if members.capacity == 0 { members.reserveCapacity(4) }
            let start = parser.index
            if deferred.contains(name) {
                if let pick, pick.member == name {
                    picked = try parser.skipValueTree(picking: pick)  // a repeated name: the last one wins
                } else {
                    _ = try parser.skipValueTree(picking: nil)
                }
                members.append(JSONEnvelope.Member(name: name, value: nil, range: start..<parser.index))
            } else {
                let value = try parser.parseValueTree()
                members.append(JSONEnvelope.Member(name: name, value: value, range: start..<parser.index))
            }
        }
        return isObject ? (members, picked) : nil
    }

    /// `firstElement(ofArray:)`: `nil` when the document is not an array, else its first element (`nil`
    /// when empty), with the other elements checked by `skipValueTree`.
    mutating func parseArrayHead() throws(RealtimeError) -> JSONValue?? {
        var first: JSONValue?
        var isFirst = true
        let isArray = try walkTopLevel(object: false) { (parser, _) throws(RealtimeError) in
            if isFirst {
                first = try parser.parseValueTree()
                isFirst = false
            } else {
                _ = try parser.skipValueTree(picking: nil)
            }
        }
        return isArray ? .some(first) : nil
    }

    /// Walks the top-level object (or array) at the start of the input: `element` reads each value, given
    /// its member name (`""` in an array) with the index at the value; separators, the closing bracket, the
    /// depth limit and the end of input are checked as `parseDocument` checks them. Returns false, having
    /// read nothing, when the document is not that kind of container. Always inlined, so each caller's
    /// `element` is too: called through a closure context, it cost Pusher 6 % of an event.
    @inline(__always)
    private mutating func walkTopLevel(
        object isObject: Bool, _ element: (inout JSONParser, String) throws(RealtimeError) -> Void
    ) throws(RealtimeError) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: isObject ? "{" : "[") else { return false }
        guard maximumDepth > 0 else { throw depthError() }
        index += 1
        let closing = UInt8(ascii: isObject ? "}" : "]")
        skipWhitespace()
        if index < bytes.count, bytes[index] == closing {
            index += 1
        } else {
            maximumDepth -= 1  // the container is one level of nesting
            defer { maximumDepth += 1 }
            var name = isObject ? try parseMemberName(after: "'{'") : ""
            while true {
                skipWhitespace()
                try element(&self, name)
                guard try readSeparator(inObject: isObject) else { break }
                if isObject { name = try parseMemberName(after: "','") }
            }
        }
        skipWhitespace()
        if index < bytes.count {
            throw error("expected end of input after the top-level value, found \(describe(bytes[index]))")
        }
        return true
    }

    /// The byte offset the parser has reached.
    var offset: Int { index }

    private mutating func parseValueTree() throws(RealtimeError) -> JSONValue {
        var containers: [Container] = []
        var elements: [JSONValue] = []
        swap(&containers, &scratch.containers)
        swap(&elements, &scratch.elements)
        defer { scratch.keep(containers: &containers, elements: &elements) }

        while true {
            // Parse one value; containers that open here are resumed below when they close.
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input, expected a value") }
            var value: JSONValue
            switch bytes[index] {
            case UInt8(ascii: "\""):
                value = .string(try parseString())
            case UInt8(ascii: "{"):
                guard containers.count < maximumDepth else { throw depthError() }
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    value = .object([:])
                } else {
                    if containers.capacity == 0 { containers.reserveCapacity(8) }
                    let name = try parseMemberName(after: "'{'")
                    containers.append(Container(isObject: true, members: Self.emptyObject, pendingName: name))
                    continue
                }
            case UInt8(ascii: "["):
                guard containers.count < maximumDepth else { throw depthError() }
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    value = .array([])
                } else {
                    if containers.capacity == 0 { containers.reserveCapacity(8) }
                    if elements.capacity == 0 { elements.reserveCapacity(16) }
                    containers.append(Container(isObject: false, firstElement: elements.count))
                    continue
                }
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try parseNumber()
            case let byte:
                throw error("expected a value, found \(describe(byte))")
            }

            // Hand the finished value to its container, closing containers as their ends arrive.
            while true {
                let top = containers.count - 1
                guard top >= 0 else { return value }
                let isObject = containers[top].isObject
                if isObject {
                    let name = containers[top].pendingName
                    containers[top].members[name] = value  // a repeated name: the last one wins
                } else {
                    elements.append(value)
                }
                if try readSeparator(inObject: isObject) {
                    if isObject { containers[top].pendingName = try parseMemberName(after: "','") }
                    break
                }
                if isObject {
                    value = .object(containers.removeLast().members)
                } else {
                    let first = containers.removeLast().firstElement
                    value = .array(Array(elements[first...]))
                    elements.removeSubrange(first...)
                }
            }
        }
    }

    /// Checks the value at the index exactly as `parseValueTree` does and moves past it, building nothing:
    /// for members a dialect keeps as text and parses only if someone reads them. With `pick`, when the
    /// value is an object, returns the first of the pick's keys whose member (the last one, when a name
    /// repeats) is a non-empty string: only those strings are built.
    private mutating func skipValueTree(picking pick: JSONEnvelope.Pick?) throws(RealtimeError) -> String? {
        var openKinds: [Bool] = []  // isObject, per open container
        swap(&openKinds, &scratch.openKinds)
        defer {
            openKinds.removeAll(keepingCapacity: true)
            if openKinds.capacity <= JSONParseScratch.retainedContainers { swap(&openKinds, &scratch.openKinds) }
        }
        var candidates: [String?] = []  // by rank in `keys`, made when a member is first named by one
        var pendingRank = -1  // the rank of the member whose value comes next, when `keys` names it

        /// Reads a member name of the value's own object, noting its rank in `keys`. An ASCII name without
        /// escapes is compared as bytes, so no string is made for it; others compare as strings do.
        func rankedName(_ parser: inout JSONParser, after what: String) throws(RealtimeError) -> Int {
            guard let pick else {
                try parser.skipMemberName(after: what)
                return -1
            }
            try parser.expectMemberNameQuote(after: what)
            let quote = parser.index
            let rank: Int?
            if try !parser.skipString() || pick.keyBytes == nil {
                let end = parser.index
                parser.index = quote
                let name = try parser.parseString()
                parser.index = end
                rank = pick.keys.firstIndex(of: name)
            } else {
                let name = UnsafeBufferPointer(rebasing: parser.bytes[(quote + 1)..<(parser.index - 1)])
                rank = pick.keyBytes?.firstIndex { $0.elementsEqual(name) }
            }
            try parser.expectMemberNameColon()
            guard let rank else { return -1 }
            if candidates.isEmpty { candidates = Array(repeating: nil, count: pick.keys.count) }
            return rank
        }

        while true {
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input, expected a value") }
            let rank = pendingRank
            pendingRank = -1
            if rank >= 0 { candidates[rank] = nil }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                if rank >= 0 {
                    let string = try parseString()
                    if !string.isEmpty { candidates[rank] = string }
                } else {
                    try skipString()
                }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard openKinds.count < maximumDepth else { throw depthError() }
                let isObject = bytes[index] == UInt8(ascii: "{")
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: isObject ? "}" : "]") {
                    index += 1
                } else {
                    if isObject {
                        if openKinds.isEmpty {
                            pendingRank = try rankedName(&self, after: "'{'")
                        } else {
                            try skipMemberName(after: "'{'")
                        }
                    }
                    openKinds.append(isObject)
                    continue
                }
            case UInt8(ascii: "t"):
                try expectLiteral("true")
            case UInt8(ascii: "f"):
                try expectLiteral("false")
            case UInt8(ascii: "n"):
                try expectLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                _ = try parseNumber()  // builds no storage; it still rejects what is out of range
            case let byte:
                throw error("expected a value, found \(describe(byte))")
            }

            // Close the containers whose ends follow.
            while true {
                guard let isObject = openKinds.last else {
                    return candidates.first { $0 != nil } ?? nil
                }
                if try readSeparator(inObject: isObject) {
                    if isObject {
                        if openKinds.count == 1 {
                            pendingRank = try rankedName(&self, after: "','")
                        } else {
                            try skipMemberName(after: "','")
                        }
                    }
                    break
                }
                openKinds.removeLast()
            }
        }
    }

    /// After a member or an element: reads `,` (true) or the container's closing bracket (false), with the
    /// whitespace before it; anything else, or the end of input, is an error.
    @inline(__always)
    private mutating func readSeparator(inObject isObject: Bool) throws(RealtimeError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else {
            throw error(isObject
                ? "unexpected end of input, expected ',' or '}' after object member"
                : "unexpected end of input, expected ',' or ']' after array element")
        }
        let byte = bytes[index]
        if byte == UInt8(ascii: ",") {
            index += 1
            return true
        }
        guard byte == UInt8(ascii: isObject ? "}" : "]") else {
            throw error(isObject
                ? "expected ',' or '}' after object member, found \(describe(byte))"
                : "expected ',' or ']' after array element, found \(describe(byte))")
        }
        index += 1
        return false
    }

    /// Reads `"name" :` and leaves the index at the member's value.
    private mutating func parseMemberName(after what: String) throws(RealtimeError) -> String {
        try expectMemberNameQuote(after: what)
        let name = try parseString()
        try expectMemberNameColon()
        return name
    }

    /// `parseMemberName` for a value that is only checked.
    private mutating func skipMemberName(after what: String) throws(RealtimeError) {
        try expectMemberNameQuote(after: what)
        try skipString()
        try expectMemberNameColon()
    }

    private mutating func expectMemberNameQuote(after what: String) throws(RealtimeError) {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input, expected a string member name after \(what)") }
        guard bytes[index] == UInt8(ascii: "\"") else {
            let closing = what == "'{'" ? " or '}'" : ""
            throw error("expected a string member name\(closing) after \(what), found \(describe(bytes[index]))")
        }
    }

    private mutating func expectMemberNameColon() throws(RealtimeError) {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input, expected ':' after object member name") }
        guard bytes[index] == UInt8(ascii: ":") else {
            throw error("expected ':' after object member name, found \(describe(bytes[index]))")
        }
        index += 1
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(RealtimeError) {
        let text = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for expected in text {
            guard index < bytes.count else { throw error("unexpected end of input inside literal '\(literal)'") }
            guard bytes[index] == expected else {
                throw error("invalid literal, expected '\(literal)', found \(describe(bytes[index]))")
            }
            index += 1
        }
    }

    // MARK: Strings

    /// Reads a string starting at its opening quote; the index ends after the closing quote.
    private mutating func parseString() throws(RealtimeError) -> String {
        index += 1
        let start = index
        while index < bytes.count {
            skipPlainText()
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
            if byte < 0x20 { throw controlCharacterError(byte) }
            if byte < 0x80 {
                index += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw error("unexpected end of input inside a string, expected '\"'")
    }

    /// Checks a string starting at its opening quote as `parseString` does, without building it; the
    /// index ends after the closing quote. Returns whether its text is plain ASCII without escapes, the
    /// same bytes as its value.
    @discardableResult
    private mutating func skipString() throws(RealtimeError) -> Bool {
        index += 1
        var decoded: (UInt32, UInt32) = (0, 0)  // room for one decoded escape (at most 4 bytes)
        var isPlainASCII = true
        while index < bytes.count {
            skipPlainText()
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return isPlainASCII
            }
            if byte == UInt8(ascii: "\\") {
                isPlainASCII = false
                _ = try withUnsafeMutableBytes(of: &decoded) { (room) throws(RealtimeError) in
                    try decodeEscape(into: room.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            } else if byte < 0x20 {
                throw controlCharacterError(byte)
            } else if byte < 0x80 {
                index += 1
            } else {
                isPlainASCII = false
                try skipUTF8Sequence()
            }
        }
        throw error("unexpected end of input inside a string, expected '\"'")
    }

    /// The slow path: the string from `start` has an escape at `index`. Escapes only ever shrink, so
    /// the text up to the closing quote bounds the decoded length and the string is decoded straight
    /// into its own storage.
    private mutating func parseEscapedString(from start: Int) throws(RealtimeError) -> String {
        var end = index
        while end < bytes.count {
            end = nextQuoteOrBackslash(from: end)
            guard end < bytes.count, bytes[end] != UInt8(ascii: "\"") else { break }
            end += 2
        }
        var failure: RealtimeError?
        let string = String(unsafeUninitializedCapacity: min(end, bytes.count) - start) { output in
            do throws(RealtimeError) {
                return try decodeEscapedString(from: start, into: output)
            } catch {
                failure = error
                return 0
            }
        }
        if let failure { throw failure }
        return string
    }

    /// Copies the already-checked prefix, then decodes escapes and checks the rest up to the closing
    /// quote. Returns the number of bytes written.
    private mutating func decodeEscapedString(from start: Int, into output: UnsafeMutableBufferPointer<UInt8>) throws(RealtimeError) -> Int {
        var written = index - start
        var runStart = index
        _ = output.initialize(fromContentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            skipPlainText()
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") {
                let run = index - runStart
                if run > 0 {
                    _ = output[written..<(written + run)]
                        .initialize(fromContentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                    written += run
                }
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return written
                }
                written += try decodeEscape(into: output.baseAddress! + written)
                runStart = index
            } else if byte < 0x20 {
                throw controlCharacterError(byte)
            } else if byte < 0x80 {
                index += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw error("unexpected end of input inside a string, expected '\"'")
    }

    // Eight bytes at a time: each helper below returns 0x80 in every byte lane that matches.
    private static let lowBits: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// Lanes equal to `byte`. A borrow can only mark lanes above a true match, so the lowest marked
    /// lane is always exact.
    @inline(__always)
    private static func lanes(of word: UInt64, equalTo byte: UInt8) -> UInt64 {
        let difference = word ^ (lowBits &* UInt64(byte))
        return (difference &- lowBits) & ~difference & highBits
    }

    /// Moves `index` past printable ASCII that needs no attention inside a string (anything but
    /// `"`, `\`, control characters and non-ASCII bytes).
    @inline(__always)
    private mutating func skipPlainText() {
        guard let base = UnsafeRawPointer(bytes.baseAddress) else { return }
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let control = (word &- Self.lowBits &* 0x20) & ~word & Self.highBits
            let special = Self.lanes(of: word, equalTo: UInt8(ascii: "\"")) | Self.lanes(of: word, equalTo: UInt8(ascii: "\\"))
                | control | (word & Self.highBits)
            if special != 0 {
                index += special.trailingZeroBitCount >> 3
                return
            }
            index += 8
        }
    }

    /// The position of the next `"` or `\` at or after `position`, or the end of the input.
    private func nextQuoteOrBackslash(from position: Int) -> Int {
        var position = position
        if let base = UnsafeRawPointer(bytes.baseAddress) {
            while position + 8 <= bytes.count {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
                let special = Self.lanes(of: word, equalTo: UInt8(ascii: "\"")) | Self.lanes(of: word, equalTo: UInt8(ascii: "\\"))
                if special != 0 { return position + special.trailingZeroBitCount >> 3 }
                position += 8
            }
        }
        while position < bytes.count, bytes[position] != UInt8(ascii: "\""), bytes[position] != UInt8(ascii: "\\") {
            position += 1
        }
        return position
    }

    /// Decodes the escape at `index` (a backslash) to UTF-8 at `output`; returns the bytes written
    /// (at most 4, never more than the escape's own length).
    private mutating func decodeEscape(into output: UnsafeMutablePointer<UInt8>) throws(RealtimeError) -> Int {
        let escapeStart = index
        index += 1
        guard index < bytes.count else { throw error("unexpected end of input after '\\' in a string") }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.pointee = letter
        case UInt8(ascii: "b"): output.pointee = 0x08
        case UInt8(ascii: "f"): output.pointee = 0x0C
        case UInt8(ascii: "n"): output.pointee = 0x0A
        case UInt8(ascii: "r"): output.pointee = 0x0D
        case UInt8(ascii: "t"): output.pointee = 0x09
        case UInt8(ascii: "u"):
            var scalar = try readHexQuad()
            if (0xDC00...0xDFFF).contains(scalar) {
                throw error("lone low surrogate \\u\(hex4(scalar)) in a string", at: escapeStart)
            }
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw error("lone high surrogate \\u\(hex4(scalar)), expected a low surrogate escape after it",
                                at: escapeStart)
                }
                let lowStart = index
                index += 2
                let low = try readHexQuad()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error("high surrogate \\u\(hex4(scalar)) followed by \\u\(hex4(low)), expected a low surrogate",
                                at: lowStart)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            return encodeUTF8(scalar, into: output)
        default:
            throw error("invalid escape '\\\(Unicode.Scalar(letter))' in a string, expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u",
                        at: escapeStart)
        }
        return 1
    }

    private mutating func readHexQuad() throws(RealtimeError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count else { throw error("unexpected end of input in a \\u escape, expected 4 hex digits") }
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected a hex digit in a \\u escape, found \(describe(byte))")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func encodeUTF8(_ scalar: UInt32, into output: UnsafeMutablePointer<UInt8>) -> Int {
        switch scalar {
        case 0..<0x80:
            output[0] = UInt8(scalar)
            return 1
        case 0x80..<0x800:
            output[0] = UInt8(0xC0 | scalar >> 6)
            output[1] = UInt8(0x80 | scalar & 0x3F)
            return 2
        case 0x800..<0x10000:
            output[0] = UInt8(0xE0 | scalar >> 12)
            output[1] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[2] = UInt8(0x80 | scalar & 0x3F)
            return 3
        default:
            output[0] = UInt8(0xF0 | scalar >> 18)
            output[1] = UInt8(0x80 | scalar >> 12 & 0x3F)
            output[2] = UInt8(0x80 | scalar >> 6 & 0x3F)
            output[3] = UInt8(0x80 | scalar & 0x3F)
            return 4
        }
    }

    /// Checks the multi-byte UTF-8 sequence at `index` (Unicode table 3-7: no overlongs, no surrogates,
    /// nothing above U+10FFFF) and moves past it.
    private mutating func skipUTF8Sequence() throws(RealtimeError) {
        let lead = bytes[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw error("invalid UTF-8: byte \(describe(lead)) cannot start a character")
        }
        guard index + length <= bytes.count else {
            throw error("invalid UTF-8: truncated \(length)-byte sequence at end of input")
        }
        guard secondRange.contains(bytes[index + 1]) else {
            throw error("invalid UTF-8: byte \(describe(bytes[index + 1])) cannot follow \(describe(lead))")
        }
        for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 {
            throw error("invalid UTF-8: expected a continuation byte, found \(describe(bytes[index + offset]))")
        }
        index += length
    }

    private func controlCharacterError(_ byte: UInt8) -> RealtimeError {
        error("control character U+00\(hex2(byte)) must be escaped in a string")
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(RealtimeError) -> JSONValue {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }

        // Integer part, accumulated as a magnitude so Int64.min fits.
        var magnitude: UInt64 = 0
        var overflowed = false
        guard index < bytes.count, isDigit(bytes[index]) else {
            throw error(index < bytes.count
                ? "expected a digit after '-', found \(describe(bytes[index]))"
                : "unexpected end of input, expected a digit after '-'")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw error("leading zeros are not allowed in numbers") }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                accumulate(bytes[index], into: &magnitude, overflowed: &overflowed)
                index += 1
            }
        }

        var fractionDigits = 0
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error(index < bytes.count
                    ? "expected a digit after '.', found \(describe(bytes[index]))"
                    : "unexpected end of input, expected a digit after '.'")
            }
            while index < bytes.count, isDigit(bytes[index]) {
                accumulate(bytes[index], into: &magnitude, overflowed: &overflowed)
                fractionDigits += 1
                index += 1
            }
        }

        var exponent = 0
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            index += 1
            var exponentNegative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error(index < bytes.count
                    ? "expected a digit in the exponent, found \(describe(bytes[index]))"
                    : "unexpected end of input, expected a digit in the exponent")
            }
            while index < bytes.count, isDigit(bytes[index]) {
                // Clamped: anything this large is out of range or zero anyway.
                if exponent < 100_000 { exponent = exponent * 10 + Int(bytes[index] - UInt8(ascii: "0")) }
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }

        if isInteger && !overflowed {
            if !negative, magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
            if negative, magnitude == 0 { return .double(-0.0) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .integer(Int64(bitPattern: 0 &- magnitude)) }
        }

        // Exact fast path: both the digits and the power of ten are exactly representable, so one
        // IEEE multiplication or division rounds correctly.
        let decimalExponent = exponent - fractionDigits
        if !overflowed, magnitude <= 1 << 53, (-22...22).contains(decimalExponent) {
            var result = Double(magnitude)
            if decimalExponent >= 0 {
                result *= Self.powersOfTen[decimalExponent]
            } else {
                result /= Self.powersOfTen[-decimalExponent]
            }
            return .double(negative ? -result : result)
        }

        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let result = Double(text), result.isFinite else {
            throw error("number \(text.prefix(40)) is out of range for a Double", at: start)
        }
        return .double(result)
    }

    private static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// Adds one decimal digit to the mantissa, recording overflow instead of trapping.
    @inline(__always)
    private func accumulate(_ byte: UInt8, into magnitude: inout UInt64, overflowed: inout Bool) {
        let digit = UInt64(byte - UInt8(ascii: "0"))
        let (shifted, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = shifted.addingReportingOverflow(digit)
        if overflow1 || overflow2 { overflowed = true }
        magnitude = sum
    }

    // MARK: Errors

    private func error(_ message: String, at offset: Int? = nil) -> RealtimeError {
        RealtimeError(.invalidJSON, message, context: .init(offset: offset ?? index))
    }

    private func depthError() -> RealtimeError {
        error("nesting deeper than the limit of \(maximumDepth) arrays and objects")
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Unicode.Scalar(byte))'" }
        return "byte 0x\(hex2(byte))"
    }

    private func hex2(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
    }

    private func hex4(_ value: UInt32) -> String {
        hex2(UInt8(value >> 8)) + hex2(UInt8(value & 0xFF))
    }
}
