import Foundation

/// One event received from the server, the same type for every dialect.
///
/// - Pusher/Bird: `name` is the event name, `data` the parsed `data` field (kept as `.string` when it
///   is not JSON), `rawData` its text, `arguments == [data]`; `RealtimePusher` adds `userID`, set for client events
///   on presence channels.
/// - Socket.IO: `name` is the event name, `arguments` the values after it with binary attachments
///   restored as `.binary`, `data` the first argument (or `.null`); `ack` is set when the server asked for
///   an acknowledgement.
/// - Action Cable: `name` is `"message"` (or the dialect's synthetic names), `data` the `message` value.
public struct RealtimeEvent: Sendable {
    /// The channel it arrived on; `nil` for connection-level events.
    public var channel: ChannelID? {
        get { box.fields.channel }
        set { update { $0.channel = newValue } }
    }
    public var name: String {
        get { box.fields.name }
        set { update { $0.name = newValue } }
    }
    /// The event's value. When a dialect hands the payload over as JSON text (Pusher's and Bird's `data`),
    /// the text is parsed the first time `data` or `arguments` is read, once however many handlers and
    /// threads read it, and an event nobody reads is never parsed.
    public var data: JSONValue {
        get { box.fields.lazyData?.value ?? box.fields.storedData }
        set {
            let arguments = self.arguments  // as they were: a stored `[data]` would not follow `data` either
            update {
                $0.storedArguments = arguments
                $0.storedData = newValue
                $0.lazyData = nil
            }
        }
    }
    public var arguments: [JSONValue] {
        get { box.fields.storedArguments ?? [data] }
        set {
            update {
                if let lazyData = $0.lazyData { $0.storedData = lazyData.value }
                $0.lazyData = nil
                $0.storedArguments = newValue
            }
        }
    }
    /// The text of the payload as it arrived, when the dialect had one.
    public var rawData: String? {
        get { box.fields.rawData ?? box.fields.rawSlice.map(String.init) }
        set {
            update {
                $0.rawData = newValue
                $0.rawSlice = nil
            }
        }
    }
    /// What a dialect knows about the event beyond the fields every dialect shares, by keys the dialect
    /// chooses. Core never reads it; the dialect's module exposes each entry as a typed property (Pusher's
    /// `userID`), so no dialect's vocabulary lives here.
    @_spi(DialectAuthoring) public var dialectMetadata: [String: String] {
        get { box.fields.dialectMetadata }
        set { update { $0.dialectMetadata = newValue } }
    }
    /// Set by the dialect when the server expects an acknowledgement.
    @_spi(DialectAuthoring) public var ackToken: AckToken? {
        get { box.fields.ackToken }
        set { update { $0.ackToken = newValue } }
    }
    /// Answers the server's acknowledgement request; `nil` when none was asked for.
    public internal(set) var ack: AckResponder? {
        get { box.fields.ack }
        set { update { $0.ack = newValue } }
    }

    /// Every field behind one immutable reference: an event is copied at each hop from the dialect to the
    /// handlers (action, effect, delivery batch), and a copy is then one retain, not one per field. A change
    /// makes a new box, which only acks and a few dialect fields do.
    private var box: Box

    private struct Fields: Sendable {
        var channel: ChannelID?
        var name: String
        /// `data`, unless `lazyData` holds it.
        var storedData: JSONValue
        /// `nil` means `[data]`: most events carry one value, and need no array until asked.
        var storedArguments: [JSONValue]?
        var rawData: String?
        /// `rawData` as a slice of the received text, copied out only when read.
        var rawSlice: Substring?
        var dialectMetadata: [String: String] = [:]
        var ackToken: AckToken?
        var ack: AckResponder?
        /// The JSON text `data` is parsed from on first read.
        var lazyData: LazyJSON?
    }

    private final class Box: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private mutating func update(_ change: (inout Fields) -> Void) {
        var fields = box.fields
        change(&fields)
        box = Box(fields)
    }

    /// An event as a dialect (or a test) builds it; `arguments` defaults to `[data]`.
    public init(channel: ChannelID?, name: String, data: JSONValue, arguments: [JSONValue]? = nil,
                rawData: String? = nil, ackToken: AckToken? = nil) {
        box = Box(Fields(channel: channel, name: name, storedData: data, storedArguments: arguments, rawData: rawData,
                         ackToken: ackToken))
    }

    /// An event whose payload text is a slice of what arrived (Socket.IO's packet JSON): `rawData` makes a
    /// `String` of it only when read, so an event nobody asks that of costs no copy.
    package init(channel: ChannelID?, name: String, data: JSONValue, arguments: [JSONValue]?, rawSlice: Substring?,
                 ackToken: AckToken?) {
        box = Box(Fields(channel: channel, name: name, storedData: data, storedArguments: arguments, rawSlice: rawSlice,
                         ackToken: ackToken))
    }

    /// An event whose `data` is the JSON `text` (a `.string` of it when it is not JSON), parsed only when
    /// first read; `rawData` is `text` and `arguments` is `[data]`.
    @_spi(DialectAuthoring) public init(channel: ChannelID?, name: String, json text: String,
                                        ackToken: AckToken? = nil) {
        box = Box(Fields(channel: channel, name: name, storedData: .null, storedArguments: nil, rawData: text,
                         ackToken: ackToken, lazyData: LazyJSON(text)))
    }

    /// Whether `data` is at hand without a parse: false only for JSON text no one has read yet.
    package var isPayloadParsed: Bool {
        box.fields.lazyData?.isParsed ?? true
    }

    /// Decodes `data` into `T` with `JSONDecoder`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try data.decode(type, decoder: decoder)
    }
}

/// JSON text parsed on first read and kept, shared by the copies of an event.
final class LazyJSON: Sendable {
    let text: String
    /// The parse happens under the lock so that concurrent first readers parse once.
    private let parsed = Locked<JSONValue?>(nil)

    init(_ text: String) { self.text = text }

    var isParsed: Bool { parsed.withLock { $0 != nil } }

    /// The parsed text, or a `.string` of it when it is not JSON.
    var value: JSONValue {
        parsed.withLock { parsed in
            if let parsed { return parsed }
            let value = (try? JSONValue.parse(text)) ?? .string(text)
            parsed = value
            return value
        }
    }
}

/// The dialect's handle on one acknowledgement the server asked for. Opaque to apps, which answer
/// through ``RealtimeEvent/ack``.
public struct AckToken: Hashable, Sendable {
    @_spi(DialectAuthoring) public var channel: ChannelID?
    @_spi(DialectAuthoring) public var id: Int64
    @_spi(DialectAuthoring) public init(channel: ChannelID?, id: Int64) {
        self.channel = channel
        self.id = id
    }
}

/// Sends the acknowledgement for one received event. Calling it more than once sends nothing more.
public struct AckResponder: Sendable {
    @_spi(DialectAuthoring) public let token: AckToken
    let reply: @Sendable (AckToken, [JSONValue]) -> Void

    @_spi(DialectAuthoring) public init(token: AckToken, reply: @escaping @Sendable (AckToken, [JSONValue]) -> Void) {
        self.token = token
        self.reply = reply
    }

    /// Answers with `arguments`.
    public func callAsFunction(_ arguments: JSONValue...) {
        reply(token, arguments)
    }

    /// Answers with an argument list.
    public func send(_ arguments: [JSONValue]) {
        reply(token, arguments)
    }
}
