import Testing
@testable import RealtimeWebSocket

@Suite("Base64")
struct Base64Tests {
    @Test("RFC 4648 §10 vectors", arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ])
    func vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func allAlphabetCharacters() {
        let bytes: [UInt8] = [0xFB, 0xEF, 0xBE, 0x00, 0x10, 0x83]
        #expect(Base64.encode(bytes) == "++++ABCD")
        #expect(Base64.decode("++++ABCD") == bytes)
        #expect(Base64.encode([0xFF, 0xFF, 0xFF]) == "////")
    }

    @Test("rejects text that is not canonical padded base64", arguments: [
        "Zg=", "Z===", "Zm9v!", "Zh==", "Zm9=", "=Zg=", "Zg==Zg==", "Zm 9v", "Zm9vYg", "====",
    ])
    func rejectsInvalid(text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test func roundTripsEveryLengthUpTo64() {
        var generator = SeededGenerator(seed: 0xB64)
        for length in 0...64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64.encode(bytes)
            #expect(text.utf8.count == (length + 2) / 3 * 4)
            #expect(Base64.decode(text) == bytes)
        }
    }
}
