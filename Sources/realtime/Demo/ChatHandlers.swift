import Foundation
import Realtime

/// The demo's app code: one set of handlers, built once, attached unchanged to a session of every backend.
///
/// Every backend delivers the chat's messages as `"message"` events (Action Cable names a broadcast so when
/// it has no `event`, `type` or `action` member, as the demo's have not), so the same closure serves all four;
/// only presence needs the dialect's event name.
struct ChatHandlers: Sendable {
    /// What the handlers saw, one line per call, for the demo's checks.
    let heard = Locked<[String]>([])
    let message: @Sendable (RealtimeEvent) -> Void
    let memberAdded: @Sendable (RealtimeEvent) -> Void
    let failure: @Sendable (RealtimeError) -> Void

    init(log: DemoLog) {
        let heard = self.heard
        message = { event in
            heard.withLock { $0.append("message \(event.data)") }
            log.line("    ← message on \(event.channel?.description ?? "-"): \(event.data)")
        }
        memberAdded = { event in
            heard.withLock { $0.append("member \(event.data)") }
            log.line("    ← member joined \(event.channel?.description ?? "-"): \(event.data)")
        }
        failure = { error in log.line("    ! \(error.code): \(error.message)") }
    }

    /// How many calls saw `text`.
    func count(_ text: String) -> Int { heard.withLock { $0.filter { $0.contains(text) }.count } }

    /// The ids the handlers are registered under, chosen once: every session gets the same ones, so
    /// `off(id:)` means the same on every backend.
    struct Registration: Sendable {
        var message = HandlerID()
        var memberAdded = HandlerID()
        var failure = HandlerID()
    }
    let ids = Registration()

    /// Attaches the set to `session` and its `channel`, under ``ids``; returns what the session answered.
    func attach(to session: RealtimeSession, channel: RealtimeChannel, presenceEvent: String?)
        -> (message: HandlerID, memberAdded: HandlerID?, failure: HandlerID) {
        (message: channel.on("message", id: ids.message, perform: message),
         memberAdded: presenceEvent.map { channel.on($0, id: ids.memberAdded, perform: memberAdded) },
         failure: session.onError(id: ids.failure, failure))
    }
}

/// The demo's output: plain, or with colour on a terminal.
final class DemoLog: Sendable {
    let colour = isatty(STDOUT_FILENO) == 1

    func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    func heading(_ text: String) { line(paint(text, "1")) }

    func mark(_ outcome: DemoOutcome) -> String {
        switch outcome {
        case .passed: paint("✓", "32")
        case .failed: paint("✗", "31")
        case .notApplicable: paint("—", "2")
        }
    }

    func paint(_ text: String, _ code: String) -> String {
        colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}

enum DemoOutcome: Sendable, Equatable {
    case passed, failed, notApplicable
}
