import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("Codec protocol errors")
struct CodecErrorTests {
    /// Decodes `wire` and checks it ends in exactly one failure with `closeCode` and `code`, and that the
    /// close frame written says the same.
    private func expectFailure(_ wire: [UInt8], role: WebSocketRole = .client, limits: WebSocketLimits = .init(),
                               closeCode: Int, code: RealtimeError.Code, chunks: [Int] = [],
                               sourceLocation: SourceLocation = #_sourceLocation) {
        var codec = WebSocketCodec(role: role, limits: limits)
        let result = feed(&codec, wire, chunks: chunks)
        #expect(result.events.last?.failureCloseCode == closeCode, sourceLocation: sourceLocation)
        #expect(result.events.last?.failureError?.code == code, sourceLocation: sourceLocation)
        #expect(result.events.last?.failureError?.context.closeCode == closeCode, sourceLocation: sourceLocation)
        #expect(result.events.filter { $0.failureCloseCode != nil }.count == 1, sourceLocation: sourceLocation)
        let written = peerEvents(of: result.output, peerRole: role == .client ? .server : .client)
        if case .closed(let sent, _) = written.last {
            #expect(sent == closeCode, sourceLocation: sourceLocation)
        } else {
            Issue.record("no close frame written: \(written)", sourceLocation: sourceLocation)
        }
        #expect(codec.isClosed && codec.hasSentClose, sourceLocation: sourceLocation)
        // Nothing after a failure is accepted.
        let after = feed(&codec, TestFrame.text("late").bytes)
        #expect(after.events.isEmpty && after.output.isEmpty, sourceLocation: sourceLocation)
    }

    @Test("reserved bits without an extension", arguments: [UInt8(1), 2, 4, 7])
    func reservedBits(rsv: UInt8) {
        expectFailure(TestFrame(rsv: rsv, opcode: 1, payload: Array("x".utf8)).bytes, closeCode: 1002, code: .protocolViolation)
        expectFailure(TestFrame(rsv: rsv, opcode: 9).bytes, closeCode: 1002, code: .protocolViolation)
    }

    @Test("reserved opcodes", arguments: [UInt8(3), 4, 5, 6, 7, 11, 12, 13, 14, 15])
    func reservedOpcodes(opcode: UInt8) {
        expectFailure(TestFrame(opcode: opcode, payload: [1]).bytes, closeCode: 1002, code: .protocolViolation)
    }

    @Test("control frame over 125 bytes fails on its head alone")
    func oversizedControlFrame() {
        let frame = TestFrame(opcode: 9, payload: [UInt8](repeating: 0, count: 126)).bytes
        expectFailure(Array(frame.prefix(4)), closeCode: 1002, code: .protocolViolation)
        expectFailure(TestFrame(opcode: 8, payload: [0x03, 0xE8] + [UInt8](repeating: 0x41, count: 124)).bytes,
                      closeCode: 1002, code: .protocolViolation)
    }

    @Test("fragmented control frames", arguments: [UInt8(8), 9, 10])
    func fragmentedControl(opcode: UInt8) {
        expectFailure(TestFrame(fin: false, opcode: opcode, payload: [1]).bytes, closeCode: 1002, code: .protocolViolation)
    }

    @Test("continuation without a message, new message inside a message")
    func fragmentationOrder() {
        expectFailure(TestFrame(opcode: 0, payload: [1]).bytes, closeCode: 1002, code: .protocolViolation)
        expectFailure(TestFrame(fin: false, opcode: 1, payload: [0x41]).bytes + TestFrame(opcode: 1, payload: [0x42]).bytes,
                      closeCode: 1002, code: .protocolViolation)
        expectFailure(TestFrame(fin: false, opcode: 2, payload: [1]).bytes + TestFrame(opcode: 2, payload: [2]).bytes,
                      closeCode: 1002, code: .protocolViolation)
    }

    @Test("masking rules: servers must not mask, clients must")
    func maskingRules() {
        expectFailure(TestFrame.text("hi", mask: sampleMask).bytes, role: .client, closeCode: 1002, code: .protocolViolation)
        expectFailure(TestFrame.text("hi").bytes, role: .server, closeCode: 1002, code: .protocolViolation)
        expectFailure(TestFrame(opcode: 9, mask: sampleMask).bytes, role: .client, closeCode: 1002, code: .protocolViolation)
    }

    @Test("64-bit length with the top bit set")
    func lengthTopBit() {
        expectFailure(TestFrame(opcode: 2, rawLength64: 1 << 63).bytes, closeCode: 1002, code: .protocolViolation)
        expectFailure(TestFrame(opcode: 2, rawLength64: 1 << 63).bytes, closeCode: 1002, code: .protocolViolation, chunks: [1, 1, 1])
    }

