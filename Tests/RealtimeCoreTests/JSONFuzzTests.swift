import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// Seeded no-crash fuzzing: every input either parses or fails with `.invalidJSON` at an offset
/// inside the input. Whatever parses must serialize and parse back to the same value, and must be
/// accepted by JSONSerialization as well (ours is the stricter parser).
@Suite("JSON fuzz")
struct JSONFuzzTests {
    /// `REALTIME_FUZZ_SCALE=100 swift test -c release --filter JSONFuzz` runs a hundred times more inputs.
    static let scale = Int(ProcessInfo.processInfo.environment["REALTIME_FUZZ_SCALE"] ?? "") ?? 1

    /// Bytes JSON is made of, plus troublemakers, so random input reaches deep into the grammar.
    static let alphabet: [UInt8] = Array(#"{}[],:"\ -+.eE0123456789tfnrulsaxu"#.utf8)
        + [0x00, 0x09, 0x0A, 0x0C, 0x0D, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xED, 0xA0,
           0xF0, 0x9F, 0x98, 0x80, 0xF4, 0x90, 0xFF]

    static let seeds: [String] = [
        #"{"event":"order-updated","channel":"private-orders","data":"{\"id\":12345,\"total\":99.95}"}"#,
        #"[1,-2.5e-3,true,false,null,"\u00e9\ud83d\ude00",{"a":[{}]}]"#,
        #"42["chat",{"text":"héllo","n":1e2}]"#,
        #"{"identifier":"{\"channel\":\"ChatChannel\"}","message":{"body":"x\ny"}}"#,
        "\"é€😀\"",
        "-9223372036854775808",
    ]

    @Test("random bytes never crash the parser")
    func randomBytes() {
        var random = JSONSeededGenerator(seed: 0xF0CC)
        var parsedCount = 0
        for _ in 0..<(4_000 * Self.scale) {
            let length = Int.random(in: 0...40, using: &random)
            let bytes = (0..<length).map { _ -> UInt8 in
                Bool.random(using: &random)
                    ? Self.alphabet[Int.random(in: 0..<Self.alphabet.count, using: &random)]
                    : UInt8.random(in: 0...255, using: &random)
            }
            if check(bytes) { parsedCount += 1 }
        }
        // Short random text is almost never JSON; a few lone numbers and literals are.
        #expect(parsedCount < 4_000 * Self.scale)
    }

    @Test("mutated valid documents never crash the parser")
    func mutatedDocuments() {
        var random = JSONSeededGenerator(seed: 0xBEEF)
        var documents = Self.seeds.map { Array($0.utf8) }
        var generated = RandomJSONValues(seed: 99)
        for _ in 0..<30 { documents.append(Array(generated.value().serialized().utf8)) }

        var parsedCount = 0
        var failedCount = 0
        for round in 0..<(4_000 * Self.scale) {
            var bytes = documents[round % documents.count]
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                mutate(&bytes, using: &random)
            }
            if check(bytes) { parsedCount += 1 } else { failedCount += 1 }
        }
        // Both outcomes must occur, or the mutations are not exercising the parser.
        #expect(parsedCount > 0)
        #expect(failedCount > 0)
    }

    @Test("truncating a valid document at every byte never crashes and never passes silently")
    func truncations() {
        for seed in Self.seeds {
            let bytes = Array(seed.utf8)
            for cut in 0..<bytes.count {
                let prefix = Array(bytes[..<cut])
                let error = jsonError(prefix)
                // A prefix of a number can itself be a number ("-92" of "-9223…"); nothing else parses.
                if error == nil {
                    #expect(seed.first == "-" || seed.first == "4", "prefix \(cut) of \(seed) parsed")
                } else {
                    #expect(error!.context.offset! <= cut)
                }
            }
        }
    }

    /// Returns whether `bytes` parsed; records an issue if any invariant breaks.
    private func check(_ bytes: [UInt8]) -> Bool {
        let value: JSONValue
        do throws(RealtimeError) {
            value = try JSONValue.parse(bytes)
        } catch {
            #expect(error.code == .invalidJSON)
            let offset = error.context.offset ?? -1
            #expect(offset >= 0 && offset <= bytes.count, "offset \(offset) outside \(bytes.count) bytes")
            return false
        }
        let text = value.serialized()
        #expect((try? JSONValue.parse(text)) == value, "\(text)")
        #expect((try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil,
                "accepted but JSONSerialization rejects: \(bytes)")
        return true
    }

    private func mutate(_ bytes: inout [UInt8], using random: inout JSONSeededGenerator) {
        let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
        let replacement = Self.alphabet[Int.random(in: 0..<Self.alphabet.count, using: &random)]
        switch Int.random(in: 0..<5, using: &random) {
        case 0 where !bytes.isEmpty: bytes[position] = replacement
        case 1: bytes.insert(replacement, at: position)
        case 2 where !bytes.isEmpty: bytes.remove(at: position)
        case 3 where !bytes.isEmpty:
            let end = min(bytes.count, position + Int.random(in: 1...8, using: &random))
            bytes.insert(contentsOf: bytes[position..<end], at: position)
        default:
            if !bytes.isEmpty { bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random) }
        }
    }
}
