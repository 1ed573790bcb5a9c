import Foundation
import RealtimeCore
import RealtimeWebSocket

/// What an HTTP proxy sends back: the answer to `CONNECT` (``ProxyTunnelHandshake``) and, through the
/// tunnel, a long-polling response (`HTTPResponseReader`). Input: a cut-seed byte, a mode byte (even: the
/// `CONNECT` answer; odd: a response), then the peer's bytes.
///
/// Properties: the outcome does not depend on how the bytes are cut; an opened tunnel answered `HTTP/1.x
/// 2xx` and its leftover is exactly what followed the head; a refusal or bad answer is `.proxyFailed`; a
/// response's body stays within its limit and its errors carry the documented codes.
enum ProxyAnswerFuzz {
    static let maximumAnswerSize = 2_048
    static let maximumBodySize = 1_024

    static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var input = FuzzInput(bytes)
        var cutRandom = SplitMix64(seed: UInt64(input.byte()))
        let tunnel = input.byte() & 1 == 0
        let answer = input.rest()
        var cuts: [Int] = []
        var left = answer.count
        while left > 0 {
            let size = min(left, Int(cutRandom.next() % 40) + 1)
            cuts.append(size)
            left -= size
        }
        if tunnel {
            try checkTunnel(answer, cuts: cuts)
        } else {
            try checkResponse(answer, cuts: cuts)
        }
    }

    // MARK: CONNECT

    enum TunnelOutcome: Equatable, CustomStringConvertible {
        case established(leftover: [UInt8])
        case failed(RealtimeError.Code, status: Int?)
        case waiting(closedError: RealtimeError.Code)

        var description: String {
            switch self {
            case .established(let leftover): "established +\(leftover.count)"
            case .failed(let code, let status): "failed \(code) \(status.map(String.init) ?? "-")"
            case .waiting(let code): "waiting (\(code))"
            }
        }
    }

    static func tunnelOutcome(_ answer: [UInt8], cuts: [Int]) -> TunnelOutcome {
        var handshake = ProxyTunnelHandshake(proxy: ProxyConfiguration(host: "proxy.test", port: 3128),
                                             targetHost: "origin.test", targetPort: 443,
                                             maximumAnswerSize: maximumAnswerSize)
        var offset = 0
        for size in cuts {
            let progress = handshake.receive(Array(answer[offset..<offset + size]))
            offset += size
            switch progress {
            case .needsMore: continue
            case .established(let leftover): return .established(leftover: leftover + answer[offset...])
            case .failed(let error): return .failed(error.code, status: error.context.httpStatus)
            }
        }
        return .waiting(closedError: handshake.errorForEndOfStream().code)
    }

    static func checkTunnel(_ answer: [UInt8], cuts: [Int]) throws(FuzzFailure) {
        let whole = tunnelOutcome(answer, cuts: answer.isEmpty ? [] : [answer.count])
        let pieces = tunnelOutcome(answer, cuts: cuts)
        try require(whole == pieces, "cut reads end differently:\n whole: \(whole)\n cut:   \(pieces)")
        switch whole {
        case .established(let leftover):
            let headEnd = answer.count - leftover.count
            let head = answer[..<headEnd]
            try require(head.starts(with: Array("HTTP/1.".utf8)), "opened on an answer that is not HTTP/1.x")
            try require(head.last == 10 && (head.dropLast().last == 10 || head.dropLast().suffix(2).elementsEqual([10, 13])),
                        "the leftover does not start right after an empty line")
            // The final status line (after any 1xx) says 2xx.
            let lines = head.split(separator: 10, omittingEmptySubsequences: false)
            let finalStatus = lines.reversed().first { $0.starts(with: Array("HTTP/1.".utf8)) }
            try require(finalStatus.map { $0.count >= 12 && $0[$0.startIndex + 9] == UInt8(ascii: "2") } ?? false,
                        "opened on a status line that is not 2xx")
        case .failed(let code, let status):
            try require(code == .proxyFailed, "failed with \(code)")
            if let status { try require((100...999).contains(status) && !(200..<300).contains(status), "refused with \(status)") }
        case .waiting(let code):
            try require(code == .proxyFailed, "closing early reports \(code)")
        }
    }

    // MARK: Responses

    enum ResponseOutcome: Equatable, CustomStringConvertible {
        case complete(status: Int, body: [UInt8])
        case failed(RealtimeError.Code)

        var description: String {
            switch self {
            case .complete(let status, let body): "complete \(status) +\(body.count)"
            case .failed(let code): "failed \(code)"
            }
        }
    }

    static func responseOutcome(_ answer: [UInt8], cuts: [Int]) -> ResponseOutcome {
        var reader = HTTPResponseReader(maximumHeadSize: maximumAnswerSize, maximumBodySize: maximumBodySize)
        var offset = 0
        do throws(RealtimeError) {
            for size in cuts {
                let progress = try reader.receive(Array(answer[offset..<offset + size]))
                offset += size
                if case .complete(let response) = progress { return .complete(status: response.status, body: Array(response.body)) }
            }
            let response = try reader.endOfStream()
            return .complete(status: response.status, body: Array(response.body))
        } catch {
            return .failed(error.code)
        }
    }

    static func checkResponse(_ answer: [UInt8], cuts: [Int]) throws(FuzzFailure) {
        let whole = responseOutcome(answer, cuts: answer.isEmpty ? [] : [answer.count])
        let pieces = responseOutcome(answer, cuts: cuts)
        try require(whole == pieces, "cut reads end differently:\n whole: \(whole)\n cut:   \(pieces)")
        switch whole {
        case .complete(let status, let body):
            try require((200...999).contains(status), "completed with status \(status)")
            try require(body.count <= maximumBodySize, "a body of \(body.count) bytes")
            try require(answer.starts(with: Array("HTTP/1.".utf8)), "completed on an answer that is not HTTP/1.x")
        case .failed(let code):
            try require([RealtimeError.Code.transportFailed, .limitExceeded].contains(code), "failed with \(code)")
        }
    }
}
