@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Key material wiping")
struct SecretBytesTests {
    @Test("wipe() leaves zeros where the key was, and the count is kept")
    func wipeLeavesZeros() {
        let key = SecretBytes(copying: UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(key.count == 0)
        var bytes = (1...32).map { UInt8($0) }
        let secret = SecretBytes(consuming: &bytes)
        #expect(secret.withUnsafeBytes { Array($0) } == (1...32).map { UInt8($0) })
        secret.wipe()
        #expect(secret.count == 32)
        #expect(secret.withUnsafeBytes { Array($0) } == [UInt8](repeating: 0, count: 32))
    }

    @Test("init(consuming:) zeroes the array it took the key from")
    func consumingZeroesSource() {
        var bytes: [UInt8] = [0xde, 0xad, 0xbe, 0xef]
        let secret = SecretBytes(consuming: &bytes)
        #expect(bytes == [0, 0, 0, 0])
        #expect(secret.withUnsafeBytes { Array($0) } == [0xde, 0xad, 0xbe, 0xef])
    }

    @Test("secureZero clears an array and a raw buffer in place")
    func secureZeroInPlace() {
        var words: [UInt32] = [.max, 7, 9]
        secureZero(&words)
        #expect(words == [0, 0, 0])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0xAA)
        secureZero(UnsafeMutableRawBufferPointer(rebasing: buffer[8..<40]))
        #expect(buffer[0..<8].allSatisfy { $0 == 0xAA })
        #expect(buffer[8..<40].allSatisfy { $0 == 0 })
        #expect(buffer[40...].allSatisfy { $0 == 0xAA })
    }
}
