import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// The encrypted (`private-encrypted-`) channels of one Pusher connection, owned by ``PusherMachine``: the
/// shared key of each, and what to do with an event that arrives on one.
///
/// - A channel is subscribed only with a 32-byte `shared_secret` from the authorizer (``key(from:for:)``).
/// - Event data is `{nonce, ciphertext}`, opened with secretbox; the plaintext is delivered in its place.
/// - A box that does not open asks the owner for a fresh key once (``Reception/needsFreshKey``); events
///   that arrive meanwhile are held (at most ``maximumHeldEvents``) and opened with the fresh key. A box
///   that does not open with the fresh key either, or data that is no box at all, is reported and dropped.
///
/// The owner decides which events come here (`*` system events are never encrypted) and runs the authorizer.
struct PusherEncryptedChannels: Sendable {
    /// The name prefix of an encrypted channel.
    static let prefix = "private-encrypted-"
    /// Events held while an encrypted channel fetches a fresh key.
    static let maximumHeldEvents = 256

    /// What became of an event handed to ``received(_:channel:actions:)``.
    enum Reception: Equatable {
        /// Delivered, held, reported or dropped: nothing left for the owner to do.
        case handled
        /// The box did not open with the channel's key: the owner fetches a fresh one and calls
        /// ``rekeying(_:serial:holding:)``, or the event is dropped.
        case needsFreshKey
    }

    /// What opening one event's box gave.
    enum Opening {
        /// The event with its plaintext as data.
        case opened(RealtimeEvent)
        /// The data is not a `{nonce, ciphertext}` object; no key will help.
        case notABox(RealtimeError)
        /// The box did not open with this key.
        case wrongKey
    }

    private struct Channel: Sendable {
        /// Zeroed when the last value holding it goes.
        var key: SecretBytes
        /// The serial of the fresh key being fetched; events wait in `held` meanwhile.
        var rekeying: UInt64?
        var held: [RealtimeEvent] = []
    }

    /// Keyed channels of this connection, by name.
    private var channels: [String: Channel] = [:]

    /// Whether `name` is an encrypted channel's.
    static func isEncrypted(_ name: String) -> Bool { name.hasPrefix(prefix) }

    /// The decoded `shared_secret`; the decoding buffer is zeroed (the base64 text itself is an immutable
    /// String the authorizer's JSON owns, beyond reach).
    static func sharedKey(_ json: JSONValue) -> SecretBytes? {
        guard let text = json["shared_secret"]?.stringValue, var data = Data(base64Encoded: text) else { return nil }
        defer { data.withUnsafeMutableBytes { secureZero($0) } }
        guard data.count == SecretBox.keyCount else { return nil }
        return data.withUnsafeBytes { SecretBytes(copying: $0) }
    }

    /// The key in an authorizer's answer for `channel`, or the error that refuses the subscription.
    static func key(from json: JSONValue, for channel: ChannelID) -> Result<SecretBytes, RealtimeError> {
        guard let key = sharedKey(json) else {
            return .failure(RealtimeError(.authorizationFailed,
                                          "the authorizer gave no 32-byte base64 shared_secret for \(channel.name)",
                                          context: .init(channel: channel)))
        }
        return .success(key)
    }

    /// Opens `event`'s `{nonce, ciphertext}` box with `key`.
    static func open(_ event: RealtimeEvent, key: SecretBytes) -> Opening {
        guard let nonce = event.data["nonce"]?.stringValue.flatMap({ Data(base64Encoded: $0) }),
              let cipher = event.data["ciphertext"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else {
            return .notABox(RealtimeError(
                .decryptionFailed, "an event on \(event.channel?.name ?? "") is not a {nonce, ciphertext} object",
                context: .init(serverPayload: event.data, channel: event.channel, detail: event.name)))
        }
        guard let plain = SecretBox.open(Array(cipher), nonce: Array(nonce), key: key) else { return .wrongKey }
        let text = String(decoding: plain, as: UTF8.self)
        let data = (try? JSONValue.parse(text)) ?? .string(text)
        return .opened(RealtimeEvent(channel: event.channel, name: event.name, data: data, rawData: text,
                                     userID: event.userID))
    }

    /// Whether `name` has a key on this connection.
    func isKeyed(_ name: String) -> Bool { channels[name] != nil }

    /// Whether `name` is fetching a fresh key.
    func isRekeying(_ name: String) -> Bool { channels[name]?.rekeying != nil }

    /// `name` was subscribed with `key`.
    mutating func keyed(_ name: String, key: SecretBytes) {
        channels[name] = Channel(key: key)
    }

    /// `name` was left or failed: its key and held events go.
    mutating func forget(_ name: String) {
        channels[name] = nil
    }

    /// The connection ended.
    mutating func forgetAll() {
        channels = [:]
    }

    /// An event on the encrypted channel `name`. Without a key (still authorizing) it is dropped.
    mutating func received(_ event: RealtimeEvent, channel name: String,
                           actions: inout [DialectAction]) -> Reception {
        guard var channel = channels[name] else { return .handled }
        if channel.rekeying != nil {
            if channel.held.count < Self.maximumHeldEvents { channel.held.append(event) }
            channels[name] = channel
            return .handled
        }
        switch Self.open(event, key: channel.key) {
        case .opened(let plain):
            actions.append(.deliver(plain))
        case .notABox(let error):
            actions.append(.reportError(error))
        case .wrongKey:
            return .needsFreshKey
        }
        return .handled
    }

    /// The owner is fetching a fresh key for `name` (`serial`); `event`, which would not open, waits for it.
    mutating func rekeying(_ name: String, serial: UInt64, holding event: RealtimeEvent) {
        guard var channel = channels[name] else { return }
        channel.rekeying = serial
        channel.held = [event]
        channels[name] = channel
    }

    /// The fresh key fetched for `channel` (`serial`): the held events open with it, or are reported and
    /// dropped. An answer to an older fetch, or for a channel since left, is ignored.
    mutating func rekeyed(_ channel: ChannelID, serial: UInt64, result: Result<JSONValue, RealtimeError>,
                          actions: inout [DialectAction]) {
        guard var state = channels[channel.name], state.rekeying == serial else { return }
        let held = state.held
        state.held = []
        state.rekeying = nil
        guard case .success(let json) = result, let key = Self.sharedKey(json) else {
            channels[channel.name] = state
            if case .failure(let error) = result { actions.append(.reportError(error)) }
            actions.append(.reportError(RealtimeError(
                .decryptionFailed, "dropped \(held.count) event(s) on \(channel.name): no fresh key",
                context: .init(channel: channel))))
            return
        }
        state.key = key
        channels[channel.name] = state
        for event in held {
            switch Self.open(event, key: key) {
            case .opened(let plain):
                actions.append(.deliver(plain))
            case .notABox(let error):
                actions.append(.reportError(error))
            case .wrongKey:
                actions.append(.reportError(RealtimeError(
                    .decryptionFailed,
                    "could not decrypt '\(event.name)' on \(event.channel?.name ?? "") even with a fresh key",
                    context: .init(channel: event.channel, detail: event.name))))
            }
        }
    }
}
