import Foundation
import RealtimeCore
import RealtimeWebSocket

/// The client codec on arbitrary server bytes. Input: a limits byte, a cut-seed byte, then the stream.
///
/// Properties: decoding is independent of how the stream is cut into reads (whole, input-chosen cuts,
/// one message per call); nothing follows `.closed` or `.failed`; no message exceeds the limits; what
/// the codec writes back (pongs, close replies) is well-formed masked framing that a server decodes.
enum CodecFuzz {
    static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var input = FuzzInput(bytes)
        let config = input.byte()
        let limits = WebSocketLimits(maximumFrameSize: 64 << Int(config & 7),
                                     maximumMessageSize: 64 << Int((config >> 3) & 7),
                                     maximumFragmentCount: 1 + Int(config >> 6) * 4)
        var cutRandom = SplitMix64(seed: UInt64(input.byte()))
        let stream = input.rest()

        let whole = decode(stream, limits: limits, cuts: [stream.count])
        var cuts: [Int] = []
        var left = stream.count
        while left > 0 {
            let size = min(left, Int(cutRandom.next() % 24) + 1)
            cuts.append(size)
            left -= size
        }
        let pieces = decode(stream, limits: limits, cuts: cuts)
        try require(whole.summary == pieces.summary,
                    "cut reads decode differently:\n whole: \(whole.summary)\n cut:   \(pieces.summary)")
        let oneByOne = decodeOneMessageAtATime(stream, limits: limits)
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
                try require(size <= limits.maximumMessageSize, "a \(size)-byte message passed a limit of \(limits.maximumMessageSize)")
            }
            try require(run.reply == whole.reply, "the replies differ with the cut")
        }
    }

    struct Decoded {
        var events: [WebSocketEvent] = []
        /// What the client wrote back, as a server decodes it.
        var reply: [String] = []
        var summary: [String] { events.map(describe) + ["reply:"] + reply }
    }

    static func decode(_ stream: [UInt8], limits: WebSocketLimits, cuts: [Int]) -> Decoded {
        var codec = WebSocketCodec(role: .client, limits: limits)
        var decoded = Decoded()
        var output: [UInt8] = []
        var offset = 0
        for size in cuts {
            stream[offset..<offset + size].withUnsafeBytes { codec.receive($0, events: &decoded.events, output: &output) }
            offset += size
        }
        decoded.reply = serverView(of: output)
        return decoded
    }

    static func decodeOneMessageAtATime(_ stream: [UInt8], limits: WebSocketLimits) -> Decoded {
        var codec = WebSocketCodec(role: .client, limits: limits)
        var decoded = Decoded()
        var output: [UInt8] = []
        var offset = 0
        while offset < stream.count {
            let used = stream[offset...].withUnsafeBytes {
                codec.receive($0, maximumMessages: 1, events: &decoded.events, output: &output)
            }
            guard used > 0 else { break }
            offset += used
        }
        decoded.reply = serverView(of: output)
        return decoded
    }

    /// The client's output decoded by a server codec: it must be valid masked framing.
    static func serverView(of output: [UInt8]) -> [String] {
        var server = WebSocketCodec(role: .server)
        var events: [WebSocketEvent] = []
        var ignored: [UInt8] = []
        output.withUnsafeBytes { server.receive($0, events: &events, output: &ignored) }
        return events.map(describe)
    }

    static func describe(_ event: WebSocketEvent) -> String {
        switch event {
        case .message(.text(let text)): "text \(text.debugDescription)"
        case .message(.binary(let data)): "binary \(Array(data))"
        case .ping(let payload): "ping \(payload)"
        case .pong(let payload): "pong \(payload)"
        case .closed(let code, let reason): "closed \(code.map(String.init) ?? "-") \(reason.debugDescription)"
        // The message may name where the problem was seen; the code and close code may not differ.
        case .failed(let error, let closeCode): "failed \(error.code) \(closeCode)"
        }
    }
}

extension WebSocketEvent {
    /// `.closed` and `.failed` end the input.
    var isFinal: Bool {
        switch self {
        case .closed, .failed: true
        default: false
        }
    }
}

/// A small seeded generator (SplitMix64), so that the choices derived from one input repeat exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
