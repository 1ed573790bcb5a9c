#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Zeroes `bytes` with a call the optimiser may not drop, unlike a plain `memset` or loop before the
/// memory is freed or goes out of use (dead-store elimination removes those).
package func secureZero(_ bytes: UnsafeMutableRawBufferPointer) {
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
    #if canImport(Darwin)
    _ = memset_s(base, bytes.count, 0, bytes.count)
    #else
    explicit_bzero(base, bytes.count)
    #endif
}

/// Zeroes an array's elements in place (its storage is unique by then, or this writes into a copy that is
/// zeroed instead: call it only on arrays nothing else shares).
package func secureZero<Element: BitwiseCopyable>(_ array: inout [Element]) {
    array.withUnsafeMutableBytes { secureZero($0) }
}

/// Key material in one fixed allocation, zeroed on ``wipe()`` and when the last reference goes. It never
/// grows or moves, so no reallocation leaves a stale copy behind, and copies of a value holding it (a
/// dialect machine is a value type) share the one allocation instead of duplicating the key.
package final class SecretBytes: Sendable {
    private let storage: Locked<UnsafeMutableRawBufferPointer>
    /// The number of bytes.
    package let count: Int

    /// `count` zero bytes.
    package init(zeroes count: Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        storage = Locked(buffer)
        self.count = count
    }

    /// A copy of `bytes`; the caller still wipes its own copy.
    package convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(zeroes: bytes.count)
        storage.withLock { $0.copyMemory(from: bytes) }
    }

    /// Takes `bytes` and zeroes the array it came in (which must not be shared).
    package convenience init(consuming bytes: inout [UInt8]) {
        self.init(zeroes: bytes.count)
        storage.withLock { buffer in bytes.withUnsafeBytes { buffer.copyMemory(from: $0) } }
        secureZero(&bytes)
    }

    deinit {
        storage.withLock { buffer in
            secureZero(buffer)
            buffer.deallocate()
        }
    }

    /// Zeroes every byte; the key reads as zeros from now on.
    package func wipe() {
        storage.withLock { secureZero(UnsafeMutableRawBufferPointer(rebasing: $0[0..<count])) }
    }

    /// Runs `body` with the bytes, under the lock (valid only during the call; do not copy them into
    /// long-lived storage, and call no app code from `body`).
    package func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try storage.withLock { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
}
