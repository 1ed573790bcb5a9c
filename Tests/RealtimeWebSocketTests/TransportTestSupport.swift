import Dispatch
import Foundation
import RealtimeCore
@testable import RealtimeWebSocket

/// Collects events from any thread and hands them to a test in order, with a deadline instead of sleeps.
final class EventQueue<Event: Sendable>: Sendable {
    private struct State {
        var events: [Event] = []
        var waiter: (id: Int, continuation: CheckedContinuation<Event?, Never>)?
        var nextWaiter = 0
    }

    private let state = Locked(State())

    init() {}

    func push(_ event: Event) {
        let waiter = state.withLock { state -> CheckedContinuation<Event?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.events.append(event)
            return nil
        }
        waiter?.resume(returning: event)
    }

    /// The next event, or nil when none came within `timeout` seconds.
    func next(timeout: Double = 10) async -> Event? {
        await withCheckedContinuation { continuation in
            let id: Int? = state.withLock { state in
                if !state.events.isEmpty {
                    continuation.resume(returning: state.events.removeFirst())
                    return nil
                }
                state.nextWaiter += 1
                state.waiter = (state.nextWaiter, continuation)
                return state.nextWaiter
            }
            guard let id else { return }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                let expired = state.withLock { state -> CheckedContinuation<Event?, Never>? in
                    guard let waiter = state.waiter, waiter.id == id else { return nil }
                    state.waiter = nil
                    return waiter.continuation
                }
                expired?.resume(returning: nil)
            }
        }
    }

    /// Events received so far and not yet taken.
    var pending: [Event] { state.withLock { $0.events } }
}

extension TransportEvent {
    var closure: TransportClosure? {
        if case .closed(let closure) = self { return closure }
        return nil
    }

    var frames: [TransportFrame]? {
        if case .received(let frames) = self { return frames }
        return nil
    }

    var isOpened: Bool {
        if case .opened = self { return true }
        return false
    }
}

extension TransportClosure {
    var error: RealtimeError? {
        if case .failed(let error) = kind { return error }
        return nil
    }
}

/// Reads events until `closed`, collecting the frames on the way.
func drainUntilClosed(_ events: EventQueue<TransportEvent>, timeout: Double = 10) async -> (frames: [TransportFrame], closure: TransportClosure?) {
    var frames: [TransportFrame] = []
    while let event = await events.next(timeout: timeout) {
        switch event {
        case .opened: continue
        case .received(let batch): frames += batch
        case .closed(let closure): return (frames, closure)
        }
    }
    return (frames, nil)
}

/// An echo server on an ephemeral loopback port; `react` may answer some messages differently.
func makeEchoServer(group: EventLoopGroup? = nil, configuration: WebSocketServer.Configuration = .init(),
                    shouldUpgrade: @escaping WebSocketServer.UpgradeDecider = { _ in .accept() },
                    react: @escaping @Sendable (WebSocketServerConnection, TransportFrame) -> Bool = { _, _ in false })
    throws -> WebSocketServer {
    try WebSocketServer(configuration: configuration, group: group, shouldUpgrade: shouldUpgrade) { connection, event in
        guard case .received(let frames) = event else { return }
        let echoed = frames.filter { !react(connection, $0) }
        if !echoed.isEmpty { connection.send(echoed) }
    }
}
