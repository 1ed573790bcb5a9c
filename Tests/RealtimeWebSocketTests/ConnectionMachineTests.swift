import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// A client machine fed bytes, requests and a manual clock (nanoseconds), with its output read back.
struct MachineHarness {
    static let options = ChannelOptions(limits: WebSocketLimits(), closeTimeout: .seconds(5), pingTimeout: .seconds(10))
    var machine: WebSocketConnectionMachine
    var handshake: WebSocketClientHandshake
    var now: UInt64 = 1_000

    init() {
        handshake = WebSocketClientHandshake(url: URL(string: "ws://example.com/chat")!,
                                             key: Array(Base64.decode("dGhlIHNhbXBsZSBub25jZQ==")!))
        machine = WebSocketConnectionMachine(upgrade: .client(handshake), options: Self.options)
    }

    /// Runs one input; returns the frames written (as the server reads them) and the actions, described.
    mutating func run(_ input: (inout WebSocketConnectionMachine, UInt64, inout WebSocketConnectionMachine.Output) -> Void)
        -> (written: [WebSocketEvent], actions: [String]) {
        var output = WebSocketConnectionMachine.Output()
        input(&machine, now, &output)
        return (peerEvents(of: output.bytes, peerRole: .server), output.actions.map(Self.describe))
    }

    mutating func receive(_ bytes: [UInt8]) -> (written: [WebSocketEvent], actions: [String]) {
        run { machine, now, output in bytes.withUnsafeBytes { machine.receive($0, now: now, into: &output) } }
    }

    /// The 101 the server answers with, followed by `leftover` frame bytes.
    func upgradeResponse(_ leftover: [UInt8] = []) -> [UInt8] {
        Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               + "Sec-WebSocket-Accept: \(handshake.expectedAccept)\r\n\r\n").utf8) + leftover
    }

    /// Brings the machine to open with nothing else happening.
    mutating func open() {
        _ = run { machine, _, output in machine.streamReady(into: &output) }
        let opened = receive(upgradeResponse())
        precondition(opened.actions == ["opened"])
    }

    static func describe(_ action: WebSocketConnectionAction) -> String {
        switch action {
        case .opened: "opened"
        case .deliver(let frames):
            "deliver " + frames.map { if case .text(let text) = $0 { text } else { "binary" } }.joined(separator: ",")
        case .pauseReading(let paused): "pauseReading \(paused)"
        case .pongReceived(let id): "pong \(id)"
        case .pingTimedOut(let id): "pingTimedOut \(id)"
        case .startTimedOut: "startTimedOut"
        case .finish(let closure): "finish \(describe(closure))"
        }
    }

    static func describe(_ closure: TransportClosure) -> String {
        let kind: String
        switch closure.kind {
        case .closedByPeer(let code, let reason): kind = "closedByPeer \(code.map(String.init) ?? "-") \(reason)"
        case .closedLocally(let code, let reason): kind = "closedLocally \(code) \(reason)"
        case .failed(let error): kind = "failed \(error.code) \(error.context.closeCode.map(String.init) ?? "-")"
        case .livenessTimeout: kind = "livenessTimeout"
        }
        return closure.duringOpen ? kind + " duringOpen" : kind
    }
}

private let peerClose1000 = TestFrame(opcode: 8, payload: [0x03, 0xE8]).bytes

@Suite("Connection machine: opening")
struct ConnectionMachineOpeningTests {
    @Test("the stream being ready writes the upgrade request; the 101 opens, its leftover messages wait for the read's end")
    func upgradeWithLeftover() {
        var harness = MachineHarness()
        var output = WebSocketConnectionMachine.Output()
        harness.machine.streamReady(into: &output)
        #expect(String(decoding: output.bytes, as: UTF8.self).hasPrefix("GET /chat HTTP/1.1\r\n"))
        #expect(harness.machine.phase == .upgrading)
        let opened = harness.receive(harness.upgradeResponse(TestFrame.text("hi").bytes))
        #expect(opened.actions == ["opened"])
        #expect(harness.machine.phase == .open)
        #expect(harness.run { machine, _, output in machine.readFinished(into: &output) }.actions == ["deliver hi"])
    }

