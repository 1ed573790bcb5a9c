import Foundation
@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) import RealtimeSocketIO

/// Engine.IO long-polling (``EngineIOPolling``) fed what a hostile server and a busy app may do: answers
/// to its GETs and POSTs (any status, structured payloads or raw bytes, failures), app sends, closes,
/// aborts and pauses, the WebSocket probe's events and the close timer, in any order.
///
/// Input: a flags byte (bit 0: offer the upgrade), then steps of an opcode byte and its operands (see
/// ``Driver/step(_:)``).
///
/// Properties: no crash; at most one GET and one POST in flight, and no request after `closed`; exactly
/// one `closed`, nothing reported after it; a POST holds at most 16 packets, within the server's
/// `maxPayload` unless it is one packet; the app's frames leave (by POST or the upgraded WebSocket) in
/// the order sent, each once at most; and a close the server answers leaves none sent before it behind.
enum PollingFuzz {
    static func check(_ bytes: UnsafeRawBufferPointer) throws(FuzzFailure) {
        var input = FuzzInput(bytes)
        let upgrade = input.bool()
        var driver = Driver(upgrade: upgrade, input: input)
        try driver.run()
    }

    struct Driver {
        private var polling: EngineIOPolling
        private var input: FuzzInput
        private var getInFlight = false
        private var postInFlight = false
        private var probeOpen = false
        /// The handshake's: open packets after it change nothing.
        private var maxPayload = 1_000_000
        private var opened = false
        private var closedCount = 0
        private var closeTimers = 0
        /// How many frames the app had sent when it closed.
        private var sentBeforeClose: Int?
        /// What the app sent, in order: after its close too (the upgraded WebSocket drops those itself).
        private var sent: [TransportFrame] = []
        /// The app's frames seen leaving, in order.
        private var left: [TransportFrame] = []
        private var serial = 0

        init(upgrade: Bool, input: FuzzInput) {
            let url = URL(string: "http://127.0.0.1:3000/socket.io/?EIO=4&transport=polling")!
            polling = EngineIOPolling(request: ConnectionRequest(url: url), upgrade: upgrade, closeTimeout: .seconds(5))
            self.input = input
        }

        mutating func run() throws(FuzzFailure) {
            try feed(.start)
            var steps = 0
            while !input.isAtEnd, steps < 1_000 {
                steps += 1
                try step(input.byte())
            }
        }

        /// One step: 0 GET answer (1: open packet, 2: packets, 3: raw bytes, 0: a noop; then a status byte),
        /// 1 POST answer (status byte; 255 a failure), 2 app send (count, then kind bytes), 3 app close,
        /// 4 abort, 5 pause or resume reading, 6 a probe event, 7 the close timer, 8 a failed GET.
        mutating func step(_ opcode: UInt8) throws(FuzzFailure) {
            switch opcode % 9 {
            case 0:
                guard getInFlight else { return }
                let body = getBody(input.byte())
                let status = statusCode(input.byte())
                getInFlight = false
                try feed(.getFinished(.success(HTTPResponse(status: status, body: body))))
            case 1:
                guard postInFlight else { return }
                let choice = input.byte()
                postInFlight = false
                if choice == 255 {
                    try feed(.postFinished(.failure(RealtimeError(.timedOut, "no answer"))))
                } else {
                    try feed(.postFinished(.success(HTTPResponse(status: statusCode(choice), body: Data("ok".utf8)))))
                }
            case 2:
                var frames: [TransportFrame] = []
                for _ in 0...input.int(below: 4) { frames.append(appFrame(input.byte())) }
                let compress = input.bool()
                if closedCount == 0 { sent += frames }
                try feed(.send(frames, compress: compress))
            case 3:
                if sentBeforeClose == nil { sentBeforeClose = sent.count }
                try feed(.close(code: 1000, reason: "bye"))
            case 4:
                try feed(.abort)
            case 5:
                try feed(.setReadingPaused(input.bool()))
            case 6:
                guard probeOpen else { return }
                try feed(.probe(probeEvent(input.byte())))
            case 7:
                try feed(.closeTimerExpired)
            default:
                guard getInFlight else { return }
                getInFlight = false
                try feed(.getFinished(.failure(RealtimeError(.transportFailed, "reset"))))
            }
        }

        private func statusCode(_ choice: UInt8) -> Int {
            switch choice % 8 {
            case 6: 400
            case 7: Int(choice) + 100
            default: 200
            }
        }

