/// SHA-1 (FIPS 180-4), only for computing `Sec-WebSocket-Accept`.
///
/// SHA-1 is broken for signatures; the WebSocket handshake uses it as a checksum that proves the server
/// read our key, nothing more. Kept in-package so `ws://` needs no crypto library.
package enum SHA1 {
    /// The 20-byte digest of `bytes`.
    package static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var message = [UInt8]()
        let bitLength = UInt64(bytes.count) &* 8
        message.reserveCapacity(bytes.count + 72)
        message.append(contentsOf: bytes)
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            message.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }

        var state: (UInt32, UInt32, UInt32, UInt32, UInt32) =
            (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        var schedule = [UInt32](repeating: 0, count: 80)
        for blockStart in stride(from: 0, to: message.count, by: 64) {
            for index in 0..<16 {
                let base = blockStart + index * 4
                schedule[index] = UInt32(message[base]) << 24 | UInt32(message[base + 1]) << 16
                    | UInt32(message[base + 2]) << 8 | UInt32(message[base + 3])
            }
            for index in 16..<80 {
                schedule[index] = rotateLeft(
                    schedule[index - 3] ^ schedule[index - 8] ^ schedule[index - 14] ^ schedule[index - 16], by: 1)
            }
            var (a, b, c, d, e) = state
            for index in 0..<80 {
                let mixed: UInt32
                let constant: UInt32
                switch index {
                case 0..<20: mixed = (b & c) | (~b & d); constant = 0x5A82_7999
                case 20..<40: mixed = b ^ c ^ d; constant = 0x6ED9_EBA1
                case 40..<60: mixed = (b & c) | (b & d) | (c & d); constant = 0x8F1B_BCDC
                default: mixed = b ^ c ^ d; constant = 0xCA62_C1D6
                }
                let next = rotateLeft(a, by: 5) &+ mixed &+ e &+ constant &+ schedule[index]
                e = d
                d = c
                c = rotateLeft(b, by: 30)
                b = a
                a = next
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
        }

        var digest = [UInt8]()
        digest.reserveCapacity(20)
        for word in [state.0, state.1, state.2, state.3, state.4] {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    @inline(__always)
    private static func rotateLeft(_ value: UInt32, by count: UInt32) -> UInt32 {
        (value << count) | (value >> (32 - count))
    }
}
