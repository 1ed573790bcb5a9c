import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Codec chunking")
struct CodecChunkingTests {
    /// A random conversation: messages split into random fragments, pings and pongs between them.
    static func conversation(seed: UInt64, masked: Bool, messages: Int = 40) -> (wire: [UInt8], expected: [WebSocketEvent]) {
        var generator = SeededGenerator(seed: seed)
        var wire: [UInt8] = []
        var expected: [WebSocketEvent] = []
        let words = ["a", "ß", "€", "😀", "κόσμε", "plain", " ", "\u{FFFF}", "\u{10FFFF}"]
        func mask() -> [UInt8]? {
            masked ? (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) } : nil
        }
        for _ in 0..<messages {
            let isText = Bool.random(using: &generator)
            let size = [0, 1, 5, 125, 126, 300, 65_536, 70_000].randomElement(using: &generator)!
            var payload: [UInt8]
            if isText {
                var text = ""
                while text.utf8.count < size { text += words.randomElement(using: &generator)! }
                payload = Array(text.utf8)
                expected.append(.message(.text(text)))
            } else {
                payload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
                expected.append(.message(.binary(Data(payload))))
            }
            // Split anywhere, also inside a UTF-8 sequence: validation must carry across fragments.
            var cuts = (0..<Int.random(in: 0...4, using: &generator)).map { _ in Int.random(in: 0...payload.count, using: &generator) }
            cuts.sort()
            var pieces: [[UInt8]] = []
            var last = 0
            for cut in cuts { pieces.append(Array(payload[last..<cut])); last = cut }
            pieces.append(Array(payload[last...]))
            var controlsInside: [WebSocketEvent] = []
            for (index, piece) in pieces.enumerated() {
                let opcode: UInt8 = index == 0 ? (isText ? 1 : 2) : 0
                wire += TestFrame(fin: index == pieces.count - 1, opcode: opcode, mask: mask(), payload: piece).bytes
                if index < pieces.count - 1, Int.random(in: 0..<3, using: &generator) == 0 {
                    let control = (0..<Int.random(in: 0...125, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                    let isPing = Bool.random(using: &generator)
                    wire += TestFrame(opcode: isPing ? 9 : 10, mask: mask(), payload: control).bytes
                    controlsInside.append(isPing ? .ping(control) : .pong(control))
                }
            }
            // Control frames are delivered as they arrive, before the message they interrupt.
            expected.insert(contentsOf: controlsInside, at: expected.count - 1)
        }
        return (wire, expected)
    }

    static func randomChunks(total: Int, seed: UInt64, maximum: Int) -> [Int] {
        var generator = SeededGenerator(seed: seed)
        var chunks: [Int] = []
        var covered = 0
        while covered < total {
            let size = Int.random(in: 1...maximum, using: &generator)
            chunks.append(size)
            covered += size
        }
        return chunks
    }

    @Test("whole buffer, one byte at a time and random splits agree", arguments: [UInt64(1), 2, 3])
    func everyChunking(seed: UInt64) {
        for role in [WebSocketRole.client, .server] {
            let (wire, expected) = Self.conversation(seed: seed, masked: role == .server, messages: 25)
            let whole = decode(wire, role: role)
            #expect(whole.events == expected)
            let oneByte = decode(wire, role: role, chunks: Array(repeating: 1, count: wire.count))
            #expect(oneByte.events == expected)
            #expect(oneByte.output.count == whole.output.count, "same pongs")
            for maximum in [2, 7, 150, 5_000, 100_000] {
                let chunks = Self.randomChunks(total: wire.count, seed: seed &* 31 &+ UInt64(maximum), maximum: maximum)
                #expect(decode(wire, role: role, chunks: chunks).events == expected, "max chunk \(maximum)")
            }
        }
    }

    @Test("property: random conversations, random splits, same events as whole-buffer decoding")
    func property() {
        for seed in UInt64(100)..<UInt64(130) {
            let role: WebSocketRole = seed % 2 == 0 ? .client : .server
            let (wire, expected) = Self.conversation(seed: seed, masked: role == .server, messages: 8)
            let whole = decode(wire, role: role)
            #expect(whole.events == expected)
            let chunks = Self.randomChunks(total: wire.count, seed: seed, maximum: 300)
            let split = decode(wire, role: role, chunks: chunks)
            #expect(split.events == whole.events, "seed \(seed)")
            #expect(peerEvents(of: split.output, peerRole: role == .client ? .server : .client)
                    == peerEvents(of: whole.output, peerRole: role == .client ? .server : .client))
        }
    }

