// Filled in with the transport work.
enum TransportBenchmark {
    static func run(arguments: [String]) async throws {
        print("transport: not written yet")
    }
}
