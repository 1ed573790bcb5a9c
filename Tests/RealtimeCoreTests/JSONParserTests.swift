import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("JSON parser")
struct JSONParserTests {
    // MARK: Depth

    @Test("nesting exactly at the limit parses; one deeper fails at the extra bracket")
    func depthLimit() throws {
        let limit = JSONLimits.default.maximumDepth
        #expect(limit == 512)
        let atLimit = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        var value = try JSONValue.parse(atLimit)
        var depth = 0
        while case .array(let elements) = value {
            depth += 1
            guard let first = elements.first else { break }
            value = first
        }
        #expect(depth == limit)

        let overLimit = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        let error = jsonError(overLimit)
        #expect(error?.code == .invalidJSON)
        #expect(error?.context.offset == limit)
        #expect(error?.message.contains("512") == true)
    }

    @Test("objects count toward the depth limit like arrays")
    func objectDepth() {
        let limits = JSONLimits(maximumDepth: 3)
        #expect(jsonError(#"{"a":{"b":[1]}}"#, limits: limits) == nil)
        #expect(jsonError(#"{"a":{"b":[[1]]}}"#, limits: limits)?.context.offset == 11)
        #expect(jsonError(#"{"a":{"b":{}}}"#, limits: limits) == nil)
        #expect(jsonError(#"{"a":{"b":[{}]}}"#, limits: limits)?.context.offset == 11)
    }

