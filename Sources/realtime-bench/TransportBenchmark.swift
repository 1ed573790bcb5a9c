import Foundation
import RealtimeCore
import RealtimeWebSocket
#if canImport(CRealtimeAEAD)
import CRealtimeAEAD
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `realtime-bench transport`: loopback throughput over ws:// and wss:// against a blaster child process,
/// beside a parse-only floor measured in the same run, then 10,000 idle connections.
///
/// With `--json`, one figure per line (msg per client CPU-second best and median per series, the record layer
/// best and median,
/// deflate, idle connections) and the prose on stderr; `--quick` is a smoke run (20,000 frames, 2 rounds, 200 idle
/// connections).
///
/// Options: `--count N` (frames, default 1,000,000), `--rounds N` (default 15), `--idle N` (connections, default 10,000),
/// `--record-passes N` (record layer alone, default 7), `--skip-idle`, `--skip-tls`, `--skip-deflate`, `--deflate-rounds N` (default 5), `--deflate-level N` (with `--only deflate`; default 6), `--cipher aes|chacha` (default: aes, the library's fixed default), `--only ws|wss|wss-openssl|deflate`
/// (one series alone, for profiling). Child roles (spawned by the benchmark itself): `blaster`, `idle-server`.
enum TransportBenchmark {
    static let payloadSize = 150

