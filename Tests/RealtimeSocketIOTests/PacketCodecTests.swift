import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) @testable import RealtimeSocketIO
import Testing

@Suite("Engine.IO packets")
struct EngineIOPacketTests {
    @Test func decodesEveryTextType() throws {
        let expected: [(String, EngineIOPacketType, String)] = [
            ("0{}", .open, "{}"), ("1", .close, ""), ("2", .ping, ""), ("2probe", .ping, "probe"),
            ("3probe", .pong, "probe"), ("4hello", .message, "hello"), ("5", .upgrade, ""), ("6", .noop, ""),
        ]
        for (wire, type, payload) in expected {
            #expect(try EngineIOPacket(frame: .text(wire)) == .text(type, Substring(payload)))
            #expect(EngineIOPacket.text(type, Substring(payload)).frame == .text(wire))
        }
    }

    @Test func binaryFrameIsARawMessage() throws {
        let data = Data([1, 2, 3])
        #expect(try EngineIOPacket(frame: .binary(data)) == .binary(data))
    }

    @Test func refusesUnknownTypes() {
        for wire in ["", "7", "x", "9hello"] {
            #expect(throws: RealtimeError.self) { try EngineIOPacket(frame: .text(wire)) }
        }
    }

    @Test func parsesTheOpenPacketFromTheServer() throws {
        let json = #"{"sid":"abc","upgrades":["websocket"],"pingTimeout":2000,"pingInterval":1000,"maxPayload":500}"#
        let handshake = try EngineIOHandshake(json: json)
        #expect(handshake.sid == "abc")
        #expect(handshake.upgrades == ["websocket"])
        #expect(handshake.pingInterval == .milliseconds(1000))
        #expect(handshake.pingTimeout == .milliseconds(2000))
        #expect(handshake.maxPayload == 500)
        #expect(try EngineIOHandshake(json: handshake.json) == handshake)
    }

    @Test func openPacketDefaultsAndErrors() throws {
        let minimal = try EngineIOHandshake(json: #"{"sid":"s"}"#)
        #expect(minimal.pingInterval == .milliseconds(25_000))
        #expect(minimal.pingTimeout == .milliseconds(20_000))
        #expect(minimal.maxPayload == 1_000_000)
        for bad in [#"{"upgrades":[]}"#, "not json", #"{"sid":"s","pingInterval":-5}"#, #"{"sid":""}"#] {
            let error = #expect(throws: RealtimeError.self) { try EngineIOHandshake(json: bad) }
            #expect(error?.code == .protocolViolation)
        }
    }
}

@Suite("Engine.IO polling payloads")
struct PollingPayloadTests {
    @Test func splitsOnRecordSeparatorAndDecodesBase64() throws {
        var body = Data("4hello".utf8)
        body.append(0x1E)
        body.append(contentsOf: "bAQIDBA==".utf8)
        body.append(0x1E)
        body.append(contentsOf: "2".utf8)
        let frames = try PollingPayload.decode(body)
        #expect(frames == [.text("4hello"), .binary(Data([1, 2, 3, 4])), .text("2")])
    }

    @Test func encodesTheSameWay() {
        let (body, hasBinary) = PollingPayload.encode([.text("4hello"), .binary(Data([1, 2, 3, 4]))])
        var expected = Data("4hello".utf8)
        expected.append(0x1E)
        expected.append(contentsOf: "bAQIDBA==".utf8)
        #expect(body == expected)
        #expect(hasBinary)
        #expect(PollingPayload.encode([.text("2")]).hasBinary == false)
    }

    @Test func roundTripsAndSizes() throws {
        let frames: [TransportFrame] = [.text("42[\"a\"]"), .binary(Data(repeating: 7, count: 10)), .text("3")]
        let (body, _) = PollingPayload.encode(frames)
        #expect(try PollingPayload.decode(body) == frames)
        let summed = frames.map(PollingPayload.encodedSize(of:)).reduce(0, +) + frames.count - 1
        #expect(summed == body.count)
    }

