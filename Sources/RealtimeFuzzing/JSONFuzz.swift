import Foundation
import RealtimeCore

/// The JSON parser on arbitrary bytes: it parses or throws `.invalidJSON` with an offset inside the
/// input; what parses serializes and parses back to the same value, is accepted by Foundation too (ours
/// is the stricter parser), and obeys a tighter depth limit exactly as documented. The envelope parse the
/// dialects use agrees with it on every input: the same value or the same error, and so do the values it
/// only checks without building them.
enum JSONFuzz {
    static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        try checkEnvelope(bytes)
        try checkDeferred(bytes)
        try checkArrayHead(bytes)
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(bytes)
        } catch {
            try require(error.code == .invalidJSON, "parse threw \(error.code), not invalid-json")
            let offset = error.context.offset ?? -1
            try require(offset >= 0 && offset <= bytes.count, "error offset \(offset) outside \(bytes.count) bytes")
            try checkLimited(bytes, unlimited: nil)
            return
        }
        let text = parsed.serialized()
        switch Result(catching: { () throws(RealtimeError) in try JSONValue.parse(text) }) {
        case .success(let again): try require(again == parsed, "serialized form parses to another value: \(text)")
        case .failure(let error): throw FuzzFailure("serialized form does not parse (\(error)): \(text)")
        }
        let data = Data(bytes)
        try require((try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil,
                    "accepted here but refused by JSONSerialization")
        try checkLimited(bytes, unlimited: parsed)
    }

    /// With `maximumDepth` 3 a document parses exactly when it parsed without the limit and nests at
    /// most 3 deep; a deeper one fails with `.invalidJSON`. Depth is the text's nesting, not the value's:
    /// a repeated member name can replace a deep value with a shallow one.
    private static func checkLimited(_ bytes: UnsafeRawBufferPointer, unlimited: JSONValue?) throws(FuzzFailure) {
        let limit = 3
        let limited = Result(catching: { () throws(RealtimeError) in
            try JSONValue.parse(bytes, limits: JSONLimits(maximumDepth: limit))
        })
        switch limited {
        case .success(let value):
            try require(value == unlimited, "parses with a depth limit but not without")
            try require(nesting(of: bytes) <= limit, "a document \(nesting(of: bytes)) deep passed the limit of \(limit)")
        case .failure(let error):
            try require(error.code == .invalidJSON, "the limited parse threw \(error.code)")
            if unlimited != nil {
                try require(nesting(of: bytes) > limit, "a document \(nesting(of: bytes)) deep failed the limit of \(limit)")
            }
        }
    }

    /// `JSONEnvelope` accepts what `JSONValue.parse` accepts with the same value, and throws the same
    /// error otherwise, at the default depth limit and at a limit of 1 (only the top level).
    private static func checkEnvelope(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        for limits in [JSONLimits.default, JSONLimits(maximumDepth: 1)] {
            let full = Result(catching: { () throws(RealtimeError) in try JSONValue.parse(text, limits: limits) })
            let envelope = Result(catching: { () throws(RealtimeError) in try JSONEnvelope(parsing: text, limits: limits) })
            switch (full, envelope) {
            case (.success(let value), .success(let envelope)):
                try require(envelope.document == value, "the envelope reads another value than the parser")
                try require(envelope.isObject == (value.objectValue != nil), "the envelope disagrees on being an object")
                if case .object(let object) = value {
                    for (name, member) in object {
                        try require(envelope[name] == member, "the envelope's member \(name) differs")
                        let raw = envelope.rawText(of: name).flatMap { try? JSONValue.parse($0, limits: .default) }
                        try require(raw == member, "the raw text of member \(name) is not its value")
                    }
                }
            case (.failure(let expected), .failure(let error)):
                try require(error.message == expected.message && error.context.offset == expected.context.offset,
                            "the envelope threw '\(error.message)', the parser '\(expected.message)'")
            case (.success, .failure(let error)):
                throw FuzzFailure("the envelope refused what the parser accepted: \(error.message)")
            case (.failure(let error), .success):
                throw FuzzFailure("the envelope accepted what the parser refused: \(error.message)")
            }
        }
    }

    /// Values that are checked but not built (deferred envelope members) are accepted exactly when the
    /// parser accepts them and read back as the parser reads them, and a pick finds what a lookup in the
    /// parsed value finds. The input becomes the value of a member, so any text reaches the checking path,
    /// at the default depth limit and at 1.
    private static func checkDeferred(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        let wrapped = #"{"a":1,"k":"# + text + "}"
        // ASCII keys are compared as bytes; a non-ASCII key makes every name compare as a string.
        let picks = [JSONEnvelope.Pick(member: "k", keys: ["event", "a", "", "b"]),
                     JSONEnvelope.Pick(member: "k", keys: ["a", "\u{E9}", "K", "b"])]
        for (limits, pick) in [(JSONLimits.default, picks[0]), (.default, picks[1]), (JSONLimits(maximumDepth: 1), picks[0])] {
            var scratch = JSONParseScratch()
            let full = try? JSONValue.parse(wrapped, limits: limits)
            let deferred = try? JSONEnvelope(parsing: wrapped, limits: limits, deferring: ["a", "k"], pick: pick,
                                             scratch: &scratch)
            guard case .object(let object)? = full else {
                try require(deferred == nil, "a deferred envelope accepted what the parser refused")
                continue
            }
            guard let deferred else { throw FuzzFailure("a deferred envelope refused what the parser accepted") }
            try require(deferred["k"] == object["k"] && deferred.document == .object(object),
                        "a deferred envelope reads another value than the parser")
            let expected = pick.keys.lazy.compactMap { key -> String? in
                guard case .string(let name)? = object["k"]?.objectValue?[key], !name.isEmpty else { return nil }
                return name
            }.first
            try require(deferred.picked == expected,
                        "the pick found \(deferred.picked ?? "nil"), a lookup \(expected ?? "nil")")
        }
    }

    /// `JSONValue.firstElement(ofArray:)` (Socket.IO events) accepts an array exactly when the parser does,
    /// with the same first element, and reads no other document; the input is tried alone and as the
    /// elements after a name, so any text reaches the path that checks without building.
    private static func checkArrayHead(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        guard let text = String(validating: bytes, as: UTF8.self) else { return }
        for candidate in [text, #"["e","# + text + "]"] {
            var scratch = JSONParseScratch()
            let full = try? JSONValue.parse(candidate)
            let head = Result(catching: { () throws(RealtimeError) in
                try JSONValue.firstElement(ofArray: candidate[...].utf8, scratch: &scratch)
            })
            switch (full, head) {
            case (.array(let elements)?, .success(let first?)):
                try require(first == elements.first, "the array head reads another first element than the parser")
            case (.array?, _):
                throw FuzzFailure("the array head refused or missed an array the parser accepted")
            case (_?, .success(nil)):
                continue  // another kind of document: not an array, nothing read
            case (_?, _):
                throw FuzzFailure("the array head took a document that is not an array for one")
            case (nil, .success(let first)):
                let opensArray = candidate.drop { " \t\n\r".contains($0) }.first == "["
                try require(first == nil && !opensArray, "the array head accepted an array the parser refused")
            case (nil, .failure):
                continue
            }
        }
    }

    /// The deepest nesting of arrays and objects in JSON text, brackets inside strings aside.
    static func nesting(of bytes: UnsafeRawBufferPointer) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }
}
