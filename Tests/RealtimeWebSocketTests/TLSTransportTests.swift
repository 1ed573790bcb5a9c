import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import Testing
@testable import RealtimeWebSocket

/// `wss://` through the transport: against `openssl s_server` for verification, and against our own TLS
/// WebSocket server for a full echo.
@Suite("WebSocketTransport over TLS")
struct TLSTransportTests {
    let certificates: TLSTestCertificates

    init() throws {
        certificates = try TLSTestCertificates.shared.get()
    }

    func transport(trustingTestCA: Bool = true, recordReading: TLSRecordReading = .openSSL) -> WebSocketTransport {
        let roots: [TLSPEMSource] = trustingTestCA ? [.file(certificates.caCertificate)] : []
        return WebSocketTransport(configuration: .init(tls: TLSConfiguration(trustsSystemRoots: true,
                                                                              additionalTrustRoots: roots,
                                                                              recordReading: recordReading)))
    }

    func closure(opening url: String, with transport: WebSocketTransport) async -> TransportClosure? {
        let events = EventQueue<TransportEvent>()
        let connection = transport.open(ConnectionRequest(url: URL(string: url)!)) { events.push($0) }
        let (_, closure) = await drainUntilClosed(events)
        withExtendedLifetime(connection) {}
        return closure
    }

    @Test("trusted CA: TLS passes against s_server (which then answers the upgrade with HTTP 200)")
    func trustedAgainstSServer() async throws {
        let server = try OpenSSLServer(certificate: certificates.leafCertificate, key: certificates.leafKey)
        defer { server.stop() }
        let result = await closure(opening: "wss://localhost:\(server.port)/", with: transport())
        // Getting an HTTP answer proves the TLS handshake and verification succeeded.
        #expect(result?.error?.code == .handshakeRejected)
        #expect(result?.error?.context.httpStatus == 200)
    }

    @Test("unknown CA against s_server")
    func unknownCA() async throws {
        let server = try OpenSSLServer(certificate: certificates.leafCertificate, key: certificates.leafKey)
        defer { server.stop() }
        let result = await closure(opening: "wss://localhost:\(server.port)/", with: transport(trustingTestCA: false))
        #expect(result?.error?.code == .tlsFailed)
        #expect(result?.error?.message.contains("unknown certificate authority") == true)
    }

    @Test("wrong host name against s_server (its certificate names only other.test)")
    func wrongHost() async throws {
        let server = try OpenSSLServer(certificate: certificates.otherNameCertificate, key: certificates.leafKey)
        defer { server.stop() }
        let result = await closure(opening: "wss://localhost:\(server.port)/", with: transport())
        #expect(result?.error?.code == .tlsFailed)
        #expect(result?.error?.message.contains("does not match the host name localhost") == true)
    }

    @Test("wrong IP address against s_server (its certificate carries no IP address)")
    func wrongIP() async throws {
        let server = try OpenSSLServer(certificate: certificates.otherNameCertificate, key: certificates.leafKey)
        defer { server.stop() }
        let result = await closure(opening: "wss://127.0.0.1:\(server.port)/", with: transport())
        #expect(result?.error?.code == .tlsFailed)
        #expect(result?.error?.message.contains("does not match the IP address 127.0.0.1") == true)
    }

    @Test("expired certificate against s_server")
    func expired() async throws {
        let server = try OpenSSLServer(certificate: certificates.expiredCertificate, key: certificates.leafKey)
        defer { server.stop() }
        let result = await closure(opening: "wss://localhost:\(server.port)/", with: transport())
        #expect(result?.error?.code == .tlsFailed)
        #expect(result?.error?.message.contains("expired") == true)
    }

    @Test("public-key pins: the leaf's or the CA's key opens; another key fails typed, naming the chain's pins",
          arguments: ["leaf", "ca", "other-ca", "not a pin"])
    func pinning(_ pinned: String) async throws {
        let server = try makeEchoServer(configuration: WebSocketServer.Configuration(
            tls: TLSServerConfiguration(certificateChain: .file(certificates.leafCertificate),
                                        privateKey: .file(certificates.leafKey))))
        defer { server.stop() }
        let pin = pinned == "not a pin" ? "sha256/bm90IGEgcGlu" : "sha256/" + certificates.publicKeyPin(pinned)
        #expect(certificates.publicKeyPin("leaf").count == 44)
        let transport = WebSocketTransport(configuration: .init(tls: TLSConfiguration(
            additionalTrustRoots: [.file(certificates.caCertificate)], pinnedPublicKeys: [pin])))
        let events = EventQueue<TransportEvent>()
        let connection = transport.open(ConnectionRequest(url: URL(string: "wss://localhost:\(server.port)/")!)) {
            events.push($0)
        }
        switch pinned {
        case "leaf", "ca":
            #expect(await events.next()?.isOpened == true)
            connection.send([.text("pinned")])
            #expect(await events.next()?.frames == [.text("pinned")])
            connection.close(code: 1000, reason: "")
            _ = await drainUntilClosed(events)
        case "other-ca":
            let (_, closure) = await drainUntilClosed(events)
            #expect(closure?.error?.code == .tlsFailed)
            #expect(closure?.error?.message.contains("none of the pinned public keys") == true)
            // Our hashes of the chain match the openssl CLI's: the leaf's and the CA's are listed.
            let detail = closure?.error?.context.detail ?? ""
            #expect(detail.contains("sha256/" + certificates.publicKeyPin("leaf")))
            #expect(detail.contains("sha256/" + certificates.publicKeyPin("ca")))
        default:
            let (_, closure) = await drainUntilClosed(events)
            #expect(closure?.error?.code == .invalidArgument)
            #expect(closure?.error?.context.detail == "sha256/bm90IGEgcGlu")
        }
    }

    @Test("a WebSocket echo over TLS with our own TLS server, records read directly or by OpenSSL on each side",
          arguments: [(TLSRecordReading.directDecryptionOptimization, TLSRecordReading.directDecryptionOptimization), (.openSSL, .openSSL), (.directDecryptionOptimization, .openSSL)])
    func echoOverTLS(client clientReading: TLSRecordReading, server serverReading: TLSRecordReading) async throws {
        let configuration = WebSocketServer.Configuration(
            tls: TLSServerConfiguration(certificateChain: .file(certificates.leafCertificate),
                                        privateKey: .file(certificates.leafKey), recordReading: serverReading))
        let server = try makeEchoServer(configuration: configuration)
        defer { server.stop() }
        #expect(server.url.scheme == "wss")
        let events = EventQueue<TransportEvent>()
        let connection = transport(recordReading: clientReading).openConnection(
            ConnectionRequest(url: URL(string: "wss://localhost:\(server.port)/chat")!)) { events.push($0) }
        #expect(await events.next()?.isOpened == true)
        let many = (0..<2_000).map { TransportFrame.text("message \($0) " + String(repeating: "x", count: $0 % 300)) }
        let sent: [TransportFrame] = [.text("over tls"), .binary(Data(repeating: 7, count: 300_000)), .text("ü€𝄞")] + many
        connection.send(sent)
        var received: [TransportFrame] = []
        while received.count < sent.count, let event = await events.next() { received += event.frames ?? [] }
        #expect(received == sent)
        let roundTrip = try await connection.ping()
        #expect(roundTrip > .zero)
        connection.close(code: 1000, reason: "done")
        let (_, closure) = await drainUntilClosed(events)
        #expect(closure?.kind == .closedLocally(code: 1000, reason: "done"))
    }
}
