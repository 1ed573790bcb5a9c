import Foundation
import Realtime

/// Decides a command's exit code once; the first decision wins.
final class Finisher: Sendable {
    private struct State {
        var code: ExitCode?
        var waiter: CheckedContinuation<ExitCode, Never>?
    }

    private let state = Locked(State())
    private let output: Output

    init(output: Output) { self.output = output }

    /// Records `code` unless one was recorded; closes the output so nothing prints after the decision.
    func finish(_ code: ExitCode) {
        let waiter = state.withLock { state -> CheckedContinuation<ExitCode, Never>? in
            guard state.code == nil else { return nil }
            state.code = code
            defer { state.waiter = nil }
            return state.waiter
        }
        output.close()
        waiter?.resume(returning: code)
    }

    var isFinished: Bool { state.withLock { $0.code != nil } }

    /// Ctrl-C and SIGTERM finish with `code(signal)`, so the command ends the way it does on its own (a
    /// clean close) rather than with dropped sockets; a second signal while it ends exits at once with
    /// 128 + the signal. Keep the sources alive while waiting.
    func finishOnSignals(_ code: @escaping @Sendable (Int32) -> ExitCode) -> [any DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if self.isFinished { exit(128 + number) }
                self.finish(code(number))
            }
            source.resume()
            return source
        }
    }

    func wait() async -> ExitCode {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> ExitCode? in
                if let code = state.code { return code }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// One session as `listen` and `send` run it: state and error lines, the channels joined, a `subscribed`
/// line per channel, and exit 3 as soon as the session fails or a channel is refused.
///
/// Every line is printed on `queue`, the session's delivery queue, so lines keep the session's order.
final class CommandSession: Sendable {
    let session: RealtimeSession
    let channels: [RealtimeChannel]
    let output: Output
    let finisher: Finisher
    let queue = DispatchQueue(label: "realtime.cli.delivery")
    private let announced = Locked<Set<ChannelID>>([])
    /// Whether the session ever connected, and why its last attempt ended: a timeout then names the cause.
    private let link = Locked<(everConnected: Bool, lastReason: DisconnectReason?)>((false, nil))

    init(dialect: some RealtimeDialect, channels ids: [ChannelID], output: Output, verbose: Bool) {
        var options = SessionOptions(delivery: .queue(queue))
        if verbose {
            options.logLevel = .debug
            options.logHandler = { record in printError("[\(record.level)] \(record.message)") }
        }
        let session = RealtimeSession(dialect: dialect, options: options)
        let channels = ids.map { session.channel($0) }
        let finisher = Finisher(output: output)
        self.session = session
        self.channels = channels
        self.output = output
        self.finisher = finisher
        let link = link
        session.onStateChange { old, new in
            output.state(from: old, to: new)
            if new.isConnected { link.withLock { $0.everConnected = true } }
            if case .reconnecting(_, _, let reason) = new { link.withLock { $0.lastReason = reason } }
        }
        session.onError { [weak session] error in
            output.error(error)
            // A refused channel or a failed session ends the command: nothing more will come.
            let failed = session.map { Self.isTerminal($0.state) } ?? false
            if failed || channels.contains(where: { Self.isTerminal($0.state) }) {
                finisher.finish(.refused)
            }
        }
    }

    /// Connects and prints `subscribed` for each channel once the server confirms it.
    func start() {
        session.start()
        for channel in channels {
            Task { [self] in
                do {
                    try await channel.subscribed()
                    queue.async { self.announce(channel.id) }
                } catch {
                    // The error line comes from `onError`, delivered after this waiter fails; let it print first.
                    queue.asyncAfter(deadline: .now() + 1) { self.finisher.finish(.refused) }
                }
            }
        }
    }

    /// Prints `subscribed` for `id` the first time only.
    func announce(_ id: ChannelID) {
        if announced.withLock({ $0.insert(id).inserted }) { output.subscribed(id) }
    }

    /// Announces the event's channel if it is confirmed but not announced yet, so its `subscribed` line
    /// always precedes its events (the confirmation's waiter may resume after the first event is queued).
    func announceBefore(_ event: RealtimeEvent) {
        guard let id = event.channel, let channel = channels.first(where: { $0.id == id }),
              case .subscribed = channel.state else { return }
        announce(id)
    }

    /// Ends the command after `limit` (on the delivery queue, after the lines queued so far): with `code`, or
    /// with `.timedOut` while a channel is still unconfirmed. A timeout prints an error line saying what was
    /// still awaited: the unconfirmed channels, else `awaited` (what the command waits for, if anything).
    func finish(after limit: Duration?, with code: ExitCode, awaited: @escaping @Sendable () -> String? = { nil }) {
        guard let limit else { return }
        Task { [self] in
            try? await Task.sleep(for: limit)
            queue.async {
                let confirmed = self.announced.withLock { $0 }
                let unconfirmed = self.channels.map(\.id).filter { !confirmed.contains($0) }
                let ending = unconfirmed.isEmpty ? code : .timedOut
                if ending == .timedOut, !self.finisher.isFinished {
                    let (everConnected, lastReason) = self.link.withLock { $0 }
                    let what = if !everConnected {
                        "never connected" + (lastReason.map { " (last attempt: \($0))" } ?? "")
                    } else if unconfirmed.isEmpty {
                        awaited()
                    } else {
                        "the server never confirmed " + unconfirmed.map(\.description).joined(separator: ", ")
                    }
                    self.output.error(RealtimeError(.timedOut, "timed out after \(limit.secondsText)"
                                                    + (what.map { ": " + $0 } ?? "")))
                }
                self.finisher.finish(ending)
            }
        }
    }

    /// Waits for the decision (or Ctrl-C, or SIGTERM), then disconnects quietly, waiting for the close
    /// handshake so that what was sent, and the close, reach the server before the process exits.
    func exitCode() async -> ExitCode {
        let signals = finisher.finishOnSignals { $0 == SIGINT ? .interrupted : .terminated }
        let code = await finisher.wait()
        await session.disconnectAndWait()
        withExtendedLifetime(signals) {}
        return code
    }

    private static func isTerminal(_ state: ConnectionState) -> Bool {
        if case .failed = state { return true }
        return false
    }

    private static func isTerminal(_ state: ChannelState) -> Bool {
        switch state {
        case .rejected, .endedByServer: true
        case .pending, .subscribed, .unsubscribed: false
        }
    }
}
