import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import Testing

@Suite("Pusher auth endpoint requests and responses")
struct PusherAuthEndpointTests {
    let url = URL(string: "https://example.com/pusher/auth")!

    @Test("Pusher posts a form with socket_id, channel_name, custom params and headers")
    func pusherForm() {
        let request = PusherAuthEndpoint.urlRequest(
            PusherAuthRequest(connectionID: "1.2", channel: "private-a b", vendor: .pusher), to: url,
            headers: [HTTPHeader("Authorization", "Bearer t")], params: ["team": "x&y"])
        #expect(request.httpMethod == "POST")
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer t")
        #expect(request.httpBody.map { String(decoding: $0, as: UTF8.self) }
                == "channel_name=private-a%20b&socket_id=1.2&team=x%26y")
    }

    @Test("Bird posts JSON with connection_id and channel_name")
    func birdJSON() throws {
        let request = PusherAuthEndpoint.urlRequest(
            PusherAuthRequest(connectionID: "conn-1", channel: "private-r", vendor: .bird), to: url,
            headers: [], params: [:])
        #expect(request.value(forHTTPHeaderField: "Content-Type") == "application/json")
        let body = try JSONValue.parse(request.httpBody ?? Data())
        #expect(body == ["connection_id": "conn-1", "channel_name": "private-r"])
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
