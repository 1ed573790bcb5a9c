import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// Drives a ``PusherMachine`` with scripted frames and keeps every action it produced.
struct PusherDriver {
    var machine: any DialectMachine
    var actions: [DialectAction] = []

    init(_ dialect: PusherDialect = .pusher(key: "app-key", auth: .inline(secret: "secret",
                                                                          presenceData: #"{"user_id":"7"}"#,
                                                                          userData: #"{"id":"7"}"#),
                                            host: "127.0.0.1", port: 6001)) {
        machine = dialect.makeMachine()
    }

    /// Actions produced by `body` only.
    @discardableResult
    mutating func step(_ body: (inout any DialectMachine, inout [DialectAction]) -> Void) -> [DialectAction] {
        var produced: [DialectAction] = []
        body(&machine, &produced)
        actions += produced
        return produced
    }

    @discardableResult
    mutating func receive(_ text: String) -> [DialectAction] { step { $0.received(.text(text), actions: &$1) } }

    @discardableResult
    mutating func handle(_ command: DialectCommand) -> [DialectAction] { step { $0.handle(command, actions: &$1) } }

    @discardableResult
    mutating func establish(_ id: String = "1234.1234", activity: Int = 120, vendor: String = "pusher",
                            idKey: String = "socket_id") -> [DialectAction] {
        step { $0.connectionOpened(TransportOpenInfo(), actions: &$1) }
        let data = #"{\"\#(idKey)\":\"\#(id)\",\"activity_timeout\":\#(activity)}"#
        return receive(#"{"event":"\#(vendor):connection_established","data":"\#(data)"}"#)
    }

    /// Runs the `perform` work in `produced` and feeds its result back.
    @discardableResult
    mutating func runWork(_ produced: [DialectAction]) async -> [DialectAction] {
        var out: [DialectAction] = []
        for case .perform(let work) in produced {
            let result: Result<JSONValue, RealtimeError>
            do { result = .success(try await work.run(DialectWorkContext())) }
            catch let error as RealtimeError { result = .failure(error) }
            catch { result = .failure(RealtimeError(.operationFailed, "\(error)")) }
            out += step { $0.workFinished(work.id, result: result, actions: &$1) }
        }
        return out
    }
}

extension [DialectAction] {
    var sentTexts: [String] {
        compactMap { if case .send(.text(let text)) = $0 { return text } else { return nil } }
    }
    var delivered: [RealtimeEvent] {
        compactMap { if case .deliver(let event) = $0 { return event } else { return nil } }
    }
    var subscribedChannels: [ChannelID] {
        compactMap { if case .subscribed(let channel, _) = $0 { return channel } else { return nil } }
    }
    var failures: [(ChannelID, RealtimeError)] {
        compactMap { if case .subscriptionFailed(let channel, let error) = $0 { return (channel, error) } else { return nil } }
    }
    var works: [DialectWork] {
        compactMap { if case .perform(let work) = $0 { return work } else { return nil } }
    }
    var reportedErrors: [RealtimeError] {
        compactMap { if case .reportError(let error) = $0 { return error } else { return nil } }
    }
    var resolutions: [(RequestID, Result<[JSONValue], RealtimeError>)] {
        compactMap { if case .resolveRequest(let id, let result) = $0 { return (id, result) } else { return nil } }
    }
    var connectedIDs: [String?] {
        compactMap { if case .connected(let id) = $0 { return id } else { return nil } }
    }
    var livenessRules: [LivenessRule] {
        compactMap { if case .liveness(let rule) = $0 { return rule } else { return nil } }
    }
}

/// The auth signature the inline signer must produce, computed independently of the signer.
func expectedAuth(_ signed: String, key: String = "app-key", secret: String = "secret") -> String {
    "\(key):\(HMACSHA256.hex(signed, key: secret))"
}

/// JSON text compared as values, so member order does not matter.
func sameJSON(_ text: String, _ expected: JSONValue) -> Bool {
    (try? JSONValue.parse(text)) == expected
}
