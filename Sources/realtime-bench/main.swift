import Foundation

// Each suite lives in its own file (or folder) and prints ratios against a baseline measured in the same run.
let arguments = Array(CommandLine.arguments.dropFirst())
let suite = arguments.first ?? "all"
let rest = Array(arguments.dropFirst())

/// The suites in the order `all` runs them.
let suites: [(name: String, run: ([String]) async throws -> Void)] = [
    ("json", JSONBenchmark.run), ("session", SessionBenchmark.run), ("transport", TransportBenchmark.run),
    ("dialects", DialectsBenchmark.run), ("latency", LatencyBenchmark.run), ("scale", ScaleBenchmark.run),
]
let chosen = suite == "all" ? suites : suites.filter { $0.name == suite }
guard !chosen.isEmpty else {
    let names = (suites.map(\.name) + ["all"]).joined(separator: "|")
    FileHandle.standardError.write(Data("usage: realtime-bench [\(names)]\n".utf8))
    exit(2)
}
// A failure (a bad option, a peer that did not start) is one line on stderr, not a crash report.
do {
    for entry in chosen { try await entry.run(rest) }
} catch {
    FileHandle.standardError.write(Data("realtime-bench \(suite): \(error)\n".utf8))
    exit(1)
}
