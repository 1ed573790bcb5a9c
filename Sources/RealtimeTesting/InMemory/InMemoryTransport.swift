import Foundation
@_spi(DialectAuthoring) import RealtimeCore

/// A transport whose connections end in the test instead of a server.
///
/// Every `open` creates an ``InMemoryPeer`` and hands it to `onOpen` (and to ``peers``). The peer decides
/// what happens: accept, refuse, send frames, close. Everything is synchronous, so tests with a
/// ``ManualClock`` and `DeliveryTarget.inline` are deterministic.
public final class InMemoryTransport: RealtimeTransport {
    private struct State {
        var peers: [InMemoryPeer] = []
        var onOpen: (@Sendable (InMemoryPeer) -> Void)?
        var waiters: [(index: Int, continuation: CheckedContinuation<InMemoryPeer, Never>)] = []
    }

    private let state = Locked(State())
    private let autoAccept: Bool

    /// - Parameters:
    ///   - autoAccept: open every connection at once (with no subprotocol) unless `onOpen` refuses it.
    ///   - onOpen: called for every connection attempt, before it is accepted.
    public init(autoAccept: Bool = true, onOpen: (@Sendable (InMemoryPeer) -> Void)? = nil) {
        self.autoAccept = autoAccept
        state.withLock { $0.onOpen = onOpen }
    }

    /// Replaces the callback for new connections.
    public func onOpen(_ handler: @escaping @Sendable (InMemoryPeer) -> Void) {
        state.withLock { $0.onOpen = handler }
    }

    /// Every connection opened so far, oldest first.
    public var peers: [InMemoryPeer] { state.withLock { $0.peers } }

    /// The newest connection.
    public var lastPeer: InMemoryPeer? { state.withLock { $0.peers.last } }

    /// Creates the connection's ``InMemoryPeer``, adds it to ``peers`` and passes it to `onOpen`; then, with
    /// `autoAccept`, accepts it unless `onOpen` already accepted, refused or closed it. Each of the peer's
    /// calls reaches `handler` synchronously, on the calling thread.
    public func open(_ request: ConnectionRequest,
                     handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection {
        let peer = InMemoryPeer(request: request, index: state.withLock { $0.peers.count }, handler: handler)
        let (onOpen, ready) = state.withLock { state in
            state.peers.append(peer)
            let ready = state.waiters.filter { $0.index < state.peers.count }
            state.waiters.removeAll { $0.index < state.peers.count }
            return (state.onOpen, ready)
        }
        onOpen?(peer)
        if autoAccept, peer.phase == .opening { peer.accept() }
        for waiter in ready { waiter.continuation.resume(returning: state.withLock { $0.peers[waiter.index] }) }
        return peer.clientSide
    }

    /// Waits until connection number `index` (0-based) has been opened, and returns its peer.
    /// Connection requests are built asynchronously, so tests wait here instead of sleeping.
    public func peer(_ index: Int) async -> InMemoryPeer {
        await withCheckedContinuation { continuation in
            let existing = state.withLock { state -> InMemoryPeer? in
                if index < state.peers.count { return state.peers[index] }
                state.waiters.append((index, continuation))
                return nil
            }
            if let existing { continuation.resume(returning: existing) }
        }
    }
}

/// The server end of one in-memory connection, driven by the test.
public final class InMemoryPeer: Sendable {
    /// Where the connection is.
    public enum Phase: Sendable, Hashable {
        /// The client asked to open; the test has not accepted or refused it yet.
        case opening
        /// Accepted with ``InMemoryPeer/accept(subprotocol:headers:)``; only now do the peer's sends reach
        /// the client.
        case open
        /// Ended: refused, failed, dropped or closed by either side. Final.
        case closed
    }

    private struct State {
        var phase: Phase = .opening
        var received: [TransportFrame] = []
        var readingPaused = false
        var closeRequest: (code: Int, reason: String)?
        var onReceive: (@Sendable (TransportFrame, InMemoryPeer) -> Void)?
        var roundTrip: Duration? = .zero
        typealias PingWaiter = CheckedContinuation<Duration, any Error>

        var pings: [PingWaiter] = []
        var pingsReceived = 0

        typealias PingAnswer = (waiters: [PingWaiter], roundTrip: Duration)

        /// The pings to answer now, with the round trip they get.
        mutating func answerablePings() -> PingAnswer? {
            guard phase == .open, let roundTrip, !pings.isEmpty else { return nil }
            defer { pings = [] }
            return (pings, roundTrip)
        }

        /// Marks the connection closed; returns the pings left waiting, to fail.
        mutating func markClosed() -> [PingWaiter] {
            phase = .closed
            defer { pings = [] }
            return pings
        }
    }

    /// The request the client opened with.
    public let request: ConnectionRequest
    /// 0 for the first connection of the transport, 1 for the next, …
    public let index: Int
    private let handler: @Sendable (TransportEvent) -> Void
    private let state = Locked(State())
    let clientSide: ClientSide

    init(request: ConnectionRequest, index: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        self.request = request
        self.index = index
        self.handler = handler
        clientSide = ClientSide()
        clientSide.peer.withLock { $0.peer = self }
    }

    /// Whether the connection is opening, open or closed.
    public var phase: Phase { state.withLock { $0.phase } }

    /// Every frame the client sent, in order.
    public var received: [TransportFrame] { state.withLock { $0.received } }

    /// The text frames the client sent.
    public var receivedTexts: [String] {
        received.compactMap { if case .text(let text) = $0 { return text } else { return nil } }
    }

    /// Whether the client asked to stop reading (back-pressure).
    public var isReadingPaused: Bool { state.withLock { $0.readingPaused } }

