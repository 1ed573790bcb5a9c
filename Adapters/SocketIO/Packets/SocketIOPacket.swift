import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// One Socket.IO v5 packet, with binary attachments already restored into `payload` as `.binary`.
///
/// Wire form: `<type>[<attachments>-][<namespace>,][<ack id>][<JSON>]`, carried in an Engine.IO
/// `message` packet; attachments follow as binary messages.
package struct SocketIOPacket: Sendable, Hashable {
    package enum Kind: UInt8, Sendable, Hashable {
        case connect = 0
        case disconnect = 1
        case event = 2
        case ack = 3
        case connectError = 4
        case binaryEvent = 5
        case binaryAck = 6

        var isBinary: Bool { self == .binaryEvent || self == .binaryAck }
    }

    package var kind: Kind
    /// `/` for the main namespace.
    package var namespace: String
    package var id: Int64?
    package var payload: JSONValue?
    /// The JSON text as it arrived (placeholders in place of attachments), a slice of the received text;
    /// `nil` for packets built here.
    package var rawJSON: Substring?
    /// Set for an EVENT decoded with its arguments deferred (``SocketIOPacketDecoder/defersEventArguments``):
    /// the event's name, with `payload` left `nil` and `rawJSON` the checked array, parsed when read.
    package var deferredEventName: String?

    package init(kind: Kind, namespace: String = "/", id: Int64? = nil, payload: JSONValue? = nil,
                 rawJSON: Substring? = nil) {
        self.kind = kind
        self.namespace = namespace
        self.id = id
        self.payload = payload
        self.rawJSON = rawJSON
    }

    /// The Engine.IO frames for this packet: one text message, then one binary message per attachment.
    /// EVENT and ACK become BINARY_EVENT and BINARY_ACK when the payload holds `.binary` values.
    package func encoded() -> [TransportFrame] {
        var attachments: [Data] = []
        let json = payload.map { BinaryAttachments.deconstruct($0, into: &attachments) }
        var kind = self.kind
        if !attachments.isEmpty {
            if kind == .event { kind = .binaryEvent }
            if kind == .ack { kind = .binaryAck }
        } else {
            if kind == .binaryEvent { kind = .event }
            if kind == .binaryAck { kind = .ack }
        }
        var text = "4"
        text.unicodeScalars.append(UnicodeScalar(UInt8(ascii: "0") + kind.rawValue))
        if kind.isBinary { text += "\(attachments.count)-" }
        if namespace != "/" { text += namespace + "," }
        if let id { text += String(id) }
        if let json { text += json.serialized() }
        return [.text(text)] + attachments.map(TransportFrame.binary)
    }

    /// The event name and arguments of an EVENT or BINARY_EVENT (numbers as names are accepted).
    package var eventNameAndArguments: (name: String, arguments: [JSONValue])? {
        var copy = self
        return copy.takeEventNameAndArguments()
    }

    /// `eventNameAndArguments`, taking the payload out of the packet: when the packet is the array's only
    /// owner (a packet just decoded), the arguments are the same array without its first element, with no
    /// new allocation.
    package mutating func takeEventNameAndArguments() -> (name: String, arguments: [JSONValue])? {
        materializeDeferredArguments()
        guard kind == .event || kind == .binaryEvent, case .array(var elements)? = payload,
              let first = elements.first, let name = Self.eventName(first) else { return nil }
        payload = nil  // leaves `elements` the only owner, so removing the name happens in place
        elements.removeFirst()
        return (name, elements)
    }

    /// Parses deferred arguments into `payload`, for code that needs them now.
    package mutating func materializeDeferredArguments() {
        guard deferredEventName != nil, let rawJSON else { return }
        payload = try? JSONValue.parse(rawJSON.utf8)  // checked when decoded, so it parses
        deferredEventName = nil
    }

    /// An event's name from the first element of its array: a string, or a number written as text.
    static func eventName(_ first: JSONValue) -> String? {
        switch first {
        case .string(let text): text
        case .integer(let number): String(number)
        case .double(let number): "\(number)"
        default: nil
        }
    }
}

