import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("HTTP client seam")
struct HTTPClientTests {
    @Test("a client that cannot apply the transport's policy refuses https before any request, and only https")
    func refusesHTTPS() {
        let client = URLSessionHTTPClient(trust: .refusesHTTPS)
        defer { client.finish() }
        let https = URL(string: "https://example.com/socket.io/")!
        #expect(client.refusal(for: https)?.code == .unsupported)
        #expect(client.refusal(for: URL(string: "http://127.0.0.1/")!) == nil)
        #expect(URLSessionHTTPClient().refusal(for: https) == nil)
        let result = Locked<Result<HTTPResponse, RealtimeError>?>(nil)
        client.start(HTTPRequest(method: "GET", url: https)) { answer in result.withLock { $0 = answer } }
        guard case .failure(let error)? = result.withLock({ $0 }) else {
            Issue.record("expected an immediate refusal")
            return
        }
        #expect(error.code == .unsupported)
        #expect(error.context.detail == "example.com")
    }

    @Test("nothing starts once the client is finished")
    func finishedClientStartsNothing() {
        let client = URLSessionHTTPClient()
        client.finish()
        client.finish()  // twice is harmless
        let result = Locked<Result<HTTPResponse, RealtimeError>?>(nil)
        client.start(HTTPRequest(method: "GET", url: URL(string: "http://127.0.0.1:9/")!)) { answer in
            result.withLock { $0 = answer }
        }
        guard case .failure(let error)? = result.withLock({ $0 }) else {
            Issue.record("expected an immediate failure")
            return
        }
        #expect(error.code == .transportFailed)
    }

    @Test("setValue(_:forName:) keeps one header of a name, whatever its case; plain headers keep repeats")
    func headerReplacement() {
        var headers = [HTTPHeader("X-Twice", "1"), HTTPHeader("content-type", "a"), HTTPHeader("X-Twice", "2")]
        headers.setValue("b", forName: "Content-Type")
        #expect(headers == [HTTPHeader("X-Twice", "1"), HTTPHeader("X-Twice", "2"), HTTPHeader("Content-Type", "b")])
        headers.setValue("3", forName: "x-twice")
        #expect(headers == [HTTPHeader("Content-Type", "b"), HTTPHeader("x-twice", "3")])
    }

    @Test("send(_:) hands back the response, and the client's failure as a typed error")
    func asyncSend() async throws {
        let request = HTTPRequest(method: "POST", url: URL(string: "http://127.0.0.1/auth")!, body: Data("x".utf8))
        let ok = ScriptedHTTPClient { _ in .success(HTTPResponse(status: 201, body: Data("y".utf8))) }
        let response = try await ok.send(request)
        #expect(response == HTTPResponse(status: 201, body: Data("y".utf8)))
        #expect(ok.requests == [request])
        let failing = ScriptedHTTPClient { _ in .failure(RealtimeError(.timedOut, "slow")) }
        await #expect(throws: RealtimeError(.timedOut, "slow")) { try await failing.send(request) }
    }
}
