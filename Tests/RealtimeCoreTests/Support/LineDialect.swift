import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// A small JSON dialect for engine tests: every frame is `{"t": kind, …}`.
///
/// Server → client: `welcome` (with `id`, optional `ping` seconds), `subok`/`subfail` (`ch`), `ev` (`ch`,
/// `name`, `data`, optional `ack`), `ack` (`id`, `args`), `bye` (asks the client to close with `code`).
/// Client → server: `sub`, `unsub`, `send`, `req` (with `id`), `ackreply`, `custom`.
/// Close codes: 4000–4099 terminal, 4100–4199 back off at least 1 s, 4200–4299 reconnect at once.
struct LineDialect: RealtimeDialect {
    var name: String { "line" }
    var reconnectPolicy: ReconnectPolicy
    var defaultChannels: [ChannelID] = []
    var url = URL(string: "ws://127.0.0.1:1/line")!

    init(policy: ReconnectPolicy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2,
                                                   maximumDelay: .seconds(8), jitter: .none)) {
        reconnectPolicy = policy
    }

    func makeMachine() -> any DialectMachine { LineMachine() }

    var deferRequest = false
    /// Thrown by the deferred step (credentials) instead of returning the request.
    var requestFailure: RealtimeError?

    func connectionRequest(attempt: Int) -> ConnectionRequestPlan {
        let request = ConnectionRequest(url: url, headers: [HTTPHeader("X-Attempt", String(attempt))])
        if let requestFailure { return .deferred { throw requestFailure } }
        return deferRequest ? .deferred { request } : .ready(request)
    }

    func validate(_ message: OutgoingMessage, expectsReply: Bool) -> RealtimeError? {
        message.event == "reserved" ? RealtimeError(.invalidArgument, "reserved is reserved") : nil
    }
}

struct LineMachine: DialectMachine {
    /// The engine's last hint about handlers reading deferred payloads.
    var payloadsRead = false
    var requestIDs: [Int64: RequestID] = [:]
    var nextAck: Int64 = 0
    var opened = 0

    mutating func connectionOpened(_ info: TransportOpenInfo, actions: inout [DialectAction]) {
        opened += 1
    }

    mutating func received(_ frame: TransportFrame, actions: inout [DialectAction]) {
        guard case .text(let text) = frame, let json = try? JSONValue.parse(text) else {
            actions.append(.reportError(RealtimeError(.protocolViolation, "not JSON")))
            return
        }
        let channel = json["ch"]?.stringValue.map { ChannelID($0) }
        switch json["t"]?.stringValue {
        case "welcome":
            actions.append(.connected(id: json["id"]?.stringValue))
            if let ping = json["ping"]?.integerValue {
                actions.append(.liveness(.serverPings(interval: .seconds(ping), grace: .seconds(1))))
            }
            if let idle = json["idle"]?.integerValue {
                actions.append(.liveness(.clientPings(idle: .seconds(idle), timeout: .seconds(2),
                                                      ping: .text(#"{"t":"ping"}"#))))
            }
        case "subok":
            if let payload = json["payload"] { actions.append(.subscriptionPayload(channel!, payload)) }
            actions.append(.subscribed(channel!, recovered: json["recovered"]?.boolValue))
        case "subfail":
            actions.append(.subscriptionFailed(channel!, RealtimeError(.subscriptionRejected, "refused",
                                                                       context: .init(channel: channel))))
        case "end":
            actions.append(.channelEnded(channel!, RealtimeError(.channelUnavailable, "ended")))
        case "ev":
            let ack = json["ack"]?.integerValue.map { AckToken(channel: channel, id: $0) }
            actions.append(.deliver(RealtimeEvent(channel: channel, name: json["name"]?.stringValue ?? "",
                                                  data: json["data"] ?? .null, rawData: text, ackToken: ack)))
        case "lazy":
            // `data` handed over as text, parsed on first read; the name says what the engine last hinted.
            actions.append(.deliver(RealtimeEvent(channel: channel, name: payloadsRead ? "read" : "unread",
                                                  json: json["data"]?.serialized() ?? "null")))
        case "ack":
            if let id = json["id"]?.integerValue, let request = requestIDs.removeValue(forKey: id) {
                actions.append(.resolveRequest(request, .success(json["args"]?.arrayValue ?? [])))
            }
        case "fatal":
            actions.append(.fail(RealtimeError(.connectionRefused, "the server said fatal")))
            actions.append(.deliver(RealtimeEvent(channel: nil, name: "after-fail", data: .null)))
        case "bye":
            actions.append(.close(code: Int(json["code"]?.integerValue ?? 1000), reason: "bye"))
        default:
            actions.append(.reportError(RealtimeError(.protocolViolation, "unknown frame")))
        }
    }

    mutating func handle(_ command: DialectCommand, actions: inout [DialectAction]) {
        switch command {
        case .subscribe(let channel):
            actions.append(.send(.text(#"{"ch":"\#(channel.name)","t":"sub"}"#)))
        case .unsubscribe(let channel):
            actions.append(.send(.text(#"{"ch":"\#(channel.name)","t":"unsub"}"#)))
        case .send(let message):
            let value: JSONValue = ["t": "send", "ch": .string(message.channel.name), "name": .string(message.event),
                                    "args": .array(message.arguments)]
            let frame = TransportFrame.text(value.serialized())
            actions.append(message.compress ? .send(frame) : .sendUncompressed(frame))
        case .request(let message, let id):
            nextAck += 1
            requestIDs[nextAck] = id
            let value: JSONValue = ["t": "req", "ch": .string(message.channel.name), "name": .string(message.event),
                                    "id": .integer(nextAck), "args": .array(message.arguments)]
            let frame = TransportFrame.text(value.serialized())
            actions.append(message.compress ? .send(frame) : .sendUncompressed(frame))
        case .cancelRequest(let id):
            requestIDs = requestIDs.filter { $0.value != id }
        case .acknowledge(let token, let arguments):
            let value: JSONValue = ["t": "ackreply", "id": .integer(token.id), "args": .array(arguments)]
            actions.append(.send(.text(value.serialized())))
        case .custom(let name, let payload, let id):
            actions.append(.send(.text((["t": "custom", "name": .string(name), "payload": payload] as JSONValue).serialized())))
            actions.append(.resolveRequest(id, .success([.string("done:\(name)")])))
        }
    }

    mutating func timerFired(_ key: TimerKey, actions: inout [DialectAction]) {}

    mutating func payloadsAreRead(_ read: Bool) { payloadsRead = read }

    mutating func workFinished(_ id: WorkID, result: Result<JSONValue, RealtimeError>, actions: inout [DialectAction]) {}

    mutating func connectionEnded(_ closure: TransportClosure) -> ConnectionEnd {
        requestIDs = [:]
        switch closure.closeCode {
        case let code? where (4000..<4100).contains(code):
            return .terminal(RealtimeError(.connectionRefused, "refused", context: .init(closeCode: code)))
        case let code? where (4100..<4200).contains(code):
            return .backoff(minimum: .seconds(1))
        case let code? where (4200..<4300).contains(code):
            return .reconnectImmediately
        default:
            return .backoff(minimum: .zero)
        }
    }
}
