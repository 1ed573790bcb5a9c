import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Codec framing")
struct CodecFramingTests {
    @Test("RFC 6455 §5.7 examples decode")
    func rfcExamples() {
        #expect(decode([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]).events == [text("Hello")])
        #expect(decode([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58], role: .server).events
                == [text("Hello")])
        #expect(decode([0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]).events == [text("Hello")])
    }

    @Test("client encoding matches RFC 6455 §5.7 byte for byte with its masking key")
    func clientEncodingWithFixedKey() {
        var codec = WebSocketCodec(role: .client, maskKeys: MaskKeySource(fixedKey: sampleMask))
        var output: [UInt8] = []
        codec.encode(.text("Hello"), into: &output)
        #expect(output == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test("server encoding is unmasked")
    func serverEncoding() {
        var codec = WebSocketCodec(role: .server)
        var output: [UInt8] = []
        codec.encode(.binary(Data([1, 2, 3])), into: &output)
        #expect(output == [0x82, 0x03, 1, 2, 3])
    }

    static let lengthEdges = [0, 1, 7, 8, 9, 125, 126, 127, 128, 65_535, 65_536, 70_001]

    @Test("every length form round-trips from server to client", arguments: lengthEdges)
    func serverToClientLengths(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let textPayload = String(repeating: "é", count: length / 2) + (length % 2 == 1 ? "x" : "")
        var server = WebSocketCodec(role: .server)
        var wire: [UInt8] = []
        server.encode(.binary(Data(payload)), into: &wire)
        let headLength = length < 126 ? 2 : (length <= 0xFFFF ? 4 : 10)
        #expect(wire.count == headLength + length)
        server.encode(.text(textPayload), into: &wire)
        #expect(decode(wire).events == [binary(payload), text(textPayload)])
    }

    @Test("masking round-trips from client to server at every length form", arguments: lengthEdges)
    func clientToServerLengths(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        var client = WebSocketCodec(role: .client)
        var wire: [UInt8] = []
        client.encode(.binary(Data(payload)), into: &wire)
        let headLength = (length < 126 ? 2 : (length <= 0xFFFF ? 4 : 10)) + 4
        #expect(wire.count == headLength + length)
        #expect(wire[1] & 0x80 != 0, "mask bit set")
        if length >= 16 { #expect(Array(wire[headLength...]) != payload, "payload is masked on the wire") }
        #expect(decode(wire, role: .server).events == [binary(payload)])
        // The same wire bytes cut into 3-byte pieces unmask identically (mask offset carried over).
        #expect(decode(wire, role: .server, chunks: Array(repeating: 3, count: wire.count)).events == [binary(payload)])
    }

    @Test("masking keys differ between frames")
    func maskKeysVary() {
        var client = WebSocketCodec(role: .client)
        var keys = Set<[UInt8]>()
        for _ in 0..<200 {
            var wire: [UInt8] = []
            client.encode(.text("x"), into: &wire)
            keys.insert(Array(wire[2..<6]))
        }
        #expect(keys.count > 190)
    }

    @Test("non-minimal length encodings are accepted (RFC 6455 puts minimality on the sender)")
    func nonMinimalLengths() {
        let short16 = TestFrame(opcode: 1, payload: Array("hi".utf8), lengthForm: 126).bytes
        let short64 = TestFrame(opcode: 2, payload: [9], lengthForm: 127).bytes
        #expect(decode(short16 + short64).events == [text("hi"), binary([9])])
    }

    @Test("fragmented messages with control frames between fragments")
    func fragmentsWithControlFrames() {
        let wire = TestFrame(fin: false, opcode: 1, payload: Array("frag".utf8)).bytes
            + TestFrame(opcode: 9, payload: [1, 2]).bytes
            + TestFrame(fin: false, opcode: 0, payload: Array("men".utf8)).bytes
            + TestFrame(opcode: 10, payload: [3]).bytes
            + TestFrame(fin: false, opcode: 0, payload: []).bytes
            + TestFrame(opcode: 0, payload: Array("ts".utf8)).bytes
            + TestFrame(fin: false, opcode: 2, payload: [1]).bytes
            + TestFrame(opcode: 0, payload: [2]).bytes
        let result = decode(wire)
        #expect(result.events == [.ping([1, 2]), .pong([3]), text("fragments"), binary([1, 2])])
        #expect(peerEvents(of: result.output, peerRole: .server) == [.pong([1, 2])])
    }

    @Test("empty messages, unfragmented and fragmented")
    func emptyMessages() {
        let wire = TestFrame(opcode: 1).bytes + TestFrame(opcode: 2).bytes
            + TestFrame(fin: false, opcode: 1).bytes + TestFrame(opcode: 0).bytes
        #expect(decode(wire).events == [text(""), binary([]), text("")])
        #expect(decode(TestFrame(opcode: 1, mask: sampleMask).bytes, role: .server).events == [text("")])
    }

    @Test("automatic pong carries the ping payload, masked by a client", arguments: [0, 1, 60, 125])
    func automaticPong(length: Int) {
        let payload = (0..<length).map { UInt8($0 % 251) }
        let result = decode(TestFrame(opcode: 9, payload: payload).bytes)
        #expect(result.events == [.ping(payload)])
        #expect(result.output.count == 2 + 4 + length)
        #expect(peerEvents(of: result.output, peerRole: .server) == [.pong(payload)])
        // A server answers a client's masked ping unmasked.
        let serverResult = decode(TestFrame(opcode: 9, mask: sampleMask, payload: payload).bytes, role: .server)
        #expect(serverResult.events == [.ping(payload)])
        #expect(serverResult.output == TestFrame(opcode: 10, payload: payload).bytes)
    }

    @Test("encodePing and encodePong write control frames and cut payloads to 125 bytes")
    func explicitControlFrames() {
        var server = WebSocketCodec(role: .server)
        var wire: [UInt8] = []
        server.encodePing([1, 2, 3], into: &wire)
        server.encodePong([UInt8](repeating: 7, count: 200), into: &wire)
        #expect(wire.prefix(5) == [0x89, 0x03, 1, 2, 3])
        #expect(decode(wire).events.last == .pong([UInt8](repeating: 7, count: 125)))
    }

    @Test("maximumMessages stops after each message and reports the bytes used")
    func maximumMessages() {
        let first = TestFrame.text("one").bytes
        let wire = first + TestFrame.text("two").bytes + TestFrame(opcode: 9, payload: [5]).bytes
        var codec = WebSocketCodec(role: .client)
        var events: [WebSocketEvent] = []
        var output: [UInt8] = []
        let used = wire.withUnsafeBytes { codec.receive($0, maximumMessages: 1, events: &events, output: &output) }
        #expect(used == first.count)
        #expect(events == [text("one")])
        let rest = wire[used...].withUnsafeBytes { codec.receive($0, maximumMessages: 1, events: &events, output: &output) }
        #expect(rest == TestFrame.text("two").bytes.count)
        let last = wire[(used + rest)...].withUnsafeBytes { codec.receive($0, maximumMessages: 1, events: &events, output: &output) }
        #expect(last == 3)
        #expect(events == [text("one"), text("two"), .ping([5])])
    }

    @Test("large fragmented binary message through many reads")
    func largeFragmentedMessage() {
        var generator = SeededGenerator(seed: 42)
        let payload = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var wire: [UInt8] = []
        var index = 0
        var first = true
        while index < payload.count {
            let end = min(index + 4_096, payload.count)
            wire += TestFrame(fin: end == payload.count, opcode: first ? 2 : 0, payload: Array(payload[index..<end])).bytes
            first = false
            index = end
        }
        #expect(decode(wire, chunks: Array(repeating: 1_000, count: 400)).events == [binary(payload)])
    }
}
