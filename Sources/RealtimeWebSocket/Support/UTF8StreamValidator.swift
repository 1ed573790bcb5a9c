/// Checks UTF-8 incrementally, so a text message split across reads and fragments is rejected at the
/// first byte that cannot belong to well-formed UTF-8 (Unicode 15, table 3-7), not when it ends.
///
/// Noncharacters such as U+FFFE are valid; overlong forms, surrogates (U+D800–U+DFFF) and code points
/// above U+10FFFF are not. Feed chunks with `validate(_:)`, then ask `isComplete` when the message ends.
package struct UTF8StreamValidator: Sendable, Hashable {
    /// Continuation bytes the current code point still needs.
    private var pendingContinuations: UInt8 = 0
    /// Inclusive range the next continuation byte must fall in (narrower right after E0, ED, F0, F4).
    private var lowerBound: UInt8 = 0x80
    private var upperBound: UInt8 = 0xBF
    /// Set at the first invalid byte; stays set until `reset()`.
    package private(set) var hasFailed = false

    /// A validator at the start of a message.
    package init() {}

    /// `true` when everything fed so far is valid and no code point is cut short, so a message may end here.
    package var isComplete: Bool { !hasFailed && pendingContinuations == 0 }

    /// Forgets all input, ready for a new message.
    package mutating func reset() { self = UTF8StreamValidator() }

    /// Feeds `bytes`; returns `false` (and stays failed) as soon as a byte makes the input invalid.
    package mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !hasFailed else { return false }
        guard let start = bytes.baseAddress else { return true }
        let count = bytes.count
        var index = 0
        while index < count {
            if pendingContinuations == 0 {
                // Fast path: skip ASCII eight bytes at a time.
                while index + 8 <= count,
                      start.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                }
                guard index < count else { break }
                let byte = start.load(fromByteOffset: index, as: UInt8.self)
                index += 1
                if byte < 0x80 { continue }
                guard begin(byte) else {
                    hasFailed = true
                    return false
                }
            } else {
                let byte = start.load(fromByteOffset: index, as: UInt8.self)
                index += 1
                guard byte >= lowerBound, byte <= upperBound else {
                    hasFailed = true
                    return false
                }
                pendingContinuations -= 1
                lowerBound = 0x80
                upperBound = 0xBF
            }
        }
        return true
    }

    /// Feeds `bytes` from any collection; see `validate(_:)` for raw buffers.
    package mutating func validate(_ bytes: some Collection<UInt8>) -> Bool {
        if let result = bytes.withContiguousStorageIfAvailable({ validate(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(bytes).withUnsafeBytes { validate($0) }
    }

    /// `true` when `bytes` is, on its own, complete valid UTF-8.
    package static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var validator = UTF8StreamValidator()
        return validator.validate(bytes) && validator.isComplete
    }

    /// Sets up the state after a lead byte; `false` for bytes that can never start a code point.
    @inline(__always)
    private mutating func begin(_ byte: UInt8) -> Bool {
        switch byte {
        case 0xC2...0xDF: pendingContinuations = 1
        case 0xE0: pendingContinuations = 2; lowerBound = 0xA0  // below A0 would be overlong
        case 0xE1...0xEC, 0xEE...0xEF: pendingContinuations = 2
        case 0xED: pendingContinuations = 2; upperBound = 0x9F  // above 9F would be a surrogate
        case 0xF0: pendingContinuations = 3; lowerBound = 0x90  // below 90 would be overlong
        case 0xF1...0xF3: pendingContinuations = 3
        case 0xF4: pendingContinuations = 3; upperBound = 0x8F  // above 8F would pass U+10FFFF
        default: return false  // continuation bytes, C0, C1 (overlong), F5–FF
        }
        return true
    }
}
