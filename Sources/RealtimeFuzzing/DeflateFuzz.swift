import Foundation
import RealtimeCore
import RealtimeWebSocket

/// The client codec with permessage-deflate on, fed server frames built from the input: some compressed by
/// a server codec (valid DEFLATE, repeated plaintext for bomb-like ratios), some raw with RSV1 set (garbage
/// for the inflater), fragments and pings between them.
///
/// Input: a config byte (message limit 64 B…8 KiB, the server's window 9…15, its context takeover), a cut
/// seed, then frame specs: a flags byte (opcode, FIN, RSV1, compressed by the server codec, repeated), a
/// length byte, that many bytes (and a repeat count when repeated).
///
/// Properties: those of the codec target (decoding independent of the cuts, nothing after the end) and
/// that no inflated message passes the limit, however far its data would inflate.
enum DeflateFuzz {
    static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var input = FuzzInput(bytes)
        let config = input.byte()
        let limits = WebSocketLimits(maximumFrameSize: 16 << 10, maximumMessageSize: 64 << Int(config & 7),
                                     maximumFragmentCount: 64)
        let parameters = PerMessageDeflateParameters(serverMaxWindowBits: min(15, 9 + Int((config >> 3) & 7)),
                                                     serverNoContextTakeover: config & 0x40 != 0)
        var cutRandom = SplitMix64(seed: UInt64(input.byte()))
        let stream = makeStream(&input, parameters: parameters)

        let whole = decode(stream, limits: limits, parameters: parameters, cuts: [stream.count])
        var cuts: [Int] = []
        var left = stream.count
        while left > 0 {
            let size = min(left, Int(cutRandom.next() % 24) + 1)
            cuts.append(size)
            left -= size
        }
        let pieces = decode(stream, limits: limits, parameters: parameters, cuts: cuts)
        try require(whole.summary == pieces.summary,
                    "cut reads decode differently:\n whole: \(whole.summary)\n cut:   \(pieces.summary)")
        let oneByOne = decodeOneMessageAtATime(stream, limits: limits, parameters: parameters)
        try require(whole.summary == oneByOne.summary,
                    "one message per call decodes differently:\n whole: \(whole.summary)\n one:   \(oneByOne.summary)")
        for run in [whole, pieces, oneByOne] {
            if let end = run.events.firstIndex(where: \.isFinal) {
                try require(end == run.events.count - 1, "events after the connection ended: \(run.summary)")
            }
            for case .message(let frame) in run.events {
                let size = switch frame {
                case .text(let text): text.utf8.count
                case .binary(let data): data.count
                }
                try require(size <= limits.maximumMessageSize,
                            "a \(size)-byte message inflated past a limit of \(limits.maximumMessageSize)")
            }
        }
    }

    /// Server frames from the input's specs.
    static func makeStream(_ input: inout FuzzInput, parameters: PerMessageDeflateParameters) -> [UInt8] {
        var server = WebSocketCodec(role: .server)
        server.enableDeflate(parameters, minimumMessageSize: 0, compressionLevel: 6)
        var stream: [UInt8] = []
        while !input.isAtEnd {
            let flags = input.byte()
            var payload = input.bytes(upTo: 255)
            if flags & 0x20 != 0 {
                payload = Array([[UInt8]](repeating: payload, count: max(Int(input.byte()), 1)).joined())
            }
            if flags & 0x10 != 0 {
                // A whole message compressed by the server's codec: valid DEFLATE in the negotiated window.
                server.encode(flags & 1 == 0 ? .binary(Data(payload)) : .text(String(decoding: payload, as: UTF8.self)),
                              into: &stream)
                continue
            }
            let opcode: UInt8 = [0, 1, 2, 9][Int(flags & 3)]
            let first = (flags & 4 != 0 || opcode == 9 ? 0x80 : 0) | (flags & 8 != 0 ? 0x40 : 0) | opcode
            let body = opcode == 9 ? Array(payload.prefix(125)) : Array(payload.prefix(16 << 10))
            stream.append(first)
            if body.count < 126 {
                stream.append(UInt8(body.count))
            } else {
                stream += [126, UInt8(body.count >> 8), UInt8(body.count & 0xFF)]
            }
            stream += body
        }
        return stream
    }

    static func makeCodec(_ limits: WebSocketLimits, _ parameters: PerMessageDeflateParameters) -> WebSocketCodec {
        var codec = WebSocketCodec(role: .client, limits: limits)
        codec.enableDeflate(parameters, minimumMessageSize: 0, compressionLevel: 6)
        return codec
    }

    static func decode(_ stream: [UInt8], limits: WebSocketLimits, parameters: PerMessageDeflateParameters,
                       cuts: [Int]) -> CodecFuzz.Decoded {
        var codec = makeCodec(limits, parameters)
        var decoded = CodecFuzz.Decoded()
        var output: [UInt8] = []
        var offset = 0
        for size in cuts {
            stream[offset..<offset + size].withUnsafeBytes { codec.receive($0, events: &decoded.events, output: &output) }
            offset += size
        }
        return decoded
    }

    static func decodeOneMessageAtATime(_ stream: [UInt8], limits: WebSocketLimits,
                                        parameters: PerMessageDeflateParameters) -> CodecFuzz.Decoded {
        var codec = makeCodec(limits, parameters)
        var decoded = CodecFuzz.Decoded()
        var output: [UInt8] = []
        var offset = 0
        while offset < stream.count {
            let used = stream[offset...].withUnsafeBytes {
                codec.receive($0, maximumMessages: 1, events: &decoded.events, output: &output)
            }
            guard used > 0 else { break }
            offset += used
        }
        return decoded
    }
}