    @Test("100,000 open brackets fail cleanly, with the default and with a huge limit")
    func hugeNesting() {
        let brackets = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        let error = jsonError(brackets)
        #expect(error?.code == .invalidJSON)
        #expect(error?.context.offset == 512)

        // With the limit out of the way the parser still uses no recursion: it reaches the end.
        let unbounded = jsonError(brackets, limits: JSONLimits(maximumDepth: 1_000_000))
        #expect(unbounded?.code == .invalidJSON)
        #expect(unbounded?.context.offset == 100_000)

        let objects = [UInt8](String(repeating: #"{"a":"#, count: 100_000).utf8)
        #expect(jsonError(objects)?.context.offset == 512 * 5)
    }

    @Test("a deep document well above the default parses when the limit allows it")
    func raisedLimit() throws {
        let depth = 1_000
        let text = String(repeating: "[", count: depth) + "7" + String(repeating: "]", count: depth)
        #expect(jsonError(text)?.context.offset == 512)
        var value = try JSONValue.parse(text, limits: JSONLimits(maximumDepth: depth))
        for _ in 0..<depth { value = value[0] ?? .null }
        #expect(value == 7)
    }

    // MARK: Strings

    @Test("surrogate pairs combine; lone surrogates are errors")
    func surrogates() throws {
        #expect(try JSONValue.parse(#""\ud83d\ude00""#) == "😀")
        #expect(try JSONValue.parse(#""x\uD83D\uDE00y""#) == "x😀y")
        #expect(try JSONValue.parse(#""\ud800\udc00""#) == "\u{10000}")
        #expect(try JSONValue.parse(#""\udbff\udfff""#) == "\u{10FFFF}")

        let loneHigh = jsonError(#""\ud83d""#)
        #expect(loneHigh?.code == .invalidJSON)
        #expect(loneHigh?.message.contains("lone high surrogate") == true)
        let loneLow = jsonError(#""\ude00""#)
        #expect(loneLow?.message.contains("lone low surrogate") == true)
        #expect(jsonError(#""\ude00\ud83d""#)?.context.offset == 1)
    }

    @Test("strings without escapes, with escapes, and with raw UTF-8 come out exactly")
    func stringContents() throws {
        #expect(try JSONValue.parse(#""""#) == "")
        #expect(try JSONValue.parse(#""\"""#) == "\"")
        #expect(try JSONValue.parse(#""\\""#) == "\\")
        #expect(try JSONValue.parse(#""\u0041\u00DF\u6771""#) == "Aß東")
        let long = String(repeating: "abcdefghij", count: 1_000)
        #expect(try JSONValue.parse("\"\(long)\"") == .string(long))
        let escapedLong = String(repeating: #"\"é\u00e9😀"#, count: 500)
        #expect(try JSONValue.parse("\"\(escapedLong)\"") == .string(String(repeating: "\"éé😀", count: 500)))
    }

    @Test("escapes, raw UTF-8, control bytes and bad bytes are found at every position of long strings")
    func specialBytesAtEveryPosition() throws {
        // The string scanner reads eight bytes at a time; every lane and the tail must be checked.
        let plain = Array("abcdefghijklmnopqrstuvwxyz0123".utf8)
        for position in 0...plain.count {
            var prefix = Array(plain[..<position])
            let suffix = Array(plain[position...])
            let expectedPrefix = String(decoding: prefix, as: UTF8.self)
            let expectedSuffix = String(decoding: suffix, as: UTF8.self)

            let escaped = [0x22] + prefix + Array(#"\"\\"#.utf8) + suffix + [0x22]
            #expect(try JSONValue.parse(escaped) == .string(expectedPrefix + "\"\\" + expectedSuffix))

            let raw = [0x22] + prefix + Array("é😀".utf8) + suffix + [0x22]
            #expect(try JSONValue.parse(raw) == .string(expectedPrefix + "é😀" + expectedSuffix))

            let escapedThenControl = [0x22] + Array(#"\n"#.utf8) + prefix + [0x01] + suffix + [0x22]
            #expect(jsonError(escapedThenControl)?.context.offset == 3 + position)

            prefix.insert(0x22, at: 0)
            #expect(jsonError(prefix + [0x1F] + suffix + [0x22])?.context.offset == 1 + position)
            #expect(jsonError(prefix + [0xFF] + suffix + [0x22])?.context.offset == 1 + position)
            #expect(jsonError(prefix + suffix)?.context.offset == 1 + plain.count)
        }
    }

    @Test("bad UTF-8 reports the offset of the ill-formed sequence")
    func badUTF8() {
        var bytes = Array(#"{"event":"ok","data":"caf"#.utf8)
        let badOffset = bytes.count
        bytes += [0xE9, 0x22, 0x7D]  // Latin-1 'é' is not UTF-8
        let error = jsonError(bytes)
        #expect(error?.code == .invalidJSON)
        #expect(error?.context.offset == badOffset)
        #expect(error?.message.contains("UTF-8") == true)

        #expect(jsonError([0x22, 0xC3, 0xA9, 0xC3, 0x22])?.context.offset == 3)
        #expect(jsonError([0x22, 0xF0, 0x9F, 0x98, 0x22])?.context.offset == 1)
        #expect(jsonError([0xFF])?.context.offset == 0)
    }

    // MARK: Numbers

    @Test("integers at and beyond the Int64 range")
    func bigAndNegativeNumbers() throws {
        #expect(try JSONValue.parse("9223372036854775807") == .integer(.max))
        #expect(try JSONValue.parse("-9223372036854775808") == .integer(.min))
        #expect(try JSONValue.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONValue.parse("18446744073709551616") == .double(18_446_744_073_709_551_616))
        #expect(try JSONValue.parse("-9223372036854775809") == .double(-9_223_372_036_854_775_808))  // the nearest double
        #expect(try JSONValue.parse("-1") == .integer(-1))
        #expect(try JSONValue.parse("0") == .integer(0))
    }

    @Test("-0 keeps its sign as a double")
    func negativeZero() throws {
        let value = try JSONValue.parse("-0")
        guard case .double(let zero) = value else {
            Issue.record("expected .double, got \(value)")
            return
        }
        #expect(zero == 0 && zero.sign == .minus)
        #expect(try JSONValue.parse("-0.0").doubleValue?.sign == .minus)
        #expect(try JSONValue.parse("0.0").doubleValue?.sign == .plus)
    }

    @Test("large, small and out-of-range doubles")
    func extremeDoubles() throws {
        #expect(try JSONValue.parse("1e308") == .double(1e308))
        #expect(try JSONValue.parse("-1e308") == .double(-1e308))
        #expect(try JSONValue.parse("2.2250738585072014e-308") == .double(.leastNormalMagnitude))
        #expect(try JSONValue.parse("4.9406564584124654e-324") == .double(.leastNonzeroMagnitude))
        #expect(try JSONValue.parse("1e-99999999999999999999") == .double(0))
        for overflow in ["1e400", "-1e400", "1.8e308", "1e99999999999999999999"] {
            let error = jsonError(overflow)
            #expect(error?.code == .invalidJSON, "\(overflow)")
            #expect(error?.message.contains("out of range") == true, "\(overflow)")
        }
    }

    @Test("decimal text converts to the nearest double, like the standard library")
    func doubleConversionMatchesStandardLibrary() throws {
        var random = JSONSeededGenerator(seed: 0xD0B1E)
        for _ in 0..<3_000 {
            let digits = Int.random(in: 1...25, using: &random)
            var mantissa = String(Int.random(in: 1...9, using: &random))
            for _ in 1..<digits { mantissa += String(Int.random(in: 0...9, using: &random)) }
            let point = Int.random(in: 0...digits, using: &random)
            if point > 0 && point < digits { mantissa.insert(".", at: mantissa.index(mantissa.startIndex, offsetBy: point)) }
            let exponent = Int.random(in: -330...300, using: &random)
            let text = Bool.random(using: &random) ? "\(mantissa)e\(exponent)" : "-\(mantissa)E\(exponent)"
            guard let reference = Double(text), reference.isFinite else { continue }
            let parsed = try JSONValue.parse(text)
            #expect(parsed.doubleValue?.bitPattern == reference.bitPattern, "\(text)")
        }
    }

    @Test("every finite double reads back from its own description")
    func doubleDescriptionsRoundTrip() throws {
        var random = JSONSeededGenerator(seed: 42)
        for _ in 0..<3_000 {
            let value = Double(bitPattern: random.next())
            guard value.isFinite else { continue }
            let parsed = try JSONValue.parse(value.description)
            #expect(parsed.doubleValue?.bitPattern == value.bitPattern, "\(value)")
        }
    }

    // MARK: Literals and errors

    @Test("literals parse alone and inside containers")
    func literals() throws {
        #expect(try JSONValue.parse("true") == .bool(true))
        #expect(try JSONValue.parse("false") == .bool(false))
        #expect(try JSONValue.parse("null") == .null)
        #expect(try JSONValue.parse(" [true,false,null] ") == [true, false, nil])
        #expect(try JSONValue.parse(#"{"t":true,"f":false,"n":null}"#) == ["t": true, "f": false, "n": nil])
    }

    @Test("error messages say what was expected, with the offset")
    func errorMessages() {
        let cases: [(String, Int, String)] = [
            (#"{"a":1 "b":2}"#, 7, "expected ',' or '}' after object member"),
            ("[1 2]", 3, "expected ',' or ']' after array element"),
            (#"{"a" 1}"#, 5, "expected ':' after object member name"),
            ("{1:2}", 1, "expected a string member name or '}'"),
            (#"{"a":1,}"#, 7, "expected a string member name after ','"),
            ("[1,]", 3, "expected a value"),
            ("01", 1, "leading zeros"),
            ("1 2", 2, "expected end of input"),
            (#""\q""#, 1, "invalid escape"),
            ("\"a\u{1}\"", 2, "control character U+0001"),
            (#""abc"#, 4, "expected '\"'"),
            ("nul", 3, "literal 'null'"),
        ]
        for (input, offset, phrase) in cases {
            let error = jsonError(input)
            #expect(error?.code == .invalidJSON, "\(input)")
            #expect(error?.context.offset == offset, "\(input): \(error?.message ?? "parsed")")
            #expect(error?.message.contains(phrase) == true, "\(input): \(error?.message ?? "parsed")")
            #expect(error?.description.contains("at byte \(offset)") == true)
        }
    }

    @Test("offsets from a substring count from the start of the slice")
    func substringOffsets() {
        let frame = #"42["event",{"a":tru}]"#
        let body = frame.dropFirst(2).utf8
        do throws(RealtimeError) {
            _ = try JSONValue.parse(body)
            Issue.record("parsed invalid JSON")
        } catch {
            #expect(error.context.offset == 17)
        }
    }
}
