import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Pusher machine: handshake, liveness and frames")
struct PusherMachineTests {
    @Test("connected only after connection_established, with the socket id and min(client, server) idle")
    func handshake() {
        var driver = PusherDriver()
        let opened = driver.step { $0.connectionOpened(TransportOpenInfo(), actions: &$1) }
        #expect(opened.connectedIDs.isEmpty)
        let actions = driver.establish(activity: 30)
        #expect(actions.connectedIDs == ["1234.1234"])
        #expect(actions.livenessRules == [.clientPings(idle: .seconds(30), timeout: .seconds(30),
                                                       ping: .text(#"{"data":{},"event":"pusher:ping"}"#))])
        var longServer = PusherDriver()
        #expect(longServer.establish(activity: 600).livenessRules.first
                == .clientPings(idle: .seconds(120), timeout: .seconds(30),
                                ping: .text(#"{"data":{},"event":"pusher:ping"}"#)))
    }

    @Test("the other vendor's handshake fails the session at once, saying which dialect the server speaks",
          arguments: [("bird", "pusher", "socket_id"), ("pusher", "bird", "connection_id")])
    func otherVendorHandshake(ours: String, theirs: String, idKey: String) {
        var driver = PusherDriver(ours == "bird" ? .bird(key: "k", host: "localhost") : .pusher(key: "k", host: "localhost"))
        let actions = driver.establish("1.1", vendor: theirs, idKey: idKey)
        #expect(actions.connectedIDs.isEmpty)
        let failures = actions.compactMap { action -> RealtimeError? in
            if case .fail(let error) = action { return error } else { return nil }
        }
        #expect(failures.map(\.code) == [.protocolViolation])
        #expect(failures.first?.message.contains("build the session with .\(theirs)(…)") == true, "\(failures)")
        // An app event of the same name after the handshake stays an app event.
        var established = PusherDriver(ours == "bird" ? .bird(key: "k", host: "localhost") : .pusher(key: "k", host: "localhost"))
        established.establish("1.1", vendor: ours, idKey: ours == "bird" ? "connection_id" : "socket_id")
        let later = established.receive(#"{"event":"\#(theirs):connection_established","data":"{}"}"#)
        #expect(!later.contains { if case .fail = $0 { return true } else { return false } })
    }

    @Test("Bird: connection_id, pings without data, and a handshake without an id is refused for good")
    func birdHandshake() {
        var driver = PusherDriver(.bird(key: "k", host: "localhost"))
        let actions = driver.establish("conn-1", activity: 60, vendor: "bird", idKey: "connection_id")
        #expect(actions.connectedIDs == ["conn-1"])
        #expect(actions.livenessRules == [.clientPings(idle: .seconds(60), timeout: .seconds(30),
                                                       ping: .text(#"{"event":"bird:ping"}"#))])
        #expect(driver.receive(#"{"event":"bird:ping"}"#).sentTexts == [#"{"event":"bird:pong"}"#])
        // Bird's server value replaces the client's 120 s even when it is longer.
        var longServer = PusherDriver(.bird(key: "k", host: "localhost"))
        #expect(longServer.establish("conn-2", activity: 300, vendor: "bird", idKey: "connection_id")
                    .livenessRules == [.clientPings(idle: .seconds(300), timeout: .seconds(30),
                                                    ping: .text(#"{"event":"bird:ping"}"#))])

        var wrong = PusherDriver(.bird(key: "k", host: "localhost"))
        let refused = wrong.establish("1.1", vendor: "bird", idKey: "socket_id")
        #expect(refused.connectedIDs.isEmpty)
        #expect(refused.contains { if case .close(4001, _) = $0 { return true } else { return false } })
        let end = wrong.machine.connectionEnded(TransportClosure(.closedLocally(code: 4001, reason: "")))
        guard case .terminal(let error) = end else { Issue.record("expected terminal, got \(end)"); return }
        #expect(error.code == .connectionRefused)
    }

    @Test("server pings are answered with a pong")
    func answersPing() {
        var driver = PusherDriver()
        driver.establish()
        #expect(driver.receive(#"{"event":"pusher:ping","data":"{}"}"#).sentTexts
                == [#"{"data":{},"event":"pusher:pong"}"#])
        #expect(driver.receive(#"{"event":"pusher:pong","data":"{}"}"#).isEmpty)
    }

    @Test("data is double-decoded: JSON strings parse, other strings stay strings, rawData keeps the text",
          arguments: [false, true])
    func doubleDecoding(payloadsRead: Bool) {
        var driver = PusherDriver()
        driver.machine.payloadsAreRead(payloadsRead)  // parsed at once, or when read: the same event
        driver.establish()
        let parsed = driver.receive(#"{"event":"e","channel":"c","data":"{\"a\":[1,2]}"}"#).delivered
        #expect(parsed.count == 1)
        #expect(parsed.first?.data == ["a": [1, 2]])
        #expect(parsed.first?.rawData == #"{"a":[1,2]}"#)
        #expect(parsed.first?.channel == "c")
        #expect(parsed.first?.arguments == [["a": [1, 2]]])
        let plain = driver.receive(#"{"event":"e","channel":"c","data":"hello {"}"#).delivered
        #expect(plain.first?.data == .string("hello {"))
        #expect(plain.first?.rawData == "hello {")
        let inner = #"{"s":"café \"q\" \u00e9"}"#
        let escaped = driver.receive(#"{"event":"e","channel":"c","data":"# + JSONValue.string(inner).serialized() + "}")
            .delivered
        #expect(escaped.first?.data == ["s": "café \"q\" é"])
        #expect(escaped.first?.rawData == inner)
        let unicode = driver.receive(#"{"event":"e","channel":"c","data":"caf\u00e9"}"#).delivered
        #expect(unicode.first?.data == .string("café"))
        #expect(unicode.first?.rawData == "café")
        let object = driver.receive(#"{"event":"e","channel":"c","data":{"x":1}}"#).delivered
        #expect(object.first?.data == ["x": 1])
        #expect(object.first?.rawData == #"{"x":1}"#)
    }

    @Test("while handlers read payloads, data is parsed on arrival, but for one probe event in 256")
    func payloadsReadHint() {
        var driver = PusherDriver()
        driver.establish()
        let frame = #"{"event":"e","channel":"c","data":"{\"n\":1}"}"#
        #expect(driver.receive(frame).delivered.map(\.isPayloadParsed) == [false])
        driver.machine.payloadsAreRead(true)
        var parsed = 0
        var deferred = 0
        for _ in 0..<(2 * PayloadParsing.probeInterval) {
            for event in driver.receive(frame).delivered {
                if event.isPayloadParsed { parsed += 1 } else { deferred += 1 }
                #expect(event.data == ["n": 1] && event.rawData == #"{"n":1}"#)  // after the count: reading parses
            }
        }
        #expect(deferred == 2 && parsed == 2 * PayloadParsing.probeInterval - 2)
        driver.machine.payloadsAreRead(false)
        #expect(driver.receive(frame).delivered.map(\.isPayloadParsed) == [false])
    }

    @Test("bad frames are reported with typed errors and change nothing")
    func badFrames() {
        var driver = PusherDriver()
        driver.establish()
        #expect(driver.receive("not json").reportedErrors.map(\.code) == [.invalidJSON])
        #expect(driver.receive(#"{"data":"{}"}"#).reportedErrors.map(\.code) == [.protocolViolation])
        let binary = driver.step { $0.received(.binary(Data([1])), actions: &$1) }
        #expect(binary.reportedErrors.map(\.code) == [.protocolViolation])
    }

    @Test("internal events are re-emitted under the public prefix; count events pass through")
    func internalReemitted() {
        var driver = PusherDriver()
        driver.establish()
        let count = driver.receive(#"{"event":"pusher_internal:subscription_count","channel":"c","data":"{\"subscription_count\":3}"}"#)
        #expect(count.delivered.map(\.name) == ["pusher:subscription_count"])
        #expect(count.delivered.first?.data == ["subscription_count": 3])
        var bird = PusherDriver(.bird(key: "k", host: "localhost"))
        bird.establish("conn-1", vendor: "bird", idKey: "connection_id")
        let birdCount = bird.receive(#"{"event":"bird_internal:connection_count","channel":"c","data":"5"}"#)
        #expect(birdCount.delivered.map(\.name) == ["bird:connection_count"])
        #expect(birdCount.delivered.first?.data == 5)
    }

    @Test("client events on presence channels carry the sender's user_id")
    func clientEventUserID() {
        var driver = PusherDriver()
        driver.establish()
        let events = driver.receive(#"{"event":"client-typing","channel":"presence-r","data":"{}","user_id":42}"#).delivered
        #expect(events.first?.userID == "42")
    }

    @Test("close codes: 40xx terminal, 41xx back off at least 1 s, 42xx at once, others back off")
    func closeCodes() {
        func end(_ code: Int?, vendor: PusherVendor = .pusher) -> ConnectionEnd {
            PusherMachine.classify(TransportClosure(.closedByPeer(code: code, reason: "why")), vendor: vendor)
        }
        guard case .terminal(let refused) = end(4001) else { Issue.record("4001 must be terminal"); return }
        #expect(refused.code == .connectionRefused)
        #expect(refused.context.closeCode == 4001)
        if case .terminal = end(4000) {} else { Issue.record("4000 must be terminal") }
        if case .terminal = end(4099) {} else { Issue.record("4099 must be terminal") }
        #expect(end(4100) == .backoff(minimum: .seconds(1)))
        #expect(end(4199, vendor: .bird) == .backoff(minimum: .seconds(1)))
        #expect(end(4200) == .reconnectImmediately)
        #expect(end(4201) == .reconnectImmediately)
        #expect(end(4299) == .reconnectImmediately)
        #expect(end(4301) == .backoff(minimum: .zero))
        #expect(end(1006) == .backoff(minimum: .zero))
        #expect(end(nil) == .backoff(minimum: .zero))
        #expect(PusherMachine.classify(TransportClosure(.livenessTimeout), vendor: .pusher) == .backoff(minimum: .zero))
        let badURL = RealtimeError(.invalidArgument, "bad")
        #expect(PusherMachine.classify(TransportClosure(.failed(badURL)), vendor: .pusher) == .terminal(badURL))
    }

    @Test("a server error with a code is reported, not blamed on a subscription")
    func codedErrorReported() {
        var driver = PusherDriver()
        driver.establish()
        driver.handle(.subscribe("news"))
        let actions = driver.receive(#"{"event":"pusher:error","data":{"message":"rate limited","code":4301}}"#)
        #expect(actions.failures.isEmpty)
        #expect(actions.reportedErrors.map(\.code) == [.serverError])
        #expect(actions.reportedErrors.first?.context.closeCode == 4301)
    }

    @Test("command frames are the serializer's text of {event, data}, for both vendors and escaped names")
    func commandFramesMatchTheSerializer() {
        let data: [JSONValue] = [
            .object(["channel": .string("news")]),
            .object(["channel": .string("presence-\"quoted\"\\/é\u{1}"), "auth": .string("k:sig"),
                     "channel_data": .string(#"{"user_id":"1"}"#)]),
            .string("text"), .null, .object([:]),
        ]
        for vendor in [PusherVendor.pusher, .bird] {
            for name in ["subscribe", "unsubscribe", "sign\"in"] {
                for value in data {
                    let expected = JSONValue.object(["event": .string(vendor.systemPrefix + name), "data": value])
                    #expect(vendor.frame(name, data: value) == .text(expected.serialized()))
                }
            }
        }
    }
}

@Suite("Pusher machine: subscriptions and auth")
struct PusherSubscriptionTests {
    @Test("public subscribe, subscription_succeeded marks it subscribed and is re-emitted")
    func publicChannel() {
        var driver = PusherDriver()
        driver.establish()
        let sent = driver.handle(.subscribe("news")).sentTexts
        #expect(sent == [#"{"data":{"channel":"news"},"event":"pusher:subscribe"}"#])
        let answer = driver.receive(#"{"event":"pusher_internal:subscription_succeeded","channel":"news","data":"{}"}"#)
        #expect(answer.subscribedChannels == ["news"])
        #expect(answer.delivered.map(\.name) == ["pusher:subscription_succeeded"])
        #expect(driver.handle(.unsubscribe("news")).sentTexts
                == [#"{"data":{"channel":"news"},"event":"pusher:unsubscribe"}"#])
    }

    @Test("private channels are authorized before the subscribe, with the exact HMAC")
    func privateChannel() async {
        var driver = PusherDriver()
        driver.establish()
        let asked = driver.handle(.subscribe("private-foobar"))
        #expect(asked.sentTexts.isEmpty)
        #expect(asked.works.count == 1)
        let after = await driver.runWork(asked)
        let auth = expectedAuth("1234.1234:private-foobar")
        #expect(after.sentTexts.count == 1)
        #expect(sameJSON(after.sentTexts[0], ["event": "pusher:subscribe",
                                             "data": ["channel": "private-foobar", "auth": .string(auth)]]))
    }

    @Test("the documented example: key 278d…, secret 7ad3…, socket 1234.1234 signs private-foobar as documented")
    func documentedExample() async {
        var driver = PusherDriver(.pusher(key: "278d425bdf160c739803",
                                          auth: .inline(secret: "7ad3773142a6692b25b8"), host: "127.0.0.1"))
        driver.establish()
        let after = await driver.runWork(driver.handle(.subscribe("private-foobar")))
        #expect(after.sentTexts.first?.contains(
            "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4") == true)
    }

    @Test("presence sends channel_data byte-for-byte as signed, and the snapshot names 'me' with string ids")
    func presence() async {
        let identity = #"{"user_id": 7, "user_info": {"name": "Ann"}}"#
        var driver = PusherDriver(.pusher(key: "app-key", auth: .inline(secret: "secret", presenceData: identity),
                                          host: "127.0.0.1"))
        driver.establish()
        let after = await driver.runWork(driver.handle(.subscribe("presence-room")))
        let auth = expectedAuth("1234.1234:presence-room:" + identity)
        #expect(after.sentTexts.count == 1)
        #expect(sameJSON(after.sentTexts[0], ["event": "pusher:subscribe",
                                             "data": ["channel": "presence-room", "auth": .string(auth),
                                                      "channel_data": .string(identity)]]))
        let success = driver.receive(#"{"event":"pusher_internal:subscription_succeeded","channel":"presence-room","data":"{\"presence\":{\"ids\":[7,\"8\"],\"hash\":{\"7\":{\"name\":\"Ann\"},\"8\":null},\"count\":2}}"}"#)
        #expect(success.subscribedChannels == ["presence-room"])
        let event = success.delivered.first
        #expect(event?.data["me"] == "7")
        #expect(event?.data["presence"]?["ids"] == ["7", "8"])
        var members = PusherMembers()
        members.apply(event!)
        #expect(members.myID == "7")
        #expect(members.ids == ["7", "8"])
        let added = driver.receive(#"{"event":"pusher_internal:member_added","channel":"presence-room","data":"{\"user_id\":9,\"user_info\":{\"name\":\"Bo\"}}"}"#).delivered
        #expect(added.map(\.name) == ["pusher:member_added"])
        #expect(added.first?.data["user_id"] == "9")
        members.apply(added[0])
        let removed = driver.receive(#"{"event":"pusher_internal:member_removed","channel":"presence-room","data":"{\"user_id\":7}"}"#).delivered
        members.apply(removed[0])
        #expect(members.ids == ["8", "9"])
        #expect(members.members["9"] == ["name": "Bo"])
    }

    @Test("Bird presence uses member_data and member_id")
    func birdPresence() async {
        let identity = #"{"member_id":"me"}"#
        var driver = PusherDriver(.bird(key: "k", auth: .inline(secret: "secret", presenceData: identity),
                                        host: "localhost"))
        driver.establish("conn-1", vendor: "bird", idKey: "connection_id")
        let after = await driver.runWork(driver.handle(.subscribe("presence-room")))
        let auth = expectedAuth("conn-1:presence-room:" + identity, key: "k")
        #expect(sameJSON(after.sentTexts.first ?? "", ["event": "bird:subscribe",
                                                       "data": ["channel": "presence-room", "auth": .string(auth),
                                                                "member_data": .string(identity)]]))
        let success = driver.receive(#"{"event":"bird_internal:subscription_succeeded","channel":"presence-room","data":"{\"presence\":{\"ids\":[\"me\"],\"hash\":{\"me\":{}},\"count\":1}}"}"#)
        #expect(success.delivered.first?.name == "bird:subscription_succeeded")
        #expect(success.delivered.first?.data["me"] == "me")
        let attributed = driver.handle(.subscribe("private-x"))
        _ = await driver.runWork(attributed)
        let failed = driver.receive(#"{"event":"bird_internal:subscription_error","channel":"private-x","data":"{\"error\":\"nope\",\"status\":403}"}"#)
        #expect(failed.failures.map(\.0) == ["private-x"])
        #expect(failed.failures.first?.1.context.httpStatus == 403)
    }

    @Test("a channel-less error without a code fails the oldest waiting subscription; an attributed one fails its own")
    func channelLessError() async {
        var driver = PusherDriver()
        driver.establish()
        // Asked first but answered: never the one a channel-less error is about.
        driver.handle(.subscribe("answered"))
        _ = driver.receive(#"{"event":"pusher_internal:subscription_succeeded","channel":"answered","data":"{}"}"#)
        _ = await driver.runWork(driver.handle(.subscribe("private-a")))
        _ = await driver.runWork(driver.handle(.subscribe("private-b")))
        driver.handle(.subscribe("news"))
        let first = driver.receive(#"{"event":"pusher:error","data":{"message":"Invalid signature","code":null}}"#)
        #expect(first.failures.map(\.0) == ["private-a"])
        #expect(first.failures.first?.1.code == .subscriptionRejected)
        let soketi = driver.receive(#"{"event":"pusher:error","channel":"news","data":{"message":"no","code":4009}}"#)
        #expect(soketi.failures.map(\.0) == ["news"])
        let second = driver.receive(#"{"event":"pusher:error","data":{"message":"Invalid signature"}}"#)
        #expect(second.failures.map(\.0) == ["private-b"])
        // Nothing left waiting: the next one is only reported.
        let third = driver.receive(#"{"event":"pusher:error","data":{"message":"?"}}"#)
        #expect(third.failures.isEmpty)
        #expect(third.reportedErrors.map(\.code) == [.serverError])
        // A failed channel can be subscribed again.
        #expect(driver.handle(.subscribe("private-a")).works.count == 1)
    }

    @Test("authorizer failures fail the channel with the authorizer's error and the channel attached")
    func authorizerFails() async {
        var driver = PusherDriver(.pusher(key: "k", auth: .provider { _ in
            throw RealtimeError(.authorizationFailed, "HTTP 403", context: .init(httpStatus: 403))
        }, host: "127.0.0.1"))
        driver.establish()
        let after = await driver.runWork(driver.handle(.subscribe("private-x")))
        #expect(after.failures.map(\.0) == ["private-x"])
        #expect(after.failures.first?.1.code == .authorizationFailed)
        #expect(after.failures.first?.1.context.httpStatus == 403)
        #expect(after.failures.first?.1.context.channel == "private-x")
        var none = PusherDriver(.pusher(key: "k", host: "127.0.0.1"))
        none.establish()
        #expect(none.handle(.subscribe("presence-x")).failures.first?.1.code == .authorizationFailed)
    }

    @Test("late authorizations are dropped: left channel, older connection, re-requested channel")
    func lateAuthDropped() async {
        var driver = PusherDriver()
        driver.establish()
        let first = driver.handle(.subscribe("private-x"))
        driver.handle(.unsubscribe("private-x"))
        #expect(await driver.runWork(first).sentTexts.isEmpty)

        let old = driver.handle(.subscribe("private-y"))
        _ = driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 4200, reason: "")))
        driver.establish("99.99")
        let fresh = driver.handle(.subscribe("private-y"))
        #expect(await driver.runWork(old).sentTexts.isEmpty)
        let sent = await driver.runWork(fresh).sentTexts
        #expect(sent.count == 1)
        #expect(sent.first?.contains(expectedAuth("99.99:private-y")) == true)
    }

    @Test("encrypted channels, '#' names and params are refused with typed errors")
    func refusedNames() {
        var driver = PusherDriver()
        driver.establish()
        var bird = PusherDriver(.bird(key: "k", auth: .inline(secret: "s"), host: "localhost"))
        bird.establish("conn-1", vendor: "bird", idKey: "connection_id")
        #expect(bird.handle(.subscribe("private-encrypted-x")).failures.first?.1.code == .unsupported)
        #expect(driver.handle(.subscribe("#server-to-user-1")).failures.first?.1.code == .invalidArgument)
        #expect(driver.handle(.subscribe(ChannelID("a", params: ["x": 1]))).failures.first?.1.code == .invalidArgument)
    }

    @Test("client events: validate enforces the rules; send writes one frame with the data object")
    func clientEvents() {
        let dialect = PusherDialect.pusher(key: "k", host: "127.0.0.1")
        func check(_ channel: String, _ event: String, reply: Bool = false) -> RealtimeError.Code? {
            dialect.validate(OutgoingMessage(channel: ChannelID(channel), event: event, arguments: [["a": 1]]),
                             expectsReply: reply)?.code
        }
        #expect(check("private-x", "client-typing") == nil)
        #expect(check("presence-x", "client-typing") == nil)
        #expect(check("news", "client-typing") == .invalidArgument)
        #expect(check("private-encrypted-x", "client-typing") == .invalidArgument)
        #expect(check("private-x", "typing") == .invalidArgument)
        #expect(check("private-x", "client-typing", reply: true) == .unsupported)
        var driver = PusherDriver()
        driver.establish()
        let sent = driver.handle(.send(OutgoingMessage(channel: "private-x", event: "client-typing",
                                                       arguments: [["on": true]]))).sentTexts
        #expect(sent == [#"{"channel":"private-x","data":{"on":true},"event":"client-typing"}"#])
        let request = driver.handle(.request(OutgoingMessage(channel: "private-x", event: "client-a", arguments: []),
                                             RequestID(5)))
        #expect(request.resolutions.first.map { (try? $0.1.get()) == nil } == true)
    }

    @Test("URLs: wss with the cluster host, ws only on loopback, the key percent-encoded")
    func urls() {
        #expect(PusherDialect.pusher(key: "abc", cluster: "eu").url.absoluteString
                == "wss://ws-eu.pusher.com/app/abc?protocol=7&client=realtime-swift&version=\(PusherDialect.libraryVersion)")
        #expect(PusherDialect.bird(key: "a b", cluster: "eu1").url.absoluteString
                == "wss://ws-eu1.realtime.platform.bird.com/app/a%20b?protocol=7&client=realtime-swift&version=\(PusherDialect.libraryVersion)")
        #expect(PusherDialect.pusher(key: "k", host: "127.0.0.1", port: 6001).url.absoluteString.hasPrefix("ws://127.0.0.1:6001/app/k?"))
        #expect(PusherDialect.pusher(key: "k", host: "example.com", port: 6001).url.scheme == "wss")
    }
}

@Suite("Pusher machine: encrypted channels")
struct PusherEncryptedTests {
    static let masterKey = Array("0123456789abcdef0123456789abcdef".utf8)
    static let vectorEvent = #"{"event":"secret","channel":"private-encrypted-foobar","data":"{\"nonce\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYX\",\"ciphertext\":\"VPK0uDW87+UiP3KcGUpkdrwMNyMuA9B8cnRQqTxwB7dx2eJs\"}"}"#

    static func driver() -> PusherDriver {
        PusherDriver(.pusher(key: "278d425bdf160c739803",
                             auth: .inline(secret: "7ad3773142a6692b25b8", encryptionMasterKey: masterKey),
                             host: "127.0.0.1"))
    }

    @Test("the vectors: auth signature, shared secret, and the event opens to its plaintext")
    func vectors() async {
        #expect(PusherAuth.sharedSecret(channel: "private-encrypted-foobar", masterKey: Self.masterKey)
                == "/fXNISfW5oYPsxk0w2Unhmf4ryxyOUewExp5ih8r70k=")
        var driver = Self.driver()
        driver.establish()
        let sent = await driver.runWork(driver.handle(.subscribe("private-encrypted-foobar"))).sentTexts
        #expect(sent.first?.contains("278d425bdf160c739803:e6a18892d037c5d5e76a2265df4f086ffc38631605530dfd214aa5bff495f533") == true)
        #expect(sent.first?.contains("shared_secret") == false)
        driver.receive(#"{"event":"pusher_internal:subscription_succeeded","channel":"private-encrypted-foobar","data":"{}"}"#)
        let events = driver.receive(Self.vectorEvent).delivered
        #expect(events.first?.data == ["message": "hello"])
        #expect(events.first?.rawData == #"{"message": "hello"}"#)
    }

    @Test("a box that does not open fetches a fresh key once, then reports decryptionFailed and drops it")
    func rekeyOnce() async {
        var driver = Self.driver()
        driver.establish()
        _ = await driver.runWork(driver.handle(.subscribe("private-encrypted-foobar")))
        let tampered = Self.vectorEvent.replacingOccurrences(of: "VPK0", with: "WPK0")
        let first = driver.receive(tampered)
        #expect(first.delivered.isEmpty)
        #expect(first.works.count == 1)
        // Held while the key is fetched; the good one opens once the key arrives.
        #expect(driver.receive(Self.vectorEvent).isEmpty)
        let after = await driver.runWork(first)
        #expect(after.reportedErrors.map(\.code) == [.decryptionFailed])
        #expect(after.delivered.map(\.data) == [["message": "hello"]])
        let missing = driver.receive(#"{"event":"secret","channel":"private-encrypted-foobar","data":"{}"}"#)
        #expect(missing.reportedErrors.map(\.code) == [.decryptionFailed])
    }

    @Test("system events on encrypted channels are not decrypted")
    func systemEventsPlain() async {
        var driver = Self.driver()
        driver.establish()
        _ = await driver.runWork(driver.handle(.subscribe("private-encrypted-foobar")))
        let success = driver.receive(#"{"event":"pusher_internal:subscription_succeeded","channel":"private-encrypted-foobar","data":"{}"}"#)
        #expect(success.subscribedChannels == ["private-encrypted-foobar"])
    }
}

@Suite("Pusher machine: sign-in")
struct PusherSigninTests {
    @Test("signin signs sid::user::data, resolves on signin_success, joins #server-to-user-<id> with auth \"\"")
    func signin() async {
        var driver = PusherDriver()
        driver.establish()
        let asked = driver.handle(.custom(name: "signin", payload: .null, RequestID(1)))
        let sent = await driver.runWork(asked).sentTexts
        #expect(sent.count == 1)
        #expect(sameJSON(sent[0], ["event": "pusher:signin",
                                   "data": ["auth": .string(expectedAuth(#"1234.1234::user::{"id":"7"}"#)),
                                            "user_data": #"{"id":"7"}"#]]))
        let done = driver.receive(#"{"event":"pusher:signin_success","data":"{\"user_data\":\"{\\\"id\\\":\\\"7\\\"}\"}"}"#)
        #expect(done.resolutions.first?.0 == RequestID(1))
        #expect((try? done.resolutions.first?.1.get()) == [["id": "7"]])
        #expect(done.sentTexts == [##"{"data":{"auth":"","channel":"#server-to-user-7"},"event":"pusher:subscribe"}"##])
        let userEvent = driver.receive(##"{"event":"notice","channel":"#server-to-user-7","data":"{\"x\":1}"}"##).delivered
        #expect(userEvent.first?.channel == "#server-to-user-7")
        #expect(driver.receive(##"{"event":"pusher_internal:subscription_succeeded","channel":"#server-to-user-7","data":"{}"}"##).isEmpty)

        // Armed: a new connection signs in again without an app call.
        _ = driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 4200, reason: "")))
        let again = driver.establish("5.5")
        #expect(again.works.count == 1)
        let resent = await driver.runWork(again).sentTexts
        #expect(resent.first?.contains(expectedAuth(#"5.5::user::{"id":"7"}"#)) == true)
    }

    @Test("Bird sign-in uses member_data, cid::member::data and a user-channel subscribe without auth")
    func birdSignin() async {
        let identity = #"{"member_id":"me"}"#
        var driver = PusherDriver(.bird(key: "k", auth: .inline(secret: "7ad3773142a6692b25b8", userData: identity),
                                        host: "localhost"))
        driver.establish("conn-1", vendor: "bird", idKey: "connection_id")
        let sent = await driver.runWork(driver.handle(.custom(name: "signin", payload: .null, RequestID(2)))).sentTexts
        #expect(sameJSON(sent.first ?? "", ["event": "bird:signin", "data": [
            "auth": "k:b26f12ac8b35c649747d9c840c5a19b9a4d80c620918b6fca54176a2cf21a5bc",
            "member_data": .string(identity)]]))
        let done = driver.receive(#"{"event":"bird:signin_success","data":{"member_data":"{\"member_id\":\"me\"}"}}"#)
        #expect(done.sentTexts == [##"{"data":{"channel":"#server-to-user-me"},"event":"bird:subscribe"}"##])
    }

    @Test("a refused first sign-in fails the call and is not repeated; an authorizer failure fails it too")
    func signinRefused() async {
        var driver = PusherDriver()
        driver.establish()
        _ = await driver.runWork(driver.handle(.custom(name: "signin", payload: .null, RequestID(1))))
        let refused = driver.receive(#"{"event":"pusher:error","data":{"message":"Invalid signature"}}"#)
        #expect(refused.resolutions.first?.0 == RequestID(1))
        if case .failure(let error)? = refused.resolutions.first?.1 {
            #expect(error.code == .signInFailed)
            #expect(error.context.serverPayload?["message"] == "Invalid signature")
        } else {
            Issue.record("the sign-in must fail")
        }
        _ = driver.machine.connectionEnded(TransportClosure(.closedByPeer(code: 4200, reason: "")))
        #expect(driver.establish("2.2").works.isEmpty)

        var noUser = PusherDriver(.pusher(key: "k", auth: .inline(secret: "s"), host: "127.0.0.1"))
        noUser.establish()
        let failed = await noUser.runWork(noUser.handle(.custom(name: "signin", payload: .null, RequestID(3))))
        if case .failure(let error)? = failed.resolutions.first?.1 {
            // Typed as a sign-in failure; the cause (a missing userData) stays readable in the detail.
            #expect(error.code == .signInFailed)
            #expect(error.context.detail?.hasPrefix("invalid-argument") == true)
        } else {
            Issue.record("the sign-in must fail without userData")
        }
        let other = noUser.handle(.custom(name: "perform", payload: .null, RequestID(4)))
        if case .failure(let error)? = other.resolutions.first?.1 { #expect(error.code == .unsupported) }
        else { Issue.record("unknown commands are unsupported") }
    }

    @Test("plain ws only to a loopback host; a name that merely starts with 127. gets TLS")
    func tlsUnlessLoopback() {
        #expect(!PusherDialect(vendor: .pusher, key: "k", host: "127.0.0.1").usesTLS)
        #expect(!PusherDialect(vendor: .pusher, key: "k", host: "localhost").usesTLS)
        #expect(PusherDialect(vendor: .pusher, key: "k", host: "127.evil.example").usesTLS)
        #expect(PusherDialect(vendor: .pusher, key: "k", host: "ws.pusherapp.com").usesTLS)
    }
}