    @Test("invalid UTF-8 in a single frame, whole and split")
    func invalidUTF8SingleFrame() {
        let wire = TestFrame(opcode: 1, payload: [0x41, 0xED, 0xA0, 0x80, 0x41]).bytes
        expectFailure(wire, closeCode: 1007, code: .invalidUTF8)
        expectFailure(wire, closeCode: 1007, code: .invalidUTF8, chunks: [3, 1, 1])
    }

    @Test("invalid UTF-8 fails before the rest of the frame arrives")
    func failFastWithinFrame() {
        let wire = TestFrame(opcode: 1, payload: Array("hello".utf8) + [0xF5] + Array(repeating: 0x41, count: 1_000)).bytes
        // Only the head and the first six payload bytes have arrived.
        let result = decode(Array(wire.prefix(4 + 6)))
        #expect(result.events.last?.failureCloseCode == 1007)
    }

    @Test("invalid UTF-8 fails at the fragment that breaks it, before the message ends")
    func failFastAcrossFragments() {
        let wire = TestFrame(fin: false, opcode: 1, payload: Array("κό".utf8) + [0xCF]).bytes
            + TestFrame(fin: false, opcode: 0, payload: [0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80]).bytes
        expectFailure(wire, closeCode: 1007, code: .invalidUTF8)
        let masked = TestFrame(fin: false, opcode: 1, mask: sampleMask, payload: [0xCE]).bytes
            + TestFrame(fin: false, opcode: 0, mask: sampleMask, payload: [0x41]).bytes
        expectFailure(masked, role: .server, closeCode: 1007, code: .invalidUTF8)
    }

    @Test("a message ending inside a UTF-8 sequence")
    func truncatedUTF8() {
        expectFailure(TestFrame(opcode: 1, payload: [0x41, 0xE2, 0x82]).bytes, closeCode: 1007, code: .invalidUTF8)
        expectFailure(TestFrame(fin: false, opcode: 1, payload: [0x41, 0xE2]).bytes + TestFrame(opcode: 0, payload: [0x82]).bytes,
                      closeCode: 1007, code: .invalidUTF8)
    }

    @Test("frame size limit fails on the head alone")
    func frameLimit() {
        let limits = WebSocketLimits(maximumFrameSize: 1_000, maximumMessageSize: 10_000, maximumFragmentCount: 10)
        #expect(decode(TestFrame(opcode: 2, payload: [UInt8](repeating: 1, count: 1_000)).bytes, limits: limits).events.count == 1)
        let frame = TestFrame(opcode: 2, payload: [UInt8](repeating: 1, count: 1_001)).bytes
        expectFailure(Array(frame.prefix(4)), limits: limits, closeCode: 1009, code: .limitExceeded)
        expectFailure(TestFrame(opcode: 2, rawLength64: UInt64(Int.max)).bytes, closeCode: 1009, code: .limitExceeded)
    }

    @Test("message size limit across fragments")
    func messageLimit() {
        let limits = WebSocketLimits(maximumFrameSize: 1_000, maximumMessageSize: 1_500, maximumFragmentCount: 10)
        let ok = TestFrame(fin: false, opcode: 2, payload: [UInt8](repeating: 1, count: 1_000)).bytes
            + TestFrame(opcode: 0, payload: [UInt8](repeating: 1, count: 500)).bytes
        #expect(decode(ok, limits: limits).events == [binary([UInt8](repeating: 1, count: 1_500))])
        let tooBig = TestFrame(fin: false, opcode: 2, payload: [UInt8](repeating: 1, count: 1_000)).bytes
            + TestFrame(opcode: 0, payload: [UInt8](repeating: 1, count: 501)).bytes
        expectFailure(tooBig, limits: limits, closeCode: 1009, code: .limitExceeded)
    }

    @Test("fragment count limit: exactly the limit passes, one more fails")
    func fragmentLimit() {
        let limits = WebSocketLimits(maximumFrameSize: 100, maximumMessageSize: 100, maximumFragmentCount: 4)
        func message(fragments: Int) -> [UInt8] {
            (0..<fragments).flatMap { index in
                TestFrame(fin: index == fragments - 1, opcode: index == 0 ? 1 : 0, payload: [0x61]).bytes
            }
        }
        #expect(decode(message(fragments: 4), limits: limits).events == [text("aaaa")])
        expectFailure(message(fragments: 5), limits: limits, closeCode: 1009, code: .limitExceeded)
    }
}
