import Foundation

/// One message on the wire: a WebSocket text or binary message (or, for Engine.IO long-polling,
/// one packet of a polling payload).
public enum TransportFrame: Sendable, Hashable {
    /// A text message (UTF-8 on the wire).
    case text(String)
    /// A binary message.
    case binary(Data)

    /// The payload's size in bytes (UTF-8 for text).
    var byteCount: Int {
        switch self {
        case .text(let text): return text.utf8.count
        case .binary(let data): return data.count
        }
    }
}

/// One HTTP header field: sent with a connection request, or received with an upgrade's request or answer.
public struct HTTPHeader: Sendable, Hashable {
    /// The field name, sent as given (`Authorization`); response headers have it lower-cased.
    public var name: String
    /// The field value.
    public var value: String
    /// The header `name: value`.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// What a dialect asks the transport to open for one connection attempt.
public struct ConnectionRequest: Sendable, Hashable {
    /// `ws`, `wss`, `http` or `https` URL.
    public var url: URL
    /// Extra headers (cookies, authorization), sent after the ones the transport writes itself.
    public var headers: [HTTPHeader]
    /// WebSocket subprotocols to offer, in preference order.
    public var subprotocols: [String]
    /// Sent as the `Origin` header when set.
    public var origin: String?
    /// How long DNS, TCP, TLS and the upgrade may take together. The session sets it to
    /// `SessionOptions.connectTimeout` before opening, whatever the dialect put here.
    public var connectTimeout: Duration
    /// Permits `ws://` or `http://` to a host that is not loopback. Off by default: plain text on a
    /// real network exposes every token and message.
    public var allowsInsecureTransportToRemoteHosts: Bool
    /// The loop of the transport's group to open on: the one whose thread runs the session's handlers
    /// (``DefaultDelivery/loopAffinity``), so that the loop's thread can run them itself. Set by the session
    /// before opening; nil lets the transport choose. Transports without loops ignore it.
    package var loopAffinity: Int?

    /// A request for `url`; the other parameters set the properties of the same names.
    public init(url: URL, headers: [HTTPHeader] = [], subprotocols: [String] = [], origin: String? = nil,
                connectTimeout: Duration = .seconds(20), allowsInsecureTransportToRemoteHosts: Bool = false) {
        self.url = url
        self.headers = headers
        self.subprotocols = subprotocols
        self.origin = origin
        self.connectTimeout = connectTimeout
        self.allowsInsecureTransportToRemoteHosts = allowsInsecureTransportToRemoteHosts
    }
}

/// What the transport learned while opening.
public struct TransportOpenInfo: Sendable, Hashable {
    /// The subprotocol the server selected, if any.
    public var subprotocol: String?
    /// Response headers of the upgrade (names lower-cased).
    public var headers: [HTTPHeader]
    /// Each parameter sets the property of the same name.
    public init(subprotocol: String? = nil, headers: [HTTPHeader] = []) {
        self.subprotocol = subprotocol
        self.headers = headers
    }
}

/// How a transport connection ended.
public struct TransportClosure: Sendable, Hashable {
    /// How the connection ended.
    public enum Kind: Sendable, Hashable {
        /// The peer sent a close frame (WebSocket) with this code and reason.
        case closedByPeer(code: Int?, reason: String)
        /// This side asked for the close (a dialect `.close` action or the app's `disconnect()`).
        case closedLocally(code: Int, reason: String)
        /// Opening failed, or the connection broke; the error says how.
        case failed(RealtimeError)
        /// The liveness monitor declared the link dead.
        case livenessTimeout
    }

    /// How it ended.
    public var kind: Kind
    /// `true` when the connection never reached `opened`.
    public var duringOpen: Bool

    /// A closure of `kind`; `duringOpen` is `true` when the connection never opened.
    public init(_ kind: Kind, duringOpen: Bool = false) {
        self.kind = kind
        self.duringOpen = duringOpen
    }