    static func run(arguments: [String]) async throws {
        switch arguments.first {
        case "blaster":
            try TransportBlaster.run(arguments: Array(arguments.dropFirst()))
            return
        case "idle-server":
            try TransportIdleServer.run(arguments: Array(arguments.dropFirst()))
            return
        default:
            break
        }
        let quick = arguments.contains("--quick")
        let out = BenchOutput(json: arguments.contains("--json"))
        let count = option("--count", in: arguments) ?? (quick ? 20_000 : 1_000_000)
        let idle = option("--idle", in: arguments) ?? (quick ? 200 : 10_000)
        let deflateRounds = option("--deflate-rounds", in: arguments) ?? (quick ? 1 : 5)
        let skipTLS = arguments.contains("--skip-tls")
        raiseFileLimit()
        // The client's threads (started later, so they inherit this) stay off the blaster's core: without
        // this the scheduler sometimes puts both on one core and a round measures contention, not the code.
        let clientPinned = pinCallingThread(toCore: 0)

        let certificates = skipTLS ? nil : try BenchmarkCertificates.make()
        defer { certificates?.remove() }

        out.say("transport: \(count) text frames of \(payloadSize) B over loopback, blaster pinned to core 1"
              + (clientPinned ? ", client to core 0" : " (client not pinned)"))
        let cipher: TLSCipherPreference
        switch arguments.firstIndex(of: "--cipher").map({ arguments[min($0 + 1, arguments.count - 1)] }) {
        case "aes": cipher = .aesGCM
        case "chacha": cipher = .chaCha20Poly1305
        default: cipher = .aesGCM
        }
        if !skipTLS {
            out.say("  wss cipher asked for first: " + TLSCipherSuites.suites(for: cipher).prefix { $0 != ":" })
        }
        let floor = parseOnlyFloor(count: count)
        out.say(String(format: "  parse-only floor (codec, from memory): %.2f M msg/s", floor / 1e6))
        out.figure("transport", "codec-floor", "msg_per_s", floor)
        let recordPasses = option("--record-passes", in: arguments) ?? (quick ? 2 : 7)
        let recordLayer = try certificates.map { try recordLayerSpeeds(certificates: $0, cipher: cipher, passes: recordPasses) }
        if let speeds = recordLayer {
            // What wss adds, measured without sockets: the direct reader (one AEAD pass into the decoder's
            // buffer) and OpenSSL's record path (copy in, decrypt, copy out), beside the AEAD alone.
            let bytes = Double(count * encodedFrame().count)
            func milliseconds(_ speed: Double, frames: Double = bytes) -> Double { frames / speed * 1e3 }
            out.say(String(format: "  wss record layer alone (TLSEngine, from memory, per %d frames, best / median of %d interleaved passes): direct decryption optimization %.1f / %.1f ms; OpenSSL's record layer (the default) %.1f / %.1f ms; OpenSSL / direct = %.2f× / %.2f×",
                         count, recordPasses, milliseconds(speeds.direct.best), milliseconds(speeds.direct.median),
                         milliseconds(speeds.openSSL.best), milliseconds(speeds.openSSL.median),
                         speeds.direct.best / speeds.openSSL.best, speeds.direct.median / speeds.openSSL.median))
            let million = Double(1_000_000 * encodedFrame().count)
            out.figure("transport", "record-layer-direct", "ms_per_1m_frames", milliseconds(speeds.direct.best, frames: million),
                       baseline: "record-layer-openssl", baselineValue: milliseconds(speeds.openSSL.best, frames: million))
            out.figure("transport", "record-layer-direct", "ms_per_1m_frames_median",
                       milliseconds(speeds.direct.median, frames: million),
                       baseline: "record-layer-openssl", baselineValue: milliseconds(speeds.openSSL.median, frames: million))
            out.figure("transport", "run", "record_layer_passes", Double(recordPasses))
            let evp = TLSCipherSuites.sealBytesPerSecond(cipher)
            let wide = wideOpenBytesPerSecond()
            out.figure("transport", "aead-vaes", "bytes_per_s", wide > 0 ? wide : nil,
                       baseline: "aead-evp", baselineValue: evp, note: wide > 0 ? nil : "no VAES here")
            out.say(String(format: "  the AEAD alone on 16 KiB records: OpenSSL's EVP %.2f GB/s = %.0f ms", evp / 1e9, bytes / evp * 1e3)
                  + (wide > 0 ? String(format: "; the direct reader's VAES AES-GCM opener %.2f GB/s = %.0f ms", wide / 1e9, bytes / wide * 1e3)
                              : " (no VAES here: the direct reader uses EVP)"))
        }
        // Alternating rounds, best of each: this machine is shared and noisy (±20 %).
        let rounds = option("--rounds", in: arguments) ?? (quick ? 2 : 15)
        out.machine("transport")
        // The run's sizes, so a table made from the figures can say what was measured.
        out.figure("transport", "run", "frames_per_round", Double(count))
        out.figure("transport", "run", "rounds", Double(rounds))
        out.figure("transport", "run", "deflate_rounds", Double(deflateRounds))
        out.figure("transport", "run", "idle_connections", Double(arguments.contains("--skip-idle") ? 0 : idle))
        var plainRuns: [Throughput] = []
        var secureRuns: [Throughput] = []
        var openSSLRuns: [Throughput] = []
        // `--only ws|wss|wss-openssl` runs one series alone (for profiling it).
        let only = arguments.firstIndex(of: "--only").map { arguments[min($0 + 1, arguments.count - 1)] }
        if only == "deflate" {
            try DeflateBenchmark.run(count: count, rounds: deflateRounds,
                                     level: option("--deflate-level", in: arguments) ?? 6, out: out)
            return
        }
        if let only {
            for _ in 0..<rounds {
                let result = try throughput(count: count, certificates: only == "ws" ? nil : certificates, cipher: cipher,
                                            reading: only == "wss-openssl" ? .openSSL : .directDecryptionOptimization)
                report(only, result, floor: floor, out: out)
            }
            return
        }
        for _ in 0..<rounds {
            plainRuns.append(try throughput(count: count, certificates: nil, cipher: cipher))
            if let certificates {
                secureRuns.append(try throughput(count: count, certificates: certificates, cipher: cipher,
                                                 reading: .directDecryptionOptimization))
                openSSLRuns.append(try throughput(count: count, certificates: certificates, cipher: cipher, reading: .openSSL))
            }
        }
        out.say("  ws  rounds (M msg per client CPU-second): "
              + plainRuns.map { String(format: "%.2f", $0.perCPUSecond / 1e6) }.joined(separator: ", "))
        let plain = plainRuns.max { $0.perCPUSecond < $1.perCPUSecond }!
        report("ws ", plain, floor: floor, out: out)
        series("ws", plainRuns, baseline: "codec-floor", baselineValues: (floor, floor), out: out)
        if certificates != nil {
            out.say("  wss rounds, direct decryption optimization (M msg per client CPU-second): "
                  + secureRuns.map { String(format: "%.2f", $0.perCPUSecond / 1e6) }.joined(separator: ", "))
            let secure = secureRuns.max { $0.perCPUSecond < $1.perCPUSecond }!
            report("wss (direct)", secure, floor: floor, out: out)
            let wsValues = (plain.perCPUSecond, median(plainRuns.map(\.perCPUSecond)))
            series("wss-direct", secureRuns, baseline: "ws", baselineValues: wsValues, out: out)
            series("wss-openssl", openSSLRuns, baseline: "ws", baselineValues: wsValues, out: out)
            let slowdown = 1 - secure.perCPUSecond / plain.perCPUSecond
            let wallSlowdown = 1 - secure.perSecond / plainRuns.map(\.perSecond).max()!
            out.say(String(format: "  wss (direct decryption optimization) vs ws (best rounds): %.1f %% fewer msg per client CPU-second, %.1f %% fewer msg/s (target ≤ 15 %%)",
                         slowdown * 100, wallSlowdown * 100))
            let medianSlowdown = 1 - median(secureRuns.map(\.perCPUSecond)) / median(plainRuns.map(\.perCPUSecond))
            out.say(String(format: "  wss (direct decryption optimization) vs ws (median rounds): %.1f %% fewer msg per client CPU-second", medianSlowdown * 100))
            out.say("  wss rounds, OpenSSL's record layer (the default) (M msg per client CPU-second): "
                  + openSSLRuns.map { String(format: "%.2f", $0.perCPUSecond / 1e6) }.joined(separator: ", "))
            let openSSLBest = openSSLRuns.max { $0.perCPUSecond < $1.perCPUSecond }!
            out.say(String(format: "  wss (OpenSSL record layer) vs ws: best rounds %.1f %%, median rounds %.1f %% fewer msg per client CPU-second",
                         (1 - openSSLBest.perCPUSecond / plain.perCPUSecond) * 100,
                         (1 - median(openSSLRuns.map(\.perCPUSecond)) / median(plainRuns.map(\.perCPUSecond))) * 100))
            out.say(String(format: "  direct decryption optimization / OpenSSL's record layer, msg per client CPU-second: best rounds %.2f×, median rounds %.2f×",
                         secure.perCPUSecond / openSSLBest.perCPUSecond,
                         median(secureRuns.map(\.perCPUSecond)) / median(openSSLRuns.map(\.perCPUSecond))))
            if let recordLayer {
                // The slowdown the record layer alone implies for the median ws round, all else equal.
                let wsSeconds = Double(count) / median(plainRuns.map(\.perCPUSecond))
                let recordSeconds = Double(count * encodedFrame().count) / recordLayer.direct.median
                out.say(String(format: "  record layer's share: %.1f %% (of a wss round at the median ws cost plus the record layer's time)",
                             recordSeconds / (wsSeconds + recordSeconds) * 100))
            }
        }
        if !arguments.contains("--skip-deflate") {
            try DeflateBenchmark.run(count: count, rounds: deflateRounds, out: out)
        }
        if !arguments.contains("--skip-idle") {
            try idleConnections(count: idle, certificates: nil, out: out)
            if let certificates { try idleConnections(count: idle, certificates: certificates, out: out) }
        }
    }

