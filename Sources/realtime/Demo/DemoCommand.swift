import Foundation
import Realtime
import RealtimeTesting

/// `realtime demo`: one set of handlers against the embedded server of every backend.
enum DemoCommand {
    static let help = """
    usage: realtime demo [--dialect socketio|pusher|bird|actioncable]

    Starts the embedded server of every backend on loopback (Socket.IO, Pusher, Bird, Action Cable) and
    attaches one set of handlers, the same closures, to a session of each. For each it drives: subscribe,
    a server event, a request with an acknowledgement (Socket.IO), presence (Pusher, Bird), a round trip
    measured with session.ping(), a connection the server drops (reconnect, then re-join, printing how long
    the channel went unsubscribed), a send made while offline (delivered once), off(id:), and disconnect()
    (printing session.statistics first). It ends with a table per backend. --dialect runs one backend.

    exit: 0 every step passed, 1 a step failed, 2 usage
    """

    static let steps = ["subscribe", "server event", "request / ack", "presence", "ping (round trip)",
                        "drop → reconnect → re-join",
                        "send while offline, once", "off(id:)", "disconnect()"]

    static func run(_ words: [String]) async throws -> ExitCode {
        let arguments = try Arguments(words, valued: ["dialect"], flags: ["help"])
        if arguments.flag("help") {
            print(help)
            return .done
        }
        guard arguments.positional.isEmpty else {
            throw UsageError("unexpected argument \(arguments.positional.joined(separator: " ")) (one backend: --dialect D)")
        }
        let kinds = try arguments.value("dialect").map { [try DialectKind($0)] } ?? DialectKind.allCases
        let log = DemoLog()
        let handlers = ChatHandlers(log: log)
        log.line("demo: one ChatHandlers value (message, member joined, error) attached to every session")
        var table: [(String, [DemoOutcome])] = []
        for kind in kinds {
            let backend: any DemoBackend = switch kind {
            case .socketio: try SocketIODemo()
            case .pusher: try PusherDemo(vendor: .pusher)
            case .bird: try PusherDemo(vendor: .bird)
            case .actioncable: try ActionCableDemo()
            }
            table.append((backend.name, await drive(backend, handlers: handlers, log: log)))
            backend.stop()
        }
        printTable(table, log: log)
        let failed = table.flatMap(\.1).filter { $0 == .failed }.count
        log.line(failed == 0 ? "demo: every step passed" : "demo: \(failed) step\(failed == 1 ? "" : "s") failed")
        return failed == 0 ? .done : .failure
    }

