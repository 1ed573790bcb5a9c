@_spi(DialectAuthoring) import RealtimeCore

/// NaCl `crypto_secretbox_open` (XSalsa20-Poly1305), which Pusher's encrypted channels use.
/// Only opening is needed by a client; `seal` exists for the embedded test server and tests.
/// Everything derived from the key (the HSalsa20 subkey, the keystream, the Poly1305 key) is zeroed
/// before these return.
package enum SecretBox {
    package static let keyCount = 32
    package static let nonceCount = 24
    package static let tagCount = 16

    /// The plaintext of `box` (tag ‖ ciphertext), or `nil` when the tag does not verify.
    package static func open(_ box: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8]? {
        key.withUnsafeBytes { open(box, nonce: nonce, key: $0) }
    }

    /// The same with a key kept in ``SecretBytes``.
    package static func open(_ box: [UInt8], nonce: [UInt8], key: SecretBytes) -> [UInt8]? {
        key.withUnsafeBytes { open(box, nonce: nonce, key: $0) }
    }

    static func open(_ box: [UInt8], nonce: [UInt8], key: UnsafeRawBufferPointer) -> [UInt8]? {
        guard key.count == keyCount, nonce.count == nonceCount, box.count >= tagCount else { return nil }
        let stream = XSalsa20(key: key, nonce: nonce)
        var keystream = stream.bytes(count: 32 + box.count - tagCount)
        stream.wipe()
        var polyKey = Array(keystream[0..<32])
        defer {
            secureZero(&keystream)
            secureZero(&polyKey)
        }
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
    package static func seal(_ plaintext: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(key.count == keyCount && nonce.count == nonceCount, "secretbox key 32 bytes, nonce 24 bytes")
        let stream = key.withUnsafeBytes { XSalsa20(key: $0, nonce: nonce) }
        var keystream = stream.bytes(count: 32 + plaintext.count)
        stream.wipe()
        var polyKey = Array(keystream[0..<32])
        defer {
            secureZero(&keystream)
            secureZero(&polyKey)
        }
        var cipher = plaintext
        for index in cipher.indices { cipher[index] ^= keystream[32 + index] }
        return Poly1305.authenticate(cipher, key: polyKey) + cipher
    }
}

/// The XSalsa20 stream: HSalsa20 derives a subkey from the key and the first 16 nonce bytes, Salsa20 runs
/// with the subkey and the last 8. The subkey and the block being computed live in one allocation that
/// ``wipe()`` (and deinit) zeroes.
final class XSalsa20 {
    /// Words 0..<8: the subkey; 8..<24: the block input; 24..<40: the block being mixed.
    private let words: UnsafeMutableBufferPointer<UInt32>
    private let nonceTail: (UInt32, UInt32)

    init(key: UnsafeRawBufferPointer, nonce: [UInt8]) {
        precondition(key.count == 32 && nonce.count == 24, "XSalsa20 takes a 32-byte key and a 24-byte nonce")
        words = .allocate(capacity: 40)
        words.initialize(repeating: 0)
        for index in 0..<8 { words[index] = Self.word(key, at: 4 * index) }
        // HSalsa20: the Salsa20 rounds over the key and nonce[0..<16], without the final addition; the
        // subkey is words 0, 5, 10, 15, 6, 7, 8, 9.
        let (head, tail) = nonce.withUnsafeBytes { nonce in
            ((Self.word(nonce, at: 0), Self.word(nonce, at: 4), Self.word(nonce, at: 8), Self.word(nonce, at: 12)),
             (Self.word(nonce, at: 16), Self.word(nonce, at: 20)))
        }
        nonceTail = tail
        Self.setUp(words, input: head)
        let mixed = UnsafeMutableBufferPointer(rebasing: words[24..<40])
        Self.rounds(mixed)
        for (slot, index) in [0, 5, 10, 15, 6, 7, 8, 9].enumerated() { words[slot] = mixed[index] }
        secureZero(UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: words[8..<40])))
    }

    deinit {
        wipe()
        words.deallocate()
    }

    /// Zeroes the subkey and the block state; the stream must not be used afterwards.
    func wipe() {
        secureZero(UnsafeMutableRawBufferPointer(words))
    }

    /// The HSalsa20 subkey (tests).
    var subkey: [UInt8] {
        (0..<8).flatMap { index in (0..<4).map { UInt8(truncatingIfNeeded: words[index] >> (8 * UInt32($0))) } }
    }

    /// The first `count` keystream bytes.
    func bytes(count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
            var counter: UInt64 = 0
            var offset = 0
            let input = UnsafeMutableBufferPointer(rebasing: words[8..<24])
            let mixed = UnsafeMutableBufferPointer(rebasing: words[24..<40])
            while offset < count {
                Self.setUp(words, input: (nonceTail.0, nonceTail.1, UInt32(truncatingIfNeeded: counter),
                                          UInt32(truncatingIfNeeded: counter >> 32)))
                Self.rounds(mixed)
                for index in 0..<16 {
                    let word = mixed[index] &+ input[index]
                    for byte in 0..<4 where offset + 4 * index + byte < count {
                        output[offset + 4 * index + byte] = UInt8(truncatingIfNeeded: word >> (8 * UInt32(byte)))
                    }
                }
                offset += 64
                counter += 1
            }
            secureZero(UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: words[8..<40])))
            initialized = count
        }
    }

    private static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 3]) << 24
    }

    /// Lays "expand 32-byte k", the key (words 0..<8) and a 16-byte input into words 8..<24, and copies
    /// them to 24..<40 for mixing (written in place: no temporary copy of the key).
    private static func setUp(_ words: UnsafeMutableBufferPointer<UInt32>, input: (UInt32, UInt32, UInt32, UInt32)) {
        words[8] = 0x6170_7865
        words[9] = words[0]; words[10] = words[1]; words[11] = words[2]; words[12] = words[3]
        words[13] = 0x3320_646e
        words[14] = input.0; words[15] = input.1; words[16] = input.2; words[17] = input.3
        words[18] = 0x7962_2d32
        words[19] = words[4]; words[20] = words[5]; words[21] = words[6]; words[22] = words[7]
        words[23] = 0x6b20_6574
        for index in 8..<24 { words[16 + index] = words[index] }
    }

    private static func rounds(_ x: UnsafeMutableBufferPointer<UInt32>) {
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
