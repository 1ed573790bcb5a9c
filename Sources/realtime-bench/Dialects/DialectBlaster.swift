import Foundation
import Realtime
#if canImport(Glibc)
import Glibc
#endif

/// `realtime-bench dialects blaster --dialect D (--count N | --rate R --seconds S) [--raw]`: the server side of
/// one dialect for one client, in a child process so the client's CPU is measured alone (the parent pins it
/// to its own core). It answers the upgrade, says the dialect's opening and confirms the client's
/// subscription (`--raw`: none of that, for a transport-only client), prints `READY`, and on `GO` (stdin)
/// writes the events: `--count` frames pre-encoded once and written 1,000 to a write, or `--rate` frames a
/// second for `--seconds`, one to a write, each stamped with CLOCK_MONOTONIC just before it is encoded and
/// written. Then it reads until the client closes.
enum DialectBlaster {
    static func run(arguments: [String]) throws {
        guard let name = BenchOptions.string("--dialect", in: arguments), let dialect = BenchDialect(rawValue: name) else {
            throw BenchmarkFailure("blaster: --dialect socketio|pusher|actioncable")
        }
        let raw = arguments.contains("--raw")
        let (listener, address) = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 4)
        TransportBlaster.makeBlocking(listener)
        FileHandle.standardOutput.write(Data("PORT \(address.port)\n".utf8))
        let (accepted, _) = SocketIO.accept(listener)
        guard let fd = accepted else { throw BenchmarkFailure("accept failed") }
        TransportBlaster.makeBlocking(fd)
        var one: Int32 = 1  // paced frames go out one by one, at once
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        defer {
            _ = SocketIO.closeFD(fd)
            _ = SocketIO.closeFD(listener)
        }
        var peer = BlasterPeer(stream: try BlockingStream(fd: fd, tls: nil))

        var handshake = WebSocketServerHandshake()
        var upgrade: (request: WebSocketServerHandshake.Request, leftover: [UInt8])?
        while upgrade == nil {
            let bytes = try peer.stream.read()
            guard !bytes.isEmpty else { throw BenchmarkFailure("the client left during the upgrade") }
            upgrade = try bytes.withUnsafeBytes { try handshake.receive($0) }
        }
        try peer.stream.write(WebSocketServerHandshake.acceptResponse(
            for: upgrade!.request, subprotocol: dialect.subprotocol(offered: upgrade!.request.subprotocols)))

        var key = dialect.defaultKey
        if !raw {
            try peer.send(dialect.opening(connection: 1))
            var pending = upgrade!.leftover
            var confirmed: String?
            while confirmed == nil {
                for text in try peer.receiveTexts(first: pending) {
                    let (replies, channel) = dialect.answer(text)
                    try peer.send(replies)
                    confirmed = confirmed ?? channel
                }
                pending = []
            }
            key = confirmed!
        }
        print("READY")
        fflush(nil)
        guard readLine() == "GO" else { return }

        if let count = TransportBenchmark.option("--count", in: arguments) {
            try blast(dialect, key: key, count: count, to: peer)
        } else {
            let rate = Double(BenchOptions.string("--rate", in: arguments) ?? "") ?? 1000
            let seconds = Double(BenchOptions.string("--seconds", in: arguments) ?? "") ?? 1
            try pace(dialect, key: key, rate: rate, seconds: seconds, to: &peer)
        }
        try peer.drainUntilClosed()
    }

    /// `count` events, 1,000 pre-encoded frames (numbered, so not all alike) per write.
    static func blast(_ dialect: BenchDialect, key: String, count: Int, to peer: BlasterPeer) throws {
        let framesPerChunk = 1000
        var codec = WebSocketCodec(role: .server)
        var chunk: [UInt8] = []
        var offsets: [Int] = [0]
        for index in 0..<framesPerChunk {
            // Six-digit numbers keep every frame the same size.
            codec.encode(.text(dialect.eventText(key: key, number: 100_000 + index)), into: &chunk)
            offsets.append(chunk.count)
        }
        var sent = 0
        while sent < count {
            let frames = min(framesPerChunk, count - sent)
            try peer.stream.write(frames == framesPerChunk ? chunk : Array(chunk[..<offsets[frames]]))
            sent += frames
        }
    }

    /// `rate` events a second for `seconds`, on a fixed schedule from the start (a late frame goes at once;
    /// the ones after it keep their times). The stamp is taken just before the frame is built and written.
    static func pace(_ dialect: BenchDialect, key: String, rate: Double, seconds: Double, to peer: inout BlasterPeer) throws {
        let total = max(1, Int(rate * seconds))
        let interval = 1e9 / rate
        let start = Measure.nanoseconds() + 1_000_000
        var frame: [UInt8] = []
        frame.reserveCapacity(256)
        for index in 0..<total {
            Measure.sleep(until: start + UInt64(Double(index) * interval))
            let stamp = Measure.nanoseconds()
            frame.removeAll(keepingCapacity: true)
            peer.codec.encode(.text(dialect.eventText(key: key, number: index, stamp: stamp)), into: &frame)
            try peer.stream.write(frame)
        }
    }
}

/// The blaster's connection: blocking reads and writes, and a server-side codec for the client's frames.
struct BlasterPeer {
    let stream: BlockingStream
    var codec = WebSocketCodec(role: .server)

    init(stream: BlockingStream) {
        self.stream = stream
    }

    mutating func send(_ texts: [String]) throws {
        guard !texts.isEmpty else { return }
        var bytes: [UInt8] = []
        for text in texts { codec.encode(.text(text), into: &bytes) }
        try stream.write(bytes)
    }

    /// The text messages in `first` and then in one read; pongs and close replies the codec owes are written.
    mutating func receiveTexts(first: [UInt8]) throws -> [String] {
        let bytes = first.isEmpty ? try stream.read() : first
        guard !bytes.isEmpty else { throw BenchmarkFailure("the client left before subscribing") }
        var events: [WebSocketEvent] = []
        var output: [UInt8] = []
        bytes.withUnsafeBytes { codec.receive($0, events: &events, output: &output) }
        if !output.isEmpty { try stream.write(output) }
        var texts: [String] = []
        for event in events {
            switch event {
            case .message(.text(let text)): texts.append(text)
            case .closed, .failed: throw BenchmarkFailure("the client closed before subscribing")
            default: break
            }
        }
        return texts
    }

    /// Answers the client's close (so a client waiting for the closing handshake is not held) and returns
    /// when it is gone.
    mutating func drainUntilClosed() throws {
        while true {
            guard let bytes = try? stream.read(), !bytes.isEmpty else { return }
            var events: [WebSocketEvent] = []
            var output: [UInt8] = []
            bytes.withUnsafeBytes { codec.receive($0, events: &events, output: &output) }
            if !output.isEmpty { try? stream.write(output) }
            if events.contains(where: { if case .closed = $0 { true } else if case .failed = $0 { true } else { false } }) {
                return
            }
        }
    }
}
