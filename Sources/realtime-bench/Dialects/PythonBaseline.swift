import Foundation

/// The Python client of each protocol, a script in `Tests/Fixtures/bench/` run as a child against the same
/// blaster: python-socketio's `AsyncClient`, pysher, and a `websockets` + `json` loop for Action Cable (and
/// for Pusher when pysher does not import).
///
/// The interpreter: `--python PATH`, else `$REALTIME_BENCH_PYTHON`, else `.peers/bench-venv/bin/python` (made
/// by `Tests/Fixtures/bench/provision.sh`), else `python3` on the PATH. The scripts: `--fixtures DIR`, else
/// `Tests/Fixtures/bench` under the working directory or above the executable's `.build`.
struct PythonBaseline {
    /// How to run one dialect's baseline, or why it cannot run.
    enum Plan {
        case run(name: String, script: String, arguments: [String], note: String?)
        case skipped(name: String, reason: String)

        var name: String {
            switch self {
            case .run(let name, _, _, _), .skipped(let name, _): name
            }
        }
    }

    let python: String
    let fixtures: String
    /// Interpreter and package versions, for the header.
    let versions: String

    /// The baseline, or why there is none at all.
    static func locate(arguments: [String]) -> Result<PythonBaseline, BenchmarkFailure> {
        let root = FileManager.default.currentDirectoryPath
        let executableRoot = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let fixtureCandidates = [BenchOptions.string("--fixtures", in: arguments),
                                 root + "/Tests/Fixtures/bench", executableRoot + "/Tests/Fixtures/bench"]
        guard let fixtures = fixtureCandidates.compactMap({ $0 }).first(where: {
            FileManager.default.fileExists(atPath: $0 + "/ws_loop.py")
        }) else {
            return .failure(BenchmarkFailure("the scripts of Tests/Fixtures/bench were not found (run from the package root or pass --fixtures DIR)"))
        }
        let pathPython = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .map { $0 + "/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        let candidates = [BenchOptions.string("--python", in: arguments),
                          ProcessInfo.processInfo.environment["REALTIME_BENCH_PYTHON"],
                          root + "/.peers/bench-venv/bin/python", executableRoot + "/.peers/bench-venv/bin/python",
                          pathPython]
        guard let python = candidates.compactMap({ $0 }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return .failure(BenchmarkFailure("no python3 found (pass --python PATH or run Tests/Fixtures/bench/provision.sh)"))
        }
        let versions = Self.output(python, ["-c", """
            import sys
            from importlib.metadata import version
            found = ["python " + sys.version.split()[0]]
            for name in ("python-socketio", "aiohttp", "pysher", "websocket-client", "websockets"):
                try:
                    found.append(name + " " + version(name))
                except Exception:
                    found.append(name + " missing")
            print(", ".join(found))
            """]) ?? "versions unknown"
        return .success(PythonBaseline(python: python, fixtures: fixtures, versions: versions))
    }

    /// What runs for `dialect`: checked once by importing the packages.
    func plan(_ dialect: BenchDialect) -> Plan {
        switch dialect {
        case .socketIO:
            let name = "python-socketio AsyncClient"
            if let failure = importFailure("socketio, aiohttp") { return .skipped(name: name, reason: failure) }
            return .run(name: name, script: fixtures + "/socketio_client.py", arguments: [], note: nil)
        case .pusher:
            if importFailure("pysher") == nil {
                return .run(name: "pysher", script: fixtures + "/pusher_pysher.py", arguments: [], note: nil)
            }
            let reason = "pysher does not import: " + (importFailure("pysher") ?? "")
            if importFailure("websockets") == nil {
                return .run(name: "websockets+json loop", script: fixtures + "/ws_loop.py",
                            arguments: ["--dialect", "pusher"], note: reason + "; a websockets+json loop instead")
            }
            return .skipped(name: "pysher", reason: reason + ", and websockets neither")
        case .actionCable:
            let name = "websockets+json loop"
            if let failure = importFailure("websockets") { return .skipped(name: name, reason: failure) }
            return .run(name: name, script: fixtures + "/ws_loop.py", arguments: ["--dialect", "actioncable"], note: nil)
        }
    }

    /// nil when `import modules` works, else the last line Python printed.
    private func importFailure(_ modules: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import \(modules)"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch { return "\(python) does not start: \(error)" }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus != 0 else { return nil }
        return text.split(separator: "\n").last.map(String.init) ?? "import \(modules) failed"
    }

    private static func output(_ program: String, _ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? text.trimmingCharacters(in: .whitespacesAndNewlines) : nil
    }
}
