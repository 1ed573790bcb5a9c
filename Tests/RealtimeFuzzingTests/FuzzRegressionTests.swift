import Foundation
import RealtimeCore
@testable import RealtimeFuzzing
import Testing

/// Inputs the fuzz targets found failing, and the cases around them, kept as regressions: each once
/// failed its target's property.
@Suite("Fuzz findings, kept as regressions")
struct FuzzRegressionTests {
    #if os(Linux) || os(Android)
    /// A tls-records input: suite 0 (AES-128-GCM), cut seed 0, then steps.
    static func tls(_ steps: [UInt8]) -> [UInt8] { [0, 0] + steps }

    /// Step 0: application data of `length` bytes, no padding.
    static func data(_ length: Int) -> [UInt8] { [0, UInt8(length >> 8), UInt8(length & 0xFF), 0x41, 0] }
    /// Step 1: a record of handshake bytes, no padding.
    static func handshake(_ bytes: [UInt8]) -> [UInt8] { [1, UInt8(bytes.count)] + bytes + [0] }
    /// Step 3: an encrypted alert of two bytes, no padding.
    static func alert(_ level: UInt8, _ description: UInt8) -> [UInt8] { [3, level, description, 0, 0] }
    /// Step 4: close_notify.
    static let closeNotify: [UInt8] = [4]
    /// Step 5: unprotected bytes.
    static func raw(_ bytes: [UInt8]) -> [UInt8] { [5, UInt8(bytes.count)] + bytes }
    /// A NewSessionTicket: lifetime, age_add, an empty nonce, a 1-byte ticket, then `extensions`.
    static func ticket(extensions: [UInt8]) -> [UInt8] {
        let body: [UInt8] = [0, 0, 0, 60, 1, 2, 3, 4, 0, 0, 1, 0xEE,
                             UInt8(extensions.count >> 8), UInt8(extensions.count & 0xFF)] + extensions
        return [4, 0, 0, UInt8(body.count)] + body
    }

    /// Streams where the direct reader once differed from OpenSSL's record layer (each found by the
    /// tls-records target), and neighbours of each: both must now read them identically.
    static let tlsStreams: [(String, TLSRecordDifferential.Ending, [UInt8])] = [
        ("a 2-byte NewSessionTicket: decode_error from both", .sentAlert(50), tls(handshake([4, 0, 0, 2, 0xAB, 0xCD]) + data(10))),
        ("a well-formed ticket, then data", .open, tls(handshake(ticket(extensions: [])) + data(10))),
        ("a ticket with an unknown extension, then data", .open, tls(handshake(ticket(extensions: [0x12, 0x34, 0, 1, 9])) + data(10))),
        ("a ticket with early_data (4 bytes)", .open, tls(handshake(ticket(extensions: [0, 42, 0, 4, 0, 0, 4, 0])) + data(3))),
        ("a ticket with early_data of 3 bytes: decode_error", .sentAlert(50), tls(handshake(ticket(extensions: [0, 42, 0, 3, 0, 4, 0])))),
        ("a ticket with server_name: illegal_parameter", .sentAlert(47), tls(handshake(ticket(extensions: [0, 0, 0, 0])) + data(1))),
        ("a ticket with early_data twice: illegal_parameter", .sentAlert(47),
         tls(handshake(ticket(extensions: [0, 42, 0, 4, 0, 0, 1, 0, 0, 42, 0, 4, 0, 0, 1, 0])))),
        ("a ticket whose extensions overrun: decode_error", .sentAlert(50), tls(handshake(ticket(extensions: [0, 42, 0, 9, 0])))),
        ("user_canceled (warning) then data: ignored by both", .open, tls(data(1) + alert(1, 90) + data(3))),
        ("user_canceled at level 4, then data: ignored by both", .open, tls(data(1) + [3, 4, 90, 0, 0] + data(3))),
        ("five warning alerts in a row: unexpected_message", .sentAlert(10), tls(data(1) + Array([[UInt8]](repeating: alert(1, 90), count: 5).joined()))),
        ("four user_canceled, data, four more: still open", .open, tls(Array([[UInt8]](repeating: alert(1, 90), count: 4).joined())
                                                               + data(2) + Array([[UInt8]](repeating: alert(2, 90), count: 4).joined()))),
        ("a warning close_notify after four user_canceled: the fifth warning", .sentAlert(10),
         tls(Array([[UInt8]](repeating: alert(1, 90), count: 4).joined()) + alert(1, 0))),
        ("a fatal alert at warning level: the peer's alert", .receivedAlert(40), tls(data(2) + alert(1, 40))),
        ("close_notify at level 0 after a user_canceled: not a clean close", .receivedAlert(0),
         tls(data(1) + alert(1, 90) + data(3) + alert(0, 0))),
        ("close_notify at level 0 with no warning before: a clean close", .closedByPeer, tls(data(1) + alert(0, 0))),
        ("close_notify at warning level after a user_canceled: a clean close", .closedByPeer,
         tls(data(1) + alert(1, 90) + alert(1, 0))),
        ("user_canceled, then a fatal alert: the fatal one ends the connection", .receivedAlert(33),
         tls(data(1) + alert(0, 90) + data(2) + alert(1, 33))),
        ("a NewSessionTicket announcing 128 KiB: OpenSSL waits for it", .open, tls(handshake([4, 2, 0, 0, 9]))),
        ("a ticket over OpenSSL's limit: illegal_parameter at its header", .sentAlert(47), tls(handshake([4, 2, 1, 0x0B, 9]))),
        ("just over 64 KiB of ticket, then close_notify inside it", .closedByPeer, tls(handshake([4, 1, 1, 0x40, 0x18]) + closeNotify)),
        ("message type 7 announcing 50 KB: refused at its header", .sentAlert(10), tls(handshake([7, 0, 0xC4, 0xC4]) + closeNotify)),
        ("a KeyUpdate of 2 bytes: illegal_parameter at its header", .sentAlert(47), tls(handshake([24, 0, 0, 2, 0, 0]))),
        ("an empty KeyUpdate: decode_error", .sentAlert(50), tls(handshake([24, 0, 0, 0]))),
        ("a KeyUpdate request of 2: illegal_parameter", .sentAlert(47), tls(handshake([24, 0, 0, 1, 2]))),
        ("a KeyUpdate split across records is applied: the next record, under the old key, fails", .sentAlert(20), tls(handshake([24, 0, 0]) + handshake([1, 1]) + data(5))),
        ("a partial handshake header, then an alert: unexpected_message", .sentAlert(10), tls(handshake([4, 0]) + alert(1, 90))),
        ("a partial ticket body, then application data: unexpected_message", .sentAlert(10), tls(handshake([4, 0, 0, 20, 1]) + data(5))),
        ("an unprotected fatal alert: unexpected_message", .sentAlert(10), tls(raw([21, 3, 3, 0, 2, 2, 80]))),
        ("a record of version 0x0203: protocol_version", .sentAlert(70), tls(data(1) + raw([23, 2, 3, 0, 20]))),
        ("a record of version 0x0301: decode_error", .sentAlert(50), tls(data(1) + raw([23, 3, 1, 0, 20]))),
        ("a record too short for a tag: bad_record_mac", .sentAlert(20), tls(raw([23, 3, 3, 0, 16] + [UInt8](repeating: 1, count: 16)))),
        ("an empty record: bad_record_mac at once", .sentAlert(20), tls(data(1) + raw([23, 3, 3, 0, 0]))),
        ("an alert of three bytes: unexpected_message", .sentAlert(10), tls(data(1) + [3, 2, 40, 1, 0])),
        ("thirty-three empty records: unexpected_message", .sentAlert(10), tls(Array([[UInt8]](repeating: data(0), count: 33).joined()))),
        ("thirty-two empty records, then data", .open, tls(Array([[UInt8]](repeating: data(0), count: 32).joined()) + data(4))),
        ("after a requested KeyUpdate, a message header that ends its record waits for the next record", .open,
         tls([2, 1] + handshake([7, 0, 0, 0]))),
        ("… and application data next is refused: unexpected_message", .sentAlert(10),
         tls([2, 1] + handshake([7, 0, 0, 0]) + data(3))),
        ("… and a header with bytes after it is judged at once", .sentAlert(10), tls([2, 1] + handshake([7, 0, 0, 0, 9]))),
        ("data, a requested KeyUpdate, data under the new key, close_notify", .closedByPeer,
         tls(data(100) + [2, 1] + data(16_384) + closeNotify)),
    ]