/// The header of a packet whose attachments may still be on their way.
package struct SocketIOPacketHeader: Sendable, Hashable {
    package var kind: SocketIOPacket.Kind
    package var attachments: Int
    package var namespace: String
    package var id: Int64?
    /// A slice of the parsed text.
    package var json: Substring?

    /// Parses the Socket.IO text held in a `String`.
    package init(parsing text: String, maximumAttachments: Int) throws(RealtimeError) {
        try self.init(parsing: text[...], maximumAttachments: maximumAttachments)
    }

    /// Parses the Socket.IO text (the Engine.IO `message` payload, without its `4`).
    package init(parsing text: Substring, maximumAttachments: Int) throws(RealtimeError) {
        // The bytes of a received frame are at hand: scanning them by offset costs less than stepping
        // string indices, whose every read is checked and not inlined.
        let scanned = text.utf8.withContiguousStorageIfAvailable { Layout.scan($0, maximumAttachments: maximumAttachments) }
            ?? Array(text.utf8).withUnsafeBufferPointer { Layout.scan($0, maximumAttachments: maximumAttachments) }
        let layout: Layout
        switch scanned {
        case .success(let found):
            layout = found
        case .failure(.limit(let count)):
            throw RealtimeError(.limitExceeded,
                                "packet announces \(count) attachments, more than the limit of \(maximumAttachments)")
        case .failure(.violation(let message)):
            throw RealtimeError(.protocolViolation, message, context: .init(detail: String(text.prefix(64))))
        }
        let utf8 = text.utf8
        kind = layout.kind
        attachments = layout.attachments
        namespace = layout.namespace.map { range in
            String(text[utf8.index(utf8.startIndex, offsetBy: range.lowerBound)..<utf8.index(utf8.startIndex, offsetBy: range.upperBound)])
        } ?? "/"
        id = layout.id
        json = layout.jsonStart.map { text[utf8.index(utf8.startIndex, offsetBy: $0)...] }
    }

    /// Where the parts of a packet's text lie, in UTF-8 offsets.
    private struct Layout {
        enum Failure: Error {
            case violation(String)
            case limit(Int)
        }

        var kind: SocketIOPacket.Kind
        var attachments = 0
        var namespace: Range<Int>?
        var id: Int64?
        var jsonStart: Int?

        static func scan(_ bytes: UnsafeBufferPointer<UInt8>, maximumAttachments: Int) -> Result<Layout, Failure> {
            var index = 0
            guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "6"),
                  let kind = SocketIOPacket.Kind(rawValue: bytes[index] - UInt8(ascii: "0")) else {
                return .failure(.violation("unknown Socket.IO packet type"))
            }
            var layout = Layout(kind: kind)
            index += 1

            if kind.isBinary {
                var count = 0
                var digits = 0
                while index < bytes.count, bytes[index] != UInt8(ascii: "-") {
                    let byte = bytes[index]
                    guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 6 else {
                        return .failure(.violation("bad attachment count"))
                    }
                    count = count * 10 + Int(byte - UInt8(ascii: "0"))
                    digits += 1
                    index += 1
                }
                guard index < bytes.count, digits > 0 else { return .failure(.violation("bad attachment count")) }
                guard count <= maximumAttachments else { return .failure(.limit(count)) }
                layout.attachments = count
                index += 1
            }

            if index < bytes.count, bytes[index] == UInt8(ascii: "/") {
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
                layout.namespace = start..<index
                if index < bytes.count { index += 1 }
            }

            let digitsStart = index
            var ackID: Int64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let (product, overflow1) = ackID.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = product.addingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
                guard !overflow1, !overflow2 else { return .failure(.violation("ack id out of range")) }
                ackID = sum
                index += 1
            }
            if index != digitsStart { layout.id = ackID }
            if index < bytes.count { layout.jsonStart = index }
            return .success(layout)
        }
    }
}

