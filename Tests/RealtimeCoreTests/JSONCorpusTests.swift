import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// A document that must parse, and the value it must give.
struct JSONValidCase: CustomTestStringConvertible, Sendable {
    var name: String
    var bytes: [UInt8]
    var expected: JSONValue
    var testDescription: String { name }

    init(_ name: String, _ text: String, _ expected: JSONValue) {
        self.name = name
        self.bytes = Array(text.utf8)
        self.expected = expected
    }

    init(_ name: String, bytes: [UInt8], _ expected: JSONValue) {
        self.name = name
        self.bytes = bytes
        self.expected = expected
    }
}

/// A document that must fail, with the byte offset the error must report.
struct JSONInvalidCase: CustomTestStringConvertible, Sendable {
    var name: String
    var bytes: [UInt8]
    var offset: Int
    var testDescription: String { name }

    init(_ name: String, _ text: String, offset: Int) {
        self.name = name
        self.bytes = Array(text.utf8)
        self.offset = offset
    }

    init(_ name: String, bytes: [UInt8], offset: Int) {
        self.name = name
        self.bytes = bytes
        self.offset = offset
    }
}

// JSONTestSuite-style cases, written for this package: y_ must parse, n_ must fail.
let jsonValidCorpus: [JSONValidCase] = [
    JSONValidCase("y_array_empty", "[]", .array([])),
    JSONValidCase("y_array_empty_whitespace", " [ \t\r\n ] ", .array([])),
    JSONValidCase("y_array_heterogeneous", #"[null, 1, "1", {}, [], true, false, 0.5]"#,
              [nil, 1, "1", .object([:]), .array([]), true, false, 0.5]),
    JSONValidCase("y_array_nested", "[[[]],[[],[[]]]]", [[.array([])], [.array([]), [.array([])]]]),
    JSONValidCase("y_object_empty", "{}", .object([:])),
    JSONValidCase("y_object_empty_whitespace", "{ \n }", .object([:])),
    JSONValidCase("y_object_basic", #"{"a":"b"}"#, ["a": "b"]),
    JSONValidCase("y_object_spaces", " { \"a\" : [ 1 , 2 ] , \"b\" : { } } ", ["a": [1, 2], "b": .object([:])]),
    JSONValidCase("y_object_duplicated_key_last_wins", #"{"a":"b","a":"c"}"#, ["a": "c"]),
    JSONValidCase("y_object_empty_key", #"{"":0}"#, ["": 0]),
    JSONValidCase("y_object_escaped_null_in_key", #"{"foo\u0000bar": 42}"#, ["foo\u{0}bar": 42]),
    JSONValidCase("y_object_nested", #"{"a":{"b":{"c":[{"d":null}]}}}"#, ["a": ["b": ["c": [["d": nil]]]]]),
    JSONValidCase("y_pusher_event",
              #"{"event":"order-updated","channel":"private-orders","data":"{\"id\":12345,\"status\":\"shipped\",\"total\":99.95}"}"#,
              ["event": "order-updated", "channel": "private-orders",
               "data": #"{"id":12345,"status":"shipped","total":99.95}"#]),
    JSONValidCase("y_structure_lonely_true", "true", true),
    JSONValidCase("y_structure_lonely_false", "false", false),
    JSONValidCase("y_structure_lonely_null", "null", nil),
    JSONValidCase("y_structure_lonely_int", "42", 42),
    JSONValidCase("y_structure_lonely_negative_real", "-0.1", -0.1),
    JSONValidCase("y_structure_lonely_string", #""asd""#, "asd"),
    JSONValidCase("y_structure_trailing_whitespace", "[1] \t\r\n", [1]),
    JSONValidCase("y_structure_leading_whitespace", " \t\r\n\"x\"", "x"),
    JSONValidCase("y_number_zero", "0", 0),
    JSONValidCase("y_number_negative_int", "-123", -123),
    JSONValidCase("y_number_real_one", "1.0", .double(1.0)),
    JSONValidCase("y_number_exponent_capital", "1E22", .double(1e22)),
    JSONValidCase("y_number_exponent_plus", "1e+2", .double(100)),
    JSONValidCase("y_number_exponent_minus", "1E-2", .double(0.01)),
    JSONValidCase("y_number_zero_exponent", "0e1", .double(0)),
    JSONValidCase("y_number_exponent_leading_zeros", "1e007", .double(1e7)),
    JSONValidCase("y_number_real_fraction_exponent", "123.456e78", .double(123.456e78)),
    JSONValidCase("y_number_many_digits", "123456789012345678901234567890", .double(123456789012345678901234567890.0)),
    JSONValidCase("y_number_long_fraction", "0.10000000000000000000000000001", .double(0.1)),
    JSONValidCase("y_number_tiny", "5e-324", .double(.leastNonzeroMagnitude)),
    JSONValidCase("y_number_underflow_to_zero", "1e-400", .double(0)),
    JSONValidCase("y_number_double_max", "1.7976931348623157e308", .double(.greatestFiniteMagnitude)),
    JSONValidCase("y_number_in_array", "[-1,0,1,2.5,-2.5e-3]", [-1, 0, 1, 2.5, -0.0025]),
    JSONValidCase("y_string_short_escapes", #""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
    JSONValidCase("y_string_u_escape_lower", #""\u00e9""#, "é"),
    JSONValidCase("y_string_u_escape_upper", #""\u20AC""#, "€"),
    JSONValidCase("y_string_u_escape_null", #""a\u0000b""#, "a\u{0}b"),
    JSONValidCase("y_string_surrogate_pair", #""\ud83d\ude00""#, "😀"),
    JSONValidCase("y_string_surrogate_pair_upper", #""\uD834\uDD1E""#, "𝄞"),
    JSONValidCase("y_string_nonchar_ffff", #""\uFFFF""#, "\u{FFFF}"),
    JSONValidCase("y_string_raw_utf8", "\"é€😀𝄞\"", "é€😀𝄞"),
    JSONValidCase("y_string_raw_del", "\"\u{7F}\"", "\u{7F}"),
    JSONValidCase("y_string_raw_line_separator", "\"\u{2028}\"", "\u{2028}"),
    JSONValidCase("y_string_escape_then_utf8", #""\n😀\t""#, "\n😀\t"),
    JSONValidCase("y_string_escapes_between_text", #""ab\"cd\\ef\/gh""#, "ab\"cd\\ef/gh"),
    JSONValidCase("y_string_long_escaped", "\"" + String(repeating: #"x\n"#, count: 200) + "\"",
              .string(String(repeating: "x\n", count: 200))),
    JSONValidCase("y_string_max_scalar", bytes: [0x22, 0xF4, 0x8F, 0xBF, 0xBF, 0x22], "\u{10FFFF}"),
    JSONValidCase("y_string_min_three_byte", bytes: [0x22, 0xE0, 0xA0, 0x80, 0x22], "\u{800}"),
    JSONValidCase("y_string_min_four_byte", bytes: [0x22, 0xF0, 0x90, 0x80, 0x80, 0x22], "\u{10000}"),
    JSONValidCase("y_string_last_before_surrogates", bytes: [0x22, 0xED, 0x9F, 0xBF, 0x22], "\u{D7FF}"),
]

let jsonInvalidCorpus: [JSONInvalidCase] = [
    JSONInvalidCase("n_empty", "", offset: 0),
    JSONInvalidCase("n_only_whitespace", " \t ", offset: 3),
    JSONInvalidCase("n_array_trailing_comma", "[1,]", offset: 3),
    JSONInvalidCase("n_array_leading_comma", "[,1]", offset: 1),
    JSONInvalidCase("n_array_double_comma", "[1,,2]", offset: 3),
    JSONInvalidCase("n_array_missing_comma", "[1 2]", offset: 3),
    JSONInvalidCase("n_array_unclosed", "[1", offset: 2),
    JSONInvalidCase("n_array_unclosed_after_comma", "[1,", offset: 3),
    JSONInvalidCase("n_array_extra_close", "[1]]", offset: 3),
    JSONInvalidCase("n_array_colon", "[1:2]", offset: 2),
    JSONInvalidCase("n_object_trailing_comma", #"{"a":1,}"#, offset: 7),
    JSONInvalidCase("n_object_unquoted_key", "{a:1}", offset: 1),
    JSONInvalidCase("n_object_single_quoted_key", "{'a':1}", offset: 1),
    JSONInvalidCase("n_object_number_key", "{1:1}", offset: 1),
    JSONInvalidCase("n_object_missing_colon", #"{"a" 1}"#, offset: 5),
    JSONInvalidCase("n_object_missing_value", #"{"a":}"#, offset: 5),
    JSONInvalidCase("n_object_comma_instead_of_colon", #"{"a",1}"#, offset: 4),
    JSONInvalidCase("n_object_unclosed", #"{"a":1"#, offset: 6),
    JSONInvalidCase("n_object_unclosed_after_key", #"{"a""#, offset: 4),
    JSONInvalidCase("n_object_open_only", "{", offset: 1),
    JSONInvalidCase("n_object_bracket_close", #"{"a":1]"#, offset: 6),
    JSONInvalidCase("n_structure_two_values", "1 2", offset: 2),
    JSONInvalidCase("n_structure_two_objects", "{}{}", offset: 2),
    JSONInvalidCase("n_structure_close_only", "]", offset: 0),
    JSONInvalidCase("n_comment_line", "[1]//x", offset: 3),
    JSONInvalidCase("n_comment_block", "/* c */ 1", offset: 0),
    JSONInvalidCase("n_comment_inside", "[1/*c*/]", offset: 2),
    JSONInvalidCase("n_whitespace_formfeed", "\u{0C}1", offset: 0),
    JSONInvalidCase("n_whitespace_vertical_tab", "[\u{0B}1]", offset: 1),
    JSONInvalidCase("n_whitespace_nbsp", "\u{A0}1", offset: 0),
    JSONInvalidCase("n_bom", "\u{FEFF}1", offset: 0),
    JSONInvalidCase("n_number_leading_zero", "01", offset: 1),
    JSONInvalidCase("n_number_negative_leading_zero", "-01", offset: 2),
    JSONInvalidCase("n_number_leading_zeros_in_array", "[00]", offset: 2),
    JSONInvalidCase("n_number_plus", "+1", offset: 0),
    JSONInvalidCase("n_number_minus_only", "-", offset: 1),
    JSONInvalidCase("n_number_double_minus", "--1", offset: 1),
    JSONInvalidCase("n_number_minus_space", "- 1", offset: 1),
    JSONInvalidCase("n_number_leading_dot", ".5", offset: 0),
    JSONInvalidCase("n_number_trailing_dot", "1.", offset: 2),
    JSONInvalidCase("n_number_dot_exponent", "1.e3", offset: 2),
    JSONInvalidCase("n_number_exponent_only", "1e", offset: 2),
    JSONInvalidCase("n_number_exponent_sign_only", "1e+", offset: 3),
    JSONInvalidCase("n_number_exponent_fraction", "1e2.5", offset: 3),
    JSONInvalidCase("n_number_hex", "0x1F", offset: 1),
    JSONInvalidCase("n_number_nan", "NaN", offset: 0),
    JSONInvalidCase("n_number_infinity", "Infinity", offset: 0),
    JSONInvalidCase("n_number_minus_infinity", "-Infinity", offset: 1),
    JSONInvalidCase("n_number_overflow", "1e400", offset: 0),
    JSONInvalidCase("n_number_negative_overflow", "-1e400", offset: 0),
    JSONInvalidCase("n_number_overflow_in_array", "[1, 1e400]", offset: 4),
    JSONInvalidCase("n_number_overflow_many_digits", "1" + String(repeating: "0", count: 400), offset: 0),
    JSONInvalidCase("n_literal_truncated_true", "tru", offset: 3),
    JSONInvalidCase("n_literal_truncated_null", "[nul]", offset: 4),
    JSONInvalidCase("n_literal_capitalised", "True", offset: 0),
    JSONInvalidCase("n_literal_wrong_letter", "nulL", offset: 3),
    JSONInvalidCase("n_literal_trailing_letters", "truex", offset: 4),
    JSONInvalidCase("n_literal_undefined", "undefined", offset: 0),
    JSONInvalidCase("n_string_single_quotes", "'a'", offset: 0),
    JSONInvalidCase("n_string_unterminated", #""abc"#, offset: 4),
    JSONInvalidCase("n_string_unterminated_after_escape", #""abc\"#, offset: 5),
    JSONInvalidCase("n_string_unterminated_after_escaped_quote", #""abc\""#, offset: 6),
    JSONInvalidCase("n_string_raw_newline", "\"a\nb\"", offset: 2),
    JSONInvalidCase("n_string_raw_tab", "\"a\tb\"", offset: 2),
    JSONInvalidCase("n_string_raw_nul", "\"a\u{0}\"", offset: 2),
    JSONInvalidCase("n_string_control_after_escape", "\"\\n\u{1}\"", offset: 3),
    JSONInvalidCase("n_string_invalid_escape_x", #""\x41""#, offset: 1),
    JSONInvalidCase("n_string_invalid_escape_quote", #""\'""#, offset: 1),
    JSONInvalidCase("n_string_invalid_escape_after_text", #""abc\a""#, offset: 4),
    JSONInvalidCase("n_string_u_escape_short", #""\u12""#, offset: 5),
    JSONInvalidCase("n_string_u_escape_non_hex", #""\u12G4""#, offset: 5),
    JSONInvalidCase("n_string_u_escape_capital_u", #""\U0041""#, offset: 1),
    JSONInvalidCase("n_string_lone_high_surrogate", #""\ud83d""#, offset: 1),
    JSONInvalidCase("n_string_lone_high_surrogate_then_text", #""\ud83dabc""#, offset: 1),
    JSONInvalidCase("n_string_lone_low_surrogate", #""\ude00""#, offset: 1),
    JSONInvalidCase("n_string_two_high_surrogates", #""\ud83d\ud83d""#, offset: 7),
    JSONInvalidCase("n_string_high_surrogate_then_letter", #""\ud83d\u0041""#, offset: 7),
    JSONInvalidCase("n_string_high_surrogate_then_short_escape", #""\ud83d\n""#, offset: 1),
    JSONInvalidCase("n_string_lone_low_in_key", #"{"a\udc00":1}"#, offset: 3),
    JSONInvalidCase("n_utf8_invalid_byte_ff", bytes: [0x22, 0xFF, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_lone_continuation", bytes: [0x22, 0x61, 0x80, 0x22], offset: 2),
    JSONInvalidCase("n_utf8_overlong_slash", bytes: [0x22, 0xC0, 0xAF, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_overlong_c1", bytes: [0x22, 0xC1, 0xBF, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_overlong_three_byte", bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_overlong_four_byte", bytes: [0x22, 0xF0, 0x80, 0x80, 0xAF, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_encoded_surrogate", bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_above_max", bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_f5", bytes: [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_truncated_before_quote", bytes: [0x22, 0xE2, 0x82, 0x22], offset: 1),
    JSONInvalidCase("n_utf8_truncated_at_end", bytes: [0x22, 0xE2, 0x82], offset: 1),
    JSONInvalidCase("n_utf8_after_escape", bytes: Array(#""\n"#.utf8) + [0xC3, 0x28, 0x22], offset: 3),
    JSONInvalidCase("n_utf8_in_key", bytes: Array(#"{"ok":1,"#.utf8) + [0x22, 0xFE, 0x22] + Array(":2}".utf8), offset: 9),
    JSONInvalidCase("n_utf8_outside_string", bytes: [0x5B, 0xC3, 0xA9, 0x5D], offset: 1),
]

@Suite("JSON corpus")
struct JSONCorpusTests {
    @Test("valid documents parse to the expected value", arguments: jsonValidCorpus)
    func validDocumentParses(_ testCase: JSONValidCase) throws {
        let value = try JSONValue.parse(testCase.bytes)
        #expect(value == testCase.expected)
    }

    @Test("valid documents parse the same from String, bytes, a substring and a raw buffer", arguments: jsonValidCorpus)
    func entryPointsAgree(_ testCase: JSONValidCase) throws {
        let text = String(decoding: testCase.bytes, as: UTF8.self)
        let fromBytes = try JSONValue.parse(testCase.bytes)
        #expect(try JSONValue.parse(text) == fromBytes)
        let framed = "42" + text + "]"
        #expect(try JSONValue.parse(framed.dropFirst(2).dropLast().utf8) == fromBytes)
        #expect(try JSONValue.parse(Data(testCase.bytes)) == fromBytes)
        let fromBuffer = try testCase.bytes.withUnsafeBytes { buffer throws(RealtimeError) in try JSONValue.parse(buffer) }
        #expect(fromBuffer == fromBytes)
    }

    @Test("invalid documents fail with .invalidJSON at the right byte offset", arguments: jsonInvalidCorpus)
    func invalidDocumentFails(_ testCase: JSONInvalidCase) {
        let error = jsonError(testCase.bytes)
        #expect(error?.code == .invalidJSON)
        #expect(error?.context.offset == testCase.offset, "\(error?.message ?? "parsed")")
        #expect(error?.message.isEmpty == false)
    }

    @Test("array literals and Data bodies pick the right overload")
    func overloads() throws {
        #expect(try JSONValue.parse([0x5B, 0x31, 0x5D]) == [1])
        #expect(try JSONValue.parse(Data("[2]".utf8)) == [2])
        let error = jsonError([0x5B, 0x31])
        #expect(error?.context.offset == 2)
        do throws(RealtimeError) {
            _ = try JSONValue.parse(Data("[1,]".utf8))
            Issue.record("parsed a trailing comma")
        } catch {
            #expect(error.context.offset == 3)
        }
    }

    @Test("doubles in the corpus keep their type: fraction or exponent means .double")
    func numberKinds() throws {
        #expect(try JSONValue.parse("1") == .integer(1))
        #expect(try JSONValue.parse("1.0") == .double(1))
        #expect(try JSONValue.parse("1e0") == .double(1))
        #expect(try JSONValue.parse("10E-1") == .double(1))
    }
}