    @Test("the TLS direct reader and OpenSSL read each stream identically, byte for byte and error for error",
          arguments: tlsStreams.indices)
    func tlsAgreement(_ index: Int) {
        let (name, expected, input) = Self.tlsStreams[index]
        let outcome = input.withUnsafeBytes { bytes in
            Result(catching: { () throws(FuzzFailure) in try TLSRecordDifferential.check(bytes) })
        }
        switch outcome {
        case .success(let ending): #expect(ending == expected, "\(name)")
        case .failure(let failure): Issue.record("\(name): \(failure.message)")
        }
    }

    @Test("every cut of a stream with a ticket, a key update and alerts reads the same")
    func tlsAgreementOverCutSeeds() {
        let steps = Self.handshake(Self.ticket(extensions: [0, 42, 0, 4, 0, 0, 1, 0])) + Self.data(700) + [2, 0]
            + Self.alert(1, 90) + Self.data(3000) + Self.closeNotify
        for suite in 0..<3 {
            for seed in 0..<64 {
                let input = [UInt8(suite), UInt8(seed)] + steps
                let outcome = input.withUnsafeBytes { bytes in
                    Result(catching: { () throws(FuzzFailure) in try TLSRecordDifferential.check(bytes) })
                }
                if case .failure(let failure) = outcome { Issue.record("suite \(suite), cut seed \(seed): \(failure.message)") }
            }
        }
    }
    #endif

    /// Log lines the fuzzer (or issue 13 item 4) found leaking before redaction by structure; the secret is
    /// `S3CR3T-…`.
    static let leaks = [
        // A member outside the fixed key list, in a Socket.IO CONNECT.
        #"→ 40{"jwt":"S3CR3T-jwt"}"#,
        // A secret inside an Action Cable identifier, which is a JSON string.
        #"→ {"command":"subscribe","identifier":"{\"channel\":\"ChatChannel\",\"token\":{\"token\":\"S3CR3T-nested\"}}"}"#,
        // A Pusher presence identity carried as a string of JSON.
        #"→ {"event":"pusher:subscribe","data":{"auth":"k:sig","channel":"presence-x","channel_data":"{\"user_id\":\"7\",\"session\":\"S3CR3T-data\"}"}}"#,
    ]

    @Test("redaction leaves no part of a planted secret", arguments: leaks)
    func redaction(_ line: String) {
        #expect(!Redaction.redact(line).contains("S3CR3T"))
    }
}

