import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Codec close handshake")
struct CodecCloseTests {
    private func closeFrame(code: Int?, reason: [UInt8] = [], mask: [UInt8]? = nil) -> [UInt8] {
        var payload: [UInt8] = []
        if let code { payload = [UInt8(code >> 8), UInt8(code & 0xFF)] }
        return TestFrame(opcode: 8, mask: mask, payload: payload + reason).bytes
    }

    @Test("valid close codes are echoed", arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999])
    func validCodes(code: Int) {
        var codec = WebSocketCodec(role: .client)
        let result = feed(&codec, closeFrame(code: code, reason: Array("bye ✓".utf8)))
        #expect(result.events == [.closed(code: code, reason: "bye ✓")])
        #expect(peerEvents(of: result.output, peerRole: .server) == [.closed(code: code, reason: "")])
        #expect(codec.isClosed)
    }

    @Test("reserved and unassigned close codes get 1002",
          arguments: [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65_535])
    func invalidCodes(code: Int) {
        let result = decode(closeFrame(code: code))
        #expect(result.events.last?.failureCloseCode == 1002)
        #expect(result.events.last?.failureError?.code == .protocolViolation)
        #expect(peerEvents(of: result.output, peerRole: .server) == [.closed(code: 1002, reason: "invalid close code \(code)")])
    }

    @Test("close payload of one byte gets 1002")
    func oneBytePayload() {
        let result = decode(TestFrame(opcode: 8, payload: [0x03]).bytes)
        #expect(result.events.last?.failureCloseCode == 1002)
    }

    @Test("close reason that is not UTF-8 gets 1007")
    func invalidReason() {
        let result = decode(closeFrame(code: 1000, reason: [0x41, 0xC0, 0x80]))
        #expect(result.events.last?.failureCloseCode == 1007)
        #expect(result.events.last?.failureError?.code == .invalidUTF8)
    }

    @Test("empty close is answered with an empty close")
    func emptyClose() {
        let result = decode(closeFrame(code: nil))
        #expect(result.events == [.closed(code: nil, reason: "")])
        #expect(peerEvents(of: result.output, peerRole: .server) == [.closed(code: nil, reason: "")])
        let serverResult = decode(closeFrame(code: nil, mask: sampleMask), role: .server)
        #expect(serverResult.output == [0x88, 0x00])
    }

    @Test("123-byte reason is fine, 124 bytes is an oversized control frame")
    func reasonLength() {
        let ok = decode(closeFrame(code: 1000, reason: [UInt8](repeating: 0x2A, count: 123)))
        #expect(ok.events == [.closed(code: 1000, reason: String(repeating: "*", count: 123))])
        let tooLong = decode(closeFrame(code: 1000, reason: [UInt8](repeating: 0x2A, count: 124)))
        #expect(tooLong.events.last?.failureCloseCode == 1002)
    }

    @Test("nothing is accepted after a close frame, in the same read or later")
    func nothingAfterClose() {
        var codec = WebSocketCodec(role: .client)
        let result = feed(&codec, TestFrame.text("before").bytes + closeFrame(code: 1000) + TestFrame.text("after").bytes
                          + TestFrame(opcode: 9).bytes)
        #expect(result.events == [text("before"), .closed(code: 1000, reason: "")])
        #expect(peerEvents(of: result.output, peerRole: .server) == [.closed(code: 1000, reason: "")])
        let later = feed(&codec, TestFrame.text("later").bytes)
        #expect(later.events.isEmpty && later.output.isEmpty)
    }

    @Test("close started locally: one close frame, data still received, reply completes it")
    func locallyStartedClose() {
        var codec = WebSocketCodec(role: .client)
        var output: [UInt8] = []
        codec.encodeClose(code: 1000, reason: "done", into: &output)
        #expect(peerEvents(of: output, peerRole: .server) == [.closed(code: 1000, reason: "done")])
        #expect(codec.hasSentClose && !codec.isClosed)
        output.removeAll()
        codec.encodeClose(code: 1001, reason: "again", into: &output)
        codec.encode(.text("too late"), into: &output)
        #expect(output.isEmpty, "no second close and no data after close")
        let result = feed(&codec, TestFrame.text("in flight").bytes + closeFrame(code: 1000))
        #expect(result.events == [text("in flight"), .closed(code: 1000, reason: "")])
        #expect(result.output.isEmpty, "the reply to our close is not answered again")
        #expect(codec.isClosed)
    }

    @Test("codes that may not be sent are replaced; the reason is cut at a character boundary")
    func encodeCloseSanitizes() {
        var codec = WebSocketCodec(role: .server)
        var output: [UInt8] = []
        codec.encodeClose(code: 1006, reason: String(repeating: "é", count: 100), into: &output)
        let events = peerEvents(of: output, peerRole: .client)
        #expect(events == [.closed(code: 1000, reason: String(repeating: "é", count: 61))])
        var other = WebSocketCodec(role: .server)
        var empty: [UInt8] = []
        other.encodeClose(code: 1005, reason: "ignored", into: &empty)
        #expect(empty == [0x88, 0x00])
    }

    @Test("a failure after our own close does not write a second close frame")
    func failureAfterClose() {
        var codec = WebSocketCodec(role: .client)
        var output: [UInt8] = []
        codec.encodeClose(code: 1000, reason: "", into: &output)
        let result = feed(&codec, TestFrame(opcode: 3).bytes)
        #expect(result.events.last?.failureCloseCode == 1002)
        #expect(result.output.isEmpty)
        #expect(codec.isClosed)
    }
}
