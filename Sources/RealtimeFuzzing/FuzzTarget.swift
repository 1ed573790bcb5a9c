import RealtimeCore

/// The libFuzzer targets. Each checks a property of one input and reports a violation as a
/// ``FuzzFailure``; the fuzz executable turns that into a crash (so libFuzzer keeps the input), the
/// corpus-replay tests into a test failure.
package enum FuzzTarget: String, CaseIterable, Sendable {
    case json
    case websocketCodec = "websocket-codec"
    case websocketDeflate = "websocket-deflate"
    case upgradeResponse = "upgrade-response"
    case proxyAnswer = "proxy-answer"
    case tlsRecords = "tls-records"
    case redaction
    case socketIOInbound = "socketio-inbound"
    case pusherInbound = "pusher-inbound"
    case actionCableInbound = "actioncable-inbound"
    case socketIOPolling = "socketio-polling"

    /// The targets this platform can run: the TLS reader exists only where OpenSSL is linked.
    package static var available: [FuzzTarget] {
        #if canImport(COpenSSL)
        allCases
        #else
        allCases.filter { $0 != .tlsRecords }
        #endif
    }

    /// The target the fuzz executable runs, set in `LLVMFuzzerInitialize`.
    package static let selected = Locked<FuzzTarget?>(nil)

    /// Checks one input; nil when every property held.
    package func check(_ bytes: UnsafeRawBufferPointer) -> FuzzFailure? {
        do throws(FuzzFailure) {
            switch self {
            case .json: try JSONFuzz.check(bytes)
            case .websocketCodec: try CodecFuzz.check(bytes)
            case .websocketDeflate: try DeflateFuzz.check(bytes)
            case .upgradeResponse: try UpgradeResponseFuzz.check(bytes)
            case .proxyAnswer: try ProxyAnswerFuzz.check(bytes)
            case .tlsRecords:
                #if canImport(COpenSSL)
                try TLSRecordDifferential.check(bytes)
                #else
                throw FuzzFailure("the TLS record reader exists only where OpenSSL is linked")
                #endif
            case .redaction: try RedactionFuzz.check(bytes)
            case .socketIOInbound: try DialectFuzz.checkSocketIO(bytes)
            case .pusherInbound: try DialectFuzz.checkPusher(bytes)
            case .actionCableInbound: try DialectFuzz.checkActionCable(bytes)
            case .socketIOPolling: try PollingFuzz.check(bytes)
            }
        } catch {
            return error
        }
        return nil
    }

    /// Checks one input and stops the process on a violated property, for libFuzzer.
    package func run(_ bytes: UnsafeRawBufferPointer) {
        if let failure = check(bytes) { fatalError("fuzz target \(rawValue): \(failure.message)") }
    }
}

/// A property that did not hold for a fuzz input.
package struct FuzzFailure: Error, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// Throws a ``FuzzFailure`` with `message` unless `condition` holds.
@inline(__always)
func require(_ condition: Bool, _ message: @autoclosure () -> String) throws(FuzzFailure) {
    if !condition { throw FuzzFailure(message()) }
}

/// Reads structured choices from fuzz bytes, front to back; past the end every read yields zeros, so
/// any input is a complete program.
struct FuzzInput {
    private let bytes: UnsafeRawBufferPointer
    private(set) var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { position >= bytes.count }
    var remaining: Int { max(0, bytes.count - position) }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A value in 0..<bound (bound ≥ 1), from one or two bytes.
    mutating func int(below bound: Int) -> Int {
        precondition(bound >= 1)
        if bound <= 256 { return Int(byte()) % bound }
        return (Int(byte()) << 8 | Int(byte())) % bound
    }

    /// Up to `limit` bytes, the count read first.
    mutating func bytes(upTo limit: Int) -> [UInt8] {
        let count = min(int(below: limit + 1), remaining)
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    /// Everything left.
    mutating func rest() -> [UInt8] {
        guard position < bytes.count else { return [] }
        defer { position = bytes.count }
        return Array(bytes[position...])
    }

    /// Splits `count` bytes into read sizes chosen by the input (each at least 1); what the input leaves
    /// unspecified goes in one piece.
    mutating func cuts(of count: Int) -> [Int] {
        var sizes: [Int] = []
        var left = count
        while left > 0 {
            let size = isAtEnd ? left : min(left, int(below: 512) + 1)
            sizes.append(size)
            left -= size
        }
        return sizes
    }
}
