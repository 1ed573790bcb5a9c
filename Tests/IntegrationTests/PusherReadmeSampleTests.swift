import Foundation
import Testing

/// The README's Pusher and Bird samples are the Examples package's `PusherPresence` and `BirdSignIn`
/// programs, which `Tests/Fixtures/examples/smoke.sh` builds with warnings as errors. This checks that the
/// README shows those programs' lines exactly, so a sample that compiles is the sample people read.
@Suite("README: the Pusher and Bird samples are the compiled Examples")
struct PusherReadmeSampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The code block right after `<!-- path -->` in the README.
    static func readmeBlock(after marker: String, in readme: String) -> String? {
        guard let start = readme.range(of: "<!-- \(marker) -->\n```swift\n") else { return nil }
        guard let end = readme.range(of: "```\n", range: start.upperBound..<readme.endIndex) else { return nil }
        return String(readme[start.upperBound..<end.lowerBound])
    }

    /// The lines between `// README: begin` and `// README: end`.
    static func exampleRegion(_ source: String) -> String? {
        guard let start = source.range(of: "// README: begin\n"),
              let end = source.range(of: "// README: end", range: start.upperBound..<source.endIndex) else { return nil }
        return String(source[start.upperBound..<end.lowerBound])
    }

    @Test("each sample in the README equals its Examples program", arguments: [
        "Examples/Sources/PusherPresence/main.swift", "Examples/Sources/BirdSignIn/main.swift",
    ])
    func sampleMatches(_ path: String) throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        let shown = try #require(Self.readmeBlock(after: path, in: readme), "README has no block after <!-- \(path) -->")
        let compiled = try #require(Self.exampleRegion(source), "\(path) has no README: begin/end markers")
        #expect(shown == compiled)
        #expect(compiled.contains("import Realtime"))
        // The Examples package must build the program, or the check above proves nothing.
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Examples/Package.swift"), encoding: .utf8)
        let target = URL(fileURLWithPath: path).deletingLastPathComponent().lastPathComponent
        #expect(manifest.contains("name: \"\(target)\""))
    }
}
