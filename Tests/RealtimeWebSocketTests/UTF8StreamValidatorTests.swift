import Testing
@testable import RealtimeWebSocket

@Suite("UTF-8 stream validator")
struct UTF8StreamValidatorTests {
    static let valid: [[UInt8]] = [
        [],
        Array("plain ASCII, long enough to take the eight-byte path".utf8),
        Array("κόσμε".utf8),
        [0xC2, 0x80], [0xDF, 0xBF],  // U+0080, U+07FF
        [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBD],  // U+0800, U+D7FF, U+E000, U+FFFD
        [0xEF, 0xBF, 0xBE], [0xEF, 0xBF, 0xBF], [0xEF, 0xB7, 0x90],  // noncharacters U+FFFE, U+FFFF, U+FDD0
        [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],  // U+10000, U+10FFFF (a noncharacter)
        [0xF0, 0x9F, 0x98, 0x80],  // U+1F600
        [0x00],
    ]

    static let invalid: [[UInt8]] = [
        [0x80], [0xBF], [0xC0, 0xAF], [0xC1, 0xBF],  // lone continuation, overlong 2-byte
        [0xE0, 0x80, 0xAF], [0xE0, 0x9F, 0xBF],  // overlong 3-byte
        [0xF0, 0x80, 0x80, 0xAF], [0xF0, 0x8F, 0xBF, 0xBF],  // overlong 4-byte
        [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF], [0xED, 0xA0, 0x80, 0xED, 0xB0, 0x80],  // surrogates
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF8, 0x88, 0x80, 0x80, 0x80],  // > U+10FFFF
        [0xFE], [0xFF], [0xC2, 0x41], [0xE1, 0x80, 0x41],  // impossible bytes, interrupted sequences
        Array("κόσμε".utf8) + [0xED, 0xA0, 0x80] + Array("edited".utf8),
    ]

    static let truncated: [[UInt8]] = [
        [0xC2], [0xE0, 0xA0], [0xF0, 0x90, 0x80], [0x41, 0xF4, 0x8F], Array("κόσμε".utf8).dropLast(1).map { $0 },
    ]

    @Test("valid sequences, noncharacters included", arguments: valid)
    func acceptsValid(bytes: [UInt8]) {
        var validator = UTF8StreamValidator()
        let accepted = validator.validate(bytes)
        #expect(accepted)
        #expect(validator.isComplete)
    }

    @Test("overlongs, surrogates, out of range and stray bytes", arguments: invalid)
    func rejectsInvalid(bytes: [UInt8]) {
        var validator = UTF8StreamValidator()
        let accepted = validator.validate(bytes)
        #expect(!accepted)
        #expect(validator.hasFailed)
        #expect(!validator.isComplete)
        let acceptedAfter = validator.validate([0x41])
        #expect(!acceptedAfter, "stays failed")
    }

    @Test("truncated sequences are valid so far but not complete", arguments: truncated)
    func truncations(bytes: [UInt8]) {
        var validator = UTF8StreamValidator()
        let accepted = validator.validate(bytes)
        #expect(accepted)
        #expect(!validator.isComplete)
        #expect(!validator.hasFailed)
    }

    @Test("fails at the first bad byte, before the rest arrives")
    func failsFast() {
        var validator = UTF8StreamValidator()
        let start = validator.validate(Array("valid start ".utf8) + [0xCE])
        #expect(start)
        let rest = validator.validate([0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0])
        #expect(!rest, "ED A0 starts a surrogate: rejected without waiting for the third byte")
    }

    @Test("every split point of every vector agrees with validating it whole")
    func everySplitPoint() {
        for bytes in Self.valid + Self.invalid + Self.truncated {
            let whole = UTF8StreamValidator.isValid(bytes.withUnsafeBytes { UnsafeRawBufferPointer($0) })
            for split in 0...bytes.count {
                var validator = UTF8StreamValidator()
                let first = validator.validate(bytes[..<split])
                let second = first && validator.validate(bytes[split...])
                #expect((second && validator.isComplete) == whole, "split \(split) of \(bytes)")
            }
        }
    }

    @Test("property: agrees with the standard library on random UTF-8-like bytes")
    func agreesWithStandardLibrary() {
        var generator = SeededGenerator(seed: 0x0DF8)
        let interesting: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                    0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...12, using: &generator)
            let bytes = (0..<length).map { _ in interesting.randomElement(using: &generator)! }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            var validator = UTF8StreamValidator()
            let split = Int.random(in: 0...length, using: &generator)
            let result = validator.validate(bytes[..<split]) && validator.validate(bytes[split...]) && validator.isComplete
            #expect(result == expected, "\(bytes)")
        }
    }
}