    // MARK: Throughput

    struct Throughput {
        var messages: Int
        var seconds: Double
        var cpuSeconds: Double
        /// Heap allocations of the process over the same span, when counted.
        var allocations: Int?
        var perSecond: Double { Double(messages) / seconds }
        var perCPUSecond: Double { Double(messages) / cpuSeconds }
        var allocationsPerMessage: Double? { allocations.map { Double($0) / Double(messages) } }
    }

    static func report(_ label: String, _ result: Throughput, floor: Double, out: BenchOutput) {
        out.say(String(format: "  %@ client: %.2f M msg/s, %.2f M msg per client CPU-second (%.2f s wall, %.2f s CPU), %.0f %% of the floor",
                     label, result.perSecond / 1e6, result.perCPUSecond / 1e6, result.seconds, result.cpuSeconds,
                     result.perCPUSecond / floor * 100))
    }

    /// A series' best and median rounds as `msg_per_cpu_s[_median]` and `msg_per_s[_median]` figures.
    static func series(_ name: String, _ runs: [Throughput], baseline: String, baselineValues: (best: Double, median: Double),
                       out: BenchOutput) {
        out.figure("transport", name, "msg_per_cpu_s", runs.map(\.perCPUSecond).max(),
                   baseline: baseline, baselineValue: baselineValues.best)
        out.figure("transport", name, "msg_per_cpu_s_median", median(runs.map(\.perCPUSecond)),
                   baseline: baseline, baselineValue: baselineValues.median)
        out.figure("transport", name, "msg_per_s", runs.map(\.perSecond).max())
        out.figure("transport", name, "msg_per_s_median", median(runs.map(\.perSecond)))
    }

