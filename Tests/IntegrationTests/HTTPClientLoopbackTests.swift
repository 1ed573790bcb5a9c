import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeSocketIOTesting
import Testing

/// The URLSession side of the HTTP seam against a real loopback server (the embedded Socket.IO server,
/// which lives in a dialect kit, hence here rather than beside the seam's unit tests).
@Suite("HTTP client seam over loopback")
struct HTTPClientLoopbackTests {
    @Test("URLSession round trip: a loopback server's answer comes back with its status and headers")
    func loopbackRoundTrip() async throws {
        let server = try SocketIOServer()
        defer { server.stop() }
        let client = URLSessionHTTPClient()
        defer { client.finish() }
        // The embedded server refuses long-polling with HTTP 400.
        let url = URL(string: "socket.io/?EIO=4&transport=polling", relativeTo: server.url)!.absoluteURL
        let response = try await client.send(HTTPRequest(method: "GET", url: url, timeout: .seconds(10)))
        #expect(response.status == 400)
        #expect(!response.headers.isEmpty)
        #expect(response.headers.allSatisfy { $0.name == $0.name.lowercased() })
    }
}
