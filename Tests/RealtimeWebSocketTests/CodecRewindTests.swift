import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// Stopping at the last message before an ending in the same input, as the channel does so that the
/// app's replies go out before our close frame.
@Suite("Codec: rewinding to the last message")
struct CodecRewindTests {
    func receive(_ codec: inout WebSocketCodec, _ bytes: [UInt8]) -> (events: [WebSocketEvent], output: [UInt8]) {
        var events: [WebSocketEvent] = []
        var output: [UInt8] = []
        bytes.withUnsafeBytes { codec.receive($0, events: &events, output: &output) }
        return (events, output)
    }

    func texts(_ events: [WebSocketEvent]) -> [String] {
        events.compactMap { if case .message(.text(let text)) = $0 { text } else { nil } }
    }

    @Test("messages, a ping, then the peer's close: the rest after the last message decodes to the ping and the close once")
    func closeAfterMessages() throws {
        var codec = WebSocketCodec(role: .client)
        let first = TestFrame.text("one").bytes + TestFrame(opcode: 9, payload: [7]).bytes + TestFrame.text("two").bytes
        let tail = TestFrame(opcode: 9, payload: [8]).bytes + TestFrame(opcode: 8, payload: [0x03, 0xE8]).bytes
        let state = codec.closeState
        var (events, output) = receive(&codec, first + tail)
        let ended = events.contains { $0.endsConnection }
        #expect(ended)
        let boundary = try #require(codec.lastMessageBoundary)
        #expect(boundary.inputUsed == first.count)
        #expect(boundary.eventCount == 3)  // one, the ping, two
        codec.rewindToLastMessage(closeState: state)
        events.removeSubrange(boundary.eventCount...)
        output.removeSubrange(boundary.outputCount...)
        #expect(texts(events) == ["one", "two"])
        #expect(!codec.hasSentClose)
        let rest = receive(&codec, Array((first + tail)[boundary.inputUsed...]))
        #expect(rest.events.count == 2)  // the second ping, then the close
        #expect(rest.events.last?.endsConnection == true)
        #expect(codec.hasSentClose)
        // Pongs for both pings, each written once, then the close reply: read back as the server would
        // (the frames are masked with random keys, so their bytes cannot be matched directly).
        #expect(peerEvents(of: output + rest.output, peerRole: .server)
                == [.pong([7]), .pong([8]), .closed(code: 1000, reason: "")])
    }

    @Test("a message straddling reads, then invalid UTF-8: rewinding keeps the message and fails again after it")
    func failureAfterMessage() throws {
        var codec = WebSocketCodec(role: .client)
        let message = TestFrame.text(String(repeating: "é", count: 100)).bytes
        let bad = TestFrame(opcode: 1, payload: [0xC3, 0x28]).bytes
        _ = receive(&codec, Array(message[0..<50]))
        #expect(codec.lastMessageBoundary == nil)
        let state = codec.closeState
        let input = Array(message[50...]) + bad
        var (events, _) = receive(&codec, input)
        #expect(events.last?.endsConnection == true)
        let boundary = try #require(codec.lastMessageBoundary)
        #expect(boundary.inputUsed == message.count - 50)
        codec.rewindToLastMessage(closeState: state)
        events.removeSubrange(boundary.eventCount...)
        #expect(texts(events) == [String(repeating: "é", count: 100)])
        let rest = receive(&codec, Array(input[boundary.inputUsed...]))
        guard case .failed(let error, _)? = rest.events.last else {
            Issue.record("expected a failure, got \(rest.events)")
            return
        }
        #expect(error.code == .invalidUTF8)
    }

    @Test("no message in the input: no boundary")
    func noMessage() {
        var codec = WebSocketCodec(role: .client)
        _ = receive(&codec, TestFrame(opcode: 9, payload: []).bytes + TestFrame(opcode: 8, payload: [0x03, 0xE8]).bytes)
        #expect(codec.lastMessageBoundary == nil)
    }
}
