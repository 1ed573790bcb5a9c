import Foundation
import RealtimeCore
import RealtimeWebSocket

/// The permessage-deflate part of `realtime-bench transport`: for the 150-byte event and a 4 KiB JSON
/// document, the compression ratio, the cost of compressing and of inflating from memory, and the loopback
/// receive throughput compressed (context takeover, as a server sends it) beside uncompressed, in the same run.
///
/// Messages differ from one another (ids, totals, times), as real traffic does: identical messages would
/// compress to a back-reference each and flatter the ratio.
enum DeflateBenchmark {
    struct Workload {
        var name: String
        /// The case in `--json` output.
        var key: String
        var count: Int
        var message: (Int) -> String
    }

    static func run(count: Int, rounds: Int, level: Int = 6, out: BenchOutput) throws {
        // A quarter of the count in events, a sixty-fourth in documents (about 37 and 60 MB of payload at
        // the default count): every message of a round is held in memory, compressed, by the blaster.
        let workloads = [
            Workload(name: "150-byte event", key: "deflate-event", count: max(1_000, count / 4 / 1_000 * 1_000), message: event),
            Workload(name: "4 KiB JSON document", key: "deflate-document", count: max(1_000, count / 64 / 1_000 * 1_000), message: document),
        ]
        out.say("deflate: level \(level)\(level == 6 ? "" : " (not the default 6)"), 32 KiB window, context takeover both ways; uncompressed in the same run")
        for workload in workloads { try measure(workload, rounds: rounds, level: level, out: out) }
    }

    static func measure(_ workload: Workload, rounds: Int, level: Int, out: BenchOutput) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("realtime-bench-deflate-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        // What a server writes: plain frames (1,000 distinct messages, repeated by the blaster) and the whole
        // compressed stream (each message depends on the ones before it).
        var plainServer = WebSocketCodec(role: .server)
        var plain: [UInt8] = []
        for index in 0..<1_000 { plainServer.encode(.text(workload.message(index)), into: &plain) }
        var payloadBytes = 0
        var messages: [String] = []
        messages.reserveCapacity(workload.count)
        for index in 0..<workload.count {
            let message = workload.message(index)
            payloadBytes += message.utf8.count
            messages.append(message)
        }
        var server = WebSocketCodec(role: .server)
        server.enableDeflate(PerMessageDeflateParameters(), minimumMessageSize: 0, compressionLevel: level)
        var compressed: [UInt8] = []
        compressed.reserveCapacity(payloadBytes / 3)
        let compressStart = DispatchTime.now().uptimeNanoseconds
        for message in messages { server.encode(.text(message), into: &compressed) }
        let compressSeconds = Double(DispatchTime.now().uptimeNanoseconds - compressStart) / 1e9
        var copyServer = WebSocketCodec(role: .server)
        var copied: [UInt8] = []
        copied.reserveCapacity(payloadBytes + workload.count * 4)
        let copyStart = DispatchTime.now().uptimeNanoseconds
        for message in messages { copyServer.encode(.text(message), into: &copied) }
        let copySeconds = Double(DispatchTime.now().uptimeNanoseconds - copyStart) / 1e9
        messages = []
        let compressedPayload = compressedPayloadBytes(compressed)
        let plainFile = folder.appendingPathComponent("plain")
        let compressedFile = folder.appendingPathComponent("compressed")
        try Data(plain).write(to: plainFile)
        try Data(compressed).write(to: compressedFile)

        out.say("  \(workload.name), \(workload.count) messages, \(payloadBytes / workload.count) B on average:")
        out.say(String(format: "    ratio: %.3f (%.1f B per message on the wire instead of %.1f; %.1f× smaller)",
                     Double(compressedPayload) / Double(payloadBytes), Double(compressedPayload) / Double(workload.count),
                     Double(payloadBytes) / Double(workload.count), Double(payloadBytes) / Double(compressedPayload)))
        out.say(String(format: "    encode from memory: compressed %.2f µs per message (%.0f MB/s of payload), uncompressed %.2f µs",
                     compressSeconds / Double(workload.count) * 1e6, Double(payloadBytes) / compressSeconds / 1e6,
                     copySeconds / Double(workload.count) * 1e6))
        let perMessage = Double(workload.count)
        out.figure("transport", workload.key, "wire_bytes_per_message", Double(compressedPayload) / perMessage,
                   baseline: "uncompressed", baselineValue: Double(payloadBytes) / perMessage)
        out.figure("transport", workload.key, "compress_us_per_message", compressSeconds / perMessage * 1e6,
                   baseline: "uncompressed", baselineValue: copySeconds / perMessage * 1e6)
        let plainFloor = decodeFromMemory(Array(plain), repeats: workload.count / 1_000, deflate: false)
        let inflateFloor = decodeFromMemory(compressed, repeats: 1, deflate: true)
        out.say(String(format: "    decode from memory (client codec): compressed %.2f M msg/s = %.2f µs per message, uncompressed %.2f M msg/s = %.2f µs",
                     inflateFloor / 1e6, 1e6 / inflateFloor, plainFloor / 1e6, 1e6 / plainFloor))
        out.figure("transport", workload.key, "decode_us_per_message", 1e6 / inflateFloor,
                   baseline: "uncompressed", baselineValue: 1e6 / plainFloor)

        var plainRuns: [TransportBenchmark.Throughput] = []
        var compressedRuns: [TransportBenchmark.Throughput] = []
        for _ in 0..<rounds {
            plainRuns.append(try TransportBenchmark.throughput(
                count: workload.count, certificates: nil, cipher: .aesGCM,
                blasterArguments: ["--frames-file", plainFile.path, "--file-frames", "1000"]))
            compressedRuns.append(try TransportBenchmark.throughput(
                count: workload.count, certificates: nil, cipher: .aesGCM,
                blasterArguments: ["--frames-file", compressedFile.path, "--file-frames", String(workload.count), "--deflate"]))
        }
        TransportBenchmark.series(workload.key, compressedRuns, baseline: "uncompressed",
                                  baselineValues: (plainRuns.map(\.perCPUSecond).max() ?? .nan,
                                                   TransportBenchmark.median(plainRuns.map(\.perCPUSecond))), out: out)
        let bestPlain = plainRuns.max { $0.perCPUSecond < $1.perCPUSecond }!
        let bestCompressed = compressedRuns.max { $0.perCPUSecond < $1.perCPUSecond }!
        out.say("    ws receive rounds, uncompressed / compressed (M msg per client CPU-second): "
              + zip(plainRuns, compressedRuns).map { String(format: "%.2f/%.2f", $0.perCPUSecond / 1e6, $1.perCPUSecond / 1e6) }
              .joined(separator: ", "))
        for (label, best, bytes) in [("uncompressed", bestPlain, payloadBytes), ("compressed  ", bestCompressed, compressedPayload)] {
            out.say(String(format: "    ws receive, %@: %.2f M msg/s, %.2f M msg per client CPU-second, %.0f MB/s of payload on the wire (best of %d)",
                         label, best.perSecond / 1e6, best.perCPUSecond / 1e6,
                         Double(bytes) / Double(workload.count) * best.perSecond / 1e6, rounds))
        }
        out.say(String(format: "    compressed / uncompressed, msg per client CPU-second: best rounds %.2f×, median rounds %.2f×",
                     bestCompressed.perCPUSecond / bestPlain.perCPUSecond,
                     TransportBenchmark.median(compressedRuns.map(\.perCPUSecond))
                         / TransportBenchmark.median(plainRuns.map(\.perCPUSecond))))
    }

