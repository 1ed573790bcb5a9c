// Echo client for the Autobahn|Testsuite fuzzing server (loopback only). By default every case runs
// through `WebSocketTransport`, the product path; `--codec-only` runs the codec over a blocking socket
// loop of its own instead, to tell codec bugs from driver bugs.
//
// Usage: AutobahnTestee [--port 9001] [--agent Realtime] [--cases N] [--fragment-limit N] [--codec-only]
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

let usage = "usage: AutobahnTestee [--port 9001] [--agent Realtime] [--cases N] [--fragment-limit N] [--codec-only] | --bench"
var port: UInt16 = 9001
var agent = "Realtime"
var onlyCases: Int?
var codecOnly = false
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = arguments.next().flatMap { UInt16($0) } ?? port
    case "--agent": agent = arguments.next() ?? agent
    case "--cases": onlyCases = arguments.next().flatMap { Int($0) }
    case "--fragment-limit":
        testeeLimits.maximumFragmentCount = arguments.next().flatMap { Int($0) } ?? testeeLimits.maximumFragmentCount
    case "--codec-only": codecOnly = true
    case "--bench":
        runBenchmark()
        exit(0)
    default:
        print(usage)
        exit(2)
    }
}

/// One session: open `path`, echo (or collect the text messages), wait for the close.
let runSession: (_ path: String, _ echo: Bool) throws -> [String]
if codecOnly {
    let limits = testeeLimits
    runSession = { path, echo in try runConnection(port: port, path: path, echo: echo, limits: limits) }
} else {
    let client = TransportEcho(port: port, limits: testeeLimits)
    runSession = { path, echo in try client.run(path: path, echo: echo) }
}
let mode = codecOnly ? "the codec-only loop" : "WebSocketTransport"

do {
    let countText = try runSession("/getCaseCount", false)
    guard let caseCount = countText.first.flatMap({ Int($0) }) else {
        throw TesteeFailure(description: "getCaseCount answered \(countText)")
    }
    let total = min(caseCount, onlyCases ?? caseCount)
    print("AutobahnTestee: running \(total) cases as agent \(agent) through \(mode)")
    let started = Date()
    for number in 1...max(total, 1) where total > 0 {
        do {
            _ = try runSession("/runCase?case=\(number)&agent=\(agent)", true)
        } catch {
            print("case \(number): \(error)")
        }
    }
    print(String(format: "AutobahnTestee: cases done in %.1f s", Date().timeIntervalSince(started)))
    _ = try runSession("/updateReports?agent=\(agent)", false)
} catch {
    print("AutobahnTestee: \(error)")
    exit(1)
}
