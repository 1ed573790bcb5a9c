@_spi(DialectAuthoring) @testable import RealtimePusher
import Testing

private func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

@Suite("SHA-256 and HMAC-SHA256")
struct CryptoTests {
    @Test("FIPS 180 SHA-256 vectors", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    ])
    func sha256(input: String, digest: String) {
        #expect(SHA256.hash(input.utf8).hexString == digest)
    }

    @Test("a million 'a's, fed in uneven pieces, gives the FIPS digest")
    func millionA() {
        var hasher = SHA256()
        var left = 1_000_000
        var piece = 1
        while left > 0 {
            let take = min(piece, left)
            hasher.update([UInt8](repeating: 0x61, count: take))
            left -= take
            piece = piece % 127 + 13
        }
        #expect(hasher.finalize().hexString == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("padding edges: 55, 56, 63, 64 and 65 bytes")
    func paddingEdges() {
        // Digests from Python's hashlib over the same number of 'a's.
        let expected: [Int: String] = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            65: "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
        ]
        for (count, digest) in expected {
            #expect(SHA256.hash([UInt8](repeating: 0x61, count: count)).hexString == digest, "\(count) bytes")
        }
    }

    @Test("RFC 4231 HMAC-SHA256 test cases 1-4, 6, 7")
    func rfc4231() {
        let cases: [(key: [UInt8], data: [UInt8], mac: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
             "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            (hex("0102030405060708090a0b0c0d0e0f10111213141516171819"), [UInt8](repeating: 0xcd, count: 50),
             "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
            ([UInt8](repeating: 0xaa, count: 131),
             Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
        ]
        for (index, item) in cases.enumerated() {
            #expect(HMACSHA256.authenticationCode(for: item.data, key: item.key).hexString == item.mac, "case \(index)")
        }
    }

    static let secret = "7ad3773142a6692b25b8"

    @Test("every Pusher and Bird known-answer vector of shared/vectors/pusher-auth.md", arguments: [
        ("1234.1234:private-foobar", "58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4"),
        ("1234.1234:private-cache-foo", "a62de12ce80893ec63e0af7f4628cbf23565b09a27d563cd6dee8c15fe130426"),
        (#"1234.1234:presence-foobar:{"user_id":10,"user_info":{"name":"Mr. Channels"}}"#,
         "31935e7d86dba64c2a90aed31fdc61869f9b22ba9d8863bba239c03ca481bc80"),
        (#"1234.1234:presence-foobar:{"user_id": 10, "user_info": {"name": "Mr. Channels"}}"#,
         "5b8808f3035fec2e4157c6b430a06d5b0de16d174e1a779e0e2b64d9983bde27"),
        (#"1234.1234:presence-foobar:{"user_id": "10"}"#,
         "63cdaf5fdaad0fb61ea592daf8cc2b2fbc5c62d82879a3c127600482129b634a"),
        (#"1234.1234::user::{"id":"12345"}"#, "4708d583dada6a56435fb8bc611c77c359a31eebde13337c16ab43aa6de336ba"),
        (#"1234.1234::user::{"id": "12345"}"#, "d06dc389319077f890321aeac54e04868921e1601686928f61fc9bf702e92830"),
        (#"1234.1234::user::{"id": "12345", "user_info": {"name": "John Smith"}, "watchlist": ["1", "2"]}"#,
         "f0d02811cb615cd00a62650d5d1425b0b5406f4be770b2d3509bc104a0453b75"),
        ("1234.1234:private-encrypted-foobar", "e6a18892d037c5d5e76a2265df4f086ffc38631605530dfd214aa5bff495f533"),
        (#"conn-1::member::{"member_id":"me"}"#, "b26f12ac8b35c649747d9c840c5a19b9a4d80c620918b6fca54176a2cf21a5bc"),
        ("conn-1:private-room", "4b2e0a2dfe9eb2d4d6688c36cab907161b4a2936db2400ed540165ce352fe707"),
    ])
    func pusherVectors(signed: String, signature: String) {
        #expect(HMACSHA256.hex(signed, key: Self.secret) == signature)
    }

    @Test("shared secret of the encrypted-channel vector is SHA-256(channel ‖ master key)")
    func sharedSecret() {
        let digest = SHA256.hash(Array("private-encrypted-foobar".utf8) + Array("0123456789abcdef0123456789abcdef".utf8))
        // base64 /fXNISfW5oYPsxk0w2Unhmf4ryxyOUewExp5ih8r70k= from the vectors page, in hex.
        #expect(digest.hexString == "fdf5cd2127d6e6860fb31934c365278667f8af2c723947b0131a798a1f2bef49")
    }
}
