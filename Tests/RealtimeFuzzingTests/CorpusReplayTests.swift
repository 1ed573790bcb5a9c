import Foundation
import RealtimeFuzzing
import Testing

/// Every committed seed and regression input of every fuzz target, run through the same property
/// checks the fuzzer runs (without sanitizers or coverage), so an ordinary `swift test` catches a
/// change that breaks a property on a known input.
@Suite("Fuzz corpus replay")
struct CorpusReplayTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/fuzz").standardizedFileURL

    @Test("each target's corpus holds inputs, and every one keeps the target's properties",
          arguments: FuzzTarget.available)
    func replay(_ target: FuzzTarget) throws {
        var inputs: [URL] = []
        for folder in ["corpus", "regressions"] {
            let directory = Self.fuzzFolder.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            inputs += names.sorted().map { directory.appendingPathComponent($0) }
        }
        #expect(inputs.count >= 3, "\(target.rawValue) needs a seed corpus")
        var failures: [String] = []
        for url in inputs {
            let data = try Data(contentsOf: url)
            if let failure = data.withUnsafeBytes({ target.check($0) }) {
                failures.append("\(url.lastPathComponent): \(failure.message)")
            }
        }
        if let reason = try Self.knownFailure(target) {
            // A target listed in known-failures (see run.sh) fails on some input until its fix lands.
            withKnownIssue(Comment(rawValue: reason)) { #expect(failures.isEmpty, "\(failures.first ?? "")") }
        } else {
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        }
    }

    /// The reason `known-failures` gives for `target`, if it lists it.
    static func knownFailure(_ target: FuzzTarget) throws -> String? {
        let text = try String(contentsOf: fuzzFolder.appendingPathComponent("known-failures"), encoding: .utf8)
        let line = text.split(separator: "\n").first { $0.hasPrefix(target.rawValue + " ") }
        return line.map { $0.split(separator: "#", maxSplits: 1).last.map(String.init) ?? String($0) }
    }
}