    /// Runs every step against one backend; a step that throws fails, and the next steps still run.
    static func drive(_ backend: any DemoBackend, handlers: ChatHandlers, log: DemoLog) async -> [DemoOutcome] {
        log.line("")
        log.heading("\(backend.name): embedded server on \(backend.url)")
        // Short, steady delays so the demo stays quick; apps keep the dialect's defaults.
        let policy = ReconnectPolicy(initialDelay: .milliseconds(300), multiplier: 2, maximumDelay: .seconds(2),
                                     jitter: .none)
        let session = backend.makeSession(SessionOptions(reconnectPolicy: policy))
        let dropped = Locked(false)
        session.onStateChange { _, new in
            if !new.isConnected { dropped.withLock { $0 = true } }
            log.line("    state → \(new)")
        }
        let channel = session.channel(backend.channel)
        // How long the channel went unsubscribed, as its resubscription reports it.
        let gap = Locked<Duration?>(nil)
        channel.onLifecycle { event in
            if case .subscribed(let info) = event.kind, let lapse = info.gap { gap.withLock { $0 = lapse } }
        }
        let ids = handlers.attach(to: session, channel: channel, presenceEvent: backend.presenceEvent)
        let same = ids.message == handlers.ids.message && ids.failure == handlers.ids.failure
            && (ids.memberAdded == nil || ids.memberAdded == handlers.ids.memberAdded)
        log.line("  handlers attached: message \(ids.message), member joined "
                 + "\(ids.memberAdded?.description ?? "— (no presence)"), error \(ids.failure)"
                 + (same ? " (the set's own ids)" : " (NOT the set's ids)"))
        let tag = backend.name.lowercased().replacingOccurrences(of: " ", with: "-")
        var results: [DemoOutcome] = []

        func step(_ name: String, _ body: () async throws -> DemoOutcome) async {
            let outcome: DemoOutcome
            do {
                outcome = try await body()
            } catch {
                log.line("    ! \(error)")
                outcome = .failed
            }
            results.append(outcome)
            log.line("  \(log.mark(outcome)) \(name)")
        }

        await step("subscribe \(backend.channel)") {
            try await withTimeout(.seconds(10)) {
                try await session.connect()
                try await channel.subscribed()
            }
            return .passed
        }
        await step("a server event reaches the handler") {
            backend.push("welcome to \(tag)")
            return await waitFor(.seconds(5)) { handlers.count("welcome to \(tag)") == 1 } ? .passed : .failed
        }
        await step("request with an acknowledgement") {
            guard let (text, right) = try await backend.request(on: channel) else {
                log.line("    (\(backend.name) has no acknowledgements)")
                return .notApplicable
            }
            log.line("    \(text)")
            return right ? .passed : .failed
        }
        await step("presence: another member joins") {
            guard let guest = backend.guest("guest-\(tag)") else {
                log.line("    (\(backend.name) has no presence)")
                return .notApplicable
            }
            defer { guest.disconnect() }
            return await waitFor(.seconds(5)) { handlers.count("guest-\(tag)") == 1 } ? .passed : .failed
        }
        await step("session.ping() measures the round trip") {
            let roundTrip = try await session.ping()
            log.line(String(format: "    round trip: %.3f ms", roundTrip.seconds * 1000))
            return .passed
        }
        let offline = "sent offline on \(tag)"
        await step("the server drops the connection: reconnect, re-join; a send made offline waits") {
            dropped.withLock { $0 = false }
            backend.drop()
            // The state observer, not a poll of `state`: a quick reconnect could hide the drop from a poll.
            guard await waitFor(.seconds(5), { dropped.withLock { $0 } }) else { return .failed }
            let send = Task { try await backend.post(offline, on: channel) }
            await waitFor(.seconds(2)) { session.bufferedSendCount > 0 }
            log.line("    sends buffered while offline: \(session.bufferedSendCount)")
            try await withTimeout(.seconds(10)) {
                try await session.connect()
                try await channel.subscribed()
            }
            try await send.value
            // Lifecycle observers run on the delivery queue, possibly just after subscribed() returns.
            if await waitFor(.seconds(2), { gap.withLock { $0 } != nil }), let lapse = gap.withLock({ $0 }) {
                log.line(String(format: "    re-joined after %.0f ms without a subscription (SubscriptionInfo.gap)",
                                lapse.seconds * 1000))
            }
            return .passed
        }
        await step("the offline send was delivered once") {
            // Bounded: waits for the first delivery, then looks for a second one briefly.
            _ = await waitFor(.seconds(5)) { backend.received(offline) >= 1 }
            _ = await waitFor(.milliseconds(300)) { backend.received(offline) > 1 }
            log.line("    the server received it \(backend.received(offline)) time(s)")
            return backend.received(offline) == 1 ? .passed : .failed
        }
        await step("off(id:) removes the handler") {
            channel.off(id: ids.message)
            let probe = Locked(false)
            channel.once("message") { _ in probe.withLock { $0 = true } }
            backend.push("after off on \(tag)")
            guard await waitFor(.seconds(5), { probe.withLock { $0 } }) else { return .failed }
            return handlers.count("after off on \(tag)") == 0 ? .passed : .failed
        }
        await step("disconnect() stays disconnected") {
            let statistics = session.statistics
            log.line("    session.statistics: \(statistics.connections) connections "
                     + "(\(statistics.reconnections) reconnection\(statistics.reconnections == 1 ? "" : "s")), "
                     + "\(statistics.framesReceived) frames in, \(statistics.framesSent) out, "
                     + "\(statistics.eventsReceived) events")
            session.disconnect()
            return await waitFor(.seconds(5)) { session.state == .disconnected } ? .passed : .failed
        }
        session.removeAllHandlers()
        return results
    }

    static func printTable(_ table: [(String, [DemoOutcome])], log: DemoLog) {
        log.line("")
        let width = (steps.map(\.count).max() ?? 0) + 2
        func padded(_ text: String, _ count: Int) -> String {
            text + String(repeating: " ", count: max(0, count - text.count))
        }
        log.line(padded("", width) + table.map { padded($0.0, 14) }.joined())
        for (row, name) in steps.enumerated() {
            let cells = table.map { column in
                log.mark(column.1[row]) + String(repeating: " ", count: 13)
            }
            log.line(padded(name, width) + cells.joined())
        }
    }
}

/// Runs `body`, failing with `.timedOut` if it takes longer than `limit`.
func withTimeout(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw RealtimeError(.timedOut, "the demo step took longer than \(limit)")
        }
        try await group.next()
        group.cancelAll()
    }
}

/// Polls `condition` every 10 ms for at most `limit`; returns whether it held (the CLI may wait on real time).
@discardableResult
func waitFor(_ limit: Duration, _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while !condition(), clock.now < deadline {
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
