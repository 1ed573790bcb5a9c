import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// RFC 7692 §7.2.3's example payloads, as a server sends them (unmasked, RSV1 on the first frame).
enum RFC7692Examples {
    /// §7.2.3.1: "Hello" in one compressed frame.
    static let hello: [UInt8] = [0xC1, 0x07, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
    /// §7.2.3.1: the same message in two fragments; RSV1 on the first only.
    static let helloFragmented: [UInt8] = [0x41, 0x03, 0xF2, 0x48, 0xCD, 0x80, 0x04, 0xC9, 0xC9, 0x07, 0x00]
    /// §7.2.3.2: a second "Hello" that refers back to the first (context takeover).
    static let helloAgainSharingWindow: [UInt8] = [0xC1, 0x05, 0xF2, 0x00, 0x11, 0x00, 0x00]
    /// §7.2.3.3: a DEFLATE block with no compression.
    static let helloStored: [UInt8] = [0xC1, 0x0B, 0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00]
    /// §7.2.3.4: a block with BFINAL set (and a byte after the end of the stream).
    static let helloFinalBlock: [UInt8] = [0xC1, 0x08, 0xF3, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00, 0x00]
    /// §7.2.3.5: two DEFLATE blocks in one message.
    static let helloTwoBlocks: [UInt8] = [0xC1, 0x0D, 0xF2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xCA, 0xC9,
                                          0xC9, 0x07, 0x00]
    /// The compressed payload of "Hello" from a fresh zlib deflater (level 6, sync flush, tail removed).
    static let helloPayload: [UInt8] = [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]
    /// The payload of a second "Hello" from the same deflater.
    static let helloAgainPayload: [UInt8] = [0xF2, 0x00, 0x11, 0x00, 0x00]
}

/// A codec with permessage-deflate on, as the handshake would leave it.
func deflateCodec(_ role: WebSocketRole = .client, _ parameters: PerMessageDeflateParameters = .init(),
                  limits: WebSocketLimits = .init(), minimumMessageSize: Int = 0) -> WebSocketCodec {
    var codec = WebSocketCodec(role: role, limits: limits)
    codec.enableDeflate(parameters, minimumMessageSize: minimumMessageSize, compressionLevel: 6)
    return codec
}

/// One frame as the peer sees it: flags, opcode and the unmasked payload.
struct WireFrame: Equatable {
    var fin: Bool
    var rsv: UInt8
    var opcode: UInt8
    var payload: [UInt8]

    /// Splits `bytes` (complete frames) into frames, unmasking masked payloads.
    static func parse(_ bytes: [UInt8]) -> [WireFrame] {
        var frames: [WireFrame] = []
        var index = 0
        while index + 2 <= bytes.count {
            let first = bytes[index], second = bytes[index + 1]
            var length = Int(second & 0x7F)
            index += 2
            if length == 126 {
                length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
                index += 2
            } else if length == 127 {
                length = bytes[index..<index + 8].reduce(0) { $0 << 8 | Int($1) }
                index += 8
            }
            var key: [UInt8]?
            if second & 0x80 != 0 {
                key = Array(bytes[index..<index + 4])
                index += 4
            }
            var payload = Array(bytes[index..<index + length])
            if let key { for offset in payload.indices { payload[offset] ^= key[offset % 4] } }
            index += length
            frames.append(WireFrame(fin: first & 0x80 != 0, rsv: (first >> 4) & 7, opcode: first & 0x0F, payload: payload))
        }
        return frames
    }
}

/// `count` bytes of `byte` compressed by a fresh deflater as one message (tail removed).
func compressedRun(of byte: UInt8, count: Int) -> [UInt8] {
    let stream = ZlibStream(.deflate, windowBits: 15)!
    var output: [UInt8] = []
    let input = [UInt8](repeating: byte, count: count)
    #expect(input.withUnsafeBytes { stream.deflateMessage($0, into: &output) })
    return output
}

/// A frame head for a server frame of `length` payload bytes with the given first byte.
func frameHead(_ first: UInt8, length: Int) -> [UInt8] {
    if length < 126 { return [first, UInt8(length)] }
    if length <= 0xFFFF { return [first, 126, UInt8(length >> 8), UInt8(length & 0xFF)] }
    return [first, 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: length >> ($0 * 8)) }
}

