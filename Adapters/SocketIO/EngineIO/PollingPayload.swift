import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// Engine.IO v4 long-polling bodies: packets joined by the record separator 0x1E, binary packets written
/// as `b` followed by base64.
package enum PollingPayload {
    /// The record separator between packets.
    package static let separator: UInt8 = 0x1E

    /// Splits a polling body into frames, in order: text packets stay text, `b…` packets become binary.
    package static func decode(_ body: Data, maximumPackets: Int = 100_000) throws(RealtimeError) -> [TransportFrame] {
        var frames: [TransportFrame] = []
        var start = body.startIndex
        var index = body.startIndex
        func emit(_ range: Range<Data.Index>) throws(RealtimeError) {
            guard frames.count < maximumPackets else {
                throw RealtimeError(.limitExceeded, "polling payload has more than \(maximumPackets) packets")
            }
            let slice = body[range]
            guard let first = slice.first else {
                throw RealtimeError(.protocolViolation, "empty packet in polling payload")
            }
            if first == UInt8(ascii: "b") {
                guard let data = Data(base64Encoded: body[range.dropFirst()]) else {
                    throw RealtimeError(.protocolViolation, "bad base64 in polling payload")
                }
                frames.append(.binary(data))
            } else {
                guard let text = String(data: slice, encoding: .utf8) else {
                    throw RealtimeError(.invalidUTF8, "polling packet is not valid UTF-8")
                }
                frames.append(.text(text))
            }
        }
        while index < body.endIndex {
            if body[index] == separator {
                try emit(start..<index)
                start = body.index(after: index)
            }
            index = body.index(after: index)
        }
        if !body.isEmpty {
            try emit(start..<body.endIndex)
        }
        return frames
    }

    /// The body for `frames`, and whether it holds binary packets (sent as `application/octet-stream`).
    package static func encode(_ frames: [TransportFrame]) -> (body: Data, hasBinary: Bool) {
        var body = Data()
        var hasBinary = false
        for (index, frame) in frames.enumerated() {
            if index > 0 { body.append(separator) }
            switch frame {
            case .text(let text):
                body.append(contentsOf: text.utf8)
            case .binary(let data):
                hasBinary = true
                body.append(UInt8(ascii: "b"))
                body.append(data.base64EncodedData())
            }
        }
        return (body, hasBinary)
    }

    /// The encoded size of one frame inside a payload, without its separator.
    package static func encodedSize(of frame: TransportFrame) -> Int {
        switch frame {
        case .text(let text): return text.utf8.count
        case .binary(let data): return 1 + (data.count + 2) / 3 * 4
        }
    }
}
