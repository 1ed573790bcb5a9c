// `--codec-only`: the echo flow over `WebSocketCodec` and `WebSocketClientHandshake` with a blocking
// socket loop of its own, bypassing `WebSocketTransport` (for telling codec bugs from driver bugs).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RealtimeCore
import RealtimeWebSocket

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

/// Opens `path` over the codec-only loop, echoes every message back when `echo` is set, and returns the
/// text messages received otherwise.
@discardableResult
func runConnection(port: UInt16, path: String, echo: Bool, limits: WebSocketLimits) throws -> [String] {
    let socket = try LoopbackSocket(port: port)
    let url = URL(string: "ws://127.0.0.1:\(port)\(path)")!
    let deflate = PerMessageDeflateOptions(minimumMessageSize: 0)
    var handshake = WebSocketClientHandshake(url: url, key: WebSocketClientHandshake.makeKey(), deflate: deflate)
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
    if let negotiated = handshake.negotiatedDeflate {
        codec.enableDeflate(negotiated, minimumMessageSize: deflate.minimumMessageSize,
                            compressionLevel: deflate.compressionLevel)
    }
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