    /// Payload bytes of the frames in `stream` (unmasked server frames).
    static func compressedPayloadBytes(_ stream: [UInt8]) -> Int {
        var index = 0
        var total = 0
        while index + 2 <= stream.count {
            var length = Int(stream[index + 1] & 0x7F)
            var head = 2
            if length == 126 {
                length = Int(stream[index + 2]) << 8 | Int(stream[index + 3])
                head = 4
            } else if length == 127 {
                length = stream[(index + 2)..<(index + 10)].reduce(0) { $0 << 8 | Int($1) }
                head = 10
            }
            total += length
            index += head + length
        }
        return total
    }

    /// Messages per second a client codec decodes `stream` (`repeats` times) from memory, in 64 KiB reads;
    /// best of three.
    static func decodeFromMemory(_ stream: [UInt8], repeats: Int, deflate: Bool) -> Double {
        var best = 0.0
        for _ in 0..<3 {
            var codec = WebSocketCodec(role: .client)
            if deflate { codec.enableDeflate(PerMessageDeflateParameters(), minimumMessageSize: 0, compressionLevel: 6) }
            var events: [WebSocketEvent] = []
            var output: [UInt8] = []
            var decoded = 0
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<repeats {
                stream.withUnsafeBytes { all in
                    for offset in stride(from: 0, to: all.count, by: 64 << 10) {
                        events.removeAll(keepingCapacity: true)
                        codec.receive(UnsafeRawBufferPointer(rebasing: all[offset..<min(offset + (64 << 10), all.count)]),
                                      events: &events, output: &output)
                        for case .message in events { decoded += 1 }
                    }
                }
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            best = max(best, Double(decoded) / seconds)
        }
        return best
    }

    // MARK: Messages

    /// A 150-byte Pusher-style event whose numbers and time change from message to message.
    static func event(_ index: Int) -> String {
        let id = 100_000 + index * 7 % 900_000
        let total = 1_000 + index * 37 % 90_000
        let second = index % 60, minute = index / 60 % 60
        let data = #"{\"id\":\#(id),\"status\":\"shipped\",\"total\":\#(total),\"at\":\"12:\#(pad(minute)):\#(pad(second))\"}"#
        var text = #"{"event":"order-updated","channel":"private-orders","data":"\#(data)"}"#
        while text.utf8.count < 150 { text.insert(" ", at: text.index(before: text.endIndex)) }
        return text
    }

    /// About 4 KiB of JSON: a page of order records with changing ids, totals and states.
    static func document(_ index: Int) -> String {
        let states = ["pending", "paid", "shipped", "delivered", "refunded"]
        var records: [String] = []
        var size = 0
        var item = 0
        while size < 3_950 {
            let id = index * 40 + item
            let record = #"{"id":\#(id),"customer":"customer-\#(id * 31 % 10_000)","state":"\#(states[(id * 7) % 5])","#
                + #""total":\#(id * 53 % 100_000),"items":\#(id % 9 + 1),"express":\#(id % 4 == 0)}"#
            records.append(record)
            size += record.utf8.count + 1
            item += 1
        }
        return #"{"type":"orders","page":\#(index),"orders":[\#(records.joined(separator: ","))]}"#
    }

    private static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
