import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One event received from the server, the same type for every dialect.
///
/// - Pusher/Bird: `name` is the event name, `data` the parsed `data` field (kept as `.string` when it
///   is not JSON), `rawData` its text, `arguments == [data]`; `RealtimePusher` adds `userID`, set for client events
///   on presence channels.
/// - Socket.IO: `name` is the event name, `arguments` the values after it with binary attachments
///   restored as `.binary`, `data` the first argument (or `.null`); `ack` is set when the server asked for
///   an acknowledgement. An event without attachments is parsed when `data` or `arguments` is first read.
/// - Action Cable: `name` is read from the message by the dialect's `eventNameKeys` (`"message"` when none
///   names it), `data` the `message` value, parsed on first read like Pusher's, `rawData` its text.
public struct RealtimeEvent: Sendable {
    /// The channel it arrived on; `nil` for connection-level events.
    public var channel: ChannelID? {
        get { box.fields.channel }
        set { update { $0.channel = newValue } }
    }
    /// The event's name, as each dialect reads it (see ``RealtimeEvent``).
    public var name: String {
        get { box.fields.name }
        set { update { $0.name = newValue } }
    }
    /// The event's value. When a dialect hands the payload over as JSON text (Pusher's `data`, Action
    /// Cable's `message`, Socket.IO's arguments), the text is parsed the first time `data` or `arguments` is
    /// read, once however many handlers and threads read it, and an event nobody reads is never parsed.
    /// The text was checked on arrival, so bad JSON is still reported then. While the handlers do read
    /// payloads, the session has the dialect parse them on arrival instead (one pass, not a check and then
    /// a parse), and goes back to deferring when they stop: it watches the last deferred payload of each
    /// delivery batch until that event is read or goes away, wherever it went (a handler, an `events()`
    /// loop, your own storage), and the dialect defers one event in 256 to keep watching.
    public var data: JSONValue {
        get { currentData }
        set {
            let arguments = self.arguments  // as they were: a stored `[data]` would not follow `data` either
            update {
                $0.storedArguments = arguments
                $0.storedData = newValue
                $0.isLazy = false
                $0.lazyArgumentsFollowName = false
            }
        }
    }
    /// Every value the event carries: Socket.IO's arguments after the name, `[data]` for the other dialects.
    /// Setting it leaves `data` as it was.
    public var arguments: [JSONValue] {
        get { currentArguments }
        set {
            update(materializing: true) { $0.storedArguments = newValue }
        }
    }
    /// The text of the payload as it arrived, when the dialect had one.
    public var rawData: String? {
        get { box.fields.rawData ?? box.fields.rawSliceText.map(String.init) }
        set {
            // The payload may still be waiting to be parsed from the text being replaced.
            update(materializing: true) {
                $0.rawData = newValue
                $0.rawSlice = nil
                $0.rawSliceIsStringLiteral = false
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
        /// `data`, unless `isLazy`.
        var storedData: JSONValue
        /// `nil` means `[data]`: most events carry one value, and need no array until asked.
        var storedArguments: [JSONValue]?
        var rawData: String?
        /// `rawData` as a slice of the received text, copied out only when read.
        var rawSlice: Substring?
        /// `rawSlice` is a JSON string literal as it arrived, quotes and escapes included (Pusher's `data`):
        /// `rawData` is its content, decoded when read.
        var rawSliceIsStringLiteral = false
        var dialectMetadata: [String: String] = [:]
        var ackToken: AckToken?
        var ack: AckResponder?
        /// The payload is the JSON text in `rawData` or `rawSlice`, parsed on first read into the box's
        /// locked slot. The parse happens under the lock so that concurrent first readers parse once.
        var isLazy = false
        /// The lazy text is a Socket.IO event array: the arguments are its elements after the name, and
        /// the slot keeps them as an `.array`.
        var lazyArgumentsFollowName = false
        /// Told whether the lazy payload was read: on its first parse, or when the event goes away unread.
        var readWatch: PayloadReadWatch?

        /// `rawSlice` as `rawData` reads it: a string literal's content, decoded.
        var rawSliceText: Substring? {
            guard let rawSlice, rawSliceIsStringLiteral else { return rawSlice }
            // Checked when it arrived, so it parses to a string; the literal itself is unreachable.
            return (try? JSONValue.parse(rawSlice.utf8))?.stringValue.map { $0[...] } ?? rawSlice
        }

        /// The payload text parsed (the arguments after the name for a Socket.IO event), or a `.string` of
        /// the text when it is not JSON.
        func parsePayloadText() -> JSONValue {
            let text = rawSliceText ?? rawData.map { $0[...] } ?? ""
            var value = (try? JSONValue.parse(text.utf8)) ?? .string(String(text))
            if lazyArgumentsFollowName {
                var elements = value.arrayValue ?? []
                value = .null  // `elements` is then the array's only owner: the name goes in place
                if !elements.isEmpty { elements.removeFirst() }
                value = .array(elements)
            }
            return value
        }
    }

    /// The fields, and beside them under a mutex the payload parsed from its text (`nil` until first read),
    /// all in one allocation: an event nobody reads costs one `malloc`, where a box and a separate lock for
    /// the lazy payload took two. A lock wrapper like ``Locked``, not generic so that its copies and its
    /// `deinit` are compiled for `Fields` (a generic one measured slower than the `malloc` it saved).
    /// `fields` never changes after `init`, so it is read without the lock; the parsed slot only under it.
    private struct Box: @unchecked Sendable {
        private let storage: BoxStorage

        init(_ fields: Fields, parsed: JSONValue? = nil) {
            storage = BoxStorage.make(BoxStorage.Header(fields: fields, parsed: parsed))
        }

        /// Read in place: a copy of `Fields` would retain every reference in it. The header never moves,
        /// and `storage` keeps it alive while the caller holds this box.
        var fields: Fields {
            unsafeAddress {
                storage.withUnsafeMutablePointerToHeader { UnsafePointer($0).pointer(to: \.fields)! }
            }
        }

        /// Runs `body` with the parsed slot. Never call out to user code from `body`.
        func withParsed<Result>(_ body: (inout JSONValue?) -> Result) -> Result {
            storage.withUnsafeMutablePointers { header, mutex in
                pthread_mutex_lock(mutex)
                defer { pthread_mutex_unlock(mutex) }
                return body(&header.pointee.parsed)
            }
        }
    }

    private final class BoxStorage: ManagedBuffer<BoxStorage.Header, pthread_mutex_t> {
        struct Header {
            let fields: Fields
            var parsed: JSONValue?
        }

        static func make(_ header: Header) -> BoxStorage {
            let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in header }, to: BoxStorage.self)
            storage.withUnsafeMutablePointerToElements { mutex in
                mutex.initialize(to: pthread_mutex_t())
                pthread_mutex_init(mutex, nil)
            }
            return storage
        }

        deinit {
            // The last copy of a watched event is gone: was its payload ever read? (No other reference is
            // left, so the slot is read without the lock.)
            let unread = withUnsafeMutablePointerToHeader { $0.pointee.fields.isLazy && $0.pointee.parsed == nil }
            if unread, let watch = withUnsafeMutablePointerToHeader({ $0.pointee.fields.readWatch }) {
                watch.noteUnread()
            }
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    private var currentData: JSONValue {
        guard box.fields.isLazy else { return box.fields.storedData }
        let value = parsedPayload()
        return box.fields.lazyArgumentsFollowName ? (value.arrayValue?.first ?? .null) : value
    }

    private var currentArguments: [JSONValue] {
        if let storedArguments = box.fields.storedArguments { return storedArguments }
        if box.fields.isLazy, box.fields.lazyArgumentsFollowName { return parsedPayload().arrayValue ?? [] }
        return [currentData]
    }

    /// The lazy payload, parsed by the first reader of any copy sharing this box.
    private func parsedPayload() -> JSONValue {
        var first = false
        let value = box.withParsed { parsed in
            if let parsed { return parsed }
            first = true
            let value = box.fields.parsePayloadText()
            parsed = value
            return value
        }
        if first { box.fields.readWatch?.noteRead() }
        return value
    }

    /// Makes a new box with `change` applied to the fields. `materializing` first makes a lazy payload
    /// stored values, for a change that would not keep it; otherwise a payload already parsed stays parsed.
    private mutating func update(materializing: Bool = false, _ change: (inout Fields) -> Void) {
        var fields = box.fields
        if materializing, fields.isLazy {
            if fields.lazyArgumentsFollowName { fields.storedArguments = currentArguments }
            fields.storedData = currentData
            fields.isLazy = false
            fields.lazyArgumentsFollowName = false
        }
        change(&fields)
        box = Box(fields, parsed: fields.isLazy ? box.withParsed { $0 } : nil)
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
                         ackToken: ackToken, isLazy: true))
    }

