import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Pusher auth endpoint requests and responses")
struct PusherAuthEndpointTests {
    let url = URL(string: "https://example.com/pusher/auth")!

    @Test("Pusher posts a form with socket_id, channel_name, custom params and headers")
    func pusherForm() {
        let request = PusherAuthEndpoint.httpRequest(
            PusherAuthRequest(connectionID: "1.2", channel: "private-a b", vendor: .pusher), to: url,
            headers: [HTTPHeader("Authorization", "Bearer t")], params: ["team": "x&y"])
        #expect(request.method == "POST")
        #expect(request.url == url)
        #expect(request.timeout == .seconds(20))
        #expect(request.headers == [HTTPHeader("Content-Type", "application/x-www-form-urlencoded"),
                                    HTTPHeader("Accept", "application/json"), HTTPHeader("Authorization", "Bearer t")])
        #expect(request.body.map { String(decoding: $0, as: UTF8.self) }
                == "channel_name=private-a%20b&socket_id=1.2&team=x%26y")
    }

    @Test("Bird posts JSON with connection_id and channel_name")
    func birdJSON() throws {
        let request = PusherAuthEndpoint.httpRequest(
            PusherAuthRequest(connectionID: "conn-1", channel: "private-r", vendor: .bird), to: url,
            headers: [], params: [:])
        #expect(request.headers.first { $0.name == "Content-Type" }?.value == "application/json")
        let body = try JSONValue.parse(request.body ?? Data())
        #expect(body == ["connection_id": "conn-1", "channel_name": "private-r"])
    }

    @Test("the app's headers replace the defaults of the same name, whatever the case")
    func headersReplaceDefaults() {
        let request = PusherAuthEndpoint.httpRequest(
            PusherAuthRequest(connectionID: "1.2", channel: "private-a", vendor: .pusher), to: url,
            headers: [HTTPHeader("accept", "text/plain"), HTTPHeader("X-A", "1"), HTTPHeader("x-a", "2")], params: [:])
        #expect(request.headers == [HTTPHeader("Content-Type", "application/x-www-form-urlencoded"),
                                    HTTPHeader("accept", "text/plain"), HTTPHeader("x-a", "2")])
    }

    @Test("post sends the built request through the client and reads its answer")
    func postThroughClient() async throws {
        let auth = PusherAuthRequest(connectionID: "1.2", channel: "presence-r", vendor: .pusher)
        let client = ScriptedHTTPClient { _ in
            .success(HTTPResponse(status: 200, body: Data(#"{"auth":"k:s","channel_data":"{\"user_id\":1}"}"#.utf8)))
        }
        let answer = try await PusherAuthEndpoint.post(auth, to: url, headers: [HTTPHeader("Authorization", "Bearer t")],
                                                       params: ["team": "x"], client: client)
        #expect(answer == PusherAuthorization(auth: "k:s", channelData: #"{"user_id":1}"#))
        #expect(client.requests == [PusherAuthEndpoint.httpRequest(auth, to: url, headers: [HTTPHeader("Authorization", "Bearer t")],
                                                                   params: ["team": "x"])])
    }

    @Test("post: a status outside 2xx is authorizationFailed with the status; no answer names the endpoint")
    func postFailures() async {
        let auth = PusherAuthRequest(connectionID: "1.2", channel: "private-r", vendor: .pusher)
        let refused = ScriptedHTTPClient { _ in .success(HTTPResponse(status: 403, body: Data("no".utf8))) }
        do {
            _ = try await PusherAuthEndpoint.post(auth, to: url, headers: [], params: [:], client: refused)
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .authorizationFailed)
            #expect(error.context.httpStatus == 403)
        }
        let unreachable = ScriptedHTTPClient { _ in
            .failure(RealtimeError(.transportFailed, "Could not connect to the server.",
                                   context: .init(detail: "NSURLErrorDomain -1004")))
        }
        do {
            _ = try await PusherAuthEndpoint.post(auth, to: url, headers: [], params: [:], client: unreachable)
            Issue.record("expected a failure")
        } catch {
            #expect(error.code == .authorizationFailed)
            #expect(error.message == "the auth endpoint could not be reached")
            #expect(error.context.channel == "private-r")
            #expect(error.context.detail == "https://example.com/pusher/auth: Could not connect to the server.")
        }
    }

    @Test("responses: non-2xx is authorizationFailed with the status; bodies are read by vendor keys")
    func responses() throws {
        let channelRequest = PusherAuthRequest(connectionID: "1.2", channel: "presence-r", vendor: .pusher)
        #expect(throws: RealtimeError.self) {
            _ = try PusherAuthEndpoint.decode(Data("nope".utf8), status: 403, auth: channelRequest, endpoint: url)
        }
        do {
            _ = try PusherAuthEndpoint.decode(Data("nope".utf8), status: 403, auth: channelRequest, endpoint: url)
        } catch {
            #expect(error.code == .authorizationFailed)
            #expect(error.context.httpStatus == 403)
        }
        let ok = try PusherAuthEndpoint.decode(Data(#"{"auth":"k:s","channel_data":"{\"user_id\":1}"}"#.utf8),
                                               status: 201, auth: channelRequest, endpoint: url)
        #expect(ok == PusherAuthorization(auth: "k:s", channelData: #"{"user_id":1}"#))
        let bird = try PusherAuthEndpoint.decode(Data(#"{"auth":"k:s","member_data":"{}"}"#.utf8), status: 200,
                                                 auth: PusherAuthRequest(connectionID: "c", channel: nil, vendor: .bird),
                                                 endpoint: url)
        #expect(bird.userData == "{}")
        #expect(throws: RealtimeError.self) {
            _ = try PusherAuthEndpoint.decode(Data(#"{"token":"x"}"#.utf8), status: 200, auth: channelRequest, endpoint: url)
        }
        #expect(throws: RealtimeError.self) {
            _ = try PusherAuthEndpoint.decode(Data(#"{"auth":"k:s"}"#.utf8), status: 200,
                                              auth: PusherAuthRequest(connectionID: "c", channel: nil, vendor: .pusher),
                                              endpoint: url)
        }
    }
}
