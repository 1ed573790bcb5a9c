// `--bench`: codec throughput without sockets (use a release build).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RealtimeCore
import RealtimeWebSocket

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
