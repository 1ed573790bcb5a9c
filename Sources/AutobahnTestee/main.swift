// Echo client for the Autobahn|Testsuite fuzzing server: drives `WebSocketCodec` and
// `WebSocketClientHandshake` over a blocking POSIX socket (loopback only).
//
// Usage: AutobahnTestee [--port 9001] [--agent Realtime] [--cases N]
//        AutobahnTestee --bench   (codec throughput, no network; use a release build)
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RealtimeCore
import RealtimeWebSocket

/// Group 9 sends 16 MiB messages and 4 MiB as 64-byte fragments. Cases 9.3.1 and 9.4.1 arrive as
/// 65,537 frames (measured: a limit of 65,536 fails them with 1009), hence 2^17.
var testeeLimits = WebSocketLimits(maximumFrameSize: 16 << 20, maximumMessageSize: 16 << 20,
                                   maximumFragmentCount: 1 << 17)

struct TesteeFailure: Error, CustomStringConvertible {
    var description: String
}

/// A blocking TCP connection to 127.0.0.1.
final class LoopbackSocket {
    let descriptor: Int32

    init(port: UInt16) throws {
        #if canImport(Glibc)
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw TesteeFailure(description: "socket: \(String(cString: strerror(errno)))") }
        var noDelay: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(descriptor)
            throw TesteeFailure(description: "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                #if canImport(Glibc)
                send(descriptor, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                #else
                send(descriptor, buffer.baseAddress! + sent, buffer.count - sent, 0)
                #endif
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw TesteeFailure(description: "send: \(String(cString: strerror(errno)))")
            }
            sent += result
        }
    }

    /// Reads into `buffer`; 0 means the peer closed.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let result = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if result >= 0 { return result }
            if errno == EINTR { continue }
            if errno == ECONNRESET { return 0 }
            throw TesteeFailure(description: "recv: \(String(cString: strerror(errno)))")
        }
    }
}

/// Opens `path`, echoes every message back, and returns the text messages received.
@discardableResult
func runConnection(port: UInt16, path: String, echo: Bool, limits: WebSocketLimits) throws -> [String] {
    let socket = try LoopbackSocket(port: port)
    let url = URL(string: "ws://127.0.0.1:\(port)\(path)")!
    var handshake = WebSocketClientHandshake(url: url, key: WebSocketClientHandshake.makeKey())
    try handshake.validate()
    try socket.write(handshake.requestBytes())

    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
    defer { readBuffer.deallocate() }
    var leftover: [UInt8] = []
    while true {
        let count = try socket.read(into: readBuffer)
        if count == 0 { throw handshake.errorForClosedConnection() }
        if let result = try handshake.receive(UnsafeRawBufferPointer(rebasing: readBuffer[..<count])) {
            leftover = result.leftover
            break
        }
    }

    var codec = WebSocketCodec(role: .client, limits: limits)
    var events: [WebSocketEvent] = []
    var output: [UInt8] = []
    var texts: [String] = []

    // One message per decode step, so each echo is written before anything a later frame triggers
    // (such as the close frame after a protocol error): Autobahn checks that order.
    func handle(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        output.removeAll(keepingCapacity: true)
        var finished = false
        var offset = 0
        while offset < bytes.count, !finished {
            events.removeAll(keepingCapacity: true)
            offset += codec.receive(UnsafeRawBufferPointer(rebasing: bytes[offset...]), maximumMessages: 1,
                                    events: &events, output: &output)
            for event in events {
                switch event {
                case .message(let frame):
                    if case .text(let text) = frame, !echo { texts.append(text) }
                    if echo { codec.encode(frame, into: &output) }
                case .closed, .failed:
                    finished = true
                case .ping, .pong:
                    break
                }
            }
        }
        if !output.isEmpty { try socket.write(output) }
        return finished
    }

    if !leftover.isEmpty, try leftover.withUnsafeBytes({ try handle($0) }) { return texts }
    while true {
        let count = try socket.read(into: readBuffer)
        if count == 0 { break }
        if try handle(UnsafeRawBufferPointer(rebasing: readBuffer[..<count])) {
            // Close handshake done (or failed): the server closes TCP; wait for it so it sees our frames.
            while try socket.read(into: readBuffer) > 0 {}
            break
        }
    }
    return texts
}


