import CZlib
import RealtimeCore

/// One raw DEFLATE stream of the system zlib, inflating or deflating, for permessage-deflate.
///
/// zlib keeps a pointer back to its `z_stream` (and checks it), so the stream sits at a fixed heap address
/// this class owns. The codec holding it is a `Sendable` value, hence the `Locked` box (uncontended: one
/// connection's thread uses it) and ``copy()``, with which a codec copied and then changed clones the stream
/// instead of sharing it.
final class ZlibStream: Sendable {
    enum Direction: Sendable {
        case inflate
        case deflate
    }

    /// What feeding the inflater some input came to.
    enum InflateOutcome: Sendable, Equatable {
        /// All input was used and all its output handed to the sink.
        case consumed
        /// The DEFLATE stream ended (a block with BFINAL set): input after it was not used.
        case streamEnded
        /// The output passed the limit; what came before it went to the sink.
        case limitExceeded
        /// The sink refused a piece (invalid UTF-8, for instance).
        case stopped
        /// zlib found the data invalid, or could not get memory.
        case failed(String)
    }

    private struct Storage {
        let stream: UnsafeMutablePointer<z_stream>
        /// Where zlib writes; each piece is handed on before the next.
        let chunk: UnsafeMutableRawBufferPointer
    }

    let direction: Direction
    /// The LZ77 window, 2^windowBits bytes (9…15).
    let windowBits: Int
    /// zlib's compression level, deflating only.
    let level: Int
    private let storage: Locked<Storage>

    /// Output chunk size: large enough that a typical message inflates in one call, small enough that
    /// the limit is checked often and an idle stream costs little beyond zlib's own state.
    static let chunkSize = 16 * 1024

    /// Memory level of the deflater: zlib's default (a 128 KiB hash table at 8).
    static let memoryLevel: Int32 = 8

