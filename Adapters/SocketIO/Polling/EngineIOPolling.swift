import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// Engine.IO long-polling and the upgrade to WebSocket, as a pure state machine: inputs in, actions out.
///
/// It keeps at most one GET and one POST in flight, batches outgoing packets into POSTs within the
/// server's `maxPayload`, and presents received packets as the same frames the WebSocket path yields.
/// With an upgrade transport it probes a WebSocket with the same `sid` (`2probe` → `3probe`), waits
/// for the in-flight requests to finish, sends `5` and moves every packet to the WebSocket.
package struct EngineIOPolling: Sendable {
    package enum Input: Sendable {
        case start
        case getFinished(Result<HTTPResponse, RealtimeError>)
        case postFinished(Result<HTTPResponse, RealtimeError>)
        /// `compress: false` reaches the WebSocket once upgraded (long-polling never compresses).
        case send([TransportFrame], compress: Bool = true)
        case close(code: Int, reason: String)
        case abort
        case setReadingPaused(Bool)
        case probe(TransportEvent)
        /// The close timer of ``Action/armCloseTimer(_:)`` ran out.
        case closeTimerExpired
    }

    package enum Action: Sendable {
        /// Start a long-polling GET.
        case get(URL, timeout: Duration)
        /// Start a POST with this body.
        case post(URL, body: Data, binary: Bool)
        /// Stop caring about the HTTP requests in flight: their answers are ignored from now on.
        case abandonRequests
        /// Report to the session.
        case event(TransportEvent)
        /// Open the WebSocket probe.
        case openProbe(ConnectionRequest)
        /// Frames for the upgraded WebSocket; `compress: false` asks it not to compress them.
        case probeSend([TransportFrame], compress: Bool = true)
        case probeClose(code: Int, reason: String)
        case probeAbort
        case probeReadingPaused(Bool)
        /// Feed ``Input/closeTimerExpired`` after this long: the app's close stops waiting for the server.
        case armCloseTimer(Duration)
    }

    private enum Phase: Sendable, Equatable {
        case idle, handshaking, open
        /// The app closed: what waits to be posted goes out, then the close packet; `closed` follows the
        /// last POST's answer, or the close timeout.
        case closing(TransportClosure)
        case closed
    }

    private enum Upgrade: Sendable {
        case unavailable
        case opening
        case probing
        /// `3probe` arrived: no new requests; upgrade once the in-flight ones finish.
        case pausing
        case upgraded
        case failed
    }

    private let request: ConnectionRequest
    private let upgradeEnabled: Bool
    private let closeTimeout: Duration
    private var phase: Phase = .idle
    private var upgrade: Upgrade = .unavailable
    private var handshake: EngineIOHandshake?
    private var getInFlight = false
    private var postInFlight = false
    private var readingPaused = false
    /// A frame waiting for a POST, or for the upgrade; `compress` matters only if it ends up on the WebSocket.
    private struct QueuedFrame: Sendable {
        var frame: TransportFrame
        var compress: Bool
    }

    private var outbox: [QueuedFrame] = []
    private var requestSerial = 0

    /// Packets in one POST at most. python-engineio drops a payload of more than 16 packets whole (its
    /// `max_decode_packets`), logging an error but answering 200, so a burst of sends would vanish; the
    /// JavaScript server has no such limit, and 16 costs only more POSTs in a burst.
    package static let maximumPacketsPerPost = 16

    /// The close timeout when the session's transport states none: the WebSocket transport's default.
    package static let defaultCloseTimeout: Duration = .seconds(5)

    /// - Parameters:
    ///   - request: the session's request, with an `http`/`https` URL ending in `transport=polling`.
    ///   - upgrade: whether to try a WebSocket upgrade when the server offers one.
    ///   - closeTimeout: how long the app's close waits for the last POSTs' answers before it reports
    ///     `closed` anyway, as a WebSocket's close waits for the server's close frame.
    package init(request: ConnectionRequest, upgrade: Bool, closeTimeout: Duration = defaultCloseTimeout) {
        self.request = request
        self.upgradeEnabled = upgrade
        self.closeTimeout = closeTimeout
    }

    /// `true` once packets travel over the WebSocket.
    package var isUpgraded: Bool { upgrade == .upgraded }

    package mutating func handle(_ input: Input) -> [Action] {
        var actions: [Action] = []
        switch input {
        case .start:
            guard phase == .idle else { break }
            phase = .handshaking
            getInFlight = true
            actions.append(.get(url(), timeout: request.connectTimeout))
        case .getFinished(let result):
            getFinished(result, actions: &actions)
        case .postFinished(let result):
            postFinished(result, actions: &actions)
        case .send(let frames, let compress):
            guard isOpenOrOpening else { break }
            if upgrade == .upgraded {
                actions.append(.probeSend(frames, compress: compress))
            } else {
                outbox.append(contentsOf: frames.map { QueuedFrame(frame: $0, compress: compress) })
                flush(actions: &actions)
            }
        case .close(let code, let reason):
            close(code: code, reason: reason, actions: &actions)
        case .abort:
            guard !isClosed else { break }
            finish(TransportClosure(.closedLocally(code: 1006, reason: "aborted"), duringOpen: phase == .handshaking),
                   actions: &actions)
        case .setReadingPaused(let paused):
            readingPaused = paused
            if upgrade == .upgraded {
                actions.append(.probeReadingPaused(paused))
            } else {
                poll(actions: &actions)
            }
        case .probe(let event):
            probe(event, actions: &actions)
        case .closeTimerExpired:
            if case .closing(let closure) = phase { finish(closure, actions: &actions) }
        }
        return actions
    }

    // MARK: - Polling

    private mutating func url(websocket: Bool = false) -> URL {
        requestSerial += 1
        var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)!
        var items = (components.queryItems ?? []).filter { $0.name != "sid" && $0.name != "t" && $0.name != "transport" }
        items.append(URLQueryItem(name: "transport", value: websocket ? "websocket" : "polling"))
        if let sid = handshake?.sid { items.append(URLQueryItem(name: "sid", value: sid)) }
        if !websocket { items.append(URLQueryItem(name: "t", value: String(requestSerial, radix: 36))) }
        components.queryItems = items
        if websocket {
            components.scheme = components.scheme == "https" ? "wss" : "ws"
        }
        return components.url!
    }

    /// Long-poll timeout: the server answers within `pingInterval` with at least a ping.
    /// The Engine.IO path, without the query (which may carry tokens), for messages.
    private var requestPath: String {
        let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        return path.isEmpty ? "/" : path
    }

    /// The start of an error body for `context.detail`, on one line: control characters (the body's own
    /// trailing newline) would break the message it ends up in.
    static func bodyPreview(_ body: Data) -> String? {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
            .split(whereSeparator: { $0.isWhitespace || $0.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } })
            .joined(separator: " ")
        return text.isEmpty ? nil : text
    }

    private var pollTimeout: Duration {
        guard let handshake else { return request.connectTimeout }
        return handshake.pingInterval + handshake.pingTimeout + .seconds(5)
    }

    private mutating func poll(actions: inout [Action]) {
        guard phase == .open, !getInFlight, !readingPaused, upgrade != .pausing, upgrade != .upgraded else { return }
        getInFlight = true
        actions.append(.get(url(), timeout: pollTimeout))
    }

    private mutating func flush(actions: inout [Action]) {
        switch phase {
        case .open, .closing: break
        case .idle, .handshaking, .closed: return
        }
        guard !postInFlight, !outbox.isEmpty, upgrade != .pausing, upgrade != .upgraded else { return }
        let limit = handshake?.maxPayload ?? 1_000_000
        var batch: [TransportFrame] = []
        var size = 0
        while let frame = outbox.first?.frame, batch.count < Self.maximumPacketsPerPost {
            let added = PollingPayload.encodedSize(of: frame) + (batch.isEmpty ? 0 : 1)
            if !batch.isEmpty, size + added > limit { break }
            batch.append(frame)
            size += added
            outbox.removeFirst()
        }
        postInFlight = true
        let (body, binary) = PollingPayload.encode(batch)
        actions.append(.post(url(), body: body, binary: binary))
    }

    private mutating func getFinished(_ result: Result<HTTPResponse, RealtimeError>, actions: inout [Action]) {
        guard phase == .handshaking || phase == .open else { return }
        getInFlight = false
        let frames: [TransportFrame]
        do throws(RealtimeError) {
            let response = try result.get()
            guard response.status == 200 else {
                throw RealtimeError(phase == .handshaking ? .handshakeRejected : .transportFailed,
                                    "polling GET answered HTTP \(response.status) for \(requestPath)",
                                    context: .init(httpStatus: response.status, detail: Self.bodyPreview(response.body)))
            }
            frames = try PollingPayload.decode(response.body)
            if phase == .handshaking {
                guard case .text(let text)? = frames.first, text.utf8.first == UInt8(ascii: "0") else {
                    throw RealtimeError(.handshakeInvalid, "the first polling response has no Engine.IO open packet")
                }
                handshake = try EngineIOHandshake(json: String(text.dropFirst()))
            }
        } catch {
            finish(TransportClosure(.failed(error), duringOpen: phase == .handshaking), actions: &actions)
            return
        }
        if phase == .handshaking {
            phase = .open
            actions.append(.event(.opened(TransportOpenInfo())))
            if upgradeEnabled, handshake?.upgrades.contains("websocket") == true {
                upgrade = .opening
                var probeRequest = request
                probeRequest.url = url(websocket: true)
                actions.append(.openProbe(probeRequest))
            }
        }
        if !frames.isEmpty { actions.append(.event(.received(frames))) }
        if frames.contains(.text("1")) {
            finish(TransportClosure(.closedByPeer(code: 1000, reason: "Engine.IO close")), actions: &actions)
            return
        }
        poll(actions: &actions)
        flush(actions: &actions)
        completeUpgradeIfIdle(actions: &actions)
    }

    private mutating func postFinished(_ result: Result<HTTPResponse, RealtimeError>, actions: inout [Action]) {
        if case .closing(let closure) = phase {
            // The app's close stands whatever the answer: the rest goes out, or the connection ends now.
            postInFlight = false
            if case .success(let response) = result, response.status == 200, !outbox.isEmpty {
                flush(actions: &actions)
            } else {
                finish(closure, actions: &actions)
            }
            return
        }
        guard phase == .open else { return }
        postInFlight = false
        switch result {
        case .success(let response) where response.status == 200:
            flush(actions: &actions)
            completeUpgradeIfIdle(actions: &actions)
        case .success(let response):
            let error = RealtimeError(.transportFailed, "polling POST answered HTTP \(response.status)",
                                      context: .init(httpStatus: response.status))
            finish(TransportClosure(.failed(error)), actions: &actions)
        case .failure(let error):
            finish(TransportClosure(.failed(error)), actions: &actions)
        }
    }

    private var isClosed: Bool {
        if case .closed = phase { true } else { false }
    }

    private var isOpenOrOpening: Bool {
        switch phase {
        case .idle, .handshaking, .open: true
        case .closing, .closed: false
        }
    }

    private mutating func close(code: Int, reason: String, actions: inout [Action]) {
        switch phase {
        case .idle, .closing, .closed:
            return
        case .handshaking:
            finish(TransportClosure(.closedLocally(code: code, reason: reason), duringOpen: true), actions: &actions)
        case .open:
            if upgrade == .upgraded {
                // The WebSocket's own close handshake ends the connection; its `closed` is forwarded.
                actions.append(.probeClose(code: code, reason: reason))
                return
            }
            // What the app sent before it goes out first (it was handed over as sent), then the close packet;
            // `closed` waits for the server's answer, as a WebSocket's waits for the close frame's.
            switch upgrade {
            case .opening, .probing, .pausing: actions.append(.probeAbort)
            case .unavailable, .upgraded, .failed: break
            }
            upgrade = .failed
            outbox.append(QueuedFrame(frame: .text("1"), compress: true))
            phase = .closing(TransportClosure(.closedLocally(code: code, reason: reason)))
            actions.append(.armCloseTimer(closeTimeout))
            flush(actions: &actions)
        }
    }

    private mutating func finish(_ closure: TransportClosure, actions: inout [Action]) {
        guard !isClosed else { return }
        phase = .closed
        actions.append(.abandonRequests)
        switch upgrade {
        case .opening, .probing, .pausing, .upgraded: actions.append(.probeAbort)
        case .unavailable, .failed: break
        }
        upgrade = .failed
        outbox = []
        actions.append(.event(.closed(closure)))
    }

    // MARK: - Upgrade

    private mutating func probe(_ event: TransportEvent, actions: inout [Action]) {
        guard phase == .open else { return }
        switch event {
        case .opened:
            guard upgrade == .opening else { return }
            upgrade = .probing
            actions.append(.probeSend([.text("2probe")]))
        case .received(let frames):
            switch upgrade {
            case .upgraded:
                actions.append(.event(.received(frames)))
                if frames.contains(.text("1")) {
                    // The server ended the session; the WebSocket closes right after.
                    actions.append(.probeAbort)
                    upgrade = .failed
                    finish(TransportClosure(.closedByPeer(code: 1000, reason: "Engine.IO close")), actions: &actions)
                }
            case .probing where frames.first == .text("3probe"):
                upgrade = .pausing
                completeUpgradeIfIdle(actions: &actions)
            case .probing, .opening, .pausing:
                // Anything else before the upgrade completes means the probe failed.
                abandonProbe(actions: &actions)
            case .unavailable, .failed:
                break
            }
        case .closed(let closure):
            if upgrade == .upgraded {
                upgrade = .failed
                finish(closure, actions: &actions)
            } else if upgrade != .failed, upgrade != .unavailable {
                upgrade = .failed
                poll(actions: &actions)
                flush(actions: &actions)
            }
        }
    }

    private mutating func abandonProbe(actions: inout [Action]) {
        upgrade = .failed
        actions.append(.probeAbort)
        poll(actions: &actions)
        flush(actions: &actions)
    }

    private mutating func completeUpgradeIfIdle(actions: inout [Action]) {
        guard upgrade == .pausing, !getInFlight, !postInFlight else { return }
        upgrade = .upgraded
        // The upgrade packet, then what waited, in order: one send per run of frames that compress alike.
        var runs: [(frames: [TransportFrame], compress: Bool)] = [([.text("5")], true)]
        for queued in outbox {
            if runs[runs.count - 1].compress == queued.compress {
                runs[runs.count - 1].frames.append(queued.frame)
            } else {
                runs.append(([queued.frame], queued.compress))
            }
        }
        for run in runs { actions.append(.probeSend(run.frames, compress: run.compress)) }
        outbox = []
        if readingPaused { actions.append(.probeReadingPaused(true)) }
    }
}
