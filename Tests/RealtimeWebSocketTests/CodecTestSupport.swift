import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@testable import RealtimeWebSocket

/// SplitMix64: a small seeded generator so random tests repeat exactly.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Builds raw frames, including ones our encoder would never write.
struct TestFrame {
    var fin = true
    var rsv: UInt8 = 0
    var opcode: UInt8
    var maskKey: [UInt8]?
    var payload: [UInt8]
    /// Forces the 16-bit (126) or 64-bit (127) length form even for short payloads.
    var lengthForm: UInt8?
    /// Overrides the 64-bit length field.
    var rawLength64: UInt64?

    init(fin: Bool = true, rsv: UInt8 = 0, opcode: UInt8, mask: [UInt8]? = nil, payload: [UInt8] = [],
         lengthForm: UInt8? = nil, rawLength64: UInt64? = nil) {
        self.fin = fin
        self.rsv = rsv
        self.opcode = opcode
        self.maskKey = mask
        self.payload = payload
        self.lengthForm = lengthForm
        self.rawLength64 = rawLength64
    }

    static func text(_ text: String, fin: Bool = true, mask: [UInt8]? = nil) -> TestFrame {
        TestFrame(fin: fin, opcode: 1, mask: mask, payload: Array(text.utf8))
    }

    var bytes: [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | (rsv << 4) | opcode]
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        let length = payload.count
        let form = lengthForm ?? (rawLength64 != nil ? 127 : (length < 126 ? 0 : (length <= 0xFFFF ? 126 : 127)))
        switch form {
        case 126:
            out += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        case 127:
            let wide = rawLength64 ?? UInt64(length)
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: wide >> UInt64(shift))) }
        default:
            out.append(maskBit | UInt8(length))
        }
        if let maskKey {
            out += maskKey
            out += payload.enumerated().map { $0.element ^ maskKey[$0.offset % 4] }
        } else {
            out += payload
        }
        return out
    }
}

let sampleMask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

/// Feeds `bytes` to `codec` in pieces of the given sizes (the rest in one piece).
func feed(_ codec: inout WebSocketCodec, _ bytes: [UInt8], chunks: [Int] = []) -> (events: [WebSocketEvent], output: [UInt8]) {
    var events: [WebSocketEvent] = []
    var output: [UInt8] = []
    var offset = 0
    for size in chunks where offset < bytes.count {
        let end = min(offset + size, bytes.count)
        bytes[offset..<end].withUnsafeBytes { codec.receive($0, events: &events, output: &output) }
        offset = end
    }
    if offset < bytes.count {
        bytes[offset...].withUnsafeBytes { codec.receive($0, events: &events, output: &output) }
    }
    return (events, output)
}

/// Decodes `bytes` with a fresh codec of `role`.
func decode(_ bytes: [UInt8], role: WebSocketRole = .client, limits: WebSocketLimits = .init(),
            chunks: [Int] = []) -> (events: [WebSocketEvent], output: [UInt8]) {
    var codec = WebSocketCodec(role: role, limits: limits)
    return feed(&codec, bytes, chunks: chunks)
}

/// What a peer of `role` makes of `bytes` written by the other side (for checking our output).
func peerEvents(of bytes: [UInt8], peerRole: WebSocketRole) -> [WebSocketEvent] {
    decode(bytes, role: peerRole).events
}

extension WebSocketEvent {
    var failureCloseCode: Int? {
        if case .failed(_, let code) = self { return code }
        return nil
    }
    var failureError: RealtimeError? {
        if case .failed(let error, _) = self { return error }
        return nil
    }
}

func text(_ string: String) -> WebSocketEvent { .message(.text(string)) }
func binary(_ bytes: [UInt8]) -> WebSocketEvent { .message(.binary(Data(bytes))) }