/// Codec throughput without sockets: pre-encoded 150-byte text frames decoded from reads of
/// `readSize` bytes, then client-side encoding (masking) of the same messages.
func runBenchmark() {
    let payload = #"{"event":"order-updated","channel":"private-orders","data":"{\"id\":12345,\"status\":\"shipped\",\"items\":3,\"total\":\"49.90\",\"eta\":\"2026-12-03\"}"}"#
    let message = String(payload.prefix(150)).padding(toLength: 150, withPad: " ", startingAt: 0)
    let frameCount = 200_000
    var server = WebSocketCodec(role: .server)
    var wire: [UInt8] = []
    wire.reserveCapacity(frameCount * 160)
    for _ in 0..<frameCount { server.encode(.text(message), into: &wire) }
    print("bench: \(frameCount) text frames of \(message.utf8.count) bytes (\(wire.count / frameCount) on the wire)")

    func cpuSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    for readSize in [65_536, 4_096] {
        var rates: [Double] = []
        for _ in 0..<7 {
            var codec = WebSocketCodec(role: .client)
            var events: [WebSocketEvent] = []
            events.reserveCapacity(1_024)
            var output: [UInt8] = []
            var messages = 0
            var bytes = 0
            let cpuStart = cpuSeconds()
            // Five passes (a million frames) so the CPU clock's resolution does not matter.
            for _ in 0..<5 {
                wire.withUnsafeBytes { all in
                    var offset = 0
                    while offset < all.count {
                        let end = min(offset + readSize, all.count)
                        codec.receive(UnsafeRawBufferPointer(rebasing: all[offset..<end]), events: &events, output: &output)
                        for event in events {
                            if case .message(.text(let text)) = event { bytes &+= text.utf8.count; messages += 1 }
                        }
                        events.removeAll(keepingCapacity: true)
                        offset = end
                    }
                }
            }
            let cpu = cpuSeconds() - cpuStart
            precondition(messages == 5 * frameCount && bytes == 5 * frameCount * 150, "decoded \(messages) messages")
            rates.append(Double(messages) / cpu)
        }
        rates.sort()
        print(String(format: "bench: decode, %6d-byte reads: median %.2f M msg/s, best %.2f M msg/s per CPU-second",
                     readSize, rates[rates.count / 2] / 1e6, rates.last! / 1e6))
    }

    // Masking round trip in an optimised build: client-encoded frames unmasked by a server codec from
    // reads of 7 bytes, so every chunk starts at another offset into the 4-byte key.
    var client = WebSocketCodec(role: .client)
    var masked: [UInt8] = []
    var sent: [Data] = []
    for length in [0, 1, 3, 7, 8, 9, 15, 16, 17, 125, 126, 1_000, 65_535, 65_536, 100_003] {
        let payload = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ length) })
        sent.append(payload)
        client.encode(.binary(payload), into: &masked)
    }
    var serverSide = WebSocketCodec(role: .server)
    var received: [Data] = []
    var serverEvents: [WebSocketEvent] = []
    var serverOutput: [UInt8] = []
    masked.withUnsafeBytes { all in
        for start in stride(from: 0, to: all.count, by: 7) {
            serverSide.receive(UnsafeRawBufferPointer(rebasing: all[start..<min(start + 7, all.count)]),
                               events: &serverEvents, output: &serverOutput)
        }
    }
    for event in serverEvents { if case .message(.binary(let data)) = event { received.append(data) } }
    precondition(received == sent, "masking round trip failed in this build")
    print("bench: masking round trip (\(sent.count) messages, 7-byte reads): ok")

    var encodeRates: [Double] = []
    for _ in 0..<7 {
        var client = WebSocketCodec(role: .client)
        var output: [UInt8] = []
        output.reserveCapacity(64 << 10)
        let cpuStart = cpuSeconds()
        var written = 0
        for _ in 0..<5 * frameCount {
            client.encode(.text(message), into: &output)
            if output.count > 60_000 { written += output.count; output.removeAll(keepingCapacity: true) }
        }
        written += output.count
        let cpu = cpuSeconds() - cpuStart
        precondition(written == 5 * frameCount * (150 + 8))
        encodeRates.append(Double(5 * frameCount) / cpu)
    }
    encodeRates.sort()
    print(String(format: "bench: encode (client, masked): median %.2f M msg/s, best %.2f M msg/s per CPU-second",
                 encodeRates[encodeRates.count / 2] / 1e6, encodeRates.last! / 1e6))
}

var port: UInt16 = 9001
var agent = "Realtime"
var onlyCases: Int?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = arguments.next().flatMap { UInt16($0) } ?? port
    case "--agent": agent = arguments.next() ?? agent
    case "--cases": onlyCases = arguments.next().flatMap { Int($0) }
    case "--fragment-limit": testeeLimits.maximumFragmentCount = arguments.next().flatMap { Int($0) } ?? testeeLimits.maximumFragmentCount
    case "--bench":
        runBenchmark()
        exit(0)
    default:
        print("usage: AutobahnTestee [--port 9001] [--agent Realtime] [--cases N]")
        exit(2)
    }
}

do {
    let countText = try runConnection(port: port, path: "/getCaseCount", echo: false, limits: testeeLimits)
    guard let caseCount = countText.first.flatMap({ Int($0) }) else {
        throw TesteeFailure(description: "getCaseCount answered \(countText)")
    }
    let total = min(caseCount, onlyCases ?? caseCount)
    print("AutobahnTestee: running \(total) cases as agent \(agent)")
    let started = Date()
    for number in 1...max(total, 1) where total > 0 {
        do {
            try runConnection(port: port, path: "/runCase?case=\(number)&agent=\(agent)", echo: true, limits: testeeLimits)
        } catch {
            print("case \(number): \(error)")
        }
    }
    print(String(format: "AutobahnTestee: cases done in %.1f s", Date().timeIntervalSince(started)))
    try runConnection(port: port, path: "/updateReports?agent=\(agent)", echo: false, limits: testeeLimits)
} catch {
    print("AutobahnTestee: \(error)")
    exit(1)
}