@Suite("permessage-deflate: receiving")
struct DeflateReceiveTests {
    @Test("RFC 7692 §7.2.3.1: \"Hello\" compressed, whole, byte by byte and fragmented")
    func hello() {
        var whole = deflateCodec()
        #expect(feed(&whole, RFC7692Examples.hello).events == [text("Hello")])
        var byByte = deflateCodec()
        #expect(feed(&byByte, RFC7692Examples.hello, chunks: Array(repeating: 1, count: 9)).events == [text("Hello")])
        var fragmented = deflateCodec()
        #expect(feed(&fragmented, RFC7692Examples.helloFragmented).events == [text("Hello")])
        var fragmentedByByte = deflateCodec()
        #expect(feed(&fragmentedByByte, RFC7692Examples.helloFragmented, chunks: Array(repeating: 1, count: 11)).events
            == [text("Hello")])
    }

    @Test("RFC 7692 §7.2.3.2: with context takeover the second message refers back to the first")
    func sharedWindow() {
        var codec = deflateCodec()
        let events = feed(&codec, RFC7692Examples.hello + RFC7692Examples.helloAgainSharingWindow).events
        #expect(events == [text("Hello"), text("Hello")])
    }

    @Test("server_no_context_takeover: the window is reset after each message, so a back-reference fails with 1007")
    func noContextTakeoverResets() {
        var codec = deflateCodec(.client, .init(serverNoContextTakeover: true))
        let events = feed(&codec, RFC7692Examples.hello + RFC7692Examples.helloAgainSharingWindow).events
        #expect(events.first == text("Hello"))
        #expect(events.count == 2)
        #expect(events.last?.failureCloseCode == 1007)
        #expect(events.last?.failureError?.code == .protocolViolation)
        // The same message alone, as a reset inflater sees it, decodes from scratch again.
        var fresh = deflateCodec(.client, .init(serverNoContextTakeover: true))
        #expect(feed(&fresh, RFC7692Examples.hello + RFC7692Examples.hello).events == [text("Hello"), text("Hello")])
    }

    @Test("a server that promised a 512-byte window but refers 1,000 bytes back reads the same whole and byte by byte")
    func distanceBeyondPromisedWindow() {
        // 1,000 bytes no shorter match can shorten, twice: the second copy is one back-reference 1,000 bytes
        // back. zlib accepts such a distance in a 9-bit window only while the bytes are still in the
        // output of the current call, so before the fix this message decoded whole and failed byte by byte.
        var state: UInt64 = 7
        let block = (0..<1_000).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        let payload = block + block
        let stream = ZlibStream(.deflate, windowBits: 15)!
        var compressed: [UInt8] = []
        #expect(payload.withUnsafeBytes { stream.deflateMessage($0, into: &compressed) })
        #expect(compressed.count < 1_100, "the second copy must be one back-reference")
        let frame = frameHead(0xC2, length: compressed.count) + compressed
        let promised = PerMessageDeflateParameters(serverMaxWindowBits: 9)
        for chunks in [[frame.count], Array(repeating: 1, count: frame.count), [600, frame.count - 600]] {
            var codec = deflateCodec(.client, promised)
            #expect(feed(&codec, frame, chunks: chunks).events == [.message(.binary(Data(payload)))],
                    "read in pieces of \(chunks.prefix(2))…")
        }
    }

    @Test("RFC 7692 §7.2.3.3-5: a stored block, a BFINAL block, two blocks in one message")
    func otherBlocks() {
        var stored = deflateCodec()
        #expect(feed(&stored, RFC7692Examples.helloStored).events == [text("Hello")])
        var final = deflateCodec()
        // After a BFINAL block the window is kept: the next message may still refer back to it.
        #expect(feed(&final, RFC7692Examples.helloFinalBlock + RFC7692Examples.helloAgainSharingWindow).events
            == [text("Hello"), text("Hello")])
        var twoBlocks = deflateCodec()
        #expect(feed(&twoBlocks, RFC7692Examples.helloTwoBlocks, chunks: [3, 4, 5]).events == [text("Hello")])
    }

    @Test("binary, empty and uncompressed messages between compressed ones")
    func mixed() {
        let binaryHello = [0xC2] + RFC7692Examples.hello.dropFirst()
        let emptyCompressed: [UInt8] = [0xC1, 0x01, 0x00]
        // RSV1 with no payload at all: taken as the empty message, and the inflater is left as it was.
        let emptyNoPayload: [UInt8] = [0xC2, 0x00]
        let plain = TestFrame.text("plain").bytes
        var codec = deflateCodec()
        let events = feed(&codec, binaryHello + emptyCompressed + plain + emptyNoPayload + RFC7692Examples.hello).events
        #expect(events == [binary(Array("Hello".utf8)), text(""), text("plain"), binary([]), text("Hello")])
    }

    @Test("RSV1 on a continuation or control frame, RSV2/RSV3, or RSV1 without deflate → 1002")
    func reservedBits() {
        let continuationWithRSV1: [UInt8] = [0x41, 0x03, 0xF2, 0x48, 0xCD, 0xC0, 0x04, 0xC9, 0xC9, 0x07, 0x00]
        let pingWithRSV1 = TestFrame(rsv: 4, opcode: 9, payload: [1]).bytes
        let rsv2 = TestFrame(rsv: 2, opcode: 1, payload: Array("x".utf8)).bytes
        for (bytes, reason) in [(continuationWithRSV1, "RSV1 set on a continuation frame"),
                                (pingWithRSV1, "RSV1 set on a control frame"),
                                (rsv2, "RSV2 or RSV3 set: no negotiated extension uses them")] {
            var codec = deflateCodec()
            let result = feed(&codec, bytes)
            #expect(result.events.last?.failureCloseCode == 1002)
            #expect(result.events.last?.failureError?.message == reason)
            #expect(WireFrame.parse(result.output).first.map { Array($0.payload.prefix(2)) } == [0x03, 0xEA])
        }
        let plain = decode(RFC7692Examples.hello).events
        #expect(plain.count == 1)
        #expect(plain.first?.failureCloseCode == 1002)
        #expect(plain.first?.failureError?.message == "reserved bits set without a negotiated extension")
    }

    @Test("invalid UTF-8 inside compressed text fails with 1007; data zlib rejects fails with 1007")
    func invalidContent() {
        var badUTF8 = deflateCodec()
        let payload = ([0xFF, 0xFE] as [UInt8]).withUnsafeBytes { bytes -> [UInt8] in
            var output: [UInt8] = []
            _ = ZlibStream(.deflate, windowBits: 15)!.deflateMessage(bytes, into: &output)
            return output
        }
        let events = feed(&badUTF8, frameHead(0xC1, length: payload.count) + payload).events
        #expect(events.last?.failureCloseCode == 1007)
        #expect(events.last?.failureError?.code == .invalidUTF8)

        var corrupt = deflateCodec()
        let garbage: [UInt8] = [0xC1, 0x04, 0xFF, 0xFF, 0xFF, 0xFF]
        let failure = feed(&corrupt, garbage).events.last
        #expect(failure?.failureCloseCode == 1007)
        #expect(failure?.failureError?.code == .protocolViolation)
        #expect(failure?.failureError?.message.hasPrefix("compressed message cannot be inflated") == true)
    }

    @Test("a message inflating to exactly the limit passes; one byte more is limit-exceeded (1009)")
    func exactLimit() {
        let limits = WebSocketLimits(maximumFrameSize: 1 << 20, maximumMessageSize: 1000)
        let atLimit = compressedRun(of: 0x61, count: 1000)
        var codec = deflateCodec(limits: limits)
        #expect(feed(&codec, frameHead(0xC1, length: atLimit.count) + atLimit).events
            == [text(String(repeating: "a", count: 1000))])
        let over = compressedRun(of: 0x61, count: 1001)
        var overCodec = deflateCodec(limits: limits)
        let events = feed(&overCodec, frameHead(0xC1, length: over.count) + over).events
        #expect(events.count == 1)
        #expect(events.first?.failureCloseCode == 1009)
        #expect(events.first?.failureError?.code == .limitExceeded)
    }

    // Found by the websocket-deflate fuzz target: read whole, the first violation within the limit was
    // hidden by the limit; read in pieces, it was reported.
    @Test("text that inflates past the limit: invalid UTF-8 within the limit is 1007, past it 1009, whole or byte by byte")
    func invalidUTF8BeforeTheLimit() {
        let limits = WebSocketLimits(maximumFrameSize: 1 << 20, maximumMessageSize: 1000)
        for (badOffset, code) in [(998, RealtimeError.Code.invalidUTF8), (1000, .limitExceeded)] {
            var text = [UInt8](repeating: 0x61, count: 1100)
            text[badOffset] = 0xFF
            var payload: [UInt8] = []
            #expect(text.withUnsafeBytes { ZlibStream(.deflate, windowBits: 15)!.deflateMessage($0, into: &payload) })
            let frame = frameHead(0xC1, length: payload.count) + payload
            var whole = deflateCodec(limits: limits)
            #expect(feed(&whole, frame).events.last?.failureError?.code == code, "whole, invalid byte at \(badOffset)")
            var byByte = deflateCodec(limits: limits)
            #expect(feed(&byByte, frame, chunks: Array(repeating: 1, count: frame.count)).events.last?.failureError?.code
                    == code, "byte by byte, invalid byte at \(badOffset)")
        }
    }

    @Test("a decompression bomb: a few KB inflating to 64 MiB stops at the 1 MiB limit with limit-exceeded")
    func bomb() {
        // 64 MiB of zeros as one message: a first sync-flushed MiB, then 63 more that each compress to
        // the same handful of back-references.
        let stream = ZlibStream(.deflate, windowBits: 15)!
        let mebibyte = [UInt8](repeating: 0, count: 1 << 20)
        var first: [UInt8] = []
        var next: [UInt8] = []
        mebibyte.withUnsafeBytes { _ = stream.deflateMessage($0, into: &first) }
        mebibyte.withUnsafeBytes { _ = stream.deflateMessage($0, into: &next) }
        // Each piece had its 00 00 ff ff removed; between pieces it has to stay.
        var bomb = first
        for _ in 1..<64 { bomb += RFC7692Examples.tailBytes + next }
        #expect(bomb.count < 80_000)

        let limits = WebSocketLimits(maximumFrameSize: 1 << 20, maximumMessageSize: 1 << 20)
        for chunks in [[], Array(repeating: 977, count: 100)] {
            var codec = deflateCodec(limits: limits)
            let events = feed(&codec, frameHead(0xC2, length: bomb.count) + bomb, chunks: chunks).events
            #expect(events.count == 1)
            #expect(events.first?.failureError?.code == .limitExceeded)
            #expect(events.first?.failureCloseCode == 1009)
        }

        // The inflater itself never hands out more than the limit, whatever the input promises.
        let inflater = ZlibStream(.inflate, windowBits: 15)!
        var handedOut = 0
        var largestPiece = 0
        let input = bomb + RFC7692Examples.tailBytes
        let outcome = input.withUnsafeBytes { bytes in
            inflater.inflate(bytes, limit: 1 << 20) { piece in
                handedOut += piece.count
                largestPiece = max(largestPiece, piece.count)
                return true
            }
        }
        #expect(outcome == .limitExceeded)
        #expect(handedOut <= 1 << 20)
        #expect(largestPiece <= ZlibStream.chunkSize)
    }

    @Test("the compressed size on the wire also counts against the message limit")
    func wireSizeLimit() {
        let limits = WebSocketLimits(maximumFrameSize: 100, maximumMessageSize: 100)
        var codec = deflateCodec(limits: limits)
        // One stored block of 200 bytes, of which the first frame carries 55 and the second 60.
        let storedHead: [UInt8] = [0x00, 200, 0, 55, 0xFF]
        let first = TestFrame(fin: false, rsv: 4, opcode: 1, payload: storedHead + [UInt8](repeating: 0x61, count: 55)).bytes
        let second = TestFrame(fin: true, opcode: 0, payload: [UInt8](repeating: 0x61, count: 60)).bytes
        let events = feed(&codec, first + second).events
        #expect(events.count == 1)
        #expect(events.last?.failureCloseCode == 1009)
    }

    @Test("a copy of a codec keeps its own inflater: both decode what follows")
    func copiesAreValues() {
        var original = deflateCodec()
        #expect(feed(&original, RFC7692Examples.hello).events == [text("Hello")])
        var copy = original
        #expect(feed(&copy, RFC7692Examples.helloAgainSharingWindow).events == [text("Hello")])
        #expect(feed(&original, RFC7692Examples.helloAgainSharingWindow).events == [text("Hello")])
    }

    @Test("a server codec inflates masked compressed frames")
    func serverRole() {
        let frame = TestFrame(rsv: 4, opcode: 1, mask: sampleMask, payload: RFC7692Examples.helloPayload).bytes
        var codec = deflateCodec(.server)
        #expect(feed(&codec, frame + frame, chunks: [5, 3, 2]).events == [text("Hello"), text("Hello")])
    }
}