    /// A fresh stream, or nil when zlib cannot get the memory (or refuses the parameters).
    init?(_ direction: Direction, windowBits: Int, level: Int = 6) {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status: Int32 = switch direction {
        case .inflate: realtime_inflate_init_raw(stream, Int32(windowBits))
        case .deflate: realtime_deflate_init_raw(stream, Int32(level), Int32(windowBits), Self.memoryLevel)
        }
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            return nil
        }
        self.direction = direction
        self.windowBits = windowBits
        self.level = level
        storage = Locked(Storage(stream: stream,
                                 chunk: .allocate(byteCount: Self.chunkSize, alignment: 16)))
    }

    private init(direction: Direction, windowBits: Int, level: Int, stream: UnsafeMutablePointer<z_stream>) {
        self.direction = direction
        self.windowBits = windowBits
        self.level = level
        storage = Locked(Storage(stream: stream, chunk: .allocate(byteCount: Self.chunkSize, alignment: 16)))
    }

    deinit {
        storage.withLock { storage in
            switch direction {
            case .inflate: inflateEnd(storage.stream)
            case .deflate: deflateEnd(storage.stream)
            }
            storage.stream.deinitialize(count: 1)
            storage.stream.deallocate()
            storage.chunk.deallocate()
        }
    }

    /// An independent stream in the same state (window, pending bits), or nil without memory.
    func copy() -> ZlibStream? {
        storage.withLock { storage -> ZlibStream? in
            let clone = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            clone.initialize(to: z_stream())
            let status = switch direction {
            case .inflate: inflateCopy(clone, storage.stream)
            case .deflate: deflateCopy(clone, storage.stream)
            }
            guard status == Z_OK else {
                clone.deinitialize(count: 1)
                clone.deallocate()
                return nil
            }
            return ZlibStream(direction: direction, windowBits: windowBits, level: level, stream: clone)
        }
    }

    /// Forgets the window: the next message starts from nothing (no context takeover).
    func reset() {
        storage.withLock { storage in
            switch direction {
            case .inflate: _ = inflateReset(storage.stream)
            case .deflate: _ = deflateReset(storage.stream)
            }
        }
    }

    // MARK: Inflating

    /// Inflates `input`, handing the output to `sink` piece by piece, and stops as soon as more than
    /// `limit` bytes came out: the sink then gets the part within the limit, never more, and this stream
    /// holds at most one chunk.
    func inflate(_ input: UnsafeRawBufferPointer, limit: Int,
                 sink: (UnsafeRawBufferPointer) -> Bool) -> InflateOutcome {
        storage.withLock { storage -> InflateOutcome in
            let stream = storage.stream
            var produced = 0
            var offset = 0
            repeat {
                offset = Self.feed(stream, input, from: offset)
                output: while true {
                    let left = limit - produced
                    let room = left < storage.chunk.count ? left + 1 : storage.chunk.count
                    stream.pointee.next_out = storage.chunk.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    stream.pointee.avail_out = UInt32(room)
                    let status = CZlib.inflate(stream, Z_SYNC_FLUSH)
                    let made = room - Int(stream.pointee.avail_out)
                    produced += made
                    // What came out within the limit goes to the sink even when the limit is passed, so
                    // invalid UTF-8 there is reported as such however the message's bytes were cut.
                    let kept = produced > limit ? made - (produced - limit) : made
                    if kept > 0, !sink(UnsafeRawBufferPointer(rebasing: storage.chunk[..<kept])) { return .stopped }
                    if produced > limit { return .limitExceeded }
                    switch status {
                    case Z_STREAM_END:
                        return .streamEnded
                    case Z_OK, Z_BUF_ERROR:
                        // Room left over means zlib has read all it can and has nothing more to write.
                        if stream.pointee.avail_out != 0 { break output }
                    case Z_MEM_ERROR:
                        return .failed("zlib could not get memory to inflate")
                    default:
                        let reason = stream.pointee.msg.map { String(cString: $0) } ?? "error \(status)"
                        return .failed("invalid DEFLATE data (\(reason))")
                    }
                }
            } while offset < input.count
            return .consumed
        }
    }

    /// After the DEFLATE stream ended (BFINAL) in a message: starts a new stream that still sees the old
    /// window, so a peer that ends its blocks and keeps its context can still refer back.
    func restartKeepingWindow() {
        storage.withLock { storage in
            let window = UnsafeMutablePointer<UInt8>.allocate(capacity: 1 << 15)
            defer { window.deallocate() }
            var length: UInt32 = 0
            let saved = inflateGetDictionary(storage.stream, window, &length) == Z_OK
            _ = inflateReset(storage.stream)
            if saved, length > 0 { _ = inflateSetDictionary(storage.stream, window, length) }
        }
    }

    /// Points `stream` at the next slice of `input` from `offset` and returns where the slice ends:
    /// avail_in is 32 bits wide, so huge inputs go in slices.
    private static func feed(_ stream: UnsafeMutablePointer<z_stream>, _ input: UnsafeRawBufferPointer,
                             from offset: Int) -> Int {
        let slice = min(input.count - offset, 1 << 30)
        stream.pointee.next_in = slice == 0 ? nil
            : UnsafeMutablePointer(mutating: input.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(slice)
        return offset + slice
    }

    // MARK: Deflating

    /// Compresses `input` as one message and appends it to `output` without the 00 00 ff ff the sync
    /// flush ends with (RFC 7692 §7.2.1). False when zlib failed; `output` is then as it was.
    func deflateMessage(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) -> Bool {
        let start = output.count
        let succeeded = storage.withLock { storage -> Bool in
            let stream = storage.stream
            var offset = 0
            repeat {
                offset = Self.feed(stream, input, from: offset)
                let flush = offset == input.count ? Z_SYNC_FLUSH : Z_NO_FLUSH
                repeat {
                    stream.pointee.next_out = storage.chunk.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    stream.pointee.avail_out = UInt32(storage.chunk.count)
                    let status = CZlib.deflate(stream, flush)
                    guard status == Z_OK || status == Z_BUF_ERROR else { return false }
                    let made = storage.chunk.count - Int(stream.pointee.avail_out)
                    output.append(contentsOf: UnsafeRawBufferPointer(rebasing: storage.chunk[..<made]))
                } while stream.pointee.avail_out == 0
            } while offset < input.count
            return true
        }
        let end = output.count
        guard succeeded, end - start >= 4, output[end - 4] == 0x00, output[end - 3] == 0x00,
              output[end - 2] == 0xFF, output[end - 1] == 0xFF else {
            output.removeSubrange(start...)
            return false
        }
        output.removeLast(4)
        return true
    }
}
