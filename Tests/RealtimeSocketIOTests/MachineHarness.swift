import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) @testable import RealtimeSocketIO

/// Drives a `SocketIOMachine` with scripted frames and commands and collects its actions.
struct MachineHarness {
    var machine: any DialectMachine

    init(auth: SocketIOAuth? = nil, limits: SocketIODialect.Limits = .init(), liveness: Liveness = .automatic) {
        machine = SocketIODialect(url: URL(string: "http://127.0.0.1:3000")!, auth: auth, limits: limits,
                                  liveness: liveness)
            .makeMachine()
    }

    static let openPacket = #"0{"sid":"eio-sid","upgrades":[],"pingTimeout":2000,"pingInterval":1000,"maxPayload":1000000}"#

    mutating func opened() -> [DialectAction] {
        var actions: [DialectAction] = []
        machine.connectionOpened(TransportOpenInfo(), actions: &actions)
        return actions
    }

    mutating func receive(_ text: String) -> [DialectAction] {
        var actions: [DialectAction] = []
        machine.received(.text(text), actions: &actions)
        return actions
    }

    mutating func receive(binary: Data) -> [DialectAction] {
        var actions: [DialectAction] = []
        machine.received(.binary(binary), actions: &actions)
        return actions
    }

    mutating func command(_ command: DialectCommand) -> [DialectAction] {
        var actions: [DialectAction] = []
        machine.handle(command, actions: &actions)
        return actions
    }

    mutating func finish(_ id: WorkID, _ result: Result<JSONValue, RealtimeError>) -> [DialectAction] {
        var actions: [DialectAction] = []
        machine.workFinished(id, result: result, actions: &actions)
        return actions
    }

    mutating func fire(_ key: TimerKey) -> [DialectAction] {
        var actions: [DialectAction] = []
        machine.timerFired(key, actions: &actions)
        return actions
    }

    /// Opens the connection and completes the Engine.IO handshake.
    @discardableResult
    mutating func connect(openPacket: String = MachineHarness.openPacket) -> [DialectAction] {
        opened() + receive(openPacket)
    }

    /// Connects and joins `namespaces` (auth by value or none), acknowledging each CONNECT.
    mutating func connectAndJoin(_ namespaces: [ChannelID]) {
        connect()
        for channel in namespaces {
            _ = command(.subscribe(channel))
            let name = SocketIOMachine.namespaceName(channel)
            _ = receive(name == "/" ? #"40{"sid":"s"}"# : #"40\#(name),{"sid":"s"}"#)
        }
    }
}

extension Array where Element == DialectAction {
    var sentFrames: [TransportFrame] {
        compactMap { if case .send(let frame) = $0 { return frame } else { return nil } }
    }

    var sentTexts: [String] {
        sentFrames.compactMap { if case .text(let text) = $0 { return text } else { return nil } }
    }

    var delivered: [RealtimeEvent] {
        compactMap { if case .deliver(let event) = $0 { return event } else { return nil } }
    }

    var subscribed: [(ChannelID, Bool?)] {
        compactMap { if case .subscribed(let channel, let recovered) = $0 { return (channel, recovered) } else { return nil } }
    }

    var subscriptionFailures: [(ChannelID, RealtimeError)] {
        compactMap { if case .subscriptionFailed(let channel, let error) = $0 { return (channel, error) } else { return nil } }
    }

    var channelEnds: [(ChannelID, RealtimeError)] {
        compactMap { if case .channelEnded(let channel, let error) = $0 { return (channel, error) } else { return nil } }
    }

    var resolutions: [(RequestID, Result<[JSONValue], RealtimeError>)] {
        compactMap { if case .resolveRequest(let id, let result) = $0 { return (id, result) } else { return nil } }
    }

    var reportedErrors: [RealtimeError] {
        compactMap { if case .reportError(let error) = $0 { return error } else { return nil } }
    }

    var refusedSends: [RealtimeError] {
        compactMap { if case .refuseSend(let error) = $0 { return error } else { return nil } }
    }

    var closes: [(code: Int, reason: String)] {
        compactMap {
            switch $0 {
            case .close(let code, let reason): (code, reason)
            case .closeAsServerAsked(let code, let reason): (code, reason.description)
            default: nil
            }
        }
    }

    var work: [DialectWork] {
        compactMap { if case .perform(let work) = $0 { return work } else { return nil } }
    }

    var connectedIDs: [String?] {
        compactMap { if case .connected(let id) = $0 { return id } else { return nil } }
    }

    var livenessRules: [LivenessRule] {
        compactMap { if case .liveness(let rule) = $0 { return rule } else { return nil } }
    }

    var startedTimers: [TimerKey] {
        compactMap { if case .startTimer(let key, _) = $0 { return key } else { return nil } }
    }
}