    @Test("frames and pings sent before the upgrade go out right after it, in order; they count as queued until then")
    func queuedBeforeOpen() {
        var harness = MachineHarness()
        let queued = harness.run { machine, now, output in
            machine.send([.text("a"), .binary(Data([1, 2]))], into: &output)
            machine.ping(id: 7, now: now, into: &output)
            machine.send([.text("b")], into: &output)
        }
        #expect(queued.written.isEmpty && queued.actions.isEmpty)
        #expect(harness.machine.bytesQueuedBeforeOpen == 4)
        _ = harness.run { machine, _, output in machine.streamReady(into: &output) }
        let opened = harness.receive(harness.upgradeResponse())
        #expect(opened.actions == ["opened"])
        #expect(opened.written == [.message(.text("a")), .message(.binary(Data([1, 2]))), .message(.text("b")),
                                   .ping([0, 0, 0, 0, 0, 0, 0, 7])])
        #expect(harness.machine.bytesQueuedBeforeOpen == 0)
        #expect(harness.machine.nextDeadline == harness.now + 10_000_000_000)
    }

    @Test("the start timeout fires at its deadline, not before, and the upgrade disarms it")
    func startTimeout() {
        var harness = MachineHarness()
        harness.machine.start(now: harness.now, timeout: .seconds(3))
        #expect(harness.machine.nextDeadline == harness.now + 3_000_000_000)
        harness.now += 2_999_999_999
        #expect(harness.run { machine, now, output in machine.timerFired(now: now, into: &output) }.actions.isEmpty)
        harness.now += 1
        #expect(harness.run { machine, now, output in machine.timerFired(now: now, into: &output) }.actions
                == ["startTimedOut"])

        var opened = MachineHarness()
        opened.machine.start(now: opened.now, timeout: .seconds(3))
        opened.open()
        #expect(opened.machine.nextDeadline == nil)
    }

    @Test("closing before the upgrade ends at once, without a handshake")
    func closeBeforeOpen() {
        var harness = MachineHarness()
        _ = harness.run { machine, _, output in machine.streamReady(into: &output) }
        let closed = harness.run { machine, now, output in machine.close(code: 1000, reason: "bye", now: now, into: &output) }
        #expect(closed.written.isEmpty)
        #expect(closed.actions == ["finish closedLocally 1000 bye duringOpen"])
        #expect(harness.receive(harness.upgradeResponse()).actions.isEmpty)
    }

    @Test("the stream ending during the upgrade fails with the handshake's reason")
    func endDuringUpgrade() {
        var harness = MachineHarness()
        _ = harness.run { machine, _, output in machine.streamReady(into: &output) }
        let ended = harness.run { machine, _, output in machine.streamEnded(into: &output) }
        #expect(ended.actions.count == 1 && ended.actions[0].hasPrefix("finish failed") && ended.actions[0].hasSuffix("duringOpen"))
    }

    @Test("a server that rejects the upgrade writes its response, then ends with 1002")
    func serverReject() {
        let upgrader: ServerUpgrader = { _ in
            .reject(response: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8),
                    error: RealtimeError(.protocolViolation, "bad request"))
        }
        var machine = WebSocketConnectionMachine(upgrade: .server(upgrader), options: MachineHarness.options)
        var output = WebSocketConnectionMachine.Output()
        machine.streamReady(into: &output)
        [UInt8]("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { machine.receive($0, now: 0, into: &output) }
        #expect(String(decoding: output.bytes, as: UTF8.self) == "HTTP/1.1 400 Bad Request\r\n\r\n")
        #expect(output.actions.map(MachineHarness.describe) == ["finish closedLocally 1002 bad request duringOpen"])
    }
}

@Suite("Connection machine: ordering and the close handshake")
struct ConnectionMachineClosingTests {
    @Test("messages then the peer's close in one read: the messages are delivered, the app's replies go before our close")
    func repliesBeforeCloseReply() {
        var harness = MachineHarness()
        harness.open()
        let read = harness.receive(TestFrame.text("one").bytes + TestFrame(opcode: 9, payload: [7]).bytes
                                   + TestFrame.text("two").bytes + peerClose1000)
        #expect(read.written == [.pong([7])])  // the pong at once; the close reply is held back
        #expect(read.actions.isEmpty)
        #expect(harness.run { machine, _, output in machine.readFinished(into: &output) }.actions == ["deliver one,two"])
        #expect(harness.machine.isEnding)
        let ending = harness.run { machine, _, output in
            machine.finishEnding(after: [.text("echo one"), .text("echo two")], into: &output)
        }
        #expect(ending.written == [.message(.text("echo one")), .message(.text("echo two")), .closed(code: 1000, reason: "")])
        #expect(ending.actions == ["finish closedByPeer 1000 "])
        #expect(harness.machine.isFinished && !harness.machine.isEnding)
    }

