// Filled in with the JSON parser work.
enum JSONBenchmark {
    static func run(arguments: [String]) async throws {
        print("json: not written yet")
    }
}
