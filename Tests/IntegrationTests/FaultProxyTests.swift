#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Realtime
import RealtimeTesting
import Testing

/// A raw TCP echo on 127.0.0.1 (blocking, a thread per connection) that records, per connection, how
/// many bytes it read and how the read side ended: the far end of a ``FaultProxy`` under test.
final class TCPEchoServer: Sendable {
    struct Record: Sendable, Equatable {
        var received = 0
        /// "open", "eof", or how a read or an echo write failed ("ECONNRESET", also for EPIPE after a reset).
        var ending = "open"
    }

    let port: Int
    private let records = Locked<[Record]>([])
    private let stopped = Locked(false)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw RealtimeError(.transportFailed, "echo: cannot listen") }
        port = Int(UInt16(bigEndian: address.sin_port))
        let records = records
        let stopped = stopped
        Thread.detachNewThread {
            defer { close(fd) }
            while !stopped.withLock({ $0 }) {
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 20) > 0 else { continue }
                let client = accept(fd, nil, nil)
                guard client >= 0 else { continue }
                let index = records.withLock { $0.append(Record()); return $0.count - 1 }
                Thread.detachNewThread { Self.serve(client, index: index, records: records) }
            }
        }
    }

    private static func serve(_ fd: Int32, index: Int, records: Locked<[Record]>) {
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 {
                let ending = count == 0 ? "eof" : (errno == ECONNRESET ? "ECONNRESET" : "errno \(errno)")
                records.withLock { $0[index].ending = ending }
                return
            }
            records.withLock { $0[index].received += count }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { send(fd, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else {
                    let ending = errno == ECONNRESET || errno == EPIPE ? "ECONNRESET" : "errno \(errno)"
                    records.withLock { $0[index].ending = ending }
                    return
                }
                sent += written
            }
        }
    }

    /// Every accepted connection so far, in accept order.
    var connections: [Record] { records.withLock { $0 } }

    func stop() { stopped.withLock { $0 = true } }
    deinit { stop() }
}

/// A blocking client socket with a 5 s receive timeout, so no read in these tests can hang.
struct RawClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RealtimeError(.transportFailed, "connect to the proxy failed: errno \(errno)") }
    }

    func write(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let written = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return }
            sent += written
        }
    }

    /// Reads until `count` bytes arrived, the peer closed, or the read failed (or timed out).
    /// `ending` is "eof", "ECONNRESET", "timeout", or "enough" when `count` bytes were read.
    func read(upTo count: Int = .max) -> (bytes: [UInt8], ending: String) {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while result.count < count {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, count - result.count), 0) }
            if got == 0 { return (result, "eof") }
            if got < 0 {
                if errno == EINTR { continue }
                return (result, errno == ECONNRESET ? "ECONNRESET" : (errno == EAGAIN ? "timeout" : "errno \(errno)"))
            }
            result += buffer[0..<got]
        }
        return (result, "enough")
    }

    func close() { closeSocket(fd) }
}

private func closeSocket(_ fd: Int32) { _ = close(fd) }

/// Byte-for-byte equality without printing kilobytes of arrays when it fails.
func same(_ bytes: [UInt8], _ expected: some Collection<UInt8>) -> Bool {
    let equal = bytes.elementsEqual(expected)
    if !equal {
        let at = Array(zip(bytes, expected)).firstIndex { $0 != $1 } ?? min(bytes.count, expected.count)
        print("bytes differ: got \(bytes.count), expected \(expected.count), first difference at \(at)")
    }
    return equal
}