    @Test("a message then invalid UTF-8: the echo goes out before our 1007 close")
    func repliesBeforeFailureClose() {
        var harness = MachineHarness()
        harness.open()
        let read = harness.receive(TestFrame.text("ok").bytes + TestFrame(opcode: 1, payload: [0xC3, 0x28]).bytes)
        #expect(read.written.isEmpty)
        #expect(harness.run { machine, _, output in machine.readFinished(into: &output) }.actions == ["deliver ok"])
        let ending = harness.run { machine, _, output in machine.finishEnding(after: [.text("ok")], into: &output) }
        #expect(ending.written.count == 2)
        #expect(ending.written.first == .message(.text("ok")))
        #expect(ending.written.last?.endsWithCloseCode == 1007)
        #expect(ending.actions == ["finish failed invalid-utf8 1007"])
    }

    @Test("bytes after the peer's close in the same read are ignored")
    func nothingAfterClose() {
        var harness = MachineHarness()
        harness.open()
        _ = harness.receive(peerClose1000)
        let more = harness.receive(TestFrame.text("late").bytes)
        #expect(more.written.isEmpty && more.actions.isEmpty)
        #expect(harness.run { machine, _, output in machine.readFinished(into: &output) }.actions.isEmpty)
    }

    @Test("our close: the frame goes out, later frames and pings are dropped, the peer's reply ends it as our close")
    func localCloseHandshake() {
        var harness = MachineHarness()
        harness.open()
        let closing = harness.run { machine, now, output in
            machine.close(code: 4000, reason: "done", now: now, into: &output)
            machine.send([.text("late")], into: &output)
            machine.ping(id: 1, now: now, into: &output)
            machine.close(code: 1000, reason: "again", now: now, into: &output)
        }
        #expect(closing.written == [.closed(code: 4000, reason: "done")])
        #expect(closing.actions.isEmpty)
        #expect(harness.machine.nextDeadline == harness.now + 5_000_000_000)
        _ = harness.receive(TestFrame(opcode: 8, payload: [0x0F, 0xA0]).bytes)
        _ = harness.run { machine, _, output in machine.readFinished(into: &output) }
        let ending = harness.run { machine, _, output in machine.finishEnding(after: [.text("reply")], into: &output) }
        #expect(ending.written.isEmpty)  // no reply after our close, and no second close
        #expect(ending.actions == ["finish closedLocally 4000 done"])
    }

    @Test("our close unanswered: the close timeout ends it; the peer hanging up instead also counts as our close")
    func localCloseTimeoutAndHangUp() {
        var harness = MachineHarness()
        harness.open()
        _ = harness.run { machine, now, output in machine.close(code: 1000, reason: "", now: now, into: &output) }
        harness.now += 4_999_999_999
        #expect(harness.run { machine, now, output in machine.timerFired(now: now, into: &output) }.actions.isEmpty)
        harness.now += 1
        #expect(harness.run { machine, now, output in machine.timerFired(now: now, into: &output) }.actions
                == ["finish closedLocally 1000 "])
        #expect(harness.machine.nextDeadline == nil)

        var hungUp = MachineHarness()
        hungUp.open()
        _ = hungUp.run { machine, now, output in machine.close(code: 1001, reason: "away", now: now, into: &output) }
        #expect(hungUp.run { machine, _, output in machine.streamEnded(into: &output) }.actions
                == ["finish closedLocally 1001 away"])
    }

    @Test("the stream ending without a close frame fails with 1006")
    func endWithoutClose() {
        var harness = MachineHarness()
        harness.open()
        #expect(harness.run { machine, _, output in machine.streamEnded(midTLSRecord: true, into: &output) }.actions
                == ["finish failed transport-failed 1006"])
    }

    @Test("closing while reading is paused resumes reading, so the peer's reply is read")
    func closeWhilePaused() {
        var harness = MachineHarness()
        harness.open()
        #expect(harness.run { machine, _, output in machine.setReadingPaused(true, into: &output) }.actions
                == ["pauseReading true"])
        #expect(harness.run { machine, _, output in machine.setReadingPaused(true, into: &output) }.actions.isEmpty)
        let closing = harness.run { machine, now, output in machine.close(code: 1000, reason: "", now: now, into: &output) }
        #expect(closing.actions == ["pauseReading false"])
    }

    @Test("abort and the send limit end the connection once, without a close frame")
    func abortAndLimit() {
        var harness = MachineHarness()
        harness.open()
        let over = harness.run { machine, _, output in
            machine.sendLimitExceeded(limit: 10, into: &output)
            machine.abort(into: &output)
        }
        #expect(over.written.isEmpty)
        #expect(over.actions == ["finish failed limit-exceeded 1008"])
    }
}

