import Foundation
import RealtimeCore

/// One HTTP/1.1 response read from a byte stream, as a value with no I/O: bytes in through
/// ``receive(_:)``, the response out once its body is complete (RFC 9112 §6.3): no body for 204 and 304,
/// a chunked body, a `Content-Length` body, or a body that runs to the end of the stream
/// (``endOfStream()``). Interim 1xx heads are skipped; bytes after the body are ignored (the request said
/// `Connection: close`). Malformed input fails with `.transportFailed`, a head or body over its limit with
/// `.limitExceeded`.
package struct HTTPResponseReader {
    package enum Progress: Equatable {
        case needsMore
        case complete(HTTPResponse)
    }

    private enum Body {
        case length(Int)
        case chunked
        case untilClose
    }

    /// How a chunked body is being read.
    private enum ChunkStep {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailers
    }

    package let maximumHeadSize: Int
    package let maximumBodySize: Int
    private var buffer: [UInt8] = []
    /// The head's end is not before this index.
    private var scannedUpTo = 0
    private var head: (status: Int, headers: [HTTPHeader])?
    private var body: Body = .untilClose
    private var content: [UInt8] = []
    private var chunkStep = ChunkStep.size
    private var isFinished = false

    package init(maximumHeadSize: Int = 65_536, maximumBodySize: Int) {
        self.maximumHeadSize = maximumHeadSize
        self.maximumBodySize = maximumBodySize
    }

    /// Takes the next bytes of the stream.
    package mutating func receive(_ bytes: UnsafeRawBufferPointer) throws(RealtimeError) -> Progress {
        try receive(appending: bytes)
    }

    package mutating func receive(_ bytes: [UInt8]) throws(RealtimeError) -> Progress {
        try receive(appending: bytes)
    }

    private mutating func receive(appending bytes: some Sequence<UInt8>) throws(RealtimeError) -> Progress {
        guard !isFinished else { throw RealtimeError(.transportFailed, "the server sent bytes after its response") }
        buffer.append(contentsOf: bytes)
        if head == nil {
            guard try readHead() else { return .needsMore }
        }
        return try readBody()
    }

    /// The stream ended: the response, when its body runs to the end; otherwise why it is incomplete.
    package mutating func endOfStream() throws(RealtimeError) -> HTTPResponse {
        guard let head, !isFinished else {
            throw RealtimeError(.transportFailed, buffer.isEmpty
                                ? "the server closed the connection without answering"
                                : "the server closed the connection in the middle of its response head")
        }
        guard case .untilClose = body else {
            throw RealtimeError(.transportFailed, "the server closed the connection in the middle of the response body",
                                context: .init(httpStatus: head.status))
        }
        content += buffer
        buffer = []
        try checkBodySize()
        return finish(head)
    }

    // MARK: Head

    /// Parses the final head when it is complete (skipping 1xx ones); false when more bytes are needed.
    private mutating func readHead() throws(RealtimeError) -> Bool {
        while true {
            guard let end = HTTPHead.endIndex(in: buffer, searchingFrom: scannedUpTo) else {
                guard buffer.count <= maximumHeadSize else { throw headTooLarge }
                scannedUpTo = buffer.count
                return false
            }
            guard end <= maximumHeadSize else { throw headTooLarge }
            let parsed = try HTTPHead.parse(buffer[..<(end - 2)], failure: .transportFailed)
            let status = try Self.status(of: parsed.startLine)
            buffer.removeFirst(end)
            scannedUpTo = 0
            if (100..<200).contains(status) { continue }  // interim: the final head follows
            head = (status, parsed.headers)
            if status == 204 || status == 304 {
                body = .length(0)
            } else if parsed.tokens("transfer-encoding").last == "chunked" {
                body = .chunked
            } else if let text = parsed.value("content-length") {
                // Repeated equal values (`5, 5`) are one length; anything else is a framing error.
                let values = Set(text.split(separator: ",").map { $0.trimmingHTTPWhitespace() })
                guard values.count == 1, let length = values.first.flatMap({ Int($0) }), length >= 0 else {
                    throw RealtimeError(.transportFailed, "the response has an invalid Content-Length",
                                        context: .init(httpStatus: status, detail: text))
                }
                body = .length(length)
            } else {
                body = .untilClose
            }
            return true
        }
    }

    private var headTooLarge: RealtimeError {
        RealtimeError(.limitExceeded, "the response head exceeds \(maximumHeadSize) bytes")
    }

    private static func status(of line: String) throws(RealtimeError) -> Int {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0", parts[1].count == 3,
              parts[1].allSatisfy(\.isASCII), let status = Int(parts[1]), status >= 100 else {
            throw RealtimeError(.transportFailed, "the response has a malformed status line",
                                context: .init(detail: HTTPHead.printable(line.utf8, limit: 80)))
        }
        return status
    }

    // MARK: Body

    private mutating func readBody() throws(RealtimeError) -> Progress {
        guard let head else { return .needsMore }
        switch body {
        case .length(let length):
            guard length <= maximumBodySize else { throw bodyTooLarge }
            guard buffer.count >= length else { return .needsMore }
            // Bytes past the body are not read (`Connection: close`), whichever read brings them.
            content = Array(buffer.prefix(length))
            buffer = []
            return .complete(finish(head))
        case .untilClose:
            guard content.count + buffer.count <= maximumBodySize else { throw bodyTooLarge }
            return .needsMore
        case .chunked:
            return try readChunks(head)
        }
    }

    private mutating func readChunks(_ head: (status: Int, headers: [HTTPHeader])) throws(RealtimeError) -> Progress {
        var index = 0
        defer { buffer.removeFirst(index) }
        while true {
            switch chunkStep {
            case .size:
                // One limit for a whole line and a partial one, so the outcome does not depend on how the
                // stream was cut.
                let sizeLineEnd = buffer[index...].firstIndex(of: 10)
                guard (sizeLineEnd ?? buffer.count) - index <= Self.maximumChunkSizeLine else {
                    throw badChunk("a chunk size line is too long")
                }
                guard let lineEnd = sizeLineEnd else { return .needsMore }
                var line = buffer[index..<lineEnd]
                if line.last == 13 { line = line.dropLast() }
                let digits = String(decoding: line, as: UTF8.self).split(separator: ";", maxSplits: 1).first
                    .map { $0.trimmingHTTPWhitespace() } ?? ""
                guard !digits.isEmpty, digits.count <= 15, let size = Int(digits, radix: 16), size >= 0 else {
                    throw badChunk("a chunk size is malformed")
                }
                index = lineEnd + 1
                guard content.count + size <= maximumBodySize else { throw bodyTooLarge }
                chunkStep = size == 0 ? .trailers : .data(remaining: size)
            case .data(let remaining):
                let taken = min(remaining, buffer.count - index)
                content.append(contentsOf: buffer[index..<index + taken])
                index += taken
                guard taken == remaining else {
                    chunkStep = .data(remaining: remaining - taken)
                    return .needsMore
                }
                chunkStep = .dataEnd
            case .dataEnd:
                guard buffer.count - index >= 2 || (buffer.count - index == 1 && buffer[index] == 10) else {
                    return .needsMore
                }
                if buffer[index] == 10 {
                    index += 1
                } else {
                    guard buffer[index] == 13, buffer[index + 1] == 10 else { throw badChunk("a chunk does not end with CRLF") }
                    index += 2
                }
                chunkStep = .size
            case .trailers:
                let trailerEnd = buffer[index...].firstIndex(of: 10)
                guard (trailerEnd ?? buffer.count) - index <= maximumHeadSize else { throw headTooLarge }
                guard let lineEnd = trailerEnd else { return .needsMore }
                let isEmpty = lineEnd == index || (lineEnd == index + 1 && buffer[index] == 13)
                index = lineEnd + 1
                guard isEmpty else { continue }  // a trailer field: not kept
                index = buffer.count  // as after a Content-Length body, what follows is not read
                return .complete(finish(head))
            }
        }
    }

    /// The longest chunk size line (size, extensions, CR) accepted, without its LF.
    static let maximumChunkSizeLine = 1024

    private func badChunk(_ message: String) -> RealtimeError {
        RealtimeError(.transportFailed, "the chunked response body is malformed: \(message)",
                      context: .init(httpStatus: head?.status))
    }

    private var bodyTooLarge: RealtimeError {
        RealtimeError(.limitExceeded, "the response body exceeds \(maximumBodySize) bytes", context: .init(httpStatus: head?.status))
    }

    private func checkBodySize() throws(RealtimeError) {
        if content.count > maximumBodySize { throw bodyTooLarge }
    }

    private mutating func finish(_ head: (status: Int, headers: [HTTPHeader])) -> HTTPResponse {
        isFinished = true
        let response = HTTPResponse(status: head.status, headers: head.headers, body: Data(content))
        content = []
        return response
    }
}