/// Decodes Socket.IO packets from the Engine.IO `message` stream, reassembling binary packets.
package struct SocketIOPacketDecoder: Sendable {
    package var maximumAttachments: Int
    package var maximumAttachmentBytes: Int
    /// Whether an EVENT's arguments are checked but left as text (``SocketIOPacket/deferredEventName``), to
    /// be parsed only if someone reads them. Off by default; the session's machine turns it on.
    package var defersEventArguments = false
    private var pending: (header: SocketIOPacketHeader, payload: JSONValue, attachments: [Data], bytes: Int)?
    /// The JSON parser's stacks, kept from packet to packet.
    private var scratch = JSONParseScratch()

    package init(maximumAttachments: Int = 10, maximumAttachmentBytes: Int = 100_000_000) {
        self.maximumAttachments = maximumAttachments
        self.maximumAttachmentBytes = maximumAttachmentBytes
    }

    /// `true` while a binary packet waits for attachments.
    package var isReassembling: Bool { pending != nil }

    /// Forgets a half-received packet (the connection ended).
    package mutating func reset() { pending = nil }

    /// `receive(text:)` for text held in a `String`.
    package mutating func receive(text: String) throws(RealtimeError) -> SocketIOPacket? {
        try receive(text: text[...])
    }

    /// Decodes the text of one `message` packet. Returns `nil` when the packet waits for attachments. The
    /// packet keeps its JSON as a slice of `text` rather than a copy.
    package mutating func receive(text: Substring) throws(RealtimeError) -> SocketIOPacket? {
        guard pending == nil else {
            pending = nil
            throw RealtimeError(.protocolViolation, "text packet arrived while attachments were expected")
        }
        let header = try SocketIOPacketHeader(parsing: text, maximumAttachments: maximumAttachments)
        var payload: JSONValue?
        if let json = header.json {
            do {
                if defersEventArguments, header.kind == .event,
                   case let first?? = try JSONValue.firstElement(ofArray: json.utf8, scratch: &scratch),
                   let name = SocketIOPacket.eventName(first) {
                    var packet = SocketIOPacket(kind: .event, namespace: header.namespace, id: header.id, rawJSON: json)
                    packet.deferredEventName = name
                    return packet
                }
                // Not deferred, or not an event array: parsed whole, and `validate` says what is wrong.
                payload = try JSONValue.parse(json.utf8, scratch: &scratch)
            } catch {
                throw RealtimeError(.protocolViolation, "Socket.IO packet payload is not JSON",
                                    context: .init(offset: error.context.offset, detail: String(json.prefix(64))))
            }
        }
        try Self.validate(header, payload)
        if header.kind.isBinary, header.attachments > 0 {
            pending = (header, payload ?? .null, [], 0)
            return nil
        }
        return SocketIOPacket(kind: header.kind, namespace: header.namespace, id: header.id, payload: payload,
                              rawJSON: header.json)
    }

    /// Takes one binary message. Returns the packet once its last attachment arrived.
    package mutating func receive(binary data: Data) throws(RealtimeError) -> SocketIOPacket? {
        guard var current = pending else {
            throw RealtimeError(.protocolViolation, "binary message arrived with no binary packet pending")
        }
        current.bytes += data.count
        guard current.bytes <= maximumAttachmentBytes else {
            pending = nil
            throw RealtimeError(.limitExceeded,
                                "attachments exceed the limit of \(maximumAttachmentBytes) bytes per packet")
        }
        current.attachments.append(data)
        guard current.attachments.count == current.header.attachments else {
            pending = current
            return nil
        }
        pending = nil
        let payload = try BinaryAttachments.reconstruct(current.payload, attachments: current.attachments)
        return SocketIOPacket(kind: current.header.kind, namespace: current.header.namespace,
                              id: current.header.id, payload: payload, rawJSON: current.header.json)
    }

    private static func validate(_ header: SocketIOPacketHeader, _ payload: JSONValue?) throws(RealtimeError) {
        let valid: Bool
        switch header.kind {
        case .connect:
            valid = payload == nil || payload?.objectValue != nil
        case .disconnect:
            valid = payload == nil
        case .connectError:
            valid = payload?.objectValue != nil || payload?.stringValue != nil
        case .event, .binaryEvent:
            if case .array(let elements)? = payload, let first = elements.first {
                switch first {
                case .string, .integer, .double: valid = true
                default: valid = false
                }
            } else {
                valid = false
            }
        case .ack, .binaryAck:
            valid = header.id != nil && payload?.arrayValue != nil
        }
        guard valid else {
            throw RealtimeError(.protocolViolation, "invalid payload for Socket.IO packet type \(header.kind.rawValue)",
                                context: .init(detail: header.json.map { String($0.prefix(64)) }))
        }
    }
}