    /// One frame as the server sends it: FIN+text, 16-bit length, no mask.
    static func encodedFrame() -> [UInt8] {
        let prefix = Array(#"{"event":"order-updated","channel":"orders","data":"{\"id\":"#.utf8)
        var payload = prefix
        while payload.count < payloadSize - 3 { payload.append(UInt8(ascii: "7")) }
        payload += Array(#"}"}"#.utf8)
        payload = Array(payload.prefix(payloadSize))
        return [0x81, 126, UInt8(payloadSize >> 8), UInt8(payloadSize & 0xFF)] + payload
    }

    /// The codec alone decoding the same bytes from memory, in reads of about the transport's read size.
    static func parseOnlyFloor(count: Int) -> Double {
        let framesPerChunk = 1000
        let chunk = Array([[UInt8]](repeating: encodedFrame(), count: framesPerChunk).joined())
        var best = 0.0
        for _ in 0..<3 {
            var codec = WebSocketCodec(role: .client)
            var events: [WebSocketEvent] = []
            var output: [UInt8] = []
            var decoded = 0
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<(count / framesPerChunk) {
                events.removeAll(keepingCapacity: true)
                chunk.withUnsafeBytes { codec.receive($0, events: &events, output: &output) }
                var batch: [TransportFrame] = []
                batch.reserveCapacity(events.count)
                for case .message(let frame) in events { batch.append(frame) }
                decoded += batch.count
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            precondition(decoded == count / framesPerChunk * framesPerChunk, "the floor decoded \(decoded)")
            best = max(best, Double(decoded) / seconds)
        }
        return best
    }

    /// A client TLSEngine reading the blaster's kind of records (16 KiB, from 157 KB writes) in 64 KiB
    /// reads, as the channel does, from memory: one `pass()` decrypts about 10 MB.
    final class RecordLayerRig {
        let client: TLSEngine
        let server: TLSEngine
        let writes = Array([[UInt8]](repeating: encodedFrame(), count: 1000).joined())
        var bytesPerPass: Int { 64 * writes.count }

        init(certificates: BenchmarkCertificates, cipher: TLSCipherPreference, reading: TLSRecordReading) throws {
            client = try TLSEngine(client: TLSContext(client: TLSConfiguration(
                trustsSystemRoots: false, additionalTrustRoots: [.file(certificates.ca)], cipherPreference: cipher,
                recordReading: reading)), host: "127.0.0.1")
            server = try TLSEngine(server: TLSContext(server: TLSServerConfiguration(
                certificateChain: .file(certificates.certificate), privateKey: .file(certificates.key))))
            var toServer: [UInt8] = []
            var toClient: [UInt8] = []
            for _ in 0..<10 where !(client.isHandshakeComplete && server.isHandshakeComplete) {
                _ = try client.advanceHandshake()
                client.drainCiphertext(into: &toServer)
                toServer.withUnsafeBytes { server.receiveCiphertext($0) }
                toServer = []
                _ = try server.advanceHandshake()
                server.drainCiphertext(into: &toClient)
                toClient.withUnsafeBytes { client.receiveCiphertext($0) }
                toClient = []
            }
        }

        /// Seconds to decrypt one pass.
        func pass() throws -> Double {
            let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: WebSocketChannelSizes.tlsReadSize, alignment: 16)
            defer { plaintext.deallocate() }
            var records: [UInt8] = []
            for _ in 0..<64 { try server.writePlaintext(writes) }
            server.drainCiphertext(into: &records)
            var decrypted = 0
            var failure: RealtimeError?
            let client = client
            let start = DispatchTime.now().uptimeNanoseconds
            records.withUnsafeMutableBytes { all in
                for offset in stride(from: 0, to: all.count, by: WebSocketChannelSizes.tlsReadSize) {
                    let end = min(offset + WebSocketChannelSizes.tlsReadSize, all.count)
                    let bytes = UnsafeMutableRawBufferPointer(rebasing: all[offset..<end])
                    if client.readsRecordsDirectly {
                        do throws(RealtimeError) {
                            _ = try client.readRecordsDirectly(bytes) { chunk in
                                decrypted += chunk.count
                                return true
                            }
                        } catch {
                            failure = error
                        }
                        continue
                    }
                    client.withBorrowedCiphertext(UnsafeRawBufferPointer(bytes)) {
                        do throws(RealtimeError) {
                            while true {
                                let (count, stop) = try client.readPlaintext(into: plaintext)
                                decrypted += count
                                if stop != .bufferFull { break }
                            }
                        } catch {
                            failure = error
                        }
                    }
                }
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            if let failure { throw failure }
            guard decrypted == bytesPerPass else { throw BenchmarkFailure("the record floor decrypted \(decrypted) bytes") }
            return seconds
        }
    }

    /// Record-layer speeds of the direct reader and OpenSSL's, in bytes per second: best and median of
    /// interleaved passes, so both see the same machine.
    struct RecordLayerSpeeds {
        var direct: (best: Double, median: Double)
        var openSSL: (best: Double, median: Double)
    }

    static func recordLayerSpeeds(certificates: BenchmarkCertificates, cipher: TLSCipherPreference,
                                  passes: Int) throws -> RecordLayerSpeeds {
        let direct = try RecordLayerRig(certificates: certificates, cipher: cipher, reading: .directDecryptionOptimization)
        let openSSL = try RecordLayerRig(certificates: certificates, cipher: cipher, reading: .openSSL)
        _ = try (direct.pass(), openSSL.pass())  // warm-up
        var directSeconds: [Double] = []
        var openSSLSeconds: [Double] = []
        for _ in 0..<passes {
            directSeconds.append(try direct.pass())
            openSSLSeconds.append(try openSSL.pass())
        }
        func speeds(_ rig: RecordLayerRig, _ seconds: [Double]) -> (best: Double, median: Double) {
            (Double(rig.bytesPerPass) / seconds.min()!, Double(rig.bytesPerPass) / median(seconds))
        }
        return RecordLayerSpeeds(direct: speeds(direct, directSeconds), openSSL: speeds(openSSL, openSSLSeconds))
    }

    /// Bytes per second the VAES/VPCLMULQDQ opener decrypts and verifies in 16 KiB records (best of
    /// five rounds of 32 records); 0 where it does not run.
    static func wideOpenBytesPerSecond() -> Double {
        #if canImport(CRealtimeAEAD)
        var key = realtime_gcm_key()
        guard realtime_gcm_init(&key, [UInt8](repeating: 0x42, count: 16), 16) == 1 else { return 0 }
        var record = [UInt8](repeating: 0x5A, count: 16_384)
        let tag = [UInt8](repeating: 0, count: 16)
        let header: [UInt8] = [23, 3, 3, 0x40, 0x11]
        var nonce = [UInt8](repeating: 0x24, count: 12)
        var best = UInt64.max
        for _ in 0..<6 {  // the first round warms up
            let start = DispatchTime.now().uptimeNanoseconds
            for index in 0..<32 {
                nonce[11] = UInt8(index)
                // The tag never matches: the whole record is still decrypted and hashed first.
                _ = record.withUnsafeMutableBufferPointer { realtime_gcm_open(&key, nonce, header, 5, $0.baseAddress, $0.count, tag) }
            }
            best = min(best, DispatchTime.now().uptimeNanoseconds - start)
        }
        return Double(32 * 16_384) / (Double(best) / 1e9)
        #else
        return 0
        #endif
    }

    static func throughput(count: Int, certificates: BenchmarkCertificates?, cipher: TLSCipherPreference,
                           reading: TLSRecordReading = .openSSL, blasterArguments: [String] = []) throws -> Throughput {
        var arguments = ["transport", "blaster", "--count", String(count)] + blasterArguments
        if let certificates { arguments += ["--tls", certificates.certificate, certificates.key] }
        let child = try ChildProcess(arguments: arguments, core: 1)
        defer { child.stop() }
        let port = try child.readPort()
        let scheme = certificates == nil ? "ws" : "wss"
        let tls = TLSConfiguration(trustsSystemRoots: false,
                                   additionalTrustRoots: certificates.map { [.file($0.ca)] } ?? [], cipherPreference: cipher,
                                   recordReading: reading)
        let transport = WebSocketTransport(configuration: .init(tls: tls))
        let received = Locked(0)
        let finished = DispatchSemaphore(value: 0)
        let ending = Locked<TransportClosure?>(nil)
        let before = cpuSeconds()
        let start = DispatchTime.now().uptimeNanoseconds
        let connection = transport.open(ConnectionRequest(url: URL(string: "\(scheme)://127.0.0.1:\(port)/")!)) { event in
            switch event {
            case .opened: break
            case .received(let frames): received.withLock { $0 += frames.count }
            case .closed(let closure):
                ending.withLock { $0 = closure }
                finished.signal()
            }
        }
        finished.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = cpuSeconds() - before
        withExtendedLifetime(connection) {}
        let total = received.withLock { $0 }
        guard total == count else {
            throw BenchmarkFailure("\(scheme): received \(total) of \(count) frames; ended with \(String(describing: ending.withLock { $0 }))")
        }
        return Throughput(messages: total, seconds: seconds, cpuSeconds: cpu)
    }

    // MARK: Idle connections

    static func idleConnections(count: Int, certificates: BenchmarkCertificates?, out: BenchOutput) throws {
        var arguments = ["transport", "idle-server"]
        if let certificates { arguments += ["--tls", certificates.certificate, certificates.key] }
        let child = try ChildProcess(arguments: arguments, core: nil)
        defer { child.stop() }
        let port = try child.readPort()
        let scheme = certificates == nil ? "ws" : "wss"
        let tls = TLSConfiguration(trustsSystemRoots: false,
                                   additionalTrustRoots: certificates.map { [.file($0.ca)] } ?? [])
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let transport = WebSocketTransport(configuration: .init(tls: tls), group: group)
        let url = URL(string: "\(scheme)://127.0.0.1:\(port)/")!

        // One warm-up connection pays the one-time costs (TLS context, trust store, loop buffers).
        let warm = DispatchSemaphore(value: 0)
        let warmConnection = transport.open(ConnectionRequest(url: url)) { event in
            if case .opened = event { warm.signal() }
            if case .closed = event { warm.signal() }
        }
        warm.wait()
        let rssBefore = processStatus("VmRSS")
        let opened = Locked(0)
        let failed = Locked<[String]>([])
        let inFlight = DispatchSemaphore(value: 256)  // a wave at a time, so the listen backlog never overflows
        let start = DispatchTime.now().uptimeNanoseconds
        var connections: [any TransportConnection] = []
        connections.reserveCapacity(count)
        for _ in 0..<count {
            inFlight.wait()
            let done = Locked(false)
            connections.append(transport.open(ConnectionRequest(url: url, connectTimeout: .seconds(60))) { event in
                switch event {
                case .opened:
                    opened.withLock { $0 += 1 }
                    done.withLock { $0 = true }
                    inFlight.signal()
                case .closed(let closure):
                    let first = done.withLock { wasDone -> Bool in
                        defer { wasDone = true }
                        return !wasDone
                    }
                    failed.withLock { $0.append("\(closure.kind)") }
                    if first { inFlight.signal() }
                case .received: break
                }
            })
        }
        for _ in 0..<256 { inFlight.wait() }
        defer { for _ in 0..<256 { inFlight.signal() } }  // libdispatch traps on a semaphore freed below its start value
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let rssAfter = processStatus("VmRSS")
        let threads = processStatus("Threads")
        let openCount = opened.withLock { $0 }
        let failures = failed.withLock { $0 }
        out.say(String(format: "  %@ idle: %d of %d connections open in %.1f s; threads in this process: %d (target ≤ 8); RSS +%.1f MiB = %.1f KiB per connection (target ≤ %d KiB)",
                     scheme, openCount, count, seconds, threads, Double(rssAfter - rssBefore) / 1024,
                     Double(rssAfter - rssBefore) / Double(max(openCount, 1)), certificates == nil ? 64 : 160))
        if let first = failures.first { out.say("    \(failures.count) failed, first: \(first)") }
        out.figure("transport", "idle-\(scheme)", "connections_open", Double(openCount), note: "of \(count)")
        out.figure("transport", "idle-\(scheme)", "rss_bytes_per_connection",
                   Double(rssAfter - rssBefore) * 1024 / Double(max(openCount, 1)))
        out.figure("transport", "idle-\(scheme)", "threads", Double(threads))
        for connection in connections { connection.abort() }
        warmConnection.abort()
    }

    // MARK: Helpers

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2]
            : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func option(_ name: String, in arguments: [String]) -> Int? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        return Int(arguments[index + 1])
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// A field of /proc/self/status in its unit (kB for memory).
    static func processStatus(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.count > 1 ? Int(fields[1]) ?? 0 : 0
        }
        return 0
    }

    /// Restricts the calling thread, and threads it starts afterwards, to `core`; false when refused.
    static func pinCallingThread(toCore core: Int) -> Bool {
        // Glibc's module hides the GNU-only declaration; the symbol is there.
        typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity") else { return false }
        var mask = [UInt64](repeating: 0, count: 16)  // 1024 CPUs, glibc's cpu_set_t
        mask[core / 64] = 1 << UInt64(core % 64)
        return mask.withUnsafeBytes { unsafeBitCast(symbol, to: SetAffinity.self)(0, $0.count, $0.baseAddress!) == 0 }
    }

    static func raiseFileLimit() {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A CA and a leaf for 127.0.0.1 made with the openssl CLI in a temporary folder.
struct BenchmarkCertificates {
    let directory: String
    var ca: String { directory + "/ca.pem" }
    var certificate: String { directory + "/leaf.pem" }
    var key: String { directory + "/leaf.key" }

    static func make() throws -> BenchmarkCertificates {
        let directory = NSTemporaryDirectory() + "realtime-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
        set -e
        cd "\(directory)"
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > leaf.ext
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Bench CA" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj "/CN=localhost" 2>/dev/null
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile leaf.ext 2>/dev/null
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchmarkFailure("openssl could not make certificates") }
        return BenchmarkCertificates(directory: directory)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
