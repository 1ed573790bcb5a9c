import Foundation
@_spi(DialectAuthoring) import RealtimeActionCable
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Action Cable identifiers, requests and validation")
struct ActionCableIdentifierTests {
    @Test("identifiers are compact JSON with sorted keys, whatever order the params were written in")
    func canonicalIdentifier() throws {
        let first = ChannelID("EchoChannel", params: ["room_id": 42, "alpha": "x", "nested": ["b": 1, "a": [true, nil]]])
        let second = ChannelID("EchoChannel", params: ["nested": ["a": [true, nil], "b": 1], "room_id": 42, "alpha": "x"])
        let identifier = try ActionCableIdentifier.make(for: first)
        #expect(identifier == #"{"alpha":"x","channel":"EchoChannel","nested":{"a":[true,null],"b":1},"room_id":42}"#)
        #expect(try ActionCableIdentifier.make(for: second) == identifier)
        #expect(try ActionCableIdentifier.make(for: "RejectChannel") == #"{"channel":"RejectChannel"}"#)
        #expect(try ActionCableIdentifier.make(for: ChannelID("Chat", params: ["q": "a\"b\\c/é"]))
                == #"{"channel":"Chat","q":"a\"b\\c/é"}"#)
    }

    @Test("the identifier is the serializer's text of params + channel, for keys on either side of \"channel\"")
    func identifierMatchesTheSerializer() throws {
        let keys = ["", "a", "C", "ch", "chan", "channe", "channel_id", "channels", "d", "room", "zz", "é", "Ω", "\u{1}"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var params: [String: JSONValue] = [:]
            for key in keys where Bool.random(using: &generator) {
                params[key] = Bool.random(using: &generator) ? .integer(Int64.random(in: -9...9, using: &generator))
                                                              : .string("v\"\(key)")
            }
            let channel = ChannelID("RoomChannel", params: params)
            var members = params
            members["channel"] = "RoomChannel"
            #expect(try ActionCableIdentifier.make(for: channel) == JSONValue.object(members).serialized())
        }
    }

