import Foundation
import RealtimeCore
import RealtimeWebSocket
#if canImport(Glibc)
import Glibc
#endif

/// The benchmark's sender: accepts one connection, answers the upgrade, then writes N pre-encoded
/// 150-byte text frames (encrypted when `--tls cert key` is given) and a close frame, with blocking I/O.
/// `--frames-file PATH --file-frames N` sends that file's N pre-encoded frames over and over instead
/// (N must divide the count); `--deflate` accepts permessage-deflate, for files of compressed frames.
enum TransportBlaster {
    static func run(arguments: [String]) throws {
        let count = TransportBenchmark.option("--count", in: arguments) ?? 1_000_000
        var tlsContext: TLSContext?
        if let index = arguments.firstIndex(of: "--tls"), index + 2 < arguments.count {
            tlsContext = try TLSContext(server: TLSServerConfiguration(certificateChain: .file(arguments[index + 1]),
                                                                       privateKey: .file(arguments[index + 2])))
        }
        let (listener, address) = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 4)
        makeBlocking(listener)
        FileHandle.standardOutput.write(Data("PORT \(address.port)\n".utf8))
        let (accepted, _) = SocketIO.accept(listener)
        guard let fd = accepted else { throw BenchmarkFailure("accept failed") }
        makeBlocking(fd)
        let stream = try BlockingStream(fd: fd, tls: tlsContext.map { try TLSEngine(server: $0) })

        var handshake = WebSocketServerHandshake()
        var request: WebSocketServerHandshake.Request?
        while request == nil {
            let bytes = try stream.read()
            guard !bytes.isEmpty else { throw BenchmarkFailure("client left during the upgrade") }
            request = try bytes.withUnsafeBytes { try handshake.receive($0) }?.request
        }
        let deflate = arguments.contains("--deflate")
        try stream.write(WebSocketServerHandshake.acceptResponse(
            for: request!, headers: deflate ? [HTTPHeader("Sec-WebSocket-Extensions", "permessage-deflate")] : []))

        var framesPerChunk = 1000
        var chunk = Array([[UInt8]](repeating: TransportBenchmark.encodedFrame(), count: framesPerChunk).joined())
        if let index = arguments.firstIndex(of: "--frames-file"), index + 1 < arguments.count,
           let fileFrames = TransportBenchmark.option("--file-frames", in: arguments) {
            chunk = Array(try Data(contentsOf: URL(fileURLWithPath: arguments[index + 1])))
            framesPerChunk = fileFrames
            guard count % fileFrames == 0 else { throw BenchmarkFailure("\(fileFrames) frames do not divide \(count)") }
        }
        var sent = 0
        while sent < count {
            let frames = min(framesPerChunk, count - sent)
            if frames == framesPerChunk {
                try stream.write(chunk)
            } else {
                try stream.write(Array(chunk.prefix(frames * TransportBenchmark.encodedFrame().count)))
            }
            sent += frames
        }
        try stream.write([0x88, 0x02, 0x03, 0xE8])  // close 1000
        while let bytes = try? stream.read(), !bytes.isEmpty {}
        SocketIO.closeFD(fd)
        SocketIO.closeFD(listener)
    }

    static func makeBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    }
}

/// A blocking socket, optionally under a server-side TLS engine.
final class BlockingStream {
    private let fd: Int32
    private let tls: TLSEngine?
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
    private var ciphertext: [UInt8] = []

    init(fd: Int32, tls: TLSEngine?) throws {
        self.fd = fd
        self.tls = tls
        guard let tls else { return }
        while try !tls.advanceHandshake() {
            try flush()
            let count = SocketIO.receive(fd, into: buffer)
            guard count > 0 else { throw BenchmarkFailure("TLS handshake: the client left") }
            tls.receiveCiphertext(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
        try flush()
    }

    deinit { buffer.deallocate() }

    func read() throws -> [UInt8] {
        while true {
            if let tls {
                let (count, stop) = try tls.readPlaintext(into: buffer)
                if count > 0 { return Array(buffer[0..<count]) }
                if stop == .closedByPeer { return [] }
            }
            let count = SocketIO.receive(fd, into: buffer)
            guard count > 0 else { return [] }
            guard let tls else { return Array(buffer[0..<count]) }
            tls.receiveCiphertext(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    func write(_ bytes: [UInt8]) throws {
        guard let tls else {
            try sendAll(bytes)
            return
        }
        try tls.writePlaintext(bytes)
        try flush()
    }

    private func flush() throws {
        guard let tls else { return }
        ciphertext.removeAll(keepingCapacity: true)
        tls.drainCiphertext(into: &ciphertext)
        try sendAll(ciphertext)
    }

    private func sendAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { SocketIO.send(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            guard written > 0 else { throw BenchmarkFailure("send failed: \(written)") }
            offset += written
        }
    }
}

/// The idle benchmark's peer: a WebSocketServer that accepts and holds connections until stdin closes.
enum TransportIdleServer {
    static func run(arguments: [String]) throws {
        TransportBenchmark.raiseFileLimit()
        var tls: TLSServerConfiguration?
        if let index = arguments.firstIndex(of: "--tls"), index + 2 < arguments.count {
            tls = TLSServerConfiguration(certificateChain: .file(arguments[index + 1]), privateKey: .file(arguments[index + 2]))
        }
        let group = try EventLoopGroup(threadCount: 1)
        let server = try WebSocketServer(configuration: .init(tls: tls, backlog: 4096), group: group) { _, _ in }
        FileHandle.standardOutput.write(Data("PORT \(server.port)\n".utf8))
        while let line = readLine(strippingNewline: false), !line.isEmpty {}
        server.stop()
    }
}