func randomBytes(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
    var generator = SeededRandomNumberGenerator(seed: seed)
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

@Suite("FaultProxy against a raw TCP echo", .serialized)
struct FaultProxyTests {
    @Test("pass: 256 KiB echo intact, counted both ways")
    func passIsTransparent() async throws {
        let echo = try TCPEchoServer()
        defer { echo.stop() }
        let proxy = try FaultProxy(upstreamPort: echo.port)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        let payload = randomBytes(256 * 1024)
        let reader = Task.detached { client.read(upTo: payload.count) }
        client.write(payload)
        let (bytes, ending) = await reader.value
        #expect(ending == "enough")
        #expect(same(bytes, payload))
        #expect(proxy.bytesForwarded(.upstream) == payload.count)
        #expect(proxy.bytesForwarded(.downstream) == payload.count)
        #expect(proxy.connectionCount == 1)
        #expect(proxy.acceptedCount == 1)
    }

    @Test("dribble: bytes intact in tiny writes, and with latency on top", arguments: [
        Fault.dribble(chunk: 1, pause: .zero), .dribble(chunk: 5), .combined([.dribble(chunk: 3), .latency(.milliseconds(5))]),
    ])
    func dribbleKeepsBytesIntact(fault: Fault) async throws {
        let echo = try TCPEchoServer()
        defer { echo.stop() }
        let proxy = try FaultProxy(upstreamPort: echo.port, plan: .always(fault))
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        let payload = randomBytes(3_000, seed: 11)
        let reader = Task.detached { client.read(upTo: payload.count) }
        client.write(payload)
        let (bytes, ending) = await reader.value
        #expect(ending == "enough", "\(fault)")
        #expect(same(bytes, payload), "\(fault)")
    }

    @Test("close/reset(afterBytes:): exactly that many bytes pass in that direction, then EOF or ECONNRESET",
          arguments: [Fault.close(afterBytes: 1_000, direction: .upstream), .reset(afterBytes: 600, direction: .upstream),
                      .close(afterBytes: 1_234, direction: .downstream), .reset(afterBytes: 777, direction: .downstream)])
    func cutsExactly(fault: Fault) async throws {
        let (count, ending, direction): (Int, String, FaultDirection)
        switch fault {
        case .close(let bytes, let way): (count, ending, direction) = (bytes, "eof", way)
        case .reset(let bytes, let way): (count, ending, direction) = (bytes, "ECONNRESET", way)
        default: preconditionFailure("a cut")
        }
        let echo = try TCPEchoServer()
        defer { echo.stop() }
        let proxy = try FaultProxy(upstreamPort: echo.port, plan: .always(fault))
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        let payload = randomBytes(5_000)
        client.write(payload)
        let (bytes, clientEnding) = client.read()
        #expect(clientEnding == ending)
        #expect(proxy.bytesForwarded(direction) == count)
        if direction == .downstream {
            #expect(same(bytes, payload.prefix(count)))
        } else {
            // The server saw exactly `count` bytes; the client got back at most those.
            #expect(bytes.count <= count && same(bytes, payload.prefix(bytes.count)))
            #expect(await eventually { echo.connections.first.map { $0.ending != "open" } ?? false })
            #expect(echo.connections == [.init(received: count, ending: ending)])
        }
    }

    @Test("stall(afterBytes:): nothing more is forwarded either way while both sockets stay open; resume delivers the rest")
    func stallForwardsNothingMore() async throws {
        let echo = try TCPEchoServer()
        defer { echo.stop() }
        let proxy = try FaultProxy(upstreamPort: echo.port, plan: .always(.stall(afterBytes: 1_000, direction: .downstream)))
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        let payload = randomBytes(3_000)
        client.write(Array(payload.prefix(1_000)))
        let first = client.read(upTo: 1_000)
        #expect(same(first.bytes, payload.prefix(1_000)))
        client.write(Array(payload.dropFirst(1_000)))
        // Watch a while: no byte moves either way, nothing is closed.
        try await Task.sleep(for: .milliseconds(300))
        #expect(echo.connections == [.init(received: 1_000, ending: "open")])
        #expect(proxy.bytesForwarded(.upstream) == 1_000)
        #expect(proxy.bytesForwarded(.downstream) == 1_000)
        #expect(proxy.connectionCount == 1)

        proxy.resumeAll()
        let rest = client.read(upTo: 2_000)
        #expect(rest.ending == "enough")
        #expect(same(rest.bytes, payload.dropFirst(1_000)))
        #expect(echo.connections == [.init(received: 3_000, ending: "open")])
    }

    @Test("live controls: stallAll holds both directions, resetAll resets every connection, counts follow")
    func liveControls() async throws {
        let echo = try TCPEchoServer()
        defer { echo.stop() }
        let proxy = try FaultProxy(upstreamPort: echo.port)
        defer { proxy.stop() }
        let clients = try (0..<3).map { _ in try RawClient(port: proxy.port) }
        defer { clients.forEach { $0.close() } }
        for client in clients {
            client.write([1, 2, 3])
            #expect(client.read(upTo: 3).bytes == [1, 2, 3])
        }
        #expect(await eventually { proxy.connectionCount == 3 })
        proxy.stallAll()
        clients[0].write([4])
        try await Task.sleep(for: .milliseconds(200))
        #expect(proxy.bytesForwarded(.upstream) == 9)
        proxy.resumeAll()
        #expect(clients[0].read(upTo: 1).bytes == [4])

        proxy.resetAll()
        for client in clients { #expect(client.read().ending == "ECONNRESET") }
        #expect(await eventually { proxy.connectionCount == 0 })
        #expect(await eventually { echo.connections.allSatisfy { $0.ending == "ECONNRESET" } })
        #expect(proxy.acceptedCount == 3)
    }

    @Test("inject: a reset after N more bytes, counted from now")
    func injectCountsFromNow() async throws {
        let echo = try TCPEchoServer()
        defer { echo.stop() }
        let proxy = try FaultProxy(upstreamPort: echo.port)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        defer { client.close() }
        let payload = randomBytes(4_000)
        client.write(Array(payload.prefix(500)))
        #expect(same(client.read(upTo: 500).bytes, payload.prefix(500)))
        proxy.inject(.reset(afterBytes: 100, direction: .downstream))
        client.write(Array(payload.dropFirst(500)))
        let (bytes, ending) = client.read()
        #expect(ending == "ECONNRESET")
        #expect(same(bytes, payload[500..<600]))
        #expect(proxy.bytesForwarded(.downstream) == 600)
    }

    @Test("a sequence plan: pass, refuse, pass; the record lists each connection's fault")
    func sequencePlan() async throws {
        let echo = try TCPEchoServer()
        defer { echo.stop() }
        let proxy = try FaultProxy(upstreamPort: echo.port, plan: .sequence([.pass, .refuse]))
        defer { proxy.stop() }
        for refused in [false, true, false] {
            let client = try RawClient(port: proxy.port)
            defer { client.close() }
            if refused {
                #expect(client.read().ending == "eof")  // read without writing: a write would earn an RST
            } else {
                client.write([9])
                let (bytes, ending) = client.read(upTo: 1)
                #expect(bytes == [9] && ending == "enough")
            }
        }
        #expect(proxy.records.map(\.fault) == [.pass, .refuse, .pass])
        #expect(echo.connections.count == 2)  // a refused connection never reaches upstream
    }

    @Test("a random plan is a pure function of its seed and the connection index, and names its seed")
    func randomPlanIsReproducible() {
        let first = FaultPlan.random(seed: 1234, faultyConnections: 50)
        let again = FaultPlan.random(seed: 1234, faultyConnections: 50)
        let other = FaultPlan.random(seed: 4321, faultyConnections: 50)
        let faults = (0..<60).map(first.fault(forConnection:))
        #expect(faults == (0..<60).map(again.fault(forConnection:)))
        #expect(faults != (0..<60).map(other.fault(forConnection:)))
        #expect(faults[50...].allSatisfy { $0 == .pass })
        #expect(Set(faults.map { "\($0)".prefix(4) }).count >= 5)  // several kinds drawn
        #expect(first.description.contains("1234"))
        #expect(first.seed == 1234)
    }
}
