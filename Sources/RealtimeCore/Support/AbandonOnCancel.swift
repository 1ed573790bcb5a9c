/// Runs `operation`, which does not watch for cancellation itself, so that cancelling the calling task
/// returns at once with `CancellationError`. The operation then finishes on its own (a ping, within its
/// timeout) and its result is dropped.
func abandoningOnCancel<Value: Sendable>(
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let waiter = Locked(AbandonableWaiter<Value>.starting)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            let cancelledAlready = waiter.withLock { state -> Bool in
                guard case .starting = state else { return true }
                state = .waiting(continuation)
                return false
            }
            if cancelledAlready {
                continuation.resume(throwing: CancellationError())
                return
            }
            Task {
                let result: Result<Value, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                waiter.withLock { $0.take() }?.resume(with: result)
            }
        }
    } onCancel: {
        waiter.withLock { $0.take() }?.resume(throwing: CancellationError())
    }
}

/// Who waits for an abandonable operation: the first of its answer and a cancellation resumes it.
private enum AbandonableWaiter<Value: Sendable> {
    case starting
    case waiting(CheckedContinuation<Value, any Error>)
    case finished

    /// The continuation to resume, once: later callers get nil.
    mutating func take() -> CheckedContinuation<Value, any Error>? {
        defer { self = .finished }
        if case .waiting(let continuation) = self { return continuation }
        return nil
    }
}