    /// An event whose payload text is the content of `literal`, a JSON string literal as it arrived (Pusher's
    /// `data`, quotes and escapes included, checked): decoded only when `data` or `rawData` is read, and then
    /// handled as `init(channel:name:json:ackToken:)` handles its text.
    package init(channel: ChannelID?, name: String, jsonInStringLiteral literal: Substring) {
        box = Box(Fields(channel: channel, name: name, storedData: .null, storedArguments: nil, rawSlice: literal,
                         rawSliceIsStringLiteral: true, isLazy: true))
    }

    /// A Socket.IO event whose arguments are the elements after the name in `array`, the event's checked
    /// JSON text: parsed on first read of `data` or `arguments`; `rawData` is `array`.
    package init(channel: ChannelID?, name: String, argumentsAfterNameIn array: Substring, ackToken: AckToken?) {
        box = Box(Fields(channel: channel, name: name, storedData: .null, storedArguments: nil, rawSlice: array,
                         ackToken: ackToken, isLazy: true, lazyArgumentsFollowName: true))
    }

    /// `init(channel:name:json:ackToken:)` for JSON text that is a slice of what arrived (Action Cable's
    /// `message`): neither parsed nor copied until read.
    package init(channel: ChannelID?, name: String, jsonSlice text: Substring, ackToken: AckToken? = nil) {
        box = Box(Fields(channel: channel, name: name, storedData: .null, storedArguments: nil, rawSlice: text,
                         ackToken: ackToken, isLazy: true))
    }

