#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Masking keys for client frames, drawn from the system CSPRNG in batches.
///
/// RFC 6455 §5.3 wants every key unpredictable. One system call per frame costs ~0.3 µs, more than
/// encoding a small frame, so this pools 64 keys per call. It is a value: do not copy a source and use
/// both copies, or they hand out the same keys.
package struct MaskKeySource: Sendable {
    private static let batchSize = 64  // getentropy(3) returns at most 256 bytes per call
    private var pool: [UInt32] = []
    private var nextIndex = 0
    /// Replaces the CSPRNG in tests that need fixed keys.
    private let fixedKey: UInt32?

    /// A source drawing from the system CSPRNG (the first key triggers the first batch).
    package init() { fixedKey = nil }

    /// Always returns `key` (its bytes in wire order). Only for tests of exact wire bytes.
    init(fixedKey key: [UInt8]) {
        precondition(key.count == 4, "a masking key is 4 bytes")
        fixedKey = key.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
    }

    /// The next key, its 4 bytes in memory order equal to wire order.
    package mutating func next() -> UInt32 {
        if let fixedKey { return fixedKey }
        if nextIndex == pool.count { refill() }
        defer { nextIndex += 1 }
        return pool[nextIndex]
    }

    private mutating func refill() {
        if pool.isEmpty { pool = [UInt32](repeating: 0, count: Self.batchSize) }
        nextIndex = 0
        let filled = pool.withUnsafeMutableBytes { buffer -> Bool in
            #if canImport(Darwin)
            arc4random_buf(buffer.baseAddress, buffer.count)
            return true
            #elseif canImport(Glibc) || canImport(Musl)
            return getentropy(buffer.baseAddress, buffer.count) == 0
            #else
            return false
            #endif
        }
        if !filled {
            // getentropy is missing only on very old kernels; fall back to one call per two keys.
            var generator = SystemRandomNumberGenerator()
            for index in stride(from: 0, to: pool.count, by: 2) {
                let value = generator.next()
                pool[index] = UInt32(truncatingIfNeeded: value)
                if index + 1 < pool.count { pool[index + 1] = UInt32(truncatingIfNeeded: value >> 32) }
            }
        }
    }
}
