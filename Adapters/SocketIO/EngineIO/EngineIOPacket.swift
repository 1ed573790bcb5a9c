import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The seven Engine.IO v4 packet types. The wire form is the ASCII digit of the raw value.
package enum EngineIOPacketType: UInt8, Sendable, Hashable {
    case open = 0
    case close = 1
    case ping = 2
    case pong = 3
    case message = 4
    case upgrade = 5
    case noop = 6

    /// The ASCII digit that starts a text packet.
    package var character: Character { Character(UnicodeScalar(UInt8(ascii: "0") + rawValue)) }
}

/// One Engine.IO packet. Over WebSocket each packet is one message; a binary message is an implicit
/// `message` packet whose payload is raw bytes.
package enum EngineIOPacket: Sendable, Hashable {
    /// The payload is a slice of the received text: a packet is read once, not copied.
    case text(EngineIOPacketType, Substring)
    case binary(Data)

    /// Decodes one WebSocket message (or one packet of a polling payload, already split).
    package init(frame: TransportFrame) throws(RealtimeError) {
        switch frame {
        case .binary(let data):
            self = .binary(data)
        case .text(let text):
            guard let first = text.utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "6"),
                  let type = EngineIOPacketType(rawValue: first - UInt8(ascii: "0")) else {
                throw RealtimeError(.protocolViolation, "unknown Engine.IO packet type",
                                    context: .init(detail: "starts with \(text.prefix(1).debugDescription)"))
            }
            self = .text(type, text[text.utf8.index(after: text.utf8.startIndex)...])  // one ASCII byte
        }
    }

    /// The WebSocket message for this packet.
    package var frame: TransportFrame {
        switch self {
        case .binary(let data): return .binary(data)
        case .text(let type, let payload): return .text(String(type.character) + payload)
        }
    }
}

/// The Engine.IO `open` packet's handshake data.
package struct EngineIOHandshake: Sendable, Hashable {
    package var sid: String
    package var upgrades: [String]
    package var pingInterval: Duration
    package var pingTimeout: Duration
    /// Largest payload the server accepts, in bytes (the polling POST cap).
    package var maxPayload: Int

    package init(sid: String, upgrades: [String] = [], pingInterval: Duration = .milliseconds(25_000),
                 pingTimeout: Duration = .milliseconds(20_000), maxPayload: Int = 1_000_000) {
        self.sid = sid
        self.upgrades = upgrades
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.maxPayload = maxPayload
    }

    /// Parses the JSON after the `0` type digit.
    package init(json: String) throws(RealtimeError) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(json)
        } catch {
            throw RealtimeError(.protocolViolation, "Engine.IO open packet is not JSON", context: .init(detail: json))
        }
        guard let sid = value["sid"]?.stringValue, !sid.isEmpty else {
            throw RealtimeError(.protocolViolation, "Engine.IO open packet has no sid",
                                context: .init(serverPayload: value))
        }
        func milliseconds(_ key: String, default fallback: Int64) throws(RealtimeError) -> Duration {
            guard let member = value[key] else { return .milliseconds(fallback) }
            guard let number = member.integerValue, number > 0 else {
                throw RealtimeError(.protocolViolation, "Engine.IO open packet has a bad \(key)",
                                    context: .init(serverPayload: value))
            }
            return .milliseconds(number)
        }
        self.sid = sid
        self.upgrades = value["upgrades"]?.arrayValue?.compactMap(\.stringValue) ?? []
        self.pingInterval = try milliseconds("pingInterval", default: 25_000)
        self.pingTimeout = try milliseconds("pingTimeout", default: 20_000)
        if let payload = value["maxPayload"]?.integerValue, payload > 0 {
            self.maxPayload = Int(clamping: payload)
        } else {
            self.maxPayload = 1_000_000
        }
    }

    /// The JSON the server sends after the `0` digit.
    package var json: String {
        JSONValue.object([
            "sid": .string(sid),
            "upgrades": .array(upgrades.map(JSONValue.string)),
            "pingInterval": .integer(pingInterval.nanoseconds / 1_000_000),
            "pingTimeout": .integer(pingTimeout.nanoseconds / 1_000_000),
            "maxPayload": .integer(Int64(maxPayload)),
        ]).serialized()
    }
}
