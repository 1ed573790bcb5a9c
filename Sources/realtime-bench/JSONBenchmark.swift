import Foundation
import RealtimeCore

/// Parses and serializes a typical Pusher-style event with Foundation and with `JSONValue`, all in
/// one run, and prints ns/op, ops/s and the ratio to `JSONSerialization`.
///
/// Rows run in interleaved rounds; each reports its fastest and its median round, the fastest being what
/// load from other processes on a shared machine disturbs least.
///
/// Usage: `realtime-bench json [--iterations N] [--rounds R] [--only WORD] [--quick] [--json]` (build with
/// `-c release`). With `--json`, one figure per row and metric (`ns_per_op`, `ns_per_op_median`), the
/// group's Foundation row as the baseline.
enum JSONBenchmark {
    static let event = #"{"event":"order-updated","channel":"private-orders","data":"{\"id\":12345,\"status\":\"shipped\",\"total\":99.95}"}"#

    /// A larger, nested message with numbers, literals and non-ASCII text (a presence roster).
    static let nestedEvent =
        #"{"event":"pusher_internal:subscription_succeeded","channel":"presence-room","data":{"presence":{"count":3,"#
        + #""ids":["11","22","33"],"hash":{"11":{"name":"Ada","score":12.5,"online":true},"22":{"name":"Grace","#
        + #""score":-3,"online":false},"33":{"name":"Zoë 😀","score":1e3,"online":null}}}}}"#

    /// The typed target for the `JSONDecoder` / `JSONEncoder` rows.
    struct Envelope: Codable {
        var event: String
        var channel: String?
        var data: String?
    }

    struct Row {
        /// Rows compare with the first row of their group, the Foundation baseline.
        var group: String
        var name: String
        /// Returns something derived from the result so the optimizer cannot drop the work.
        var body: () throws -> Int
        /// Nanoseconds per operation in each measured round.
        var rounds: [Double] = []
        var best: Double { rounds.min() ?? .infinity }

        /// The row's name in `--json` output: `parse  JSONValue.parse (String)` → `parse-jsonvalue.parse-string`.
        var key: String {
            name.lowercased().split { " ()->+,".contains($0) }.joined(separator: "-")
        }
    }

    static func run(arguments: [String]) async throws {
        let quick = arguments.contains("--quick")
        let out = BenchOutput(json: arguments.contains("--json"))
        let iterations = intOption("--iterations", in: arguments) ?? (quick ? 2_000 : 200_000)
        let rounds = intOption("--rounds", in: arguments) ?? (quick ? 2 : 5)
        // `--only WORD` keeps just the rows whose name contains WORD (for profiling).
        let only = arguments.firstIndex(of: "--only").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }

        let text = event
        let bytes = Array(text.utf8)
        let data = Data(bytes)
        let parsed = try JSONValue.parse(text)
        let foundationObject = try JSONSerialization.jsonObject(with: data)
        let decoder = JSONDecoder()
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let typed = try decoder.decode(Envelope.self, from: data)
        let nestedText = nestedEvent
        let nestedData = Data(nestedText.utf8)

        var rows = [
            Row(group: "parse", name: "parse  JSONSerialization (Data)") {
                (try JSONSerialization.jsonObject(with: data) as? [String: Any])?.count ?? 0
            },
            Row(group: "parse", name: "parse  JSONDecoder -> struct (Data)") {
                try decoder.decode(Envelope.self, from: data).event.utf8.count
            },
            Row(group: "parse", name: "parse  JSONValue.parse (String)") {
                try JSONValue.parse(text).objectValue?.count ?? 0
            },
            Row(group: "parse", name: "parse  JSONValue.parse ([UInt8])") {
                try JSONValue.parse(bytes).objectValue?.count ?? 0
            },
            Row(group: "parse", name: "parse  JSONValue envelope + inner data string") {
                let envelope = try JSONValue.parse(text)
                guard let inner = envelope["data"]?.stringValue else { return 0 }
                return try JSONValue.parse(inner).objectValue?.count ?? 0
            },
            Row(group: "parse", name: "parse  JSONValue.parse + decode(Envelope.self)") {
                try JSONValue.parse(text).decode(Envelope.self, decoder: decoder).event.utf8.count
            },
            Row(group: "parse", name: "decode JSONValue.decode(Envelope.self)") {
                try parsed.decode(Envelope.self, decoder: decoder).event.utf8.count
            },
            Row(group: "nested", name: "nested JSONSerialization (Data)") {
                (try JSONSerialization.jsonObject(with: nestedData) as? [String: Any])?.count ?? 0
            },
            Row(group: "nested", name: "nested JSONValue.parse (String)") {
                try JSONValue.parse(nestedText).objectValue?.count ?? 0
            },
            Row(group: "write", name: "write  JSONSerialization (sorted keys)") {
                try JSONSerialization.data(withJSONObject: foundationObject, options: [.sortedKeys]).count
            },
            Row(group: "write", name: "write  JSONEncoder (sorted keys)") {
                try encoder.encode(typed).count
            },
            Row(group: "write", name: "write  JSONValue.serialized()") {
                parsed.serialized().utf8.count
            },
            Row(group: "write", name: "write  JSONValue.write(into:)") {
                var buffer: [UInt8] = []
                buffer.reserveCapacity(160)
                parsed.write(into: &buffer)
                return buffer.count
            },
        ]
        if let only { rows.removeAll { !$0.name.contains(only) } }

        out.say("json: \(bytes.count)-byte event, \(iterations) iterations x \(rounds) rounds per row, best and median rounds")
        out.say("json: \(text)")
        out.say("json: nested rows use a \(nestedData.count)-byte presence roster")
        out.machine("json")
        out.figure("json", "run", "event_bytes", Double(bytes.count))
        out.figure("json", "run", "nested_bytes", Double(nestedData.count))
        out.figure("json", "run", "rounds", Double(rounds))

        var sink = 0
        for round in 0...rounds {
            for index in rows.indices {
                let count = round == 0 ? min(iterations, 10_000) : iterations  // round 0 warms up
                let start = ContinuousClock.now
                for _ in 0..<count { sink &+= try rows[index].body() }
                let elapsed = ContinuousClock.now - start
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                if round > 0 { rows[index].rounds.append(seconds * 1e9 / Double(count)) }
            }
        }
        if sink == 42 { out.say("") }

        for row in rows {
            let baseline = rows.first { $0.group == row.group }
            let median = Measure.median(row.rounds)
            let padded = row.name.padding(toLength: 46, withPad: " ", startingAt: 0)
            var line = "json: \(padded) " + String(format: "%8.1f ns/op (median %8.1f) %10.0f ops/s", row.best, median, 1e9 / row.best)
            if let baseline, only == nil {
                line += String(format: "  %5.2fx vs JSONSerialization", baseline.best / row.best)
            }
            out.say(line)
            let comparable = only == nil ? baseline : nil
            out.figure("json", row.key, "ns_per_op", row.best, baseline: comparable?.key, baselineValue: comparable?.best)
            out.figure("json", row.key, "ns_per_op_median", median, baseline: comparable?.key,
                       baselineValue: comparable.map { Measure.median($0.rounds) })
        }
    }

    private static func intOption(_ name: String, in arguments: [String]) -> Int? {
        guard let flag = arguments.firstIndex(of: name), flag + 1 < arguments.count,
              let value = Int(arguments[flag + 1]), value > 0 else { return nil }
        return value
    }
}
