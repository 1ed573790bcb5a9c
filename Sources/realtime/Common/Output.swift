import Foundation
import Realtime

/// Writes the CLI's lines: JSON objects with members in a fixed order (`--json`), or readable text.
///
/// Every line is one `write(2)`, so a reader of a pipe sees whole lines as they happen. After ``close()``
/// nothing more is written: a command that has decided its exit code prints no trailing state changes.
final class Output: Sendable {
    let json: Bool
    private let closed = Locked(false)

    init(json: Bool) { self.json = json }

    func close() { closed.withLock { $0 = true } }

    func state(from old: ConnectionState, to new: ConnectionState) {
        if json {
            let from = JSONValue.string(Self.name(old)), to = JSONValue.string(Self.name(new))
            // Why it dropped; a failure is followed by its own error line instead.
            if case .reconnecting(_, _, let reason) = new {
                emit(["type": "state", "from": from, "to": to, "reason": .string(reason.description)])
            } else {
                emit(["type": "state", "from": from, "to": to])
            }
        } else {
            note("state: \(Self.name(old)) → \(new)")
        }
    }

    func subscribed(_ channel: ChannelID) {
        if json {
            emit(["type": "subscribed", "channel": .string(channel.description)])
        } else {
            note("subscribed: \(channel)")
        }
    }

    func event(_ event: RealtimeEvent) {
        let channel: JSONValue = event.channel.map { .string($0.description) } ?? .null
        if json {
            var members: KeyValuePairs<String, JSONValue> = ["type": "event", "channel": channel,
                                                            "event": .string(event.name), "data": event.data]
            if event.arguments.count > 1 {
                members = ["type": "event", "channel": channel, "event": .string(event.name), "data": event.data,
                           "args": .array(event.arguments)]
            }
            emit(members)
        } else {
            let values = event.arguments.count > 1 ? event.arguments.map(\.description).joined(separator: " ")
                : event.data.description
            write("\(event.channel?.description ?? "-") \(event.name): \(values)\n", to: .standardOutput)
        }
    }

    func error(_ error: RealtimeError) {
        if json {
            emit(["type": "error", "code": .string(error.code.rawValue), "message": .string(error.message)])
        } else {
            note("error: \(error.code): \(error.message)")
        }
    }

    func ack(_ arguments: [JSONValue]) {
        if json {
            emit(["type": "ack", "data": .array(arguments)])
        } else {
            write("ack: \(arguments.map(\.description).joined(separator: " "))\n", to: .standardOutput)
        }
    }

    func sent(channel: ChannelID, event: String) {
        if json {
            emit(["type": "sent", "channel": .string(channel.description), "event": .string(event)])
        } else {
            write("sent \(event) on \(channel)\n", to: .standardOutput)
        }
    }

    func ping(_ roundTrip: Duration) {
        let milliseconds = (roundTrip.seconds * 1_000_000).rounded() / 1000
        if json {
            emit(["type": "ping", "round_trip_ms": .double(milliseconds)])
        } else {
            note("ping: \(milliseconds) ms")
        }
    }

    /// A JSON line whose members keep the order given (the nested values are compact, keys sorted).
    func emit(_ members: KeyValuePairs<String, JSONValue>) {
        write(Self.line(members), to: .standardOutput)
    }

    static func line(_ members: KeyValuePairs<String, JSONValue>) -> String {
        let body = members.map { JSONValue.string($0.key).serialized() + ":" + $0.value.serialized() }
        return "{" + body.joined(separator: ",") + "}\n"
    }

    /// Readable status lines go to stderr, so stdout carries events only.
    private func note(_ text: String) {
        write(text + "\n", to: .standardError)
    }

    private func write(_ text: String, to handle: FileHandle) {
        closed.withLock { closed in
            guard !closed else { return }
            handle.write(Data(text.utf8))
        }
    }

    /// The state's name without its details (`reconnecting`, `failed`).
    static func name(_ state: ConnectionState) -> String {
        switch state {
        case .initialized: "initialized"
        case .connecting: "connecting"
        case .connected: "connected"
        case .reconnecting: "reconnecting"
        case .waitingForNetwork: "waiting-for-network"
        case .suspended: "suspended"
        case .disconnected: "disconnected"
        case .failed: "failed"
        }
    }
}

/// Prints usage problems and fatal messages on stderr.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
