import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// A small, fast, seeded generator (SplitMix64) so random tests repeat exactly.
struct JSONSeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Parses `input` and returns the error, or `nil` when it parsed.
func jsonError(_ input: String, limits: JSONLimits = .default) -> RealtimeError? {
    jsonError(Array(input.utf8), limits: limits)
}

/// Parses `bytes` and returns the error, or `nil` when they parsed.
func jsonError(_ bytes: [UInt8], limits: JSONLimits = .default) -> RealtimeError? {
    do throws(RealtimeError) {
        _ = try JSONValue.parse(bytes, limits: limits)
        return nil
    } catch {
        return error
    }
}

/// Random JSON values for round-trip and fuzz tests. Strings mix ASCII, characters that need
/// escaping, multi-byte characters and emoji; doubles are any finite bit pattern.
struct RandomJSONValues {
    var generator: JSONSeededGenerator

    init(seed: UInt64) { generator = JSONSeededGenerator(seed: seed) }

    mutating func value(depth: Int = 0) -> JSONValue {
        let containerChance = depth < 5 ? 3 : 0
        switch Int.random(in: 0..<(6 + containerChance), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .integer(integer())
        case 3: return .double(double())
        case 4, 5: return .string(string())
        case 6: return .array((0..<Int.random(in: 0...5, using: &generator)).map { _ in value(depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &generator) { members[string()] = value(depth: depth + 1) }
            return .object(members)
        }
    }

    mutating func integer() -> Int64 {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: return Int64.random(in: -10...10, using: &generator)
        case 1: return [Int64.min, Int64.max, 0, -1][Int.random(in: 0..<4, using: &generator)]
        default: return Int64(bitPattern: generator.next())
        }
    }

    mutating func double() -> Double {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: return Double(Int.random(in: -1000...1000, using: &generator)) / 8
        case 1: return [0.0, -0.0, 1.0, 0.1, 1e16, .leastNonzeroMagnitude, .greatestFiniteMagnitude][Int.random(in: 0..<7, using: &generator)]
        default:
            while true {
                let candidate = Double(bitPattern: generator.next())
                if candidate.isFinite { return candidate }
            }
        }
    }

    mutating func string() -> String {
        let pieces: [String] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}",
                                "é", "€", "😀", "𝄞", "\u{2028}", "key", "order-updated"]
        var result = ""
        for _ in 0..<Int.random(in: 0...8, using: &generator) {
            result += pieces[Int.random(in: 0..<pieces.count, using: &generator)]
        }
        return result
    }
}
