import Foundation

/// Masks secrets in log text by structure rather than by pattern.
///
/// - JSON found anywhere in the text is parsed and walked: the whole value of every member whose name
///   marks a secret (``isSecretName(_:)``) is replaced, and a string member that itself holds JSON (an
///   Action Cable identifier, Pusher's string `data`) is parsed and redacted the same way.
/// - Outside JSON, `name=value` loses the value up to the next separator and `Name: value` (a header)
///   loses the whole rest of the line, so `Authorization: Bearer S3CRET` keeps neither word.
/// - Dialects redact whole payloads that are secret as a whole (a Socket.IO CONNECT auth object) with
///   `redactingEveryString(in:keeping:)`.
///
/// Text that cannot be parsed is redacted more, never less: a quoted value without its closing quote
/// is masked to the end of the text.
public enum Redaction {
    /// What a secret is replaced with.
    public static let placeholder = "<redacted>"

    /// Words that mark a member, query item or header as secret when they appear in its name
    /// (`access_token`, `X-Auth-Token`, `authToken`, `jwt`), compared as whole words so that `author`
    /// stays visible.
    public static let secretWords: Set<String> = [
        "auth", "authorization", "authentication", "token", "tokens", "password", "passwd", "pwd",
        "passphrase", "secret", "secrets", "signature", "cookie", "cookies", "jwt", "credential",
        "credentials", "apikey", "bearer", "otp", "session", "sessionid",
    ]

    /// Word pairs that mark a secret only together (`api_key`, `X-Api-Key`, `privateKey`).
    private static let secretCompounds = ["apikey", "privatekey", "accesskey", "secretkey", "sessionkey"]

    /// True when `name` (a JSON member, query item or header name) holds a secret.
    public static func isSecretName(_ name: String) -> Bool {
        isSecretName(Array(name.utf8)[...])
    }

    /// Returns `text` with every secret it holds replaced by ``placeholder``.
    public static func redact(_ text: String) -> String {
        guard mightHoldSecret(text) else { return text }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var scanner = Scanner(bytes: bytes)
        scanner.redact(into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Returns `value` with the value of every secret member replaced by ``placeholder`` and JSON held
    /// in strings redacted in place.
    public static func redact(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            var redacted: [String: JSONValue] = [:]
            redacted.reserveCapacity(members.count)
            for (name, member) in members {
                redacted[name] = isSecretName(name) && member != .null ? .string(placeholder) : redact(member)
            }
            return .object(redacted)
        case .array(let elements):
            return .array(elements.map(redact))
        case .string(let text):
            return .string(redact(text))
        case .null, .bool, .integer, .double, .binary:
            return value
        }
    }

    /// Returns `value` with every string and number replaced by ``placeholder``, except the values of the
    /// members named in `keeping` (at any depth); for payloads that are secret as a whole, such as an
    /// auth object or the parameters of an Action Cable identifier.
    @_spi(DialectAuthoring) public static func redactingEveryString(in value: JSONValue, keeping: Set<String> = []) -> JSONValue {
        switch value {
        case .object(let members):
            var redacted: [String: JSONValue] = [:]
            redacted.reserveCapacity(members.count)
            for (name, member) in members {
                redacted[name] = keeping.contains(name) && !isSecretName(name)
                    ? redact(member) : redactingEveryString(in: member, keeping: keeping)
            }
            return .object(redacted)
        case .array(let elements):
            return .array(elements.map { redactingEveryString(in: $0, keeping: keeping) })
        case .string, .integer, .double, .binary:
            return .string(placeholder)
        case .null, .bool:
            return value
        }
    }

    /// A frame's text for a trace line: redacted first (so a secret cannot straddle the cut), then cut
    /// to `limit` characters.
    @_spi(DialectAuthoring) public static func describeForLog(_ text: String, limit: Int = 512) -> String {
        let redacted = redact(text)
        return redacted.count > limit ? String(redacted.prefix(limit)) + "…" : redacted
    }

    // MARK: Names

    static func isSecretName(_ name: ArraySlice<UInt8>) -> Bool {
        var words: [String] = []
        var current: [UInt8] = []
        var previousWasLower = false
        func flush() {
            if !current.isEmpty { words.append(String(decoding: current, as: UTF8.self)) }
            current.removeAll(keepingCapacity: true)
        }
        for byte in name {
            let isUpper = byte >= 0x41 && byte <= 0x5A
            let isLower = byte >= 0x61 && byte <= 0x7A
            let isDigit = byte >= 0x30 && byte <= 0x39
            guard isUpper || isLower || isDigit || byte >= 0x80 else {
                flush()
                previousWasLower = false
                continue
            }
            if isUpper && previousWasLower { flush() }  // camelCase boundary
            current.append(isUpper ? byte + 0x20 : byte)
            previousWasLower = isLower || isDigit
        }
        flush()
        if words.contains(where: secretWords.contains) { return true }
        let joined = words.joined()
        return secretCompounds.contains { joined.contains($0) }
    }

    /// A cheap pre-check: text without `=`, `:` or JSON has no name-value pair to mask.
    private static func mightHoldSecret(_ text: String) -> Bool {
        text.utf8.contains { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: ":") }
    }

    // MARK: Scanner

