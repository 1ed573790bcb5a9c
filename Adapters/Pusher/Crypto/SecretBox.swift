/// NaCl `crypto_secretbox_open` (XSalsa20-Poly1305), which Pusher's encrypted channels use.
/// Only opening is needed by a client; `seal` exists for the embedded test server and tests.
public enum SecretBox {
    public static let keyCount = 32
    public static let nonceCount = 24
    public static let tagCount = 16

    /// The plaintext of `box` (tag ‖ ciphertext), or `nil` when the tag does not verify.
    public static func open(_ box: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8]? {
        guard key.count == keyCount, nonce.count == nonceCount, box.count >= tagCount else { return nil }
        let stream = XSalsa20(key: key, nonce: nonce)
        let keystream = stream.bytes(count: 32 + box.count - tagCount)
        let polyKey = Array(keystream[0..<32])
        let cipher = Array(box[tagCount...])
        let tag = Poly1305.authenticate(cipher, key: polyKey)
        // Constant time: every byte is compared whatever the first difference.
        var difference: UInt8 = 0
        for index in 0..<tagCount { difference |= tag[index] ^ box[index] }
        guard difference == 0 else { return nil }
        var plain = cipher
        for index in plain.indices { plain[index] ^= keystream[32 + index] }
        return plain
    }

    /// tag ‖ ciphertext of `plaintext`.
    public static func seal(_ plaintext: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(key.count == keyCount && nonce.count == nonceCount, "secretbox key 32 bytes, nonce 24 bytes")
        let keystream = XSalsa20(key: key, nonce: nonce).bytes(count: 32 + plaintext.count)
        var cipher = plaintext
        for index in cipher.indices { cipher[index] ^= keystream[32 + index] }
        return Poly1305.authenticate(cipher, key: Array(keystream[0..<32])) + cipher
    }
}

/// The XSalsa20 stream: HSalsa20 derives a subkey from the first 16 nonce bytes, Salsa20 runs with the rest.
struct XSalsa20 {
    private let subkey: [UInt32]
    private let nonceWords: (UInt32, UInt32)

    init(key: [UInt8], nonce: [UInt8]) {
        let keyWords = Self.words(key)
        let nonceHead = Self.words(Array(nonce[0..<16]))
        var state = Self.initialState(key: keyWords, input: nonceHead)
        Self.rounds(&state)
        subkey = [state[0], state[5], state[10], state[15], state[6], state[7], state[8], state[9]]
        let tail = Self.words(Array(nonce[16..<24]))
        nonceWords = (tail[0], tail[1])
    }

    /// The first `count` keystream bytes.
    func bytes(count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count + 64)
        var counter: UInt64 = 0
        while out.count < count {
            let input = [nonceWords.0, nonceWords.1, UInt32(truncatingIfNeeded: counter), UInt32(truncatingIfNeeded: counter >> 32)]
            let initial = Self.initialState(key: subkey, input: input)
            var state = initial
            Self.rounds(&state)
            for index in 0..<16 {
                let word = state[index] &+ initial[index]
                out += [UInt8(truncatingIfNeeded: word), UInt8(truncatingIfNeeded: word >> 8),
                        UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 24)]
            }
            counter += 1
        }
        return Array(out[0..<count])
    }

    private static func words(_ bytes: [UInt8]) -> [UInt32] {
        stride(from: 0, to: bytes.count, by: 4).map {
            UInt32(bytes[$0]) | UInt32(bytes[$0 + 1]) << 8 | UInt32(bytes[$0 + 2]) << 16 | UInt32(bytes[$0 + 3]) << 24
        }
    }

    /// "expand 32-byte k" laid out with the key and a 16-byte input (nonce and counter).
    private static func initialState(key: [UInt32], input: [UInt32]) -> [UInt32] {
        [0x6170_7865, key[0], key[1], key[2], key[3], 0x3320_646e, input[0], input[1],
         input[2], input[3], 0x7962_2d32, key[4], key[5], key[6], key[7], 0x6b20_6574]
    }

    private static func rounds(_ x: inout [UInt32]) {
        func quarter(_ a: Int, _ b: Int, _ c: Int, _ d: Int) {
            x[b] ^= (x[a] &+ x[d]).rotatedLeft(7)
            x[c] ^= (x[b] &+ x[a]).rotatedLeft(9)
            x[d] ^= (x[c] &+ x[b]).rotatedLeft(13)
            x[a] ^= (x[d] &+ x[c]).rotatedLeft(18)
        }
        for _ in 0..<10 {
            quarter(0, 4, 8, 12); quarter(5, 9, 13, 1); quarter(10, 14, 2, 6); quarter(15, 3, 7, 11)
            quarter(0, 1, 2, 3); quarter(5, 6, 7, 4); quarter(10, 11, 8, 9); quarter(15, 12, 13, 14)
        }
    }
}

extension UInt32 {
    fileprivate func rotatedLeft(_ count: UInt32) -> UInt32 { (self << count) | (self >> (32 - count)) }
}

