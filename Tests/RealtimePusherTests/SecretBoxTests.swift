import Foundation
@testable import RealtimePusher
import Testing

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