    @Test("a frame head cut at every byte position")
    func headCutEverywhere() {
        let frames = [
            TestFrame(opcode: 2, payload: [UInt8](repeating: 1, count: 70_000)).bytes,
            TestFrame(opcode: 9, payload: [1, 2, 3]).bytes,
            TestFrame(opcode: 1, payload: Array("short".utf8)).bytes,
        ]
        let wire = frames.joined().map { $0 }
        let expected = decode(wire).events
        #expect(expected.count == 3)
        for cut in 1..<20 {
            #expect(decode(wire, chunks: [cut]).events == expected)
            #expect(decode(wire, chunks: [frames[0].count + cut]).events == expected)
        }
    }
}

@Suite("Codec robustness")
struct CodecRobustnessTests {
    /// Frame-shaped noise: plausible first bytes, mask bits and lengths, random payloads.
    static func noise(seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 1...12, using: &generator) {
            let first = [0x81, 0x82, 0x01, 0x00, 0x80, 0x89, 0x8A, 0x88, 0x09, 0xC1, 0x83].randomElement(using: &generator)!
            let length = [0, 1, 2, 5, 125, 126, 127].randomElement(using: &generator)!
            bytes.append(UInt8(first))
            let masked = Int.random(in: 0..<8, using: &generator) == 0
            if length == 126 {
                bytes += [(masked ? 0x80 : 0) | 126, 0, UInt8.random(in: 126...200, using: &generator)]
            } else if length == 127 {
                bytes += [(masked ? 0x80 : 0) | 127, 0, 0, 0, 0, 0, 0, 0x01, UInt8.random(in: 0...255, using: &generator)]
            } else {
                bytes.append((masked ? 0x80 : 0) | UInt8(length))
            }
            if masked { bytes += (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) } }
            let payloadLength = length == 126 ? Int(bytes.last!) : (length == 127 ? 256 + Int(bytes.last!) : length)
            bytes += (0..<payloadLength).map { _ in
                Bool.random(using: &generator) ? UInt8.random(in: 0x20...0x7E, using: &generator) : UInt8.random(in: 0...255, using: &generator)
            }
            if Int.random(in: 0..<6, using: &generator) == 0 {
                bytes.append(UInt8.random(in: 0...255, using: &generator))  // desynchronise
            }
        }
        return bytes
    }

    @Test("property: frame-shaped noise never traps and decodes the same however it is split")
    func noiseIsChunkingIndependent() {
        for seed in UInt64(1_000)..<UInt64(1_400) {
            let bytes = Self.noise(seed: seed)
            for role in [WebSocketRole.client, .server] {
                let whole = decode(bytes, role: role)
                let oneByte = decode(bytes, role: role, chunks: Array(repeating: 1, count: bytes.count))
                #expect(oneByte.events == whole.events, "seed \(seed)")
                #expect(oneByte.output == whole.output || role == .client, "seed \(seed)")
                // At most one terminal event, and it is the last one.
                let terminal = whole.events.indices.filter {
                    if case .failed = whole.events[$0] { return true }
                    if case .closed = whole.events[$0] { return true }
                    return false
                }
                #expect(terminal.count <= 1 && (terminal.first.map { $0 == whole.events.count - 1 } ?? true))
            }
        }
    }
}
