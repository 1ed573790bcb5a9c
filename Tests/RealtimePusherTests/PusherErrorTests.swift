import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Pusher machine: errors reach events, channels and typed errors")
struct PusherErrorMachineTests {
    @Test("every pusher:error is delivered as an event too, with its channel, data and raw text")
    func errorIsAnEvent() {
        var driver = PusherDriver()
        driver.establish()
        let coded = driver.receive(#"{"event":"pusher:error","data":{"message":"rate limited","code":4301}}"#)
        #expect(coded.delivered.map(\.name) == ["pusher:error"])
        #expect(coded.delivered.first?.channel == nil)
        #expect(coded.delivered.first?.data == ["message": "rate limited", "code": 4301])
        #expect(coded.reportedErrors.map(\.code) == [.serverError])

        let attributed = driver.receive(#"{"event":"pusher:error","channel":"news","data":"{\"message\":\"x\",\"code\":4302}"}"#)
        #expect(attributed.delivered.map(\.name) == ["pusher:error"])
        #expect(attributed.delivered.first?.channel == "news")
        #expect(attributed.delivered.first?.rawData == #"{"message":"x","code":4302}"#)

        var bird = PusherDriver(.bird(key: "k", host: "localhost"))
        bird.establish("conn-1", vendor: "bird", idKey: "connection_id")
        let birdError = bird.receive(#"{"event":"bird:error","data":{"message":"no","code":4009}}"#)
        #expect(birdError.delivered.map(\.name) == ["bird:error"])
        #expect(birdError.reportedErrors.first?.context.closeCode == 4009)
    }

    @Test("a channel-less error blamed on the oldest subscription gives that channel a subscription_error event")
    func channelLessErrorReachesTheChannel() async {
        var driver = PusherDriver()
        driver.establish()
        _ = await driver.runWork(driver.handle(.subscribe("private-a")))
        let refused = driver.receive(#"{"event":"pusher:error","data":{"message":"Invalid signature","code":null}}"#)
        // The raw error first (session scope), then the channel's own event, then the failure.
        #expect(refused.delivered.map(\.name) == ["pusher:error", "pusher:subscription_error"])
        let event = refused.delivered[1]
        #expect(event.channel == "private-a")
        #expect(event.data["type"] == "SubscriptionError")
        #expect(event.data["message"] == "Invalid signature")
        #expect(refused.failures.map(\.0) == ["private-a"])
        #expect(refused.failures.first?.1.code == .subscriptionRejected)
        // Not wedged: asking again authorizes and subscribes again.
        let again = await driver.runWork(driver.handle(.subscribe("private-a")))
        #expect(again.sentTexts.count == 1)
    }

    @Test("pusher_internal:, pusher:, bird_internal: and bird:subscription_error fail their channel with status and event")
    func attributedSubscriptionErrors() async {
        for (vendor, frameEvent) in [("pusher", "pusher_internal:subscription_error"),
                                     ("pusher", "pusher:subscription_error"),
                                     ("bird", "bird_internal:subscription_error"),
                                     ("bird", "bird:subscription_error")] {
            var driver = vendor == "bird"
                ? PusherDriver(.bird(key: "k", auth: .inline(secret: "s"), host: "localhost"))
                : PusherDriver()
            if vendor == "bird" {
                driver.establish("conn-1", vendor: "bird", idKey: "connection_id")
            } else {
                driver.establish()
            }
            _ = await driver.runWork(driver.handle(.subscribe("private-x")))
            driver.handle(.subscribe("news"))
            let failed = driver.receive(#"{"event":"\#(frameEvent)","channel":"private-x","data":"{\"error\":\"forbidden\",\"status\":403}"}"#)
            #expect(failed.failures.map(\.0) == ["private-x"], "\(frameEvent)")
            let error = failed.failures.first?.1
            #expect(error?.code == .subscriptionRejected)
            #expect(error?.context.httpStatus == 403)
            #expect(error?.context.detail == "forbidden")
            #expect(failed.delivered.map(\.name) == ["\(vendor):subscription_error"], "\(frameEvent)")
            #expect(failed.delivered.first?.channel == "private-x")
            #expect(failed.delivered.first?.data["error"] == "forbidden")
            #expect(failed.delivered.first?.data["status"] == 403)
            // The other subscription still waits for its own answer, and the failed one can be asked again.
            let other = driver.receive(#"{"event":"\#(vendor)_internal:subscription_succeeded","channel":"news","data":"{}"}"#)
            #expect(other.subscribedChannels == ["news"])
            #expect(driver.handle(.subscribe("private-x")).works.count == 1)
        }
    }

    @Test("pusher-fake's shape: subscription_error with empty data still names the channel in the event")
    func emptySubscriptionError() async {
        var driver = PusherDriver()
        driver.establish()
        _ = await driver.runWork(driver.handle(.subscribe("private-bad")))
        let failed = driver.receive(#"{"event":"pusher_internal:subscription_error","channel":"private-bad","data":"{}"}"#)
        #expect(failed.failures.map(\.0) == ["private-bad"])
        #expect(failed.delivered.first?.data["type"] == "SubscriptionError")
        #expect(failed.delivered.first?.data["error"]?.stringValue?.contains("private-bad") == true)
        // One for a channel nobody is joining is still seen: an event and a reported error.
        let stray = driver.receive(#"{"event":"pusher_internal:subscription_error","channel":"private-gone","data":"{}"}"#)
        #expect(stray.delivered.map(\.name) == ["pusher:subscription_error"])
        #expect(stray.delivered.first?.channel == "private-gone")
        #expect(stray.reportedErrors.map(\.code) == [.subscriptionRejected])
    }

    @Test("an authorizer failure gives the channel an AuthError subscription_error with the HTTP status")
    func authorizerFailureEvent() async {
        var driver = PusherDriver(.pusher(key: "k", auth: .provider { _ in
            throw RealtimeError(.authorizationFailed, "HTTP 403", context: .init(httpStatus: 403))
        }, host: "127.0.0.1"))
        driver.establish()
        let after = await driver.runWork(driver.handle(.subscribe("private-x")))
        #expect(after.delivered.map(\.name) == ["pusher:subscription_error"])
        #expect(after.delivered.first?.data == ["type": "AuthError", "error": "HTTP 403", "status": 403])
        #expect(after.failures.first?.1.code == .authorizationFailed)
        // Refused before anything is asked (no authorizer): the event still comes.
        var none = PusherDriver(.pusher(key: "k", host: "127.0.0.1"))
        none.establish()
        let refused = none.handle(.subscribe("presence-x"))
        #expect(refused.delivered.map(\.name) == ["pusher:subscription_error"])
        #expect(refused.failures.first?.1.code == .authorizationFailed)
    }

    @Test("a provider that throws its own error fails the channel with .operationFailed naming what it threw")
    func providerForeignError() async {
        struct Offline: Error {}
        var driver = PusherDriver(.pusher(key: "k", auth: .provider { _ in throw Offline() }, host: "127.0.0.1"))
        driver.establish()
        let after = await driver.runWork(driver.handle(.subscribe("private-x")))
        #expect(after.failures.first?.1.code == .operationFailed)
        #expect(after.failures.first?.1.message == "the Pusher auth provider threw: Offline()")
    }

    @Test("sign-in failures are .signInFailed with the cause kept, never a channel or connection error")
    func signInFailuresTyped() async {
        var driver = PusherDriver(.pusher(key: "k", auth: .provider { request in
            guard request.channel == nil else { return PusherAuthorization(auth: "k:sig") }
            throw RealtimeError(.authorizationFailed, "HTTP 401", context: .init(httpStatus: 401, detail: "expired"))
        }, host: "127.0.0.1"))
        driver.establish()
        let failed = await driver.runWork(driver.handle(.custom(name: "signin", payload: .null, RequestID(1))))
        guard case .failure(let error)? = failed.resolutions.first?.1 else {
            Issue.record("the sign-in must fail")
            return
        }
        #expect(error.code == .signInFailed)
        #expect(error.context.httpStatus == 401)
        #expect(error.context.detail == "authorization-failed: expired")
        #expect(failed.failures.isEmpty)
        #expect(!failed.contains { if case .close = $0 { true } else { false } })
        #expect(PusherMachine.signInError(error) == error)
    }
}

@Suite("Pusher session: errors where apps look for them")
struct PusherErrorSessionTests {
    @Test("pusher:error reaches on(\"pusher:error\"), onAny and onError")
    func errorEverywhere() async throws {
        let harness = PusherHarness()
        let named = Locked<[JSONValue]>([])
        let any = Locked<[String]>([])
        harness.session.on("pusher:error") { event in named.withLock { $0.append(event.data) } }
        harness.session.onAny { event in any.withLock { $0.append(event.name) } }
        try await harness.session.connect()
        harness.peers[0].send(text: #"{"event":"pusher:error","data":{"message":"Over quota","code":4004}}"#)
        #expect(named.withLock { $0 } == [["message": "Over quota", "code": 4004]])
        #expect(any.withLock { $0 } == ["pusher:error"])
        #expect(harness.errors.withLock { $0.map(\.code) } == [.serverError])
        #expect(harness.errors.withLock { $0.first?.context.closeCode } == 4004)
        #expect(harness.session.state == .connected)
    }

    @Test("a refused subscription: channel event, typed error from subscribed(), failed state; asking again succeeds")
    func refusedThenAccepted() async throws {
        // The first signature for private-room is wrong, every later one right.
        let asked = Locked(0)
        let harness = PusherHarness(auth: .provider { request in
            let count = asked.withLock { count -> Int in
                count += 1
                return count
            }
            let secret = count == 1 ? "wrong" : FakePusher.secret
            return try PusherAuth.sign(request, key: FakePusher.key, secret: secret, presenceData: nil,
                                             userData: nil)
        })
        let room = harness.session.channel("private-room")
        let events = Locked<[RealtimeEvent]>([])
        room.on("pusher:subscription_error") { event in events.withLock { $0.append(event) } }
        try await harness.session.connect()
        do {
            _ = try await room.subscribed()
            Issue.record("the wrong signature must fail the channel")
        } catch let error as RealtimeError {
            #expect(error.code == .subscriptionRejected)
            #expect(error.context.channel == "private-room")
        }
        guard case .rejected(let error) = room.state else {
            Issue.record("expected a failed channel, got \(room.state)")
            return
        }
        #expect(error.code == .subscriptionRejected)
        #expect(events.withLock { $0.map(\.channel) } == ["private-room"])
        #expect(events.withLock { $0.first?.data["message"] } == "Invalid signature")
        #expect(harness.errors.withLock { $0.map(\.code) } == [.subscriptionRejected])

        // Not wedged: asking again authorizes afresh and the server accepts.
        _ = try await harness.session.channel("private-room").subscribed()
        #expect(room.state == .subscribed(recovered: nil))
        #expect(asked.withLock { $0 } == 2)
        #expect(harness.session.state == .connected)
    }

    @Test("a re-sign-in that fails after a reconnect goes to onSignInError, typed; the connection stays up")
    func signInErrorObserver() async throws {
        let fail = Locked(false)
        let harness = PusherHarness(auth: .provider { request in
            if request.channel == nil, fail.withLock({ $0 }) {
                throw RealtimeError(.authorizationFailed, "HTTP 403", context: .init(httpStatus: 403))
            }
            return try PusherAuth.sign(request, key: FakePusher.key, secret: FakePusher.secret,
                                             presenceData: nil, userData: #"{"id":"7"}"#)
        })
        let signInErrors = Locked<[RealtimeError]>([])
        harness.session.onSignInError { error in signInErrors.withLock { $0.append(error) } }
        try await harness.session.connect()
        #expect(try await harness.session.signIn().id == "7")
        fail.withLock { $0 = true }
        harness.peers[0].close(code: 4200, reason: "reconnect")
        await eventually("the failed re-sign-in") { !signInErrors.withLock { $0 }.isEmpty }
        #expect(signInErrors.withLock { $0.map(\.code) } == [.signInFailed])
        #expect(signInErrors.withLock { $0.first?.context.httpStatus } == 403)
        #expect(harness.session.state == .connected)
        // Other errors do not reach the sign-in observer.
        harness.peers[1].send(text: #"{"event":"pusher:error","data":{"message":"x","code":4301}}"#)
        #expect(signInErrors.withLock { $0.count } == 1)
    }
}