    /// The code and reason of the client's close, if it closed.
    public var closeRequest: (code: Int, reason: String)? { state.withLock { $0.closeRequest } }

    /// The round trip the client's pings (``RealtimeSession/ping()``) report while the connection is open:
    /// `.zero` by default. `nil` leaves them unanswered until it is set again or the connection ends (a ping
    /// then throws `.connectionClosed`), as a server that never answers would.
    public var roundTrip: Duration? {
        get { state.withLock { $0.roundTrip } }
        set {
            Self.answer(state.withLock { state in
                state.roundTrip = newValue
                return state.answerablePings()
            })
        }
    }

    /// How many pings the client sent.
    public var pingsReceived: Int { state.withLock { $0.pingsReceived } }

    /// Called for each frame the client sends, after it is recorded (use it to script replies).
    public func onReceive(_ handler: @escaping @Sendable (TransportFrame, InMemoryPeer) -> Void) {
        state.withLock { $0.onReceive = handler }
    }

    /// Completes the opening.
    public func accept(subprotocol: String? = nil, headers: [HTTPHeader] = []) {
        let (proceed, answer) = state.withLock { state -> (Bool, State.PingAnswer?) in
            guard state.phase == .opening else { return (false, nil) }
            state.phase = .open
            return (true, state.answerablePings())
        }
        if proceed { handler(.opened(TransportOpenInfo(subprotocol: subprotocol, headers: headers))) }
        // Like a WebSocket ping sent before the upgrade: answered once the connection is open.
        Self.answer(answer)
    }

    /// Fails the opening (or the open connection) with `error`.
    public func fail(_ error: RealtimeError) {
        let ended = state.withLock { state -> (wasOpening: Bool, pings: [State.PingWaiter])? in
            guard state.phase != .closed else { return nil }
            let wasOpening = state.phase == .opening
            return (wasOpening, state.markClosed())
        }
        guard let ended else { return }
        handler(.closed(TransportClosure(.failed(error), duringOpen: ended.wasOpening)))
        Self.failPings(ended.pings)
    }

    /// Sends frames to the client as one read batch.
    public func send(_ frames: [TransportFrame]) {
        guard phase == .open else { return }
        handler(.received(frames))
    }

    /// Sends one text frame.
    public func send(text: String) { send([.text(text)]) }

    /// Closes from the server side with a close frame.
    public func close(code: Int? = 1000, reason: String = "") {
        let pings = state.withLock { state -> [State.PingWaiter]? in
            guard state.phase != .closed else { return nil }
            return state.markClosed()
        }
        guard let pings else { return }
        handler(.closed(TransportClosure(.closedByPeer(code: code, reason: reason))))
        Self.failPings(pings)
    }

    /// Drops the connection without a close frame (code 1006 semantics).
    public func drop() {
        fail(RealtimeError(.transportFailed, "connection reset by peer", context: .init(closeCode: 1006)))
    }

    fileprivate func clientSent(_ frames: [TransportFrame]) {
        let onReceive = state.withLock { state -> (@Sendable (TransportFrame, InMemoryPeer) -> Void)? in
            guard state.phase != .closed else { return nil }
            state.received.append(contentsOf: frames)
            return state.onReceive
        }
        guard let onReceive else { return }
        for frame in frames { onReceive(frame, self) }
    }

    fileprivate func clientClosed(code: Int, reason: String, abort: Bool) {
        let pings = state.withLock { state -> [State.PingWaiter]? in
            guard state.phase != .closed else { return nil }
            state.closeRequest = (code, reason)
            return state.markClosed()
        }
        guard let pings else { return }
        handler(.closed(TransportClosure(.closedLocally(code: abort ? 1006 : code, reason: reason))))
        Self.failPings(pings)
    }

    fileprivate func clientPinged() async throws -> Duration {
        try await withCheckedThrowingContinuation { continuation in
            let answer = state.withLock { state -> Result<Duration, RealtimeError>? in
                guard state.phase != .closed else { return .failure(Self.closedError) }
                state.pingsReceived += 1
                if state.phase == .open, let roundTrip = state.roundTrip { return .success(roundTrip) }
                state.pings.append(continuation)
                return nil
            }
            if let answer { continuation.resume(with: answer) }
        }
    }

    fileprivate static let closedError = RealtimeError(.connectionClosed, "the connection closed before the pong")

    private static func answer(_ pings: State.PingAnswer?) {
        guard let pings else { return }
        for ping in pings.waiters { ping.resume(returning: pings.roundTrip) }
    }

    private static func failPings(_ pings: [State.PingWaiter]) {
        for ping in pings { ping.resume(throwing: closedError) }
    }

    fileprivate func clientPaused(_ paused: Bool) {
        state.withLock { $0.readingPaused = paused }
    }

    final class ClientSide: RoundTripMeasuring {
        /// Weak: the peer owns this side, and the transport's `peers` list keeps the peer alive for as
        /// long as a test can use it. A strong reference made a cycle that leaked every connection.
        let peer = Locked(WeakPeer())
        func send(_ frames: [TransportFrame]) { peer.withLock { $0.peer }?.clientSent(frames) }
        func close(code: Int, reason: String) { peer.withLock { $0.peer }?.clientClosed(code: code, reason: reason, abort: false) }
        func abort() { peer.withLock { $0.peer }?.clientClosed(code: 1006, reason: "", abort: true) }
        func setReadingPaused(_ paused: Bool) { peer.withLock { $0.peer }?.clientPaused(paused) }
        func ping() async throws -> Duration {
            guard let peer = peer.withLock({ $0.peer }) else { throw InMemoryPeer.closedError }
            return try await peer.clientPinged()
        }
    }

    struct WeakPeer {
        weak var peer: InMemoryPeer?
    }
}