    /// The close code when one is known.
    public var closeCode: Int? {
        switch kind {
        case .closedByPeer(let code, _): return code
        case .closedLocally(let code, _): return code
        case .failed(let error): return error.context.closeCode
        case .livenessTimeout: return nil
        }
    }
}

/// Events a transport connection reports, in order, from one thread at a time.
public enum TransportEvent: Sendable {
    /// The connection opened (the WebSocket upgrade, or the first long-polling request, succeeded), with what
    /// the server answered. Never sent when opening fails: `closed` then comes alone, with `duringOpen` set.
    case opened(TransportOpenInfo)
    /// Everything one read decoded, in wire order.
    case received([TransportFrame])
    /// The last event of a connection.
    case closed(TransportClosure)
}

/// An open (or opening) connection. Every method is non-blocking and may be called from any thread.
public protocol TransportConnection: AnyObject, Sendable {
    /// Queues frames for writing, in order. Frames queued before `opened` are written after it.
    func send(_ frames: [TransportFrame])
    /// Like ``send(_:)``; `compress: false` asks a transport that compresses messages (WebSocket
    /// permessage-deflate) to send these as they are. Transports without compression ignore it.
    func send(_ frames: [TransportFrame], compress: Bool)
    /// Starts the close handshake; `closed` follows.
    func close(code: Int, reason: String)
    /// Drops the connection at once; `closed` follows with `.closedLocally`.
    func abort()
    /// Stops (or resumes) reading, so a slow consumer pushes back on the peer through TCP.
    func setReadingPaused(_ paused: Bool)
}

/// A connection that can measure its round trip to the server (a WebSocket ping and its pong), which
/// ``RealtimeSession/ping()`` uses. The WebSocket transports' connections conform; Socket.IO's
/// long-polling ones throw `.unsupported` until they upgrade to a WebSocket.
public protocol RoundTripMeasuring: TransportConnection {
    /// Sends a ping and returns the time until its answer. Throws `.timedOut` when none comes within the
    /// transport's ping timeout and `.connectionClosed` when the connection ends first.
    func ping() async throws -> Duration
}

extension RealtimeError {
    /// What ``RealtimeSession/ping()`` throws on a connection that cannot measure a round trip; `why` says
    /// more where the connection knows it.
    package static func pingUnsupported(_ why: String? = nil) -> RealtimeError {
        RealtimeError(.unsupported, "ping is not supported by this connection's transport; it needs a WebSocket"
                      + (why.map { " (\($0))" } ?? ""), context: .init(detail: "ping"))
    }
}

/// Opens connections for a session. The session owns the reconnect loop: a transport never retries.
public protocol RealtimeTransport: Sendable {
    /// Begins opening a connection. `handler` receives `opened`, then `received` batches, then exactly
    /// one `closed`; never two calls at once (it may be called before `open` returns).
    func open(_ request: ConnectionRequest,
              handler: @escaping @Sendable (TransportEvent) -> Void) -> any TransportConnection

    /// True when the transport verifies servers with a TLS policy of its own (extra roots, public-key
    /// pins, or no system roots). Whatever reaches the same server another way — Socket.IO's long-polling
    /// over `URLSession` — then refuses `https` rather than bypass that policy.
    var customizesTLSTrust: Bool { get }
}

extension RealtimeTransport {
    /// `false`: the transport verifies servers with the platform's trust.
    public var customizesTLSTrust: Bool { false }
}

/// A transport whose close waits a bounded time for the server's answer. A transport that wraps it
/// (Socket.IO's long-polling) waits as long, so a close is bounded alike whatever carries it.
package protocol CloseTimeoutProviding: RealtimeTransport {
    var closeTimeout: Duration { get }
}

/// A transport with a delivery target of its own for sessions that do not choose one (the default of
/// ``SessionOptions/delivery``).
package protocol DeliveryProviding: RealtimeTransport {
    /// The target for one more session; nil leaves the session on a private serial queue.
    func makeDefaultDelivery() -> DefaultDelivery?
}

/// A transport's delivery target for one session, and the loop its connections should open on.
package struct DefaultDelivery: Sendable {
    package var target: DeliveryTarget
    /// Set on every ``ConnectionRequest`` the session opens (``ConnectionRequest/loopAffinity``): a loop's
    /// thread runs the handler calls of its own reads only for the delivery it owns.
    package var loopAffinity: Int?

    package init(target: DeliveryTarget, loopAffinity: Int? = nil) {
        self.target = target
        self.loopAffinity = loopAffinity
    }
}

extension TransportConnection {
    /// Sends `frames` with ``send(_:)``: for transports that never compress.
    public func send(_ frames: [TransportFrame], compress: Bool) {
        send(frames)
    }
}
