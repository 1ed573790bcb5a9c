/// XORs `buffer` with the repeating 4-byte `key`, as if the buffer started `offset` bytes into the
/// payload (so a payload can be unmasked piece by piece as it arrives). Works 8 bytes at a time.
///
/// `key` holds the key's bytes in wire order in memory (loaded with `loadUnaligned(as: UInt32.self)`).
@inline(__always)
func applyMask(_ buffer: UnsafeMutableRawBufferPointer, key: UInt32, offset: Int) {
    guard let start = buffer.baseAddress, !buffer.isEmpty else { return }
    // Work on the key as a little-endian value: byte i of the wire key is bits 8i..<8i+8.
    let shift = UInt32(offset & 3) * 8
    let littleKey = UInt32(littleEndian: key)
    let rotated = shift == 0 ? littleKey : (littleKey >> shift) | (littleKey << (32 - shift))
    let wide = UInt64(littleEndian: UInt64(rotated) | UInt64(rotated) << 32)
    let count = buffer.count
    var index = 0
    while index + 8 <= count {
        let word = start.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ wide
        start.storeBytes(of: word, toByteOffset: index, as: UInt64.self)
        index += 8
    }
    while index < count {
        let keyByte = UInt8(truncatingIfNeeded: rotated >> (UInt32(index & 3) * 8))
        let byte = start.load(fromByteOffset: index, as: UInt8.self) ^ keyByte
        start.storeBytes(of: byte, toByteOffset: index, as: UInt8.self)
        index += 1
    }
}