@Suite("Connection machine: pings")
struct ConnectionMachinePingTests {
    @Test("a ping carries its id; its pong reports it; an unanswered one times out at the ping timeout")
    func pingsAndTimeouts() {
        var harness = MachineHarness()
        harness.open()
        let sent = harness.run { machine, now, output in machine.ping(id: 1, now: now, into: &output) }
        #expect(sent.written == [.ping([0, 0, 0, 0, 0, 0, 0, 1])])
        harness.now += 1_000
        _ = harness.run { machine, now, output in machine.ping(id: 2, now: now, into: &output) }
        // Named, not a literal sum: under ASan the expectation macro read a literal promoted to
        // `UInt64?` past its 8-byte slot (stack-buffer-overflow in Swift Testing's operand capture).
        let firstTimeout: UInt64? = 1_000 + 10_000_000_000
        #expect(harness.machine.nextDeadline == firstTimeout)
        let pong = harness.receive(TestFrame(opcode: 10, payload: [0, 0, 0, 0, 0, 0, 0, 1]).bytes
                                   + TestFrame(opcode: 10, payload: [9]).bytes  // unsolicited: ignored
                                   + TestFrame(opcode: 10, payload: [0, 0, 0, 0, 0, 0, 0, 1]).bytes)  // repeated: ignored
        #expect(pong.actions == ["pong 1"])
        let secondTimeout: UInt64? = 2_000 + 10_000_000_000
        #expect(harness.machine.nextDeadline == secondTimeout)
        harness.now = 2_000 + 10_000_000_000
        #expect(harness.run { machine, now, output in machine.timerFired(now: now, into: &output) }.actions
                == ["pingTimedOut 2"])
        #expect(harness.machine.nextDeadline == nil)
    }

    @Test("after the connection finishes no ping goes out and no deadline is left")
    func noPingAfterFinish() {
        var harness = MachineHarness()
        harness.open()
        _ = harness.run { machine, now, output in machine.ping(id: 1, now: now, into: &output) }
        _ = harness.run { machine, _, output in machine.abort(into: &output) }
        #expect(harness.machine.nextDeadline == nil)
        #expect(harness.run { machine, now, output in machine.ping(id: 2, now: now, into: &output) }.written.isEmpty)
    }
}

@Suite("Codec: the deferred close")
struct CodecDeferredCloseTests {
    @Test("receiveDeferringClose owes the close reply; frames encoded meanwhile go before it")
    func owesCloseReply() {
        var codec = WebSocketCodec(role: .client)
        var events: [WebSocketEvent] = []
        var output: [UInt8] = []
        let input = TestFrame.text("one").bytes + peerClose1000
        input.withUnsafeBytes { codec.receiveDeferringClose($0, events: &events, output: &output) }
        #expect(output.isEmpty)
        #expect(codec.owesClose && !codec.hasSentClose)
        codec.encode(.text("reply"), into: &output)
        codec.writeOwedClose(into: &output)
        #expect(codec.hasSentClose && !codec.owesClose)
        codec.encode(.text("late"), into: &output)
        #expect(peerEvents(of: output, peerRole: .server) == [.message(.text("reply")), .closed(code: 1000, reason: "")])
    }

    @Test("the public receive still writes the close reply at once")
    func publicReceiveWritesClose() {
        var codec = WebSocketCodec(role: .client)
        var events: [WebSocketEvent] = []
        var output: [UInt8] = []
        peerClose1000.withUnsafeBytes { codec.receive($0, events: &events, output: &output) }
        #expect(peerEvents(of: output, peerRole: .server) == [.closed(code: 1000, reason: "")])
        #expect(codec.hasSentClose && !codec.owesClose)
    }
}

extension WebSocketEvent {
    /// The code of a close frame as the peer reads it.
    var endsWithCloseCode: Int? {
        if case .closed(let code, _) = self { return code }
        return nil
    }
}
