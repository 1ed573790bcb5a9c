import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// The encrypted-channel sub-machine alone: keys and events in, decisions and actions out.
@Suite("Pusher encrypted channels")
struct PusherEncryptedChannelsTests {
    static let channel: ChannelID = "private-encrypted-foobar"
    /// The documented vector: this key opens `box` to `{"message": "hello"}`.
    static let keyAnswer: JSONValue = ["shared_secret": "/fXNISfW5oYPsxk0w2Unhmf4ryxyOUewExp5ih8r70k="]
    static let box: JSONValue = ["nonce": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX",
                                 "ciphertext": "VPK0uDW87+UiP3KcGUpkdrwMNyMuA9B8cnRQqTxwB7dx2eJs"]
    static let wrongKeyAnswer: JSONValue = ["shared_secret": .string(Data(repeating: 1, count: 32).base64EncodedString())]

    static func event(_ data: JSONValue = box, name: String = "secret") -> RealtimeEvent {
        RealtimeEvent(channel: channel, name: name, data: data, userID: "u1")
    }

    static func key(_ answer: JSONValue = keyAnswer) -> SecretBytes {
        guard case .success(let key) = PusherEncryptedChannels.key(from: answer, for: channel) else {
            Issue.record("the answer holds a key")
            return SecretBytes(zeroes: 0)
        }
        return key
    }

    static func keyed(_ answer: JSONValue = keyAnswer) -> PusherEncryptedChannels {
        var channels = PusherEncryptedChannels()
        channels.keyed(channel.name, key: key(answer))
        return channels
    }

    @Test("the prefix rule and the 32-byte base64 shared_secret rule")
    func keyRules() {
        #expect(PusherEncryptedChannels.isEncrypted("private-encrypted-x"))
        #expect(!PusherEncryptedChannels.isEncrypted("private-x"))
        for bad: JSONValue in [[:], ["shared_secret": "not base64!"],
                               ["shared_secret": .string(Data(count: 16).base64EncodedString())]] {
            guard case .failure(let error) = PusherEncryptedChannels.key(from: bad, for: Self.channel) else {
                Issue.record("\(bad) holds no key")
                continue
            }
            #expect(error.code == .authorizationFailed)
            #expect(error.context.channel == Self.channel)
        }
        #expect(Self.key().count == 32)
    }

    @Test("open: plaintext with the sender kept, not a box, wrong key")
    func opening() {
        guard case .opened(let plain) = PusherEncryptedChannels.open(Self.event(), key: Self.key()) else {
            Issue.record("the vector opens")
            return
        }
        #expect(plain.data == ["message": "hello"])
        #expect(plain.rawData == #"{"message": "hello"}"#)
        #expect(plain.userID == "u1")
        #expect(plain.channel == Self.channel)
        if case .notABox(let error) = PusherEncryptedChannels.open(Self.event(["nonce": "AA=="]), key: Self.key()) {
            #expect(error.code == .decryptionFailed)
            #expect(error.context.detail == "secret")
        } else {
            Issue.record("no ciphertext: not a box")
        }
        if case .wrongKey = PusherEncryptedChannels.open(Self.event(), key: Self.key(Self.wrongKeyAnswer)) {} else {
            Issue.record("another key does not open it")
        }
    }

    @Test("received: delivers plaintext, reports a non-box, asks for a fresh key, drops without a key")
    func received() {
        var channels = Self.keyed()
        var actions: [DialectAction] = []
        #expect(channels.received(Self.event(), channel: Self.channel.name, actions: &actions) == .handled)
        #expect(actions.delivered.map(\.data) == [["message": "hello"]])
        actions = []
        #expect(channels.received(Self.event([:]), channel: Self.channel.name, actions: &actions) == .handled)
        #expect(actions.reportedErrors.map(\.code) == [.decryptionFailed])

        var stale = Self.keyed(Self.wrongKeyAnswer)
        actions = []
        #expect(stale.received(Self.event(), channel: Self.channel.name, actions: &actions) == .needsFreshKey)
        #expect(actions.isEmpty)

        var none = PusherEncryptedChannels()
        #expect(none.received(Self.event(), channel: Self.channel.name, actions: &actions) == .handled)
        #expect(actions.isEmpty)
    }

    @Test("while rekeying events are held (bounded) and open with the fresh key; a stale answer is ignored")
    func rekeyed() {
        var channels = Self.keyed(Self.wrongKeyAnswer)
        var actions: [DialectAction] = []
        channels.rekeying(Self.channel.name, serial: 3, holding: Self.event())
        #expect(channels.isRekeying(Self.channel.name))
        for _ in 0..<(PusherEncryptedChannels.maximumHeldEvents + 10) {
            #expect(channels.received(Self.event(), channel: Self.channel.name, actions: &actions) == .handled)
        }
        #expect(actions.isEmpty)
        channels.rekeyed(Self.channel, serial: 2, result: .success(Self.keyAnswer), actions: &actions)
        #expect(actions.isEmpty)
        channels.rekeyed(Self.channel, serial: 3, result: .success(Self.keyAnswer), actions: &actions)
        #expect(actions.delivered.count == PusherEncryptedChannels.maximumHeldEvents)
        #expect(!channels.isRekeying(Self.channel.name))
        actions = []
        #expect(channels.received(Self.event(), channel: Self.channel.name, actions: &actions) == .handled)
        #expect(actions.delivered.count == 1)
    }

    @Test("a fresh key that does not open it either, or none at all, reports decryptionFailed")
    func rekeyFails() {
        var channels = Self.keyed(Self.wrongKeyAnswer)
        var actions: [DialectAction] = []
        channels.rekeying(Self.channel.name, serial: 1, holding: Self.event())
        channels.rekeyed(Self.channel, serial: 1, result: .success(Self.wrongKeyAnswer), actions: &actions)
        #expect(actions.delivered.isEmpty)
        #expect(actions.reportedErrors.map(\.code) == [.decryptionFailed])
        #expect(actions.reportedErrors.first?.message.contains("even with a fresh key") == true)

        actions = []
        channels.rekeying(Self.channel.name, serial: 2, holding: Self.event())
        channels.rekeyed(Self.channel, serial: 2, result: .failure(RealtimeError(.authorizationFailed, "403")),
                         actions: &actions)
        #expect(actions.reportedErrors.map(\.code) == [.authorizationFailed, .decryptionFailed])
        #expect(!channels.isRekeying(Self.channel.name))
    }

    @Test("forget drops the key and a late fresh key; forgetAll drops every channel")
    func forgetting() {
        var channels = Self.keyed()
        var actions: [DialectAction] = []
        channels.rekeying(Self.channel.name, serial: 1, holding: Self.event())
        channels.forget(Self.channel.name)
        #expect(!channels.isKeyed(Self.channel.name))
        channels.rekeyed(Self.channel, serial: 1, result: .success(Self.keyAnswer), actions: &actions)
        #expect(actions.isEmpty)
        channels.keyed("private-encrypted-a", key: Self.key())
        channels.keyed("private-encrypted-b", key: Self.key())
        channels.forgetAll()
        #expect(!channels.isKeyed("private-encrypted-a") && !channels.isKeyed("private-encrypted-b"))
    }
}