    @Test("identifiers that cannot be expressed are refused with .invalidArgument",
          arguments: [ChannelID(""), ChannelID("Echo", params: ["channel": "Other"]),
                      ChannelID("Echo", params: ["blob": .binary(Data([1, 2]))])])
    func invalidIdentifiers(channel: ChannelID) {
        #expect(throws: RealtimeError.self) { try ActionCableIdentifier.make(for: channel) }
        do {
            _ = try ActionCableIdentifier.make(for: channel)
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.context.channel == channel)
        }
    }

    @Test("the Origin defaults to the URL's scheme, host and port; an explicit one wins")
    func defaultOrigin() {
        func origin(_ url: String, _ explicit: String? = nil) -> String? {
            ActionCableDialect(url: URL(string: url)!, origin: explicit).origin
        }
        #expect(origin("ws://127.0.0.1:3000/cable") == "http://127.0.0.1:3000")
        #expect(origin("wss://example.com/cable") == "https://example.com")
        #expect(origin("https://example.com:8443/cable") == "https://example.com:8443")
        #expect(origin("ws://[::1]:9000/cable") == "http://[::1]:9000")
        #expect(origin("ws://127.0.0.1:3000/cable", "https://app.example") == "https://app.example")
    }

    @Test("the request offers v1-json then the unsupported tripwire, with headers and origin")
    func connectionRequest() throws {
        let dialect = ActionCableDialect.actionCable(url: URL(string: "ws://127.0.0.1:3000/cable?x=1")!,
                                                     headers: [HTTPHeader("X-App", "1")])
        guard case .ready(let request) = dialect.connectionRequest(attempt: 0) else {
            Issue.record("a dialect without a credentials provider needs no asynchronous step")
            return
        }
        #expect(request.subprotocols == ["actioncable-v1-json", "actioncable-unsupported"])
        #expect(request.headers == [HTTPHeader("X-App", "1")])
        #expect(request.origin == "http://127.0.0.1:3000")
        #expect(request.url.absoluteString == "ws://127.0.0.1:3000/cable?x=1")
        #expect(dialect.name == "actioncable")
        #expect(dialect.reconnectPolicy == ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2,
                                                           maximumDelay: .seconds(30), jitter: .full))
    }

    @Test("the credentials provider runs before every attempt and adds headers and query items")
    func credentialsProvider() async throws {
        let calls = Locked(0)
        let dialect = ActionCableDialect.actionCable(
            url: URL(string: "ws://127.0.0.1:3000/cable?x=1")!, headers: [HTTPHeader("X-App", "1")],
            auth: .provider {
                let call = calls.withLock { $0 += 1; return $0 }
                return .init(headers: [HTTPHeader("Authorization", "Bearer valid-\(call)")],
                             queryItems: [URLQueryItem(name: "token", value: "valid-\(call)")])
            })
        for attempt in 0..<2 {
            guard case .deferred(let prepare) = dialect.connectionRequest(attempt: attempt) else {
                Issue.record("a credentials provider must be deferred")
                return
            }
            let request = try await prepare()
            #expect(request.url.absoluteString == "ws://127.0.0.1:3000/cable?x=1&token=valid-\(attempt + 1)")
            #expect(request.headers == [HTTPHeader("X-App", "1"), HTTPHeader("Authorization", "Bearer valid-\(attempt + 1)")])
        }
        #expect(calls.withLock { $0 } == 2)
    }

    @Test("a provider's own error is wrapped as .operationFailed; a RealtimeError passes through")
    func credentialsErrors() async throws {
        struct Broken: Error {}
        let plain = ActionCableDialect.actionCable(url: URL(string: "ws://127.0.0.1/cable")!,
                                                   auth: .provider { throw Broken() })
        let refusing = ActionCableDialect.actionCable(url: URL(string: "ws://127.0.0.1/cable")!,
                                                      auth: .provider { throw RealtimeError(.connectionRefused, "expired") })
        for (dialect, code) in [(plain, RealtimeError.Code.operationFailed), (refusing, .connectionRefused)] {
            guard case .deferred(let prepare) = dialect.connectionRequest(attempt: 0) else {
                Issue.record("expected a deferred plan")
                continue
            }
            do {
                _ = try await prepare()
                Issue.record("the provider's error must surface")
            } catch let error as RealtimeError {
                #expect(error.code == code)
                // The wrapped error names what the provider threw.
                if code == .operationFailed { #expect(error.message == "the Action Cable auth provider threw: Broken()") }
            }
        }
    }

    @Test("sends take one object (or none); requests are unsupported")
    func validation() {
        let dialect = ActionCableDialect.actionCable(url: URL(string: "ws://127.0.0.1/cable")!)
        let room = ChannelID("EchoChannel", params: ["room_id": 1])
        func check(_ event: String, _ arguments: [JSONValue], reply: Bool = false) -> RealtimeError.Code? {
            dialect.validate(OutgoingMessage(channel: room, event: event, arguments: arguments), expectsReply: reply)?.code
        }
        #expect(check("speak", []) == nil)
        #expect(check("speak", [.null]) == nil)
        #expect(check("speak", [["text": "hi"]]) == nil)
        #expect(check("", [["action": "speak", "text": "hi"]]) == nil)
        #expect(check("speak", [["text": "hi"]], reply: true) == .unsupported)
        #expect(check("speak", ["hi"]) == .invalidArgument)
        #expect(check("speak", [[1, 2]]) == .invalidArgument)
        #expect(check("speak", [["a": 1], ["b": 2]]) == .invalidArgument)
        #expect(check("speak", [["action": "other"]]) == .invalidArgument)
        #expect(check("speak", [["blob": .binary(Data([0]))]]) == .invalidArgument)
    }

    @Test("the guarantor's settings are clamped to sane minimums")
    func guarantorClamps() {
        let guarantor = ActionCableDialect.SubscriptionGuarantor(interval: .milliseconds(1), maximumAttempts: 0)
        #expect(guarantor.interval == .milliseconds(50))
        #expect(guarantor.maximumAttempts == 1)
        #expect(ActionCableDialect.SubscriptionGuarantor().interval == .milliseconds(500))
    }

    @Test("trace lines mask every identifier parameter but the channel class")
    func identifierRedacted() throws {
        let dialect = ActionCableDialect.actionCable(url: URL(string: "ws://127.0.0.1:3000/cable")!)
        let identifier = try ActionCableIdentifier.make(for: ChannelID("RoomChannel", params: ["room_key": "S3CRET", "id": 7]))
        let frame = JSONValue.object(["command": "subscribe", "identifier": .string(identifier)]).serialized()
        let line = dialect.logDescription(of: .text(frame))
        #expect(!line.contains("S3CRET"))
        #expect(line.contains("RoomChannel"))
        #expect(line.contains("subscribe"))
    }
}

