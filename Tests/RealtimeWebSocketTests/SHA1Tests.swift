import Testing
@testable import RealtimeWebSocket

@Suite("SHA-1")
struct SHA1Tests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test("FIPS 180 known answers", arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ("The quick brown fox jumps over the lazy dog", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
    ])
    func knownAnswers(input: String, digest: String) {
        #expect(hex(SHA1.hash(Array(input.utf8))) == digest)
    }

    @Test("padding boundaries around 55, 56 and 64 bytes", arguments: [
        (55, "c1c8bbdc22796e28c0e15163d20899b65621d65a"),
        (56, "c2db330f6083854c99d4b5bfb6e8f29f201be699"),
        (63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5"),
        (64, "0098ba824b5c16427bd7a1122a5a442a25ec644d"),
        (65, "11655326c708d70319be2610e8a57d9a5b959d3b"),
        (119, "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56"),
        (120, "f34c1488385346a55709ba056ddd08280dd4c6d6"),
    ])
    func paddingBoundaries(length: Int, digest: String) {
        #expect(hex(SHA1.hash([UInt8](repeating: UInt8(ascii: "a"), count: length))) == digest)
    }

    @Test func oneMillionAs() {
        #expect(hex(SHA1.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
                == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func allByteValues() {
        let input = Array((0..<768).map { UInt8(truncatingIfNeeded: $0) })
        #expect(hex(SHA1.hash(input)) == "ac2a264c8ec1f4232a40854e8239bc3a697ab1d2")
        #expect(hex(SHA1.hash(input[...])) == "ac2a264c8ec1f4232a40854e8239bc3a697ab1d2")
    }

    @Test("RFC 6455 §1.3 accept example")
    func websocketAcceptExample() {
        #expect(WebSocketServerHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