/// Poly1305 (RFC 8439) with 26-bit limbs, so every product fits in 64 bits.
enum Poly1305 {
    static func authenticate(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        func load(_ offset: Int) -> UInt32 {
            UInt32(key[offset]) | UInt32(key[offset + 1]) << 8 | UInt32(key[offset + 2]) << 16 | UInt32(key[offset + 3]) << 24
        }
        let r0 = UInt64(load(0) & 0x3ff_ffff)
        let r1 = UInt64((load(3) >> 2) & 0x3ff_ff03)
        let r2 = UInt64((load(6) >> 4) & 0x3ff_c0ff)
        let r3 = UInt64((load(9) >> 6) & 0x3f0_3fff)
        let r4 = UInt64((load(12) >> 8) & 0x00f_ffff)
        let s1 = r1 * 5, s2 = r2 * 5, s3 = r3 * 5, s4 = r4 * 5
        var h0: UInt64 = 0, h1: UInt64 = 0, h2: UInt64 = 0, h3: UInt64 = 0, h4: UInt64 = 0

        var offset = 0
        while offset < message.count {
            var block = [UInt8](repeating: 0, count: 17)
            let take = min(16, message.count - offset)
            for index in 0..<take { block[index] = message[offset + index] }
            block[take] = 1
            func word(_ at: Int) -> UInt64 {
                UInt64(block[at]) | UInt64(block[at + 1]) << 8 | UInt64(block[at + 2]) << 16 | UInt64(block[at + 3]) << 24
            }
            h0 += word(0) & 0x3ff_ffff
            h1 += (word(3) >> 2) & 0x3ff_ffff
            h2 += (word(6) >> 4) & 0x3ff_ffff
            h3 += (word(9) >> 6) & 0x3ff_ffff
            h4 += (word(12) >> 8) | (UInt64(block[16]) << 24)

            let d0 = h0 * r0 + h1 * s4 + h2 * s3 + h3 * s2 + h4 * s1
            var d1 = h0 * r1 + h1 * r0 + h2 * s4 + h3 * s3 + h4 * s2
            var d2 = h0 * r2 + h1 * r1 + h2 * r0 + h3 * s4 + h4 * s3
            var d3 = h0 * r3 + h1 * r2 + h2 * r1 + h3 * r0 + h4 * s4
            var d4 = h0 * r4 + h1 * r3 + h2 * r2 + h3 * r1 + h4 * r0
            var carry = d0 >> 26; h0 = d0 & 0x3ff_ffff
            d1 += carry; carry = d1 >> 26; h1 = d1 & 0x3ff_ffff
            d2 += carry; carry = d2 >> 26; h2 = d2 & 0x3ff_ffff
            d3 += carry; carry = d3 >> 26; h3 = d3 & 0x3ff_ffff
            d4 += carry; carry = d4 >> 26; h4 = d4 & 0x3ff_ffff
            h0 += carry * 5; carry = h0 >> 26; h0 &= 0x3ff_ffff
            h1 += carry
            offset += 16
        }

        // Full carry, then subtract p = 2^130 - 5 when h >= p.
        var carry = h1 >> 26; h1 &= 0x3ff_ffff
        h2 += carry; carry = h2 >> 26; h2 &= 0x3ff_ffff
        h3 += carry; carry = h3 >> 26; h3 &= 0x3ff_ffff
        h4 += carry; carry = h4 >> 26; h4 &= 0x3ff_ffff
        h0 += carry * 5; carry = h0 >> 26; h0 &= 0x3ff_ffff
        h1 += carry

        var g0 = h0 &+ 5; carry = g0 >> 26; g0 &= 0x3ff_ffff
        var g1 = h1 &+ carry; carry = g1 >> 26; g1 &= 0x3ff_ffff
        var g2 = h2 &+ carry; carry = g2 >> 26; g2 &= 0x3ff_ffff
        var g3 = h3 &+ carry; carry = g3 >> 26; g3 &= 0x3ff_ffff
        let g4 = h4 &+ carry &- (1 << 26)
        // g4's top bit set means h < p: keep h.
        let keepH = (g4 >> 63) &* UInt64.max
        let takeG = ~keepH
        h0 = (h0 & keepH) | (g0 & takeG)
        h1 = (h1 & keepH) | (g1 & takeG)
        h2 = (h2 & keepH) | (g2 & takeG)
        h3 = (h3 & keepH) | (g3 & takeG)
        h4 = (h4 & keepH) | (g4 & takeG & 0x3ff_ffff)

        // h mod 2^128, plus s.
        let w0 = (h0 | (h1 << 26)) & 0xffff_ffff
        let w1 = ((h1 >> 6) | (h2 << 20)) & 0xffff_ffff
        let w2 = ((h2 >> 12) | (h3 << 14)) & 0xffff_ffff
        let w3 = ((h3 >> 18) | (h4 << 8)) & 0xffff_ffff
        var f = w0 + UInt64(load(16)); let t0 = UInt32(truncatingIfNeeded: f)
        f = w1 + UInt64(load(20)) + (f >> 32); let t1 = UInt32(truncatingIfNeeded: f)
        f = w2 + UInt64(load(24)) + (f >> 32); let t2 = UInt32(truncatingIfNeeded: f)
        f = w3 + UInt64(load(28)) + (f >> 32); let t3 = UInt32(truncatingIfNeeded: f)
        var tag: [UInt8] = []
        for word in [t0, t1, t2, t3] {
            tag += [UInt8(truncatingIfNeeded: word), UInt8(truncatingIfNeeded: word >> 8),
                    UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 24)]
        }
        return tag
    }
}
