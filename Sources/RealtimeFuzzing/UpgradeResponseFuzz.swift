import Foundation
import RealtimeCore
import RealtimeWebSocket

/// The client's parser of the HTTP upgrade response. Input: a cut-seed byte, then the server's bytes.
///
/// Properties: the outcome (open, rejection, malformed, waiting) does not depend on how the bytes are
/// cut; an accepted response really is `HTTP/1.1 101` with our accept value, the leftover is exactly what
/// followed the head, and the subprotocol is one we offered; errors carry the documented codes.
enum UpgradeResponseFuzz {
    /// A fixed key, so that seeds can carry its accept value (`s3pPLMBiTxaQ9kYGzzhZRbK+xOo=`).
    static let key = Array(Data(base64Encoded: "dGhlIHNhbXBsZSBub25jZQ==")!)
    static let subprotocols = ["chat", "actioncable-v1-json"]

    static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var input = FuzzInput(bytes)
        var cutRandom = SplitMix64(seed: UInt64(input.byte()))
        let response = input.rest()

        let whole = parse(response, cuts: [response.count])
        var cuts: [Int] = []
        var left = response.count
        while left > 0 {
            let size = min(left, Int(cutRandom.next() % 40) + 1)
            cuts.append(size)
            left -= size
        }
        let pieces = parse(response, cuts: cuts)
        try require(whole == pieces, "cut reads end differently:\n whole: \(whole)\n cut:   \(pieces)")

        switch whole {
        case .opened(let subprotocol, let leftover):
            let head = try acceptedHead(response)
            try require(leftover == Array(response[head.end...]), "the leftover is not what followed the head")
            try require(subprotocol.map(subprotocols.contains) ?? true, "a subprotocol we did not offer: \(subprotocol ?? "")")
        case .failed(let code, let status):
            try require([RealtimeError.Code.handshakeRejected, .handshakeInvalid].contains(code), "failed with \(code)")
            if code == .handshakeRejected { try require(status.map { $0 != 101 && $0 >= 100 } ?? false, "rejected with status \(status.map(String.init) ?? "none")") }
        case .waiting(let closedError):
            try require([RealtimeError.Code.handshakeRejected, .handshakeInvalid, .transportFailed].contains(closedError),
                        "closing early reports \(closedError)")
        }
    }

    enum Outcome: Equatable, CustomStringConvertible {
        case opened(subprotocol: String?, leftover: [UInt8])
        case failed(RealtimeError.Code, status: Int?)
        /// Needs more bytes; the error a close now would report.
        case waiting(closedError: RealtimeError.Code)

        var description: String {
            switch self {
            case .opened(let subprotocol, let leftover): "opened \(subprotocol ?? "-") +\(leftover.count)"
            case .failed(let code, let status): "failed \(code) \(status.map(String.init) ?? "-")"
            case .waiting(let code): "waiting (\(code))"
            }
        }
    }

    static func parse(_ response: [UInt8], cuts: [Int]) -> Outcome {
        var handshake = WebSocketClientHandshake(url: URL(string: "ws://127.0.0.1:9/socket")!,
                                                 subprotocols: subprotocols, key: key, maximumResponseSize: 2_048)
        var offset = 0
        for size in cuts {
            let result = response[offset..<offset + size].withUnsafeBytes { piece in
                Result(catching: { () throws(RealtimeError) in try handshake.receive(piece) })
            }
            offset += size
            switch result {
            case .success(let opened?):
                // The rest of this read is already in `leftover`; later reads would be frames.
                let later = Array(response[offset...])
                return .opened(subprotocol: opened.info.subprotocol, leftover: opened.leftover + later)
            case .success(nil):
                continue
            case .failure(let error):
                return .failed(error.code, status: error.context.httpStatus)
            }
        }
        return .waiting(closedError: handshake.errorForClosedConnection().code)
    }

    /// Checks by a separate reading that an accepted head is `HTTP/1.1 101` with exactly one
    /// Sec-WebSocket-Accept carrying our value; returns where it ends.
    static func acceptedHead(_ response: [UInt8]) throws(FuzzFailure) -> (lines: [String], end: Int) {
        var end: Int?
        var index = 0
        while index + 4 <= response.count {
            if response[index..<index + 4].elementsEqual([13, 10, 13, 10]) {
                end = index + 4
                break
            }
            index += 1
        }
        guard let end else { throw FuzzFailure("accepted a response without the end of its head") }
        // Split as bytes: a String takes "\r\n" for one Character.
        let lines = response[..<end].split(separator: 10).map { line in
            String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
        }
        try require(lines.first?.hasPrefix("HTTP/1.1 101") == true, "accepted with status line \(lines.first ?? "")")
        let expected = WebSocketServerHandshake.acceptValue(forKey: Data(key).base64EncodedString())
        let accepts = lines.dropFirst().compactMap { line -> String? in
            guard let colon = line.firstIndex(of: ":"),
                  line[..<colon].lowercased() == "sec-websocket-accept" else { return nil }
            return line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        }
        try require(accepts == [expected], "accepted with Sec-WebSocket-Accept \(accepts), expected \(expected)")
        return (lines, end)
    }
}
