import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) @testable import RealtimePusher
import Testing

/// NaCl's own known answers (tests/core1.c, core2.c, stream.c, stream3.c, secretbox.c and secretbox2.c of
/// the NaCl distribution, kept in libsodium's tests), each re-checked with libsodium 1.0.18 and
/// PyCryptodome before being written here.
enum NaClVectors {
    /// crypto_scalarmult(alicesk, bobpk): core1's HSalsa20 key.
    static let shared = hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
    /// HSalsa20(shared, 0¹⁶): crypto_box_beforenm, and the secretbox key of secretbox.c.
    static let firstKey = hex("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389")
    static let nonce = hex("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37")
    /// HSalsa20(firstKey, nonce[0..<16]): core2's answer, the XSalsa20 subkey.
    static let secondKey = hex("dc908dda0b9344a953629b733820778880f3ceb421bb61b91cbd4c3e66256ce4")
    /// The first 32 bytes of XSalsa20(firstKey, nonce) (stream3.c), which are also secretbox's Poly1305 key.
    static let streamStart = hex("eea6a7251c1e72916d11c2cb214d3c252539121d8e234e652d651fa4c8cff880")
    /// SHA-256 of the first 4,194,304 bytes of XSalsa20(firstKey, nonce) (stream.c).
    static let stream4MiBSHA256 = hex("662b9d0e3463029156069b12f918691a98f7dfb2ca0393c96bbfc6b1fbd630a2")
    static let message = hex("be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f937763848645e0705")
    /// secretbox.c's output without NaCl's 16 leading zero bytes: tag ‖ ciphertext.
    static let box = hex("f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce48332ea7164d96a4476fb8c531a1186ac0dfc17c98dce87b4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da99832b61ca01b6de56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5")

    static func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)!
        }
    }
}

@Suite("XSalsa20-Poly1305 secretbox")
struct SecretBoxTests {
    static let key = Array(Data(base64Encoded: "/fXNISfW5oYPsxk0w2Unhmf4ryxyOUewExp5ih8r70k=")!)
    static let nonce = Array(Data(base64Encoded: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX")!)
    static let box = Array(Data(base64Encoded: "VPK0uDW87+UiP3KcGUpkdrwMNyMuA9B8cnRQqTxwB7dx2eJs")!)

    @Test("opens the Pusher encrypted-channel vector (made with PyNaCl) and seals it back")
    func vector() {
        let plain = SecretBox.open(Self.box, nonce: Self.nonce, key: Self.key)
        #expect(plain.map { String(decoding: $0, as: UTF8.self) } == #"{"message": "hello"}"#)
        #expect(SecretBox.seal(Array(#"{"message": "hello"}"#.utf8), nonce: Self.nonce, key: Self.key) == Self.box)
    }

    @Test("a flipped bit anywhere, a wrong key or a short box is refused")
    func tamper() {
        for index in Self.box.indices {
            var bad = Self.box
            bad[index] ^= 0x01
            #expect(SecretBox.open(bad, nonce: Self.nonce, key: Self.key) == nil, "byte \(index)")
        }
        var wrongKey = Self.key
        wrongKey[0] ^= 1
        #expect(SecretBox.open(Self.box, nonce: Self.nonce, key: wrongKey) == nil)
        #expect(SecretBox.open(Array(Self.box.prefix(15)), nonce: Self.nonce, key: Self.key) == nil)
    }

    @Test("NaCl secretbox.c: the 131-byte message seals to its published box, and secretbox2.c opens it back")
    func naclSecretbox() {
        #expect(NaClVectors.message.count == 131)
        #expect(SecretBox.seal(NaClVectors.message, nonce: NaClVectors.nonce, key: NaClVectors.firstKey) == NaClVectors.box)
        #expect(SecretBox.open(NaClVectors.box, nonce: NaClVectors.nonce, key: NaClVectors.firstKey) == NaClVectors.message)
        var copy = NaClVectors.firstKey
        let key = SecretBytes(consuming: &copy)
        #expect(SecretBox.open(NaClVectors.box, nonce: NaClVectors.nonce, key: key) == NaClVectors.message)
        var bad = NaClVectors.box
        bad[NaClVectors.box.count - 1] ^= 0x80
        #expect(SecretBox.open(bad, nonce: NaClVectors.nonce, key: NaClVectors.firstKey) == nil)
    }

    @Test("NaCl core1.c and core2.c: HSalsa20 known answers, as XSalsa20's subkey")
    func hsalsa20() {
        let core1 = NaClVectors.shared.withUnsafeBytes { XSalsa20(key: $0, nonce: [UInt8](repeating: 0, count: 24)) }
        #expect(core1.subkey == NaClVectors.firstKey)
        let core2 = NaClVectors.firstKey.withUnsafeBytes { XSalsa20(key: $0, nonce: NaClVectors.nonce) }
        #expect(core2.subkey == NaClVectors.secondKey)
    }

    @Test("NaCl stream3.c and stream.c: the first 32 bytes, and the SHA-256 of 4 MiB, of the XSalsa20 stream")
    func xsalsa20Stream() {
        let stream = NaClVectors.firstKey.withUnsafeBytes { XSalsa20(key: $0, nonce: NaClVectors.nonce) }
        #expect(stream.bytes(count: 32) == NaClVectors.streamStart)
        #expect(stream.bytes(count: 100).prefix(32) == NaClVectors.streamStart[...])
        #expect(SHA256.hash(stream.bytes(count: 4_194_304)) == NaClVectors.stream4MiBSHA256)
    }

    @Test("wipe() zeroes the XSalsa20 subkey")
    func wipeSubkey() {
        let stream = NaClVectors.firstKey.withUnsafeBytes { XSalsa20(key: $0, nonce: NaClVectors.nonce) }
        #expect(stream.subkey == NaClVectors.secondKey)
        stream.wipe()
        #expect(stream.subkey == [UInt8](repeating: 0, count: 32))
    }

    @Test("RFC 8439 §2.5.2 Poly1305 vector")
    func poly1305() {
        let key: [UInt8] = [0x85, 0xd6, 0xbe, 0x78, 0x57, 0x55, 0x6d, 0x33, 0x7f, 0x44, 0x52, 0xfe, 0x42, 0xd5, 0x06, 0xa8,
                            0x01, 0x03, 0x80, 0x8a, 0xfb, 0x0d, 0xb2, 0xfd, 0x4a, 0xbf, 0xf6, 0xaf, 0x41, 0x49, 0xf5, 0x1b]
        let tag = Poly1305.authenticate(Array("Cryptographic Forum Research Group".utf8), key: key)
        #expect(tag.hexString == "a8061dc1305136c6c22b8baf0c0127a9")
    }

    @Test("round trips of every length from 0 to 300 bytes")
    func roundTrips() {
        for count in 0...300 {
            let plain = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let sealed = SecretBox.seal(plain, nonce: Self.nonce, key: Self.key)
            #expect(sealed.count == count + 16)
            #expect(SecretBox.open(sealed, nonce: Self.nonce, key: Self.key) == plain)
        }
    }
}