    /// This event, telling `watch` whether its deferred payload is read: on the first read, or when the
    /// last copy goes away unread. The engine watches one event per delivery batch so that the dialect
    /// parses at once for apps that read.
    package func watchingPayloadRead(with watch: PayloadReadWatch) -> RealtimeEvent {
        var watched = self
        watched.update { $0.readWatch = watch }
        return watched
    }

    /// The bytes of `rawData`, without copying a slice out to count them (a string literal's, escapes included).
    package var rawByteCount: Int {
        box.fields.rawData?.utf8.count ?? box.fields.rawSlice?.utf8.count ?? 0
    }

    /// Whether the payload was handed over as text (read or not), without taking its lock.
    package var hasDeferredPayload: Bool { box.fields.isLazy }

    /// Whether `data` is at hand without a parse: false only for JSON text no one has read yet.
    package var isPayloadParsed: Bool {
        !box.fields.isLazy || box.withParsed { $0 != nil }
    }

    /// Decodes `data` into `T` with `JSONDecoder`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try data.decode(type, decoder: decoder)
    }
}

/// The dialect's handle on one acknowledgement the server asked for. Opaque to apps, which answer
/// through ``RealtimeEvent/ack``.
public struct AckToken: Hashable, Sendable {
    /// The channel (Socket.IO namespace) the server asked on: ids are unique only within one.
    @_spi(DialectAuthoring) public var channel: ChannelID?
    /// The server's id for the request (the Socket.IO ack id), sent back with the answer.
    @_spi(DialectAuthoring) public var id: Int64
    /// The token for the server's request `id` on `channel`.
    @_spi(DialectAuthoring) public init(channel: ChannelID?, id: Int64) {
        self.channel = channel
        self.id = id
    }
}

/// Sends the acknowledgement for one received event. Calling it more than once sends nothing more.
public struct AckResponder: Sendable {
    /// The request this responder answers.
    @_spi(DialectAuthoring) public let token: AckToken
    let reply: @Sendable (AckToken, [JSONValue]) -> Void

    /// A responder that passes `token` and the app's arguments to `reply` on every call; sending only the
    /// first is `reply`'s job (the session's does it).
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

/// Where watched events report whether their deferred payload was read (see
/// ``RealtimeEvent/watchingPayloadRead(with:)``); the latest report wins until it is taken.
package final class PayloadReadWatch: Sendable {
    private let verdict = Locked<Bool?>(nil)

    package init() {}

    fileprivate func noteRead() { verdict.withLock { $0 = true } }
    fileprivate func noteUnread() { verdict.withLock { $0 = false } }

    /// The latest report since the last call: true when a watched payload was read, false when one went
    /// away unread, nil when none came.
    package func take() -> Bool? {
        verdict.withLock { verdict in
            defer { verdict = nil }
            return verdict
        }
    }
}