@Suite("permessage-deflate: sending")
struct DeflateSendTests {
    private func encode(_ codec: inout WebSocketCodec, _ frames: [TransportFrame], compress: Bool = true) -> [WireFrame] {
        var output: [UInt8] = []
        for frame in frames { codec.encode(frame, compress: compress, into: &output) }
        return WireFrame.parse(output)
    }

    @Test("\"Hello\" goes out as RFC 7692's bytes, RSV1 set; with context takeover the second refers back")
    func knownAnswer() {
        var codec = deflateCodec()
        let frames = encode(&codec, [.text("Hello"), .text("Hello")])
        #expect(frames == [WireFrame(fin: true, rsv: 4, opcode: 1, payload: RFC7692Examples.helloPayload),
                           WireFrame(fin: true, rsv: 4, opcode: 1, payload: RFC7692Examples.helloAgainPayload)])
    }

    @Test("client_no_context_takeover: every message compresses from scratch")
    func noContextTakeover() {
        var codec = deflateCodec(.client, .init(clientNoContextTakeover: true))
        let frames = encode(&codec, [.text("Hello"), .text("Hello")])
        #expect(frames.map(\.payload) == [RFC7692Examples.helloPayload, RFC7692Examples.helloPayload])
    }

    @Test("below the minimum size, with compress: false, or with an 8-bit window, messages go out uncompressed")
    func uncompressed() {
        var codec = deflateCodec(minimumMessageSize: 6)
        let frames = encode(&codec, [.text("Hello"), .text("Hello!")])
        #expect(frames.map(\.rsv) == [0, 4])
        #expect(frames.first?.payload == Array("Hello".utf8))
        var optedOut = deflateCodec()
        #expect(encode(&optedOut, [.binary(Data(repeating: 7, count: 500))], compress: false).map(\.rsv) == [0])
        var eightBits = deflateCodec(.client, .init(clientMaxWindowBits: 8))
        #expect(encode(&eightBits, [.text(String(repeating: "x", count: 500))]).map(\.rsv) == [0])
        var plain = WebSocketCodec(role: .client)
        #expect(encode(&plain, [.text("Hello")]).map(\.rsv) == [0])
    }

    @Test("what a client compresses, a server codec inflates: text and binary, small and 1 MiB, window 9 to 15")
    func roundTrip() {
        var generator = SeededGenerator(seed: 7692)
        let words = ["channel", "event", "data", "\"id\":", "presence", "{", "}", "[", "]", "é", "🎉"]
        var messages: [TransportFrame] = [.text(""), .text("Hello"), .binary(Data([1, 2, 3]))]
        for size in [200, 5_000, 70_000, 1 << 20] {
            var text = ""
            while text.utf8.count < size { text += words.randomElement(using: &generator)! }
            messages.append(.text(text))
            messages.append(.binary(Data((0..<size).map { _ in UInt8.random(in: 0...3, using: &generator) })))
        }
        for bits in [9, 12, 15] {
            for noTakeover in [false, true] {
                let parameters = PerMessageDeflateParameters(clientMaxWindowBits: bits, clientNoContextTakeover: noTakeover)
                var client = deflateCodec(.client, parameters)
                var server = deflateCodec(.server, parameters)
                var output: [UInt8] = []
                for message in messages { client.encode(message, into: &output) }
                #expect(WireFrame.parse(output).allSatisfy { $0.rsv == 4 })
                let received = feed(&server, output, chunks: [1, 2, 3, 1000, 7, 65_536]).events
                #expect(received == messages.map { .message($0) }, "window \(bits), no takeover \(noTakeover)")
            }
        }
    }

    @Test("control frames are never compressed")
    func controlFrames() {
        var codec = deflateCodec()
        var output: [UInt8] = []
        codec.encodePing(Array(repeating: 0x41, count: 100), into: &output)
        codec.encodeClose(code: 1000, reason: String(repeating: "r", count: 100), into: &output)
        #expect(WireFrame.parse(output).map(\.rsv) == [0, 0])
    }
}

extension RFC7692Examples {
    static let tailBytes: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
}
