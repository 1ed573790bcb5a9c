import CRealtimeLinux  // epoll
import Foundation
import Glibc
import RealtimeCore

/// What a paced event costs this machine before any library code runs: the same blaster and frames as the
/// transport row, read by a bare loop (one thread: `epoll_wait`, `recv`, walk the frame heads, read the
/// stamp), and the same loop handing each read to a second thread that waits on a semaphore, which is the
/// least a design with a delivery thread can pay. The rows beside it are then read as "ours minus floor".
enum KernelFloor {
    static func run(rate: Double, seconds: Double, events: Int, handoff: Bool) throws -> LatencyBenchmark.Run {
        let blaster = try LatencyBenchmark.blaster(.socketIO, rate: rate, seconds: seconds, raw: true)
        defer { blaster.stop(grace: 2) }
        let port = try blaster.readPort()
        let fd = try connect(port: port)
        defer { close(fd) }
        try upgrade(fd, port: port)
        _ = try blaster.expectLine("READY")

        let delays = Locked<[UInt64]>([])
        delays.withLock { $0.reserveCapacity(events) }
        let received = Countdown(events)
        let handed = Locked<[UInt64]>([])
        let wake = DispatchSemaphore(value: 0)
        if handoff {
            Thread.detachNewThread {
                var taken = 0
                while taken < events {
                    wake.wait()
                    let batch = handed.withLock { items -> [UInt64] in
                        defer { items.removeAll(keepingCapacity: true) }
                        return items
                    }
                    let now = Measure.nanoseconds()
                    delays.withLock { delays in for stamp in batch { delays.append(now &- stamp) } }
                    taken += batch.count
                    received.add(batch.count)
                }
            }
        }
        Thread.detachNewThread {
            readLoop(fd, events: events) { stamps in
                if handoff {
                    handed.withLock { $0.append(contentsOf: stamps) }
                    wake.signal()
                } else {
                    let now = Measure.nanoseconds()
                    delays.withLock { delays in for stamp in stamps { delays.append(now &- stamp) } }
                    received.add(stamps.count)
                }
            }
        }
        let cpu = try LatencyBenchmark.paced(blaster: blaster, seconds: seconds, label: "floor") {
            received.wait(seconds: $0) ? nil : "\(received.count) of \(events) frames read"
        }
        return LatencyBenchmark.Run(delays: delays.withLock { $0 }, cost: cpu, events: events)
    }

    private static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkFailure("floor: socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw BenchmarkFailure("floor: connect() failed") }
        return fd
    }

    /// A fixed-key upgrade; the blaster does not check the accept key's answer, and neither do we.
    private static func upgrade(_ fd: Int32, port: Int) throws {
        let request = "GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
            + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            + "Sec-WebSocket-Version: 13\r\n\r\n"
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(fd, &byte, 1, 0) == 1 else { throw BenchmarkFailure("floor: the upgrade failed") }
            head.append(byte)
        }
    }

    /// Reads until `events` frames arrived, passing each read's stamps to `handle`.
    private static func readLoop(_ fd: Int32, events: Int, handle: ([UInt64]) -> Void) {
        let epoll = epoll_create1(0)
        defer { close(epoll) }
        var interest = epoll_event()
        interest.events = EPOLLIN.rawValue
        interest.data.fd = fd
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &interest)
        var ready = [epoll_event](repeating: epoll_event(), count: 8)
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var pending: [UInt8] = []
        var stamps: [UInt64] = []
        var seen = 0
        while seen < events {
            guard epoll_wait(epoll, &ready, 8, -1) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            pending.append(contentsOf: buffer[0..<count])
            stamps.removeAll(keepingCapacity: true)
            var offset = 0
            // Unmasked server frames: 2 bytes of head, 2 more for lengths 126...65535.
            while pending.count - offset >= 2 {
                var length = Int(pending[offset + 1] & 0x7F)
                var head = 2
                if length == 126 {
                    guard pending.count - offset >= 4 else { break }
                    length = Int(pending[offset + 2]) << 8 | Int(pending[offset + 3])
                    head = 4
                }
                guard pending.count - offset >= head + length else { break }
                let text = String(decoding: pending[(offset + head)..<(offset + head + length)], as: UTF8.self)
                if let stamp = LatencyBenchmark.stamp(in: text) { stamps.append(stamp) }
                offset += head + length
            }
            pending.removeFirst(offset)
            seen += stamps.count
            if !stamps.isEmpty { handle(stamps) }
        }
    }
}
