import Foundation

// Each suite lives in its own file (or folder) and prints ratios against a baseline measured in the same run.
let arguments = Array(CommandLine.arguments.dropFirst())
let suite = arguments.first ?? "all"
let rest = Array(arguments.dropFirst())

// A failure (a bad option, a peer that did not start) is one line on stderr, not a crash report.
do {
    switch suite {
    case "json":
        try await JSONBenchmark.run(arguments: rest)
    case "transport":
        try await TransportBenchmark.run(arguments: rest)
    case "session":
        try await SessionBenchmark.run(arguments: rest)
    case "dialects":
        try await DialectsBenchmark.run(arguments: rest)
    case "latency":
        try await LatencyBenchmark.run(arguments: rest)
    case "scale":
        try await ScaleBenchmark.run(arguments: rest)
    case "all":
        try await JSONBenchmark.run(arguments: rest)
        try await SessionBenchmark.run(arguments: rest)
        try await TransportBenchmark.run(arguments: rest)
        try await DialectsBenchmark.run(arguments: rest)
        try await LatencyBenchmark.run(arguments: rest)
        try await ScaleBenchmark.run(arguments: rest)
    default:
        FileHandle.standardError.write(Data("usage: realtime-bench [json|session|transport|dialects|latency|scale|all]\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("realtime-bench \(suite): \(error)\n".utf8))
    exit(1)
}