    /// Walks log text once, copying it to the output with secrets masked.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        /// JSON is not tried again before this offset: a failed parse hands its span to the name-value
        /// rules, which keeps the scan linear.
        var jsonRetryFrom = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func redact(into output: inout [UInt8]) {
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "["), index >= jsonRetryFrom {
                    if let (value, end) = parseJSON(at: index) {
                        Redaction.redact(value).write(into: &output)
                        index = end
                        continue
                    }
                }
                if Self.isNameStart(byte), index == 0 || !Self.isNameByte(bytes[index - 1]) {
                    var end = index
                    while end < bytes.count, Self.isNameByte(bytes[end]) { end += 1 }
                    if Redaction.isSecretName(bytes[index..<end]), let value = secretValue(after: end) {
                        output.append(contentsOf: bytes[index..<value.lowerBound])
                        output.append(contentsOf: Redaction.placeholder.utf8)
                        index = value.upperBound
                    } else {
                        output.append(contentsOf: bytes[index..<end])
                        index = end
                    }
                    continue
                }
                output.append(byte)
                index += 1
            }
        }

        /// The JSON value starting at `start` and the offset after it, or nil (and no retry before the
        /// point where parsing failed).
        private mutating func parseJSON(at start: Int) -> (JSONValue, Int)? {
            let outcome = bytes.withUnsafeBufferPointer { buffer -> Result<(JSONValue, Int), RealtimeError> in
                let rest = UnsafeBufferPointer(rebasing: buffer[start...])
                var parser = JSONParser(bytes: rest, maximumDepth: JSONLimits.default.maximumDepth)
                do throws(RealtimeError) {
                    let value = try parser.parseLeadingValue()
                    return .success((value, start + parser.offset))
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .success(let parsed):
                return parsed
            case .failure(let error):
                jsonRetryFrom = max(start + 1, start + (error.context.offset ?? 0))
                return nil
            }
        }

        /// The range of the value after a secret name ending at `nameEnd`, if a `:` or `=` follows it.
        private func secretValue(after nameEnd: Int) -> Range<Int>? {
            var cursor = nameEnd
            // The closing quote of a JSON name, possibly escaped inside an encoded string (`\"`).
            var backslashes = cursor
            while backslashes < bytes.count, bytes[backslashes] == UInt8(ascii: "\\") { backslashes += 1 }
            if backslashes < bytes.count, bytes[backslashes] == UInt8(ascii: "\"") || bytes[backslashes] == UInt8(ascii: "'") {
                cursor = backslashes + 1
            }
            cursor = skipBlanks(from: cursor)
            guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: ":") || bytes[cursor] == UInt8(ascii: "=") else {
                return nil
            }
            let separator = bytes[cursor]
            cursor = skipBlanks(from: cursor + 1)
            guard cursor < bytes.count else { return nil }

            // A quoted value, possibly at an escaping level (`\"value\"` inside an encoded string).
            var quote = cursor
            while quote < bytes.count, bytes[quote] == UInt8(ascii: "\\") { quote += 1 }
            if quote < bytes.count, bytes[quote] == UInt8(ascii: "\"") || bytes[quote] == UInt8(ascii: "'") {
                let level = quote - cursor
                let start = quote + 1
                var end = start
                while end < bytes.count {
                    if bytes[end] == bytes[quote] {
                        var preceding = 0
                        while end - preceding - 1 >= start, bytes[end - preceding - 1] == UInt8(ascii: "\\") {
                            preceding += 1
                        }
                        if preceding == level {
                            // After `=` a quote need not be one (a URL value may start with `'`): what
                            // follows the closing quote up to the value's end is masked too.
                            if separator == UInt8(ascii: "=") {
                                var after = end + 1
                                while after < bytes.count, !Self.endsUnquotedValue(bytes[after]) { after += 1 }
                                if after > end + 1 { return start..<after }
                            }
                            return start..<(end - level)
                        }
                    }
                    end += 1
                }
                return start..<bytes.count  // unterminated: mask to the end
            }

            if separator == UInt8(ascii: ":") {
                // A header or a JSON value that did not parse: the rest of the line.
                var end = cursor
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n"), bytes[end] != UInt8(ascii: "\r") { end += 1 }
                return cursor < end ? cursor..<end : nil
            }
            // A query item or `name=value` pair.
            var end = cursor
            while end < bytes.count, !Self.endsUnquotedValue(bytes[end]) { end += 1 }
            return cursor < end ? cursor..<end : nil
        }

        private func skipBlanks(from position: Int) -> Int {
            var position = position
            while position < bytes.count, bytes[position] == UInt8(ascii: " ") || bytes[position] == UInt8(ascii: "\t") {
                position += 1
            }
            return position
        }

        private static func isNameStart(_ byte: UInt8) -> Bool {
            (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
        }

        private static func isNameByte(_ byte: UInt8) -> Bool {
            isNameStart(byte) || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }

        /// Where an unquoted value ends: at the next pair (`&`), blank or line end, or a character a URL
        /// always percent-encodes and text uses to close what holds the value (`"`, `>`, `}`, `]`).
        /// Commas, semicolons, apostrophes and parentheses may sit unencoded inside a query value, so they
        /// do not end one: `token=a,b` masks `a,b` whole.
        private static func endsUnquotedValue(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "&"), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"),
                 UInt8(ascii: "\""), UInt8(ascii: ">"), UInt8(ascii: "}"), UInt8(ascii: "]"):
                return true
            default:
                return false
            }
        }
    }
}
