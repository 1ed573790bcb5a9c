import Foundation
@_spi(DialectAuthoring) import RealtimeActionCable
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) import RealtimePusher
@_spi(DialectAuthoring) import RealtimeSocketIO

/// Redaction of what the session logs, the way it logs it: a secret planted in an auth payload (Socket.IO
/// CONNECT auth, Pusher auth and channel_data, Action Cable identifier parameters) must not survive the
/// dialect's trace line of the frame it sends (`logDescription(of:)`), nor one in a URL query item or an
/// `Authorization` header the redaction of a log message (`Redaction.redact`), in any form.
///
/// Input: a shape byte, then the bytes that build the payload around the secret (key names, nesting,
/// JSON-encoded strings, filler) and the secret's own characters.
///
/// The secret is `Zq9X…Qw8V…Xq9Z`: its three markers are letters and digits, which survive JSON
/// escaping and percent-encoding unchanged, and nothing else the target generates contains an upper-case
/// letter, so any marker in the output is part of the secret.
enum RedactionFuzz {
    static let markers = ["Zq9X", "Qw8V", "Xq9Z"]

    static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var input = FuzzInput(bytes)
        let shape = input.byte() % 5
        var generator = PayloadGenerator(input: input)
        let logged: [String]
        switch shape {
        case 0: logged = generator.socketIOConnect()
        case 1: logged = generator.pusherSubscribe()
        case 2: logged = generator.actionCableSubscribe()
        case 3: logged = generator.openingURL()
        default: logged = generator.headerLine()
        }
        try require(!logged.isEmpty, "the dialect sent nothing for shape \(shape)")
        for line in logged {
            for marker in markers where line.contains(marker) {
                throw FuzzFailure("the planted secret survives redaction (marker \(marker)): \(line)")
            }
        }
    }

    struct PayloadGenerator {
        var input: FuzzInput

        /// Filler characters: lower case, digits and the punctuation that delimiters are made of.
        static let filler: [Character] = Array("abcdefghijklmnopqrstuvwxyz0123456789 _-.,:;=&?/\\\"'{}[]\n\té€😀+%#")

        mutating func text(upTo limit: Int) -> String {
            String((0..<input.int(below: limit + 1)).map { _ in Self.filler[input.int(below: Self.filler.count)] })
        }

        /// A member name: usually a common one (secret-looking or not), sometimes anything.
        mutating func key() -> String {
            let common = ["token", "auth", "jwt", "password", "apiKey", "session", "id", "user", "data",
                          "authorization", "credentials", "sig", "channel_data", "secret", "x"]
            let choice = input.int(below: common.count + 1)
            return choice < common.count ? common[choice] : text(upTo: 12)
        }

        mutating func secret() -> String {
            "Zq9X" + text(upTo: 10) + "Qw8V" + text(upTo: 10) + "Xq9Z"
        }

        /// A JSON object with the secret as one string somewhere inside, possibly within a string that
        /// itself holds JSON.
        mutating func payload(depth: Int = 0) -> JSONValue {
            var members: [String: JSONValue] = [:]
            for _ in 0..<input.int(below: 3) { members[key()] = filler(depth: depth) }
            let holder = key()
            switch input.int(below: 4) {
            case 0 where depth < 3: members[holder] = payload(depth: depth + 1)
            case 1 where depth < 3: members[holder] = .string(payload(depth: depth + 1).serialized())
            case 2: members[holder] = .array([filler(depth: depth), .string(secret())])
            default: members[holder] = .string(secret())
            }
            return .object(members)
        }

        mutating func filler(depth: Int) -> JSONValue {
            switch input.int(below: 4) {
            case 0: .integer(Int64(input.byte()))
            case 1: .bool(input.bool())
            case 2 where depth < 3: .array([.string(text(upTo: 8))])
            default: .string(text(upTo: 16))
            }
        }

        mutating func socketIOConnect() -> [String] {
            let dialect = SocketIODialect(url: URL(string: "http://127.0.0.1:3000")!, auth: .value(payload()))
            var machine = dialect.makeMachine()
            var actions: [DialectAction] = []
            machine.connectionOpened(TransportOpenInfo(), actions: &actions)
            machine.received(.text(#"0{"sid":"s","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#),
                             actions: &actions)
            machine.handle(.subscribe(input.bool() ? "/" : "/chat"), actions: &actions)
            return actions.traceLines(dialect)
        }

        mutating func pusherSubscribe() -> [String] {
            let dialect = PusherDialect(vendor: .pusher, key: "app-key", host: "127.0.0.1",
                                        auth: .inline(secret: "unused"))
            var machine = dialect.makeMachine()
            var actions: [DialectAction] = []
            machine.connectionOpened(TransportOpenInfo(), actions: &actions)
            machine.received(.text(#"{"event":"pusher:connection_established","data":"{\"socket_id\":\"1.2\",\"activity_timeout\":120}"}"#),
                             actions: &actions)
            let presence = input.bool()
            machine.handle(.subscribe(ChannelID(presence ? "presence-room" : "private-room")), actions: &actions)
            guard let work = actions.compactMap({ action -> WorkID? in
                if case .perform(let work) = action { return work.id } else { return nil }
            }).first else { return [] }
            // The secret is the signature, or a member of the presence identity (a JSON string).
            let inAuth = !presence || input.bool()
            let auth = inAuth ? (input.bool() ? "app-key:" : "") + secret() : "app-key:0123abcd"
            var answer: [String: JSONValue] = ["connection_id": "1.2", "auth": .string(auth)]
            if presence {
                var identity = inAuth ? JSONValue.object(["user_id": .string(text(upTo: 6))]) : payload()
                if case .object(var members) = identity, members["user_id"] == nil {
                    members["user_id"] = "7"
                    identity = .object(members)
                }
                answer["channel_data"] = .string(identity.serialized())
            }
            actions = []
            machine.workFinished(work, result: .success(.object(answer)), actions: &actions)
            return actions.traceLines(dialect)
        }

        mutating func actionCableSubscribe() -> [String] {
            let dialect = ActionCableDialect(url: URL(string: "ws://127.0.0.1:3000/cable")!)
            var machine = dialect.makeMachine()
            var actions: [DialectAction] = []
            machine.connectionOpened(TransportOpenInfo(subprotocol: "actioncable-v1-json"), actions: &actions)
            machine.received(.text(#"{"type":"welcome"}"#), actions: &actions)
            guard case .object(let params) = payload() else { return [] }
            machine.handle(.subscribe(ChannelID("ChatChannel", params: params.filter { $0.key != "channel" })),
                           actions: &actions)
            return actions.traceLines(dialect)
        }

        /// The session's "opening <url>" line, with the secret as a credential query item.
        mutating func openingURL() -> [String] {
            var components = URLComponents()
            components.scheme = "wss"
            components.host = "example.test"
            components.path = "/cable"
            var items: [URLQueryItem] = []
            for _ in 0..<input.int(below: 3) { items.append(URLQueryItem(name: key(), value: text(upTo: 8))) }
            // Unlike an auth payload, where every value counts, a URL carries a credential under a
            // credential's name.
            let names = ["token", "access_token", "auth", "jwt", "password", "api_key", "apiKey", "secret",
                         "signature", "Authorization"]
            items.insert(URLQueryItem(name: names[input.int(below: names.count)], value: secret()),
                         at: input.int(below: items.count + 1))
            components.queryItems = items
            guard let url = components.url else { return [] }
            return [Redaction.redact("opening \(url.absoluteString)")]
        }

        /// A header block with the credential in `Authorization`, in any scheme, as one value.
        mutating func headerLine() -> [String] {
            let name = ["Authorization", "authorization", "AUTHORIZATION", "Proxy-Authorization"][input.int(below: 4)]
            let scheme = ["Bearer ", "Basic ", "Token token=", ""][input.int(below: 4)]
            let before = input.bool() ? "Host: example.test\n" : ""
            let after = input.bool() ? "\nAccept: */*" : ""
            // A header value never holds a line break (the handshake refuses one), so the secret has none.
            let value = secret().filter { $0 != "\n" }
            return [Redaction.redact(before + name + ":" + (input.bool() ? " " : "") + scheme + value + after)]
        }
    }
}

extension [DialectAction] {
    /// The session's trace lines for the frames these actions send (as `SessionEngine` writes them).
    func traceLines(_ dialect: some RealtimeDialect) -> [String] {
        compactMap { action in
            if case .send(let frame) = action { return "→ " + dialect.logDescription(of: frame) } else { return nil }
        }
    }
}
