import Foundation
import RealtimeCore

/// The flags every new suite shares: `--quick` (a smoke run of seconds), `--json`, `--only <dialect>`.
struct BenchOptions {
    let arguments: [String]
    let quick: Bool
    let output: BenchOutput
    /// The dialects to run (`--only socketio|pusher|actioncable`, all by default).
    let dialects: [BenchDialect]

    init(_ arguments: [String]) throws {
        self.arguments = arguments
        quick = arguments.contains("--quick")
        output = BenchOutput(json: arguments.contains("--json"))
        if let only = BenchOptions.string("--only", in: arguments) {
            guard let dialect = BenchDialect(rawValue: only) else {
                throw BenchmarkFailure("--only takes socketio, pusher or actioncable, not \(only)")
            }
            dialects = [dialect]
        } else {
            dialects = BenchDialect.allCases
        }
    }

    /// `--name N`, else `quick` under `--quick`, else `full`.
    func int(_ name: String, full: Int, quick: Int) -> Int {
        TransportBenchmark.option(name, in: arguments) ?? (self.quick ? quick : full)
    }

    func double(_ name: String, full: Double, quick: Double) -> Double {
        BenchOptions.string(name, in: arguments).flatMap(Double.init) ?? (self.quick ? quick : full)
    }

    static func string(_ name: String, in arguments: [String]) -> String? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }
}

/// Prose for people on stdout; with `--json`, one JSON object per figure on stdout and the prose on stderr.
struct BenchOutput {
    let json: Bool

    func say(_ line: String) {
        if json {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            print(line)
        }
    }

    /// The machine a suite ran on, as its first figure: `{"bench":…,"case":"machine","metric":"cores","value":2,
    /// "note":"AMD EPYC; no VAES"}`, so that tables made from runs on different machines can say so.
    func machine(_ bench: String) {
        figure(bench, "machine", "cores", Double(ProcessInfo.processInfo.activeProcessorCount), note: Self.processor)
    }

    /// The processor's model name and whether it has VAES (which the TLS direct reader uses), from /proc/cpuinfo.
    static var processor: String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown processor" }
        let lines = text.split(separator: "\n")
        func field(_ name: String) -> Substring? {
            lines.first { $0.hasPrefix(name) }?.split(separator: ":", maxSplits: 1).last?.drop { $0 == " " }
        }
        let model = field("model name").map(String.init) ?? "unknown processor"
        let hasVAES = field("flags")?.split(separator: " ").contains("vaes") ?? false
        return model + (hasVAES ? "; VAES" : "; no VAES")
    }

    /// One figure beside its baseline: `{"bench":…,"case":…,"metric":…,"value":…,"baseline":…,"baseline_value":…}`,
    /// plus `"note"` when there is something to say (a skipped baseline says why). Printed with `--json` only.
    func figure(_ bench: String, _ caseName: String, _ metric: String, _ value: Double?,
                baseline: String? = nil, baselineValue: Double? = nil, note: String? = nil) {
        guard json else { return }
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return JSONValue.double(value).serialized()
        }
        func text(_ value: String?) -> String { value.map { JSONValue.string($0).serialized() } ?? "null" }
        var line = #"{"bench":\#(text(bench)),"case":\#(text(caseName)),"metric":\#(text(metric)),"#
            + #""value":\#(number(value)),"baseline":\#(text(baseline)),"baseline_value":\#(number(baselineValue))"#
        if let note { line += #","note":\#(text(note))"# }
        print(line + "}")
        fflush(nil)
    }
}

/// Short number formats for the prose.
enum Format {
    /// 1234567 → "1.23 M", 12345 → "12.3 k".
    static func rate(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        if value >= 1e6 { return String(format: "%.2f M", value / 1e6) }
        if value >= 1e3 { return String(format: "%.1f k", value / 1e3) }
        return String(format: "%.0f", value)
    }

    /// A count, or "–" when it is missing.
    static func whole(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "–" }
        return String(Int(value))
    }

    static func ratio(_ value: Double) -> String {
        value.isFinite ? String(format: "%.1f×", value) : "–"
    }

    static func micros(_ nanoseconds: UInt64) -> String {
        String(format: "%.0f µs", Double(nanoseconds) / 1e3)
    }

    static func bytes(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        if abs(value) >= 10 * 1024 { return String(format: "%.1f KiB", value / 1024) }
        return String(format: "%.0f B", value)
    }
}
