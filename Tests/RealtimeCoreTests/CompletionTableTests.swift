@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing

@Suite("CompletionTable")
struct CompletionTableTests {
    private let first = OperationID(1)
    private let second = OperationID(2)
    private let third = OperationID(3)

    /// A table with one caller of each kind, each recording what it was handed.
    private func table(recording log: Locked<[String]>) -> CompletionTable {
        var table = CompletionTable()
        table.done[first] = { result in log.withLock { $0.append(Self.describe("done", result.map { "" })) } }
        table.subscriptions[second] = { result in
            log.withLock { $0.append(Self.describe("subscribed", result.map { $0.map { "recovered: \($0)" } ?? "" })) }
        }
        table.replies[third] = { result in
            log.withLock { $0.append(Self.describe("replied", result.map { $0.map(\.description).joined() })) }
        }
        return table
    }

    private static func describe(_ kind: String, _ result: Result<String, RealtimeError>) -> String {
        switch result {
        case .success(let value): value.isEmpty ? kind : "\(kind) \(value)"
        case .failure(let error): "\(kind) \(error.code.rawValue)"
        }
    }

    @Test("an answer runs its caller's completion with the value of its kind, once")
    func answersOnce() {
        let log = Locked<[String]>([])
        var table = table(recording: log)
        table.take(.done(first))?()
        table.take(.subscribed(second, recovered: true))?()
        table.take(.replied(third, ["ok"]))?()
        #expect(log.withLock { $0 } == ["done", "subscribed recovered: true", #"replied "ok""#])
        #expect(table.isEmpty)
        #expect(table.take(.done(first)) == nil)
    }

    @Test("a failure finds its caller whatever the kind")
    func failureAnyKind() {
        let log = Locked<[String]>([])
        var table = table(recording: log)
        let error = RealtimeError(.cancelled, "the task was cancelled")
        for operation in [third, second, first] { table.take(.failed(operation, error))?() }
        #expect(log.withLock { $0 } == ["replied cancelled", "subscribed cancelled", "done cancelled"])
        #expect(table.isEmpty)
    }

    @Test("a success of another kind finds no caller and leaves the caller waiting")
    func otherKind() {
        let log = Locked<[String]>([])
        var table = table(recording: log)
        #expect(table.take(.replied(first, [])) == nil)
        #expect(table.take(.done(second)) == nil)
        #expect(table.done[first] != nil && table.subscriptions[second] != nil)
        #expect(log.withLock { $0 }.isEmpty)
    }
}