    @Test func emptyBodyHasNoPackets() throws {
        #expect(try PollingPayload.decode(Data()).isEmpty)
    }

    @Test func refusesEmptyPacketsBadBase64AndTooManyPackets() {
        var trailing = Data("4a".utf8)
        trailing.append(0x1E)
        #expect(throws: RealtimeError.self) { try PollingPayload.decode(trailing) }
        #expect(throws: RealtimeError.self) { try PollingPayload.decode(Data("b!!!".utf8)) }
        var many = Data()
        for index in 0..<5 {
            if index > 0 { many.append(0x1E) }
            many.append(contentsOf: "6".utf8)
        }
        let error = #expect(throws: RealtimeError.self) { try PollingPayload.decode(many, maximumPackets: 4) }
        #expect(error?.code == .limitExceeded)
    }
}

@Suite("Socket.IO packets")
struct SocketIOPacketTests {
    @Test func encodesTheCapturedFrames() {
        #expect(SocketIOPacket(kind: .connect, payload: ["token": "wrong"]).encoded() == [.text(#"40{"token":"wrong"}"#)])
        #expect(SocketIOPacket(kind: .connect, namespace: "/chat", payload: ["token": "secret"]).encoded()
                == [.text(#"40/chat,{"token":"secret"}"#)])
        #expect(SocketIOPacket(kind: .event, namespace: "/chat", id: 7, payload: ["sum", [1, 2, 3]]).encoded()
                == [.text(#"42/chat,7["sum",[1,2,3]]"#)])
        #expect(SocketIOPacket(kind: .ack, namespace: "/chat", id: 1, payload: ["yes"]).encoded()
                == [.text(#"43/chat,1["yes"]"#)])
        #expect(SocketIOPacket(kind: .disconnect, namespace: "/chat").encoded() == [.text("41/chat,")])
        #expect(SocketIOPacket(kind: .disconnect).encoded() == [.text("41")])
    }

    @Test func encodesBinaryAsPlaceholdersInDocumentOrder() {
        let first = Data([1, 2])
        let second = Data([3, 4])
        let packet = SocketIOPacket(kind: .event, id: 8,
                                    payload: ["binary_echo", .array([.binary(first), ["nested": .binary(second)]])])
        let frames = packet.encoded()
        #expect(frames == [
            .text(#"452-8["binary_echo",[{"_placeholder":true,"num":0},{"nested":{"_placeholder":true,"num":1}}]]"#),
            .binary(first), .binary(second),
        ])
        let ack = SocketIOPacket(kind: .ack, id: 3, payload: [["data": .binary(first)]]).encoded()
        #expect(ack == [.text(#"461-3[{"data":{"_placeholder":true,"num":0}}]"#), .binary(first)])
    }

    @Test func parsesHeaders() throws {
        let binary = try SocketIOPacketHeader(parsing: #"51-8["binary_echo",{"_placeholder":true,"num":0}]"#,
                                              maximumAttachments: 10)
        #expect(binary.kind == .binaryEvent)
        #expect(binary.attachments == 1)
        #expect(binary.namespace == "/")
        #expect(binary.id == 8)
        #expect(binary.json == #"["binary_echo",{"_placeholder":true,"num":0}]"#)

        let ack = try SocketIOPacketHeader(parsing: #"3/chat,7[{"sum":6}]"#, maximumAttachments: 10)
        #expect(ack.kind == .ack)
        #expect(ack.namespace == "/chat")
        #expect(ack.id == 7)
        #expect(ack.json == #"[{"sum":6}]"#)

        let leave = try SocketIOPacketHeader(parsing: "1/chat,", maximumAttachments: 10)
        #expect(leave.kind == .disconnect)
        #expect(leave.namespace == "/chat")
        #expect(leave.json == nil)
        #expect(leave.id == nil)

        // A slice from inside a message (after Engine.IO's `4`), with a namespace of multi-byte characters.
        let sliced = try SocketIOPacketHeader(parsing: "42/café,5[\"é\"]".dropFirst(), maximumAttachments: 10)
        #expect(sliced.kind == .event)
        #expect(sliced.namespace == "/café")
        #expect(sliced.id == 5)
        #expect(sliced.json == #"["é"]"#)
    }

    @Test func refusesBadHeaders() {
        let cases: [(String, RealtimeError.Code)] = [
            ("9[]", .protocolViolation), ("", .protocolViolation), ("5x-[\"a\"]", .protocolViolation),
            ("5-[\"a\"]", .protocolViolation), ("511-[\"a\"]", .limitExceeded),
            ("2" + String(repeating: "9", count: 30) + "[\"a\"]", .protocolViolation),
        ]
        for (text, code) in cases {
            let error = #expect(throws: RealtimeError.self) {
                try SocketIOPacketHeader(parsing: text, maximumAttachments: 10)
            }
            #expect(error?.code == code, "\(text)")
        }
    }

    @Test func decoderValidatesPayloadShapes() throws {
        var decoder = SocketIOPacketDecoder()
        let valid = [#"0{"sid":"x"}"#, "1", #"2["a"]"#, #"2[1,2]"#, "37[]", #"4{"message":"no"}"#,
                     #"4/nope,"Unable to connect""#]
        for text in valid {
            #expect(try decoder.receive(text: text) != nil, "\(text)")
        }
        let invalid = ["0[1]", "1{}", "2[]", "2{}", "2[null]", "3[1]", "4[1]", "2[1", #"0"x""#]
        for text in invalid {
            #expect(throws: RealtimeError.self, "\(text)") { try decoder.receive(text: text) }
        }
    }

    @Test func reassemblesNestedAttachments() throws {
        var decoder = SocketIOPacketDecoder()
        let text = #"52-["binary_from_server",{"first":{"_placeholder":true,"num":0},"nested":{"second":{"_placeholder":true,"num":1}},"len":4}]"#
        #expect(try decoder.receive(text: text) == nil)
        #expect(decoder.isReassembling)
        #expect(try decoder.receive(binary: Data([1, 2])) == nil)
        let packet = try #require(try decoder.receive(binary: Data([3, 4])))
        #expect(!decoder.isReassembling)
        #expect(packet.kind == .binaryEvent)
        #expect(packet.payload == ["binary_from_server", [
            "first": .binary(Data([1, 2])), "nested": ["second": .binary(Data([3, 4]))], "len": 4,
        ]])
        #expect(packet.eventNameAndArguments?.name == "binary_from_server")
    }

    @Test func reassemblyErrors() throws {
        var decoder = SocketIOPacketDecoder(maximumAttachments: 10, maximumAttachmentBytes: 4)
        #expect(throws: RealtimeError.self) { try decoder.receive(binary: Data([1])) }

        #expect(try decoder.receive(text: #"51-["a",{"_placeholder":true,"num":0}]"#) == nil)
        #expect(throws: RealtimeError.self) { try decoder.receive(text: #"2["b"]"#) }
        #expect(!decoder.isReassembling)

        #expect(try decoder.receive(text: #"51-["a",{"_placeholder":true,"num":3}]"#) == nil)
        let missing = #expect(throws: RealtimeError.self) { try decoder.receive(binary: Data([1])) }
        #expect(missing?.code == .protocolViolation)

        #expect(try decoder.receive(text: #"51-["a",{"_placeholder":true,"num":0}]"#) == nil)
        let big = #expect(throws: RealtimeError.self) { try decoder.receive(binary: Data(count: 5)) }
        #expect(big?.code == .limitExceeded)
    }

    @Test func binaryPacketWithZeroAttachmentsIsComplete() throws {
        var decoder = SocketIOPacketDecoder()
        let packet = try decoder.receive(text: #"50-["a",1]"#)
        #expect(packet?.payload == ["a", 1])
    }

    @Test func numericEventNamesAreAccepted() throws {
        var decoder = SocketIOPacketDecoder()
        let packet = try #require(try decoder.receive(text: "2[42,true]"))
        #expect(packet.eventNameAndArguments?.name == "42")
        #expect(packet.eventNameAndArguments?.arguments == [true])
    }
}
