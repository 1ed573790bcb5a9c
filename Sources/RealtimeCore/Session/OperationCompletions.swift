/// Names one app operation (a `connect`, `send`, `request`, … call) from its submission to its answer;
/// `.cancel` finds the operation by it.
struct OperationID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64
    init(_ rawValue: UInt64) { self.rawValue = rawValue }
    var description: String { "operation \(rawValue)" }

    /// The operation behind a request or dialect command: each is named after the operation that made it.
    init(_ request: RequestID) { self.init(request.rawValue) }
}

extension RequestID {
    /// A request is named after its operation, so that cancelling the operation finds the request.
    init(_ operation: OperationID) { self.init(operation.rawValue) }
}

/// How `SessionCore` answers an app operation. Each success is the kind one sort of caller waits for;
/// a failure answers any kind.
enum OperationAnswer: Hashable, Sendable {
    /// A `connect()` or a send finished.
    case done(OperationID)
    /// A `subscribed()` wait ended with the channel subscribed; `recovered` as the dialect reported it.
    case subscribed(OperationID, recovered: Bool?)
    /// A request or a dialect command was answered.
    case replied(OperationID, [JSONValue])
    /// Refused, failed, timed out, cancelled or abandoned.
    case failed(OperationID, RealtimeError)

    /// A `connect()` or send's answer.
    init(_ operation: OperationID, _ result: Result<Void, RealtimeError>) {
        switch result {
        case .success: self = .done(operation)
        case .failure(let error): self = .failed(operation, error)
        }
    }

    /// A request's or dialect command's answer.
    init(_ operation: OperationID, _ result: Result<[JSONValue], RealtimeError>) {
        switch result {
        case .success(let values): self = .replied(operation, values)
        case .failure(let error): self = .failed(operation, error)
        }
    }

    var operation: OperationID {
        switch self {
        case .done(let operation), .subscribed(let operation, _), .replied(let operation, _),
             .failed(let operation, _):
            operation
        }
    }
}

typealias Completion<Value: Sendable> = @Sendable (Result<Value, RealtimeError>) -> Void

/// The callers waiting for an answer, by operation, one table per kind of answer so that each completion
/// gets the type it waits for. `SessionEngine` owns it, outside `SessionCore`, whose state holds ids only.
struct CompletionTable: Sendable {
    /// `connect()` and send callers.
    var done: [OperationID: Completion<Void>] = [:]
    /// `subscribed()` callers.
    var subscriptions: [OperationID: Completion<Bool?>] = [:]
    /// Request and dialect command callers.
    var replies: [OperationID: Completion<[JSONValue]>] = [:]

    var isEmpty: Bool { done.isEmpty && subscriptions.isEmpty && replies.isEmpty }

    /// Takes out the completion `answer` is for, bound to the answer, to be run outside any lock; `nil`
    /// when no caller of that kind waits for the operation.
    mutating func take(_ answer: OperationAnswer) -> (@Sendable () -> Void)? {
        switch answer {
        case .done(let operation):
            guard let completion = done.removeValue(forKey: operation) else { return nil }
            return { completion(.success(())) }
        case .subscribed(let operation, let recovered):
            guard let completion = subscriptions.removeValue(forKey: operation) else { return nil }
            return { completion(.success(recovered)) }
        case .replied(let operation, let values):
            guard let completion = replies.removeValue(forKey: operation) else { return nil }
            return { completion(.success(values)) }
        case .failed(let operation, let error):
            if let completion = done.removeValue(forKey: operation) { return { completion(.failure(error)) } }
            if let completion = subscriptions.removeValue(forKey: operation) { return { completion(.failure(error)) } }
            if let completion = replies.removeValue(forKey: operation) { return { completion(.failure(error)) } }
            return nil
        }
    }
}
