import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

@Suite("HTTP response reader (long-polling through a proxy)")
struct HTTPResponseReaderTests {
    /// The response read whole, one byte at a time and split at every offset (with the stream's end after
    /// the last byte when the response needs it): every way must give the same result.
    private func read(_ text: String, maximumHeadSize: Int = 65_536,
                      maximumBodySize: Int = 1 << 20) -> [Result<HTTPResponse, RealtimeError>] {
        let bytes = Array(text.utf8)
        var pieces: [[[UInt8]]] = [[bytes], bytes.map { [$0] }]
        for cut in 1..<max(bytes.count, 1) { pieces.append([Array(bytes[..<cut]), Array(bytes[cut...])]) }
        return pieces.map { parts in
            var reader = HTTPResponseReader(maximumHeadSize: maximumHeadSize, maximumBodySize: maximumBodySize)
            do throws(RealtimeError) {
                for part in parts {
                    if case .complete(let response) = try reader.receive(part) { return .success(response) }
                }
                return .success(try reader.endOfStream())
            } catch {
                return .failure(error)
            }
        }
    }

    private func body(_ results: [Result<HTTPResponse, RealtimeError>]) -> Set<String> {
        Set(results.map { result in
            switch result {
            case .success(let response): "\(response.status):\(String(decoding: response.body, as: UTF8.self))"
            case .failure(let error): "error \(error.code)"
            }
        })
    }

    @Test("Content-Length, chunked (extensions, trailers), until close, and no body for 204")
    func framing() {
        #expect(body(read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")) == ["200:hello"])
        #expect(body(read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n"))
            == ["200:hello world"])
        #expect(body(read("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")) == ["200:until the end"])
        #expect(body(read("HTTP/1.1 204 No Content\r\n\r\n")) == ["204:"])
        #expect(body(read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) == ["200:ok"])
        #expect(body(read("HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nbad")) == ["400:bad"])
        // Bytes past the body are never read, whichever read brings them.
        #expect(body(read("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nxyz")) == ["200:xy"])
    }

    @Test("headers are kept with lower-cased names")
    func headers() throws {
        var reader = HTTPResponseReader(maximumBodySize: 100)
        let progress = try reader.receive(Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n".utf8))
        #expect(progress == .complete(HTTPResponse(status: 200, headers: [HTTPHeader("content-type", "text/plain"),
                                                                          HTTPHeader("content-length", "0")],
                                                   body: Data())))
    }

    @Test("cut short, malformed or over its limits: typed errors", arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", RealtimeError.Code.transportFailed),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", .transportFailed),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", .transportFailed),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx", .transportFailed),
        ("HTTP/1.1 200 OK\r\nCont", .transportFailed),
        ("garbage\r\n\r\n", .transportFailed),
        ("", .transportFailed),
        ("HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n", .limitExceeded),
        ("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "x", count: 65), .limitExceeded),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n", .limitExceeded),
    ])
    func failures(text: String, code: RealtimeError.Code) {
        #expect(body(read(text, maximumBodySize: 64)) == ["error \(code)"])
    }

    // Found by the proxy-answer fuzz target: a line over its limit passed when it arrived whole and failed
    // when cut before its LF.
    @Test("a chunk size line or a trailer over its limit fails however the bytes are cut; one at the limit passes")
    func lineLimits() {
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        // The last chunk's size line, `bytes` long before its LF: "0;xx…x\r".
        func lastChunk(_ bytes: Int) -> String { "0;" + String(repeating: "x", count: bytes - 3) + "\r\n\r\n" }
        let limit = HTTPResponseReader.maximumChunkSizeLine
        #expect(body(read(chunked + lastChunk(limit))) == ["200:"])
        #expect(body(read(chunked + lastChunk(limit + 1))) == ["error \(RealtimeError.Code.transportFailed)"])
        let trailer = "X-T: " + String(repeating: "t", count: 100)
        #expect(body(read(chunked + "0\r\n" + trailer + "\r\n\r\n", maximumHeadSize: 128)) == ["200:"])
        #expect(body(read(chunked + "0\r\n" + trailer + "\r\n\r\n", maximumHeadSize: 64))
                == ["error \(RealtimeError.Code.limitExceeded)"])
    }

    @Test("a head over its limit")
    func headLimit() {
        var reader = HTTPResponseReader(maximumHeadSize: 64, maximumBodySize: 64)
        #expect(throws: RealtimeError.self) {
            _ = try reader.receive(Array(("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 80)).utf8))
        }
    }
}