        private mutating func getBody(_ mode: UInt8) -> Data {
            switch mode % 4 {
            case 1:
                let payloadLimit = 16 + input.int(below: 1_000)
                if !opened { maxPayload = payloadLimit }
                let upgrades = input.bool() ? #"["websocket"]"# : "[]"
                let open = #"0{"sid":"S\#(input.byte())","upgrades":\#(upgrades),"pingInterval":25000,"#
                    + #""pingTimeout":20000,"maxPayload":\#(payloadLimit)}"#
                return PollingPayload.encode([.text(open)]).body
            case 2:
                var frames: [TransportFrame] = []
                for _ in 0...input.int(below: 4) { frames.append(serverFrame(input.byte())) }
                return PollingPayload.encode(frames).body
            case 3:
                return Data(input.bytes(upTo: 64))
            default:
                return PollingPayload.encode([.text("6")]).body
            }
        }

        private mutating func serverFrame(_ kind: UInt8) -> TransportFrame {
            switch kind % 6 {
            case 0: .text("2")
            case 1: .text("6")
            case 2: .text("1")
            case 3: .binary(Data(input.bytes(upTo: 8)))
            case 4: .text("4" + String(decoding: input.bytes(upTo: 16), as: UTF8.self))
            default: .text("0{}")
            }
        }

        /// App frames are numbered, so that each can be followed: `4m<n>` text, or binary holding `n`.
        private mutating func appFrame(_ kind: UInt8) -> TransportFrame {
            serial += 1
            if kind & 1 == 0 { return .text("4m\(serial)") }
            return .binary(Data(String(serial).utf8) + Data(repeating: kind, count: Int(kind % 64)))
        }

        private static func isAppFrame(_ frame: TransportFrame) -> Bool {
            switch frame {
            case .text(let text): text.hasPrefix("4m")
            case .binary: true
            }
        }

        private mutating func probeEvent(_ kind: UInt8) -> TransportEvent {
            switch kind % 5 {
            case 0: .opened(TransportOpenInfo())
            case 1: .received([.text("3probe")])
            case 2: .received([serverFrame(input.byte())])
            case 3: .closed(TransportClosure(.closedLocally(code: 1000, reason: "bye")))
            default: .closed(TransportClosure(.failed(RealtimeError(.transportFailed, "reset"))))
            }
        }

        private mutating func feed(_ inputEvent: EngineIOPolling.Input) throws(FuzzFailure) {
            let actions = polling.handle(inputEvent)
            for action in actions {
                try require(closedCount == 0, "an action after closed: \(action) (input \(inputEvent))")
                switch action {
                case .get:
                    try require(!getInFlight, "a second GET while one is in flight")
                    getInFlight = true
                case .post(_, let body, _):
                    try require(!postInFlight, "a second POST while one is in flight")
                    postInFlight = true
                    let frames: [TransportFrame]
                    do throws(RealtimeError) {
                        frames = try PollingPayload.decode(body)
                    } catch {
                        throw FuzzFailure("a POST body that does not decode: \(error)")
                    }
                    try require(frames.count <= EngineIOPolling.maximumPacketsPerPost,
                                "a POST of \(frames.count) packets")
                    try require(frames.count == 1 || body.count <= maxPayload,
                                "a POST of \(body.count) bytes over maxPayload \(maxPayload)")
                    try leave(frames)
                case .abandonRequests:
                    getInFlight = false
                    postInFlight = false
                case .event(let event):
                    if case .opened = event { opened = true }
                    if case .closed = event {
                        closedCount += 1
                        try require(closedCount == 1, "closed reported twice")
                        if case .postFinished(.success(let response)) = inputEvent, response.status == 200,
                           let sentBeforeClose, !polling.isUpgraded {
                            try require(left.count >= sentBeforeClose, "a close the server answered left "
                                        + "\(sentBeforeClose - left.count) of \(sentBeforeClose) frames behind")
                        }
                    }
                case .openProbe:
                    probeOpen = true
                case .probeSend(let frames, _):
                    try require(probeOpen, "a frame for a probe that is not open")
                    try leave(frames)
                case .probeAbort:
                    probeOpen = false
                case .probeClose, .probeReadingPaused:
                    break
                case .armCloseTimer:
                    closeTimers += 1
                    try require(closeTimers == 1, "the close timer armed twice")
                }
            }
        }

        /// Records the app's frames among `frames` and checks that they follow what it sent, in order.
        private mutating func leave(_ frames: [TransportFrame]) throws(FuzzFailure) {
            for frame in frames where Self.isAppFrame(frame) {
                try require(left.count < sent.count && sent[left.count] == frame,
                            "frame \(left.count + 1) out of order or repeated: \(frame)")
                left.append(frame)
            }
        }
    }
}
