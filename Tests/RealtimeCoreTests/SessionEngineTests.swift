import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Session engine")
struct SessionEngineTests {
    @Test("connect: the handshake makes the session connected and joins held channels")
    func connect() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        #expect(harness.session.state == .connected)
        #expect(harness.session.connectionID == "conn-1")
        #expect(harness.stateLog == [.connecting, .connected])
        #expect(room.state == .subscribed(recovered: nil))
        #expect(try await room.subscribed() == nil)
        #expect(harness.peers.count == 1)
        #expect(harness.peers[0].request.headers.contains(HTTPHeader("X-Attempt", "0")))
    }

    @Test("a dropped connection backs off, reconnects and re-joins every channel")
    func dropBackoffReconnect() async throws {
        let harness = EngineHarness(script: { index in
            EngineHarness.welcome(id: "c\(index)") + [.expect(subRoom, reply: [subOkRoom])]
        })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        harness.peers[0].drop()
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped))
        #expect(room.state == .pending)
        harness.clock.advance(by: .milliseconds(999))
        #expect(harness.peers.count == 1)
        harness.clock.advance(by: .milliseconds(1))
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
        #expect(harness.session.connectionID == "c1")
        #expect(harness.peers[1].received == [subRoom])
        #expect(room.state == .subscribed(recovered: nil))
        #expect(harness.stateLog == [.connecting, .connected, .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped),
                                     .connecting, .connected])
    }

    @Test("failed attempts grow the delay; a success resets the count")
    func backoffGrowsAndResets() async throws {
        let harness = EngineHarness(script: { index in
            switch index {
            case 0, 4: return EngineHarness.welcome()
            default: return [.drop]
            }
        })
        try await harness.session.connect()
        harness.peers[0].drop()
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped))
        harness.clock.advance(by: .seconds(1))          // attempt 1 fails at once
        #expect(harness.session.state == .reconnecting(attempt: 2, delay: .seconds(2), reason: dropped))
        harness.clock.advance(by: .seconds(2))          // attempt 2 fails
        #expect(harness.session.state == .reconnecting(attempt: 3, delay: .seconds(4), reason: dropped))
        harness.clock.advance(by: .seconds(4))          // attempt 3 fails
        #expect(harness.session.state == .reconnecting(attempt: 4, delay: .seconds(8), reason: dropped))
        harness.clock.advance(by: .seconds(8))          // attempt 4 succeeds
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .seconds(10))         // and stays up for the stability window
        harness.peers[4].drop()
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped))
    }

    @Test("a connection that ends inside the stability window counts as a failed attempt")
    func unstableConnectionKeepsCounting() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        harness.clock.advance(by: .seconds(10))
        harness.peers[0].drop()
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: dropped))
        harness.clock.advance(by: .seconds(1))          // welcomed again...
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .seconds(9))
        harness.peers[1].drop()                         // ...but dropped 1 ms before it proved stable
        #expect(harness.session.state == .reconnecting(attempt: 2, delay: .seconds(2), reason: dropped))
    }

    @Test("a server that welcomes and then breaks the link runs into maximumAttempts")
    func welcomeThenBreakHitsTheLimit() async throws {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(300), multiplier: 1, maximumDelay: .seconds(1),
                                     jitter: .none, maximumAttempts: 3)
        let harness = EngineHarness(dialect: LineDialect(policy: policy), script: { _ in
            EngineHarness.welcome() + [.drop]
        })
        harness.session.start()
        harness.clock.advance(by: .seconds(60))
        #expect(harness.peers.count == 4)               // the first connection and 3 attempts, no more
        guard case .failed(let error) = harness.session.state else {
            Issue.record("expected failed, got \(harness.session.state)")
            return
        }
        #expect(error.code == .sessionFailed)
        #expect(error.message.contains("3 reconnect attempts"))
        #expect(harness.stateLog.filter { $0 == .connected }.count == 4)
    }

    @Test("a repeated 42xx close reconnects at once only after a stable connection")
    func repeatedImmediateBacksOff() async throws {
        let policy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(8),
                                     jitter: .none)
        let harness = EngineHarness(dialect: LineDialect(policy: policy), script: { _ in EngineHarness.welcome() })
        try await harness.session.connect()
        harness.clock.advance(by: .seconds(10))
        harness.peers[0].close(code: 4200, reason: "reconnect")
        #expect(harness.peers.count == 2)               // at once: the first connection was stable
        harness.peers[1].close(code: 4200, reason: "reconnect")
        #expect(harness.session.state == .reconnecting(attempt: 2, delay: .seconds(2), reason: .closedByServer(code: 4200, reason: "reconnect")))
        #expect(harness.peers.count == 2)
        harness.clock.advance(by: .seconds(2))
        #expect(harness.peers.count == 3)
    }

    @Test("a 42xx close reconnects immediately; a 41xx close honours the dialect's minimum")
    func immediateAndMinimum() async throws {
        let policy = ReconnectPolicy(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(8),
                                     jitter: .none)
        let harness = EngineHarness(dialect: LineDialect(policy: policy), script: { _ in EngineHarness.welcome() })
        try await harness.session.connect()
        harness.peers[0].close(code: 4200, reason: "reconnect")
        #expect(harness.peers.count == 2)
        #expect(harness.session.state == .connected)
        #expect(harness.stateLog.contains(.reconnecting(attempt: 1, delay: .zero, reason: .closedByServer(code: 4200, reason: "reconnect"))))
        harness.clock.advance(by: .seconds(10))
        harness.peers[1].close(code: 4100, reason: "over capacity")
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: .closedByServer(code: 4100, reason: "over capacity")))
        harness.clock.advance(by: .milliseconds(500))
        #expect(harness.peers.count == 2)
        harness.clock.advance(by: .milliseconds(500))
        #expect(harness.peers.count == 3)
    }

    @Test("a terminal close fails the session and nothing reconnects")
    func terminal() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        harness.peers[0].close(code: 4001, reason: "no such app")
        guard case .failed(let error) = harness.session.state else {
            Issue.record("expected failed, got \(harness.session.state)")
            return
        }
        #expect(error.code == .connectionRefused)
        #expect(error.context.closeCode == 4001)
        #expect(harness.errorLog.map(\.code) == [.connectionRefused])
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.peers.count == 1)
    }

    @Test("a server close for a protocol error reaches onError at each occurrence; a normal close does not")
    func faultCloseIsReported() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() })
        try await harness.session.connect()
        harness.peers[0].close(code: 1002, reason: "parse error")
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1),
                                                       reason: .closedByServer(code: 1002, reason: "parse error")))
        let reported = harness.errorLog
        #expect(reported.map(\.code) == [.connectionClosed])
        #expect(reported.first?.message == "the server closed the connection with code 1002 (protocol error): parse error")
        #expect(reported.first?.context.closeCode == 1002)
        harness.clock.advance(by: .seconds(1))
        harness.peers[1].close(code: 1011, reason: "")
        #expect(harness.errorLog.map(\.message).last == "the server closed the connection with code 1011 (internal server error)")
        harness.clock.advance(by: .seconds(2))
        #expect(harness.session.state == .connected)
        harness.peers[2].close(code: 1001, reason: "going away")
        #expect(harness.errorLog.count == 2)  // going away is routine: it reconnects quietly
    }

    @Test("the app's disconnect stays disconnected")
    func appDisconnect() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        harness.session.disconnect()
        #expect(harness.session.state == .disconnected)
        #expect(harness.peers[0].closeRequest?.code == 1000)
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.peers.count == 1)
        #expect(harness.session.state == .disconnected)
        // A disconnect while waiting to reconnect cancels the pending attempt too.
        try await harness.session.connect()
        harness.peers[1].drop()
        harness.session.disconnect()
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.peers.count == 2)
        #expect(harness.stateLog.last == .disconnected)
    }

    @Test("the maximum attempts end in failed")
    func maximumAttempts() async throws {
        let policy = ReconnectPolicy(initialDelay: .seconds(1), multiplier: 1, maximumDelay: .seconds(1),
                                     jitter: .none, maximumAttempts: 3)
        let harness = EngineHarness(dialect: LineDialect(policy: policy), script: { index in
            index == 0 ? EngineHarness.welcome() : [.drop]
        })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        harness.peers[0].drop()
        let sending = Task { try await room.send("note", "never delivered") }
        await eventually("the send to be buffered") { harness.session.bufferedSendCount == 1 }
        harness.clock.advance(by: .seconds(10))
        #expect(harness.peers.count == 4)
        do {
            try await sending.value
            Issue.record("a buffered send must fail when the session fails")
        } catch let error as RealtimeError {
            #expect(error.code == .sessionFailed)
        }
        guard case .failed(let error) = harness.session.state else {
            Issue.record("expected failed, got \(harness.session.state)")
            return
        }
        #expect(error.code == .sessionFailed)
        #expect(error.message.contains("3 reconnect attempts"))
    }

    @Test("a send buffered while reconnecting is delivered exactly once, after the channel re-joins")
    func bufferedSendDeliveredOnce() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        harness.peers[0].drop()
        let sending = Task { try await room.send("note", "hello") }
        await eventually("the send to be buffered") { harness.session.bufferedSendCount == 1 }
        harness.clock.advance(by: .seconds(1))
        try await sending.value
        #expect(harness.session.bufferedSendCount == 0)
        let sends = harness.peers.flatMap(texts).filter { $0.contains(#""t":"send""#) }
        #expect(sends == [#"{"args":["hello"],"ch":"room","name":"note","t":"send"}"#])
        #expect(texts(harness.peers[1]).last == sends.first)
    }

    @Test("a buffered send times out with a typed error")
    func bufferedSendTimesOut() async throws {
        let harness = EngineHarness(options: { $0.sendTimeout = .seconds(5) },
                                    script: { index in index == 0 ? EngineHarness.welcome() : [.drop] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        harness.peers[0].drop()
        let sending = Task { try await room.send("note", "hello") }
        await eventually("the send to be buffered") { harness.session.bufferedSendCount == 1 }
        harness.clock.advance(by: .seconds(5))
        await #expect(throws: RealtimeError.self) { try await sending.value }
        do {
            try await sending.value
        } catch let error as RealtimeError {
            #expect(error.code == .timedOut)
            #expect(error.context.channel == "room")
        }
        #expect(harness.session.bufferedSendCount == 0)
    }

    @Test("the send buffer is bounded")
    func bufferBound() async throws {
        let harness = EngineHarness(options: { $0.sendBufferLimit = 2 }, script: { _ in nil })
        let room = harness.session.channel("room")
        harness.session.start()
        let first = Task { try await room.send("a", 1) }
        let second = Task { try await room.send("b", 2) }
        await eventually { harness.session.bufferedSendCount == 2 }
        do {
            try await room.send("c", 3)
            Issue.record("a third send should not fit")
        } catch let error as RealtimeError {
            #expect(error.code == .bufferFull)
        }
        harness.session.disconnect()
        for task in [first, second] {
            do {
                try await task.value
                Issue.record("buffered sends must fail on disconnect")
            } catch let error as RealtimeError {
                #expect(error.code == .disconnected)
            }
        }
    }

    @Test("server pings: a silent link is declared dead after interval + grace")
    func serverPingLiveness() async throws {
        let harness = EngineHarness(script: { index in
            index == 0 ? EngineHarness.welcome(extra: #","ping":5"#) : EngineHarness.welcome()
        })
        try await harness.session.connect()
        harness.clock.advance(by: .seconds(4))
        harness.peers[0].send(text: #"{"t":"ev","name":"ping"}"#)   // any frame is a sign of life
        harness.clock.advance(by: .milliseconds(5_999))
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .milliseconds(1))
        guard case .reconnecting(_, _, let reason) = harness.session.state else {
            Issue.record("expected reconnecting, got \(harness.session.state)")
            return
        }
        #expect(reason == .livenessTimeout)
        #expect(harness.errorLog.map(\.code) == [.livenessTimeout])
        #expect(harness.peers[0].closeRequest?.code == 1006)
    }

    @Test("client pings: ping after idle, dead when no answer within the timeout")
    func clientPingLiveness() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome(extra: #","idle":10"#) })
        try await harness.session.connect()
        harness.clock.advance(by: .seconds(10))
        #expect(texts(harness.peers[0]).last == #"{"t":"ping"}"#)
        harness.peers[0].send(text: #"{"t":"ev","name":"pong"}"#)
        harness.clock.advance(by: .seconds(2))
        #expect(harness.session.state == .connected)
        harness.clock.advance(by: .seconds(8))
        #expect(texts(harness.peers[0]).filter { $0 == #"{"t":"ping"}"# }.count == 2)
        harness.clock.advance(by: .seconds(2))
        guard case .reconnecting = harness.session.state else {
            Issue.record("expected reconnecting, got \(harness.session.state)")
            return
        }
    }

    @Test("a handshake that never completes times out and backs off")
    func handshakeTimeout() async throws {
        let harness = EngineHarness(options: { $0.connectTimeout = .seconds(3) }, script: { _ in nil })
        harness.session.start()
        #expect(harness.session.state == .connecting)
        harness.clock.advance(by: .seconds(3))
        #expect(harness.session.state == .reconnecting(attempt: 1, delay: .seconds(1), reason: .failure(RealtimeError(.connectTimedOut, "no connection within 3 s"))))
        #expect(harness.peers[0].phase == .closed)
    }

    @Test("requests resolve with the server's answer or time out, and the dialect forgets them")
    func requests() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        harness.peers[0].onReceive { frame, peer in
            if case .text(let text) = frame, text.contains(#""name":"sum""#) {
                peer.send(text: #"{"t":"ack","id":1,"args":[6]}"#)
            }
        }
        let answer = try await room.request("sum", 1, 2, 3)
        #expect(answer == [6])
        let pending = Task { try await room.request("slow", timeout: .seconds(2)) }
        await eventually { texts(harness.peers[0]).contains { $0.contains(#""name":"slow""#) } }
        harness.clock.advance(by: .seconds(2))
        do {
            _ = try await pending.value
            Issue.record("the request should time out")
        } catch let error as RealtimeError {
            #expect(error.code == .timedOut)
            // Named by what was asked: the internal request id means nothing to the caller.
            #expect(error.message == #"no acknowledgement for "slow" on room within 2 s"#)
            #expect(error.context.channel == "room")
        }
        // A late answer for the timed-out request is ignored.
        harness.peers[0].send(text: #"{"t":"ack","id":2,"args":["late"]}"#)
        #expect(harness.session.state == .connected)
    }

    @Test("a request written before the connection dropped fails; buffered ones survive")
    func requestAcrossDrop() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        let inFlight = Task { try await room.request("q") }
        await eventually { texts(harness.peers[0]).contains { $0.contains(#""t":"req""#) } }
        harness.peers[0].drop()
        do {
            _ = try await inFlight.value
            Issue.record("the in-flight request should fail")
        } catch let error as RealtimeError {
            #expect(error.code == .connectionClosed)
        }
    }

    @Test("the engine tells the dialect when handlers start and stop reading the payloads it defers")
    func payloadsReadHint() async throws {
        let harness = EngineHarness(recordsEvents: false,
                                    script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        let reading = Locked(true)
        let seen = Locked<[String]>([])
        for name in ["read", "unread"] {
            room.on(name) { event in
                let data = reading.withLock { $0 } ? event.data : .null
                seen.withLock { $0.append("\(event.name):\(data)") }
            }
        }
        try await harness.session.connect()
        let frame = #"{"t":"lazy","ch":"room","data":7}"#
        harness.peers[0].send(text: frame)  // deferred and read: the dialect hears that payloads are read
        harness.peers[0].send(text: frame)
        reading.withLock { $0 = false }
        harness.peers[0].send(text: frame)  // the hint still says read; this one is not, and goes away unread
        harness.peers[0].send(text: frame)  // its delivery tells the dialect: the next one is deferred
        harness.peers[0].send(text: frame)
        await eventually { seen.withLock { $0.count } == 5 }
        #expect(seen.withLock { $0 } == ["unread:7", "read:7", "read:null", "read:null", "unread:null"])
    }

    @Test("payloads read in an events() loop, after their delivery batch, count as read")
    func payloadsReadHintFromAStream() async throws {
        let harness = EngineHarness(recordsEvents: false,
                                    script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        let stream = room.events()
        try await harness.session.connect()
        let frame = #"{"t":"lazy","ch":"room","data":7}"#
        harness.peers[0].send(text: frame)  // delivered into the stream, unread when its batch ends
        var names: [String] = []
        var iterator = stream.makeAsyncIterator()
        if let first = await iterator.next() {
            names.append(first.name)
            #expect(first.data == 7)  // read now, long after the batch: the engine still hears of it
        }
        harness.peers[0].send(text: frame)  // its delivery passes the news on
        harness.peers[0].send(text: frame)
        for _ in 0..<2 {
            if let event = await iterator.next() { names.append(event.name) }
        }
        #expect(names == ["unread", "unread", "read"])
    }

    @Test("the server's ack request is answered once through event.ack")
    func serverAck() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        room.on("ask") { event in
            event.ack?("yes")
            event.ack?("again")
        }
        try await harness.session.connect()
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"ask","ack":7}"#)
        #expect(texts(harness.peers[0]).filter { $0.contains("ackreply") } == [#"{"args":["yes"],"id":7,"t":"ackreply"}"#])
    }

    @Test("values that cannot travel as JSON are refused with a typed error: too deep, NaN, unencodable")
    func unsendableValues() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        var deep: JSONValue = 0
        for _ in 0..<10_000 { deep = .array([deep]) }
        var shallowEnough: JSONValue = 0
        for _ in 0..<512 { shallowEnough = .array([shallowEnough]) }
        await #expect(throws: RealtimeError.self) { try await room.send("x", deep) }
        do { try await room.send("x", deep) } catch let error as RealtimeError { #expect(error.code == .limitExceeded) }
        try await room.send("ok", shallowEnough)
        for number in [Double.nan, .infinity, -.infinity] {
            do {
                try await room.send("x", ["n": .double(number)])
                Issue.record("\(number) was sent")
            } catch let error as RealtimeError {
                #expect(error.code == .invalidArgument)
            }
        }
        struct Refuses: Encodable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "refused"))
            }
        }
        do {
            try await room.send("x", encoding: Refuses())
            Issue.record("an unencodable value was sent")
        } catch let error as RealtimeError {
            #expect(error.code == .invalidArgument)
            #expect(error.context.detail?.contains("refused") == true)
        }
        // Nothing but the one acceptable message reached the wire.
        #expect(texts(harness.peers[0]).filter { $0.contains(#""name":"#) }.count == 1)
    }

    @Test("an acknowledgement that cannot travel as JSON is reported through onError, not sent")
    func unsendableAck() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        room.on("ask") { event in event.ack?(.double(.nan)) }
        try await harness.session.connect()
        harness.peers[0].send(text: #"{"t":"ev","ch":"room","name":"ask","ack":7}"#)
        #expect(!texts(harness.peers[0]).contains { $0.contains("ackreply") })
        #expect(harness.errorLog.map(\.code) == [.invalidArgument])
    }

    @Test("a refused channel reports a typed error and refuses sends")
    func refusedChannel() async throws {
        let subPrivate = TransportFrame.text(#"{"ch":"private","t":"sub"}"#)
        let harness = EngineHarness(script: { _ in
            EngineHarness.welcome() + [.expect(subPrivate, reply: [.text(#"{"t":"subfail","ch":"private"}"#)])]
        })
        let secret = harness.session.channel("private")
        try await harness.session.connect()
        await #expect(throws: RealtimeError.self) { try await secret.subscribed() }
        guard case .rejected(let error) = secret.state else {
            Issue.record("expected failed, got \(secret.state)")
            return
        }
        #expect(error.code == .subscriptionRejected)
        #expect(harness.errorLog.map(\.code) == [.subscriptionRejected])
        do {
            try await secret.send("x")
            Issue.record("sending on a refused channel must fail")
        } catch let error as RealtimeError {
            #expect(error.code == .channelUnavailable)
        }
    }

    @Test("channel handlers see only their channel, in wire order, and survive reconnects")
    func channelHandlers() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() + [.expect(subRoom, reply: [subOkRoom])] })
        let room = harness.session.channel("room")
        let seen = Locked<[String]>([])
        room.on("m") { event in seen.withLock { $0.append(event.data.stringValue ?? "?") } }
        try await harness.session.connect()
        harness.peers[0].send([.text(#"{"t":"ev","ch":"room","name":"m","data":"1"}"#),
                               .text(#"{"t":"ev","ch":"other","name":"m","data":"x"}"#),
                               .text(#"{"t":"ev","ch":"room","name":"m","data":"2"}"#)])
        harness.peers[0].drop()
        harness.clock.advance(by: .seconds(1))
        harness.peers[1].send(text: #"{"t":"ev","ch":"room","name":"m","data":"3"}"#)
        #expect(seen.withLock { $0 } == ["1", "2", "3"])
        #expect(harness.eventLog.count == 4)
    }

    @Test("leaving a channel unsubscribes and fails its buffered sends")
    func leave() async throws {
        let harness = EngineHarness(script: { _ in EngineHarness.welcome() })
        let room = harness.session.channel("room")
        try await harness.session.connect()
        let sending = Task { try await room.send("x") }
        await eventually { harness.session.bufferedSendCount == 1 }
        room.leave()
        #expect(texts(harness.peers[0]).last == #"{"ch":"room","t":"unsub"}"#)
        do {
            try await sending.value
            Issue.record("the buffered send should fail")
        } catch let error as RealtimeError {
            #expect(error.code == .channelUnavailable)
        }
        #expect(room.state == .unsubscribed)
    }

    @Test("the dialect's rules are checked at the call site")
    func validation() async throws {
        let harness = EngineHarness()
        let room = harness.session.channel("room")
        do {
            try await room.send("reserved")
            Issue.record("a reserved name must be refused")
        } catch let error as RealtimeError {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test("a deferred connection request runs asynchronously and connects")
    func deferredRequest() async throws {
        var dialect = LineDialect()
        dialect.deferRequest = true
        let harness = EngineHarness(dialect: dialect)
        try await harness.session.connect()
        #expect(harness.session.state == .connected)
    }

    @Test("a request that cannot be prepared fails the session when no retry can cure it, else backs off",
          arguments: [(RealtimeError.Code.unsupported, true), (.authorizationFailed, true), (.invalidArgument, true),
                      (.connectionRefused, true), (.transportFailed, false), (.timedOut, false)])
    func unpreparableRequest(code: RealtimeError.Code, terminal: Bool) async throws {
        var dialect = LineDialect()
        dialect.requestFailure = RealtimeError(code, "the credentials step failed")
        let harness = EngineHarness(dialect: dialect)
        let connect = Task { try await harness.session.connect(timeout: .seconds(60)) }
        await eventually("failed or backing off") {
            switch harness.session.state {
            case .failed, .reconnecting: true
            default: false
            }
        }
        switch harness.session.state {
        case .failed(let error) where terminal:
            #expect(error.code == code)
            await #expect(throws: RealtimeError.self) { try await connect.value }
        case .reconnecting where !terminal:
            connect.cancel()
        default:
            Issue.record("\(code): \(harness.session.state)")
            connect.cancel()
        }
        #expect(harness.peers.isEmpty)
    }

    @Test("dialect commands wait for the connection")
    func customCommand() async throws {
        let harness = EngineHarness()
        let pending = Task { try await harness.session.dialectCommand("signin", payload: ["user": "u1"]) }
        try await harness.session.connect()
        let answer = try await pending.value
        #expect(answer == ["done:signin"])
        #expect(texts(harness.peers[0]).contains(#"{"name":"signin","payload":{"user":"u1"},"t":"custom"}"#))
    }

    @Test("a slow consumer pauses reading and resumes once handlers catch up")
    func backPressure() async throws {
        let delivery = HeldDelivery()
        let transport = InMemoryTransport()
        let session = RealtimeSession(
            dialect: LineDialect(), transport: transport,
            options: SessionOptions(delivery: delivery.target, deliveryHighWatermark: 10, clock: ManualClock()))
        let count = Locked(0)
        session.on("m") { _ in count.withLock { $0 += 1 } }
        session.start()
        let peer = await transport.peer(0)
        peer.send(text: #"{"t":"welcome"}"#)
        for _ in 0..<4 { peer.send((0..<5).map { _ in .text(#"{"t":"ev","name":"m"}"#) }) }
        #expect(peer.isReadingPaused)
        delivery.runAll()
        #expect(count.withLock { $0 } == 20)
        #expect(!peer.isReadingPaused)
        withExtendedLifetime(session) {}
    }

    @Test("an adapter's tap sees its channel's events and every transition before handlers run, its follow-ups run just before their handlers, and only off(id:) removes it")
    func tapRunsAheadOfDelivery() async throws {
        let delivery = HeldDelivery()
        let transport = InMemoryTransport()
        let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                      options: SessionOptions(delivery: delivery.target, clock: ManualClock()))
        let release = delivery.runAll
        let seen = Locked<[String]>([])
        let log = Locked<[String]>([])
        let room = session.channel("room")
        let tap = session.addTap(channel: "room") { input in
            let name: String
            switch input {
            case .event(let event): name = event.name
            case .state(_, let new): name = "\(new)"
            }
            seen.withLock { $0.append(name) }
            return { log.withLock { $0.append("follow-up " + name) } }
        }
        room.on("m") { _ in log.withLock { $0.append("handler m") } }
        session.start()
        let peer = await transport.peer(0)
        peer.send(text: #"{"t":"welcome"}"#)
        peer.send(text: #"{"t":"subok","ch":"room"}"#)
        try await room.subscribed()
        peer.send(text: #"{"t":"ev","ch":"room","name":"m"}"#)
        peer.send(text: #"{"t":"ev","ch":"lobby","name":"m"}"#)
        #expect(seen.withLock { $0 } == ["connecting", "connected", "m"])
        #expect(log.withLock { $0 }.isEmpty)
        release()
        #expect(log.withLock { $0 } == ["follow-up connecting", "follow-up connected", "follow-up m", "handler m"])

        session.removeAllHandlers()
        peer.send(text: #"{"t":"ev","ch":"room","name":"n"}"#)
        #expect(seen.withLock { $0 }.last == "n")
        session.off(id: tap)
        peer.send(text: #"{"t":"ev","ch":"room","name":"o"}"#)
        #expect(seen.withLock { $0 }.last == "n")
        release()
        #expect(log.withLock { $0 }.last == "follow-up n")
        withExtendedLifetime(session) {}
    }

    @Test("large events behind a slow consumer pause reading at the byte budget, whatever their count")
    func byteBudget() async throws {
        let queued = Locked<[@Sendable () -> Void]>([])
        let transport = InMemoryTransport()
        let clock = ManualClock()
        let session = RealtimeSession(
            dialect: LineDialect(), transport: transport,
            options: SessionOptions(delivery: .custom { work in queued.withLock { $0.append(work) } },
                                    deliveryByteBudget: 4 << 20, clock: clock))
        let count = Locked(0)
        session.on("m") { _ in count.withLock { $0 += 1 } }
        session.start()
        let peer = await transport.peer(0)
        peer.send(text: #"{"t":"welcome"}"#)
        let big = String(repeating: "x", count: 1 << 20)
        let frame = TransportFrame.text(#"{"t":"ev","name":"m","data":"\#(big)"}"#)
        for _ in 0..<3 { peer.send([frame]) }
        #expect(!peer.isReadingPaused)                  // 3 MiB: under the budget
        peer.send([frame, frame])
        #expect(peer.isReadingPaused)                   // 5 events only, but 5 MiB
        #expect(session.deliveryBacklog.events == 5)
        #expect(session.deliveryBacklog.bytes > 5 << 20)
        let work = queued.withLock { queue in defer { queue = [] }; return queue }
        for item in work { item() }
        #expect(count.withLock { $0 } == 5)
        #expect(session.deliveryBacklog.events == 0 && session.deliveryBacklog.bytes == 0)
        #expect(!peer.isReadingPaused)
        withExtendedLifetime(session) {}
    }

    @Test("releasing the session closes its connection")
    func releaseCloses() async throws {
        let transport = InMemoryTransport()
        do {
            let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                          options: SessionOptions(delivery: .inline, clock: ManualClock()))
            session.start()
            transport.lastPeer?.send(text: #"{"t":"welcome"}"#)
            #expect(session.state == .connected)
        }
        #expect(transport.peers[0].closeRequest?.code == 1000)
    }

    @Test("states and events are also async sequences")
    func asyncSequences() async throws {
        let harness = EngineHarness()
        var iterator = harness.session.states.makeAsyncIterator()
        #expect(await iterator.next() == .initialized)
        let events = harness.session.events("hello")
        try await harness.session.connect()
        #expect(await iterator.next() == .connecting)
        #expect(await iterator.next() == .connected)
        harness.peers[0].send(text: #"{"t":"ev","name":"hello","data":42}"#)
        var eventIterator = events.makeAsyncIterator()
        #expect(await eventIterator.next()?.data == 42)
    }

    @Test("an event stream that falls behind pauses reading like a slow handler; taking events resumes it")
    func streamBackPressure() async throws {
        let harness = EngineHarness(options: { $0.deliveryHighWatermark = 4 })
        let events = harness.session.events("tick")
        try await harness.session.connect()
        for index in 0..<6 { harness.peers[0].send(text: #"{"t":"ev","name":"tick","data":\#(index)}"#) }
        #expect(harness.peers[0].isReadingPaused)
        #expect(harness.session.deliveryBacklog.events == 6)
        var iterator = events.makeAsyncIterator()
        for expected in 0..<3 { #expect(await iterator.next()?.data == .integer(Int64(expected))) }
        #expect(harness.peers[0].isReadingPaused)          // 3 waiting: still above half the watermark
        #expect(await iterator.next()?.data == 3)
        #expect(!harness.peers[0].isReadingPaused)         // 2 waiting: reading resumes
        #expect(harness.session.deliveryBacklog.events == 2)
    }

    @Test("releasing a stream with events still in it releases them from the budget")
    func releasedStream() async throws {
        let harness = EngineHarness(options: { $0.deliveryHighWatermark = 4 })
        try await harness.session.connect()
        do {
            let events = harness.session.events("tick")
            for index in 0..<6 { harness.peers[0].send(text: #"{"t":"ev","name":"tick","data":\#(index)}"#) }
            #expect(harness.peers[0].isReadingPaused)
            _ = events
        }
        await eventually("the stream released") { !harness.peers[0].isReadingPaused }
        #expect(harness.session.deliveryBacklog.events == 0)
    }

    @Test("cancelling the task that awaits a stream ends it: nil, its handler removed, its backlog released")
    func cancelledStream() async throws {
        let harness = EngineHarness(options: { $0.deliveryHighWatermark = 4 }, recordsEvents: false)
        try await harness.session.connect()
        let events = harness.session.events("tick")
        let waiting = Task {
            var iterator = events.makeAsyncIterator()
            let first = await iterator.next()
            let afterCancel = await iterator.next()  // cancelled while waiting here
            return (first, afterCancel)
        }
        harness.peers[0].send(text: #"{"t":"ev","name":"tick","data":1}"#)
        await eventually("the first event taken") { harness.session.deliveryBacklog.events == 0 }
        waiting.cancel()
        let (first, afterCancel) = await waiting.value
        #expect(first?.data == 1)
        #expect(afterCancel == nil)
        // The ended stream takes nothing more: six events no longer pause reading at a watermark of 4.
        for index in 0..<6 { harness.peers[0].send(text: #"{"t":"ev","name":"tick","data":\#(index)}"#) }
        #expect(!harness.peers[0].isReadingPaused)
        #expect(harness.session.deliveryBacklog.events == 0)
        var again = events.makeAsyncIterator()
        #expect(await again.next() == nil)
    }

    @Test("an event handed to a consumer already waiting never enters the delivery backlog")
    func waitingConsumerTakesDirectly() async throws {
        let harness = EngineHarness(recordsEvents: false)
        try await harness.session.connect()
        let events = harness.session.events("tick")
        let consumer = Task {
            var taken: [JSONValue] = []
            for await event in events {
                taken.append(event.data)
                if taken.count == 3 { break }
            }
            return taken
        }
        var backlogs: [Int] = []
        for index in 0..<3 {
            // Sent one at a time, each once the consumer waits again; delivery is inline, so the backlog
            // read right after the send is what the event cost.
            await eventually("the consumer waiting") { events.waitingConsumerCount == 1 }
            harness.peers[0].send(text: #"{"t":"ev","name":"tick","data":\#(index)}"#)
            backlogs.append(harness.session.deliveryBacklog.events)
        }
        #expect(await consumer.value == [0, 1, 2])
        #expect(backlogs == [0, 0, 0])
        // With nobody waiting (the loop broke, the stream lives on in `events`), the next one waits in the
        // stream and counts.
        harness.peers[0].send(text: #"{"t":"ev","name":"tick","data":3}"#)
        #expect(harness.session.deliveryBacklog.events == 1)
    }

    @Test("a dialect's fail action ends the session at once, closing the connection")
    func dialectFail() async throws {
        let harness = EngineHarness()
        try await harness.session.connect()
        harness.peers[0].send([.text(#"{"t":"fatal"}"#), .text(#"{"t":"ev","name":"late"}"#)])
        guard case .failed(let error) = harness.session.state else {
            Issue.record("expected failed, got \(harness.session.state)")
            return
        }
        #expect(error.code == .connectionRefused)
        #expect(harness.peers[0].closeRequest?.code == 1000)
        #expect(!harness.eventLog.contains { $0.name == "after-fail" || $0.name == "late" })
        harness.clock.advance(by: .seconds(3600))
        #expect(harness.peers.count == 1)
    }

    @Test("a transport failure with invalidArgument or unsupported is terminal whatever the dialect says",
          arguments: [RealtimeError.Code.invalidArgument, .unsupported])
    func invalidArgumentIsTerminal(_ code: RealtimeError.Code) async throws {
        let transport = InMemoryTransport(autoAccept: false) { peer in
            peer.fail(RealtimeError(code, "a setup that will not work next time either"))
        }
        let clock = ManualClock()
        let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                      options: SessionOptions(delivery: .inline, clock: clock))
        session.start()
        guard case .failed(let error) = session.state else {
            Issue.record("expected failed, got \(session.state)")
            return
        }
        #expect(error.code == code)
        clock.advance(by: .seconds(60))
        #expect(transport.peers.count == 1)
    }

    @Test("every failed attempt reaches onError; connect() gives up at its timeout naming the last failure")
    func attemptFailuresReachTheApp() async throws {
        let transport = InMemoryTransport(autoAccept: false) { peer in
            peer.fail(RealtimeError(.handshakeInvalid, "Sec-WebSocket-Accept does not match the key"))
        }
        let clock = ManualClock()
        let errors = Locked<[RealtimeError]>([])
        let session = RealtimeSession(dialect: LineDialect(), transport: transport,
                                      options: SessionOptions(delivery: .inline, connectCallTimeout: .seconds(10),
                                                              clock: clock, randomSource: .seeded(1)))
        session.onError { error in errors.withLock { $0.append(error) } }
        let connecting = Task { try await session.connect() }
        await eventually("the first attempt failed") { errors.withLock { $0.count } == 1 }
        #expect(errors.withLock { $0 }.map(\.code) == [.handshakeInvalid])
        // Backoff attempts keep failing, and each one is reported.
        for _ in 0..<4 { clock.advance(by: .seconds(2)) }
        let reported = errors.withLock { $0.count }
        #expect(reported >= 3)
        #expect(reported == transport.peers.count)
        clock.advance(by: .seconds(10))
        do {
            try await connecting.value
            Issue.record("connect() returned against a server that always fails")
        } catch let error as RealtimeError {
            #expect(error.code == .connectTimedOut)
            #expect(error.message.contains("failed attempts"))
            #expect(error.context.detail?.contains("handshake-invalid: Sec-WebSocket-Accept") == true)
            #expect(error.description.contains("Sec-WebSocket-Accept"))
        }
        // The session keeps trying by its policy until the app stops it.
        #expect(session.state != .disconnected)
        session.disconnect()
        #expect(session.state == .disconnected)
    }

    @Test("connect(timeout:) bounds one call; a success before it cancels the deadline")
    func connectTimeoutPerCall() async throws {
        let harness = EngineHarness(script: { index in index == 0 ? nil : EngineHarness.welcome() })
        let first = Task { try await harness.session.connect(timeout: .seconds(5)) }
        await eventually("connecting") { harness.peers.count == 1 }
        harness.clock.advance(by: .seconds(5))
        await #expect(throws: RealtimeError.self) { try await first.value }
        #expect(harness.errorLog.isEmpty)   // the attempt itself has not failed yet
        // The attempt times out (20 s), the next one succeeds, and a later deadline changes nothing.
        let second = Task { try await harness.session.connect(timeout: .seconds(60)) }
        harness.clock.advance(by: .seconds(15))
        harness.clock.advance(by: .seconds(2))
        await eventually("the retry") { harness.peers.count == 2 }
        try await second.value
        #expect(harness.session.state == .connected)
        #expect(harness.errorLog.map(\.code) == [.connectTimedOut])
        harness.clock.advance(by: .seconds(60))
        #expect(harness.session.state == .connected)
    }

    @Test("a connection that breaks after the handshake reports why through onError")
    func postHandshakeFailuresReported() async throws {
        let harness = EngineHarness(script: { index in
            index == 0 ? EngineHarness.welcome() : EngineHarness.welcome(id: "conn-2")
        })
        try await harness.session.connect()
        harness.peers[0].fail(RealtimeError(.protocolViolation, "a masked frame from the server"))
        #expect(harness.errorLog.map(\.code) == [.protocolViolation])
    }
}

