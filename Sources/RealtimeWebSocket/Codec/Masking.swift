/// XORs `buffer` with the repeating 4-byte `key`, as if the buffer started `offset` bytes into the
/// payload (so a payload can be unmasked piece by piece as it arrives). Works 8 bytes at a time.
///
/// `key` holds the key's bytes in wire order in memory (loaded with `loadUnaligned(as: UInt32.self)`).
@inline(__always)
func applyMask(_ buffer: UnsafeMutableRawBufferPointer, key: UInt32, offset: Int) {
    guard let start = buffer.baseAddress, !buffer.isEmpty else { return }
    var keyBytes = rotatedKey(key, by: offset & 3)
    let wide = withUnsafeBytes(of: &keyBytes) { raw -> UInt64 in
        var pattern: (UInt32, UInt32) = (raw.loadUnaligned(as: UInt32.self), raw.loadUnaligned(as: UInt32.self))
        return withUnsafeBytes(of: &pattern) { $0.loadUnaligned(as: UInt64.self) }
    }
    let count = buffer.count
    var index = 0
    while index + 8 <= count {
        let word = start.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ wide
        start.storeBytes(of: word, toByteOffset: index, as: UInt64.self)
        index += 8
    }
    withUnsafeBytes(of: &keyBytes) { keyRaw in
        while index < count {
            let byte = start.load(fromByteOffset: index, as: UInt8.self) ^ keyRaw[index & 3]
            start.storeBytes(of: byte, toByteOffset: index, as: UInt8.self)
            index += 1
        }
    }
}

/// The key as it applies from payload byte `shift` on: memory bytes rotated left by `shift`.
@inline(__always)
private func rotatedKey(_ key: UInt32, by shift: Int) -> UInt32 {
    guard shift != 0 else { return key }
    var source = key
    var result: UInt32 = 0
    withUnsafeBytes(of: &source) { from in
        withUnsafeMutableBytes(of: &result) { to in
            for index in 0..<4 { to[index] = from[(index + shift) & 3] }
        }
    }
    return result
}
