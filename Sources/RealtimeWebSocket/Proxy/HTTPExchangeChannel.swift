import Foundation
import RealtimeCore

/// One HTTP/1.1 request through a proxy's `CONNECT` tunnel, on its loop thread: resolve and connect to the
/// proxy, open the tunnel (``ProxyTunnelHandshake``), TLS for the server's name when the URL is `https`,
/// then the request (`Connection: close`) and its response (``HTTPResponseReader``). One connection per
/// request keeps it simple: the tunnel is not reused. Every method runs on the loop thread.
final class HTTPExchangeChannel: LoopHandler {
    private enum Phase {
        case resolving
        case connecting
        case tunnel(ProxyTunnelHandshake)
        case tlsHandshake
        case exchanging
        case finished
    }

    /// Where the request goes and how.
    struct Target: Sendable {
        var host: String
        var port: Int
        var tlsContext: TLSContext?
        var proxy: ProxyConfiguration
    }

    let token: UInt64
    private let request: HTTPRequest
    private let target: Target
    private var completion: ((Result<HTTPResponse, RealtimeError>) -> Void)?
    private var reader: HTTPResponseReader
    private var phase = Phase.resolving
    private var socket: LoopSocket
    private var tls: TLSEngine?
    private var outbound: [UInt8] = []
    private var outboundStart = 0
    /// The idle timer: the request fails when no byte arrives for `request.timeout`.
    private var timer: UInt64?
    private var lastActivity = EventLoop.now()

    init(token: UInt64, request: HTTPRequest, target: Target, maximumBodySize: Int,
         completion: @escaping (Result<HTTPResponse, RealtimeError>) -> Void) {
        self.token = token
        self.request = request
        self.target = target
        self.completion = completion
        socket = LoopSocket(token: token)
        reader = HTTPResponseReader(maximumBodySize: maximumBodySize)
    }

    private var timeoutNanoseconds: UInt64 { UInt64(clamping: max(0, request.timeout.nanoseconds)) }

    func start(in context: LoopContext) {
        lastActivity = EventLoop.now()
        armTimer(at: lastActivity &+ timeoutNanoseconds, in: context)
    }

    func resolved(_ result: Result<[SocketAddress], RealtimeError>, in context: LoopContext) {
        guard case .resolving = phase else { return }
        switch result {
        case .failure(let error): complete(.failure(error), in: context)
        case .success(let addresses):
            phase = .connecting
            dialed(socket.dial(addresses, in: context), in: context)
        }
    }

    // MARK: Connecting

    func handle(_ event: SelectorEvent, in context: LoopContext) {
        if case .connecting = phase {
            dialed(socket.dialingEvent(event, in: context), in: context)
            return
        }
        if event.writable { writeOutbound(in: context) }
        if event.readable || event.hangup { readSocket(in: context) }
    }

    /// Connected to the proxy: `CONNECT` goes out.
    private func dialed(_ dialing: LoopSocket.Dialing, in context: LoopContext) {
        switch dialing {
        case .inProgress:
            break
        case .failed(let error):
            complete(.failure(error), in: context)
        case .connected:
            let tunnel = ProxyTunnelHandshake(proxy: target.proxy, targetHost: target.host, targetPort: target.port)
            phase = .tunnel(tunnel)
            outbound += tunnel.requestBytes
            writeOutbound(in: context)
        }
    }

    func loopStopping(in context: LoopContext) {
        complete(.failure(RealtimeError(.transportFailed, "the event loop was shut down")), in: context)
    }

    // MARK: Reading

    private func readSocket(in context: LoopContext) {
        let count = SocketIO.receive(socket.fd, into: context.readBuffer)
        if count == -Int(EAGAIN) { return }
        if count < 0 {
            complete(.failure(SocketError.posix("recv", Int32(-count))), in: context)
            return
        }
        lastActivity = EventLoop.now()
        if count == 0 {
            endOfStream(in: context)
            return
        }
        let bytes = UnsafeRawBufferPointer(rebasing: context.readBuffer[0..<count])
        switch phase {
        case .tunnel(var tunnel):
            let progress = tunnel.receive(bytes)
            phase = .tunnel(tunnel)
            switch progress {
            case .needsMore: break
            case .failed(let error): complete(.failure(error), in: context)
            case .established(let leftover): tunnelEstablished(leftover: leftover, in: context)
            }
        case .tlsHandshake, .exchanging:
            if let tls {
                if tls.readsRecordsDirectly {
                    readTLSDirectly(tls, UnsafeMutableRawBufferPointer(rebasing: context.readBuffer[0..<count]), in: context)
                } else {
                    tls.withBorrowedCiphertext(bytes) { readTLS(tls, in: context) }
                }
            } else {
                receive(bytes, in: context)
            }
        case .resolving, .connecting, .finished:
            break
        }
    }

    /// The tunnel is up: TLS for the server's name, or the request at once.
    private func tunnelEstablished(leftover: [UInt8], in context: LoopContext) {
        do throws(RealtimeError) {
            if let tlsContext = target.tlsContext {
                let engine = try TLSEngine(client: tlsContext, host: target.host)
                tls = engine
                phase = .tlsHandshake
                _ = try engine.advanceHandshake()
                engine.drainCiphertext(into: &outbound)
                writeOutbound(in: context)
                if !leftover.isEmpty {
                    leftover.withUnsafeBytes { bytes in engine.withBorrowedCiphertext(bytes) { readTLS(engine, in: context) } }
                }
            } else {
                phase = .exchanging
                outbound += requestBytes
                writeOutbound(in: context)
                if !leftover.isEmpty { leftover.withUnsafeBytes { receive($0, in: context) } }
            }
        } catch {
            complete(.failure(error), in: context)
        }
    }

    /// Advances the TLS handshake, then reads every record the last read completed.
    private func readTLS(_ tls: TLSEngine, in context: LoopContext) {
        do throws(RealtimeError) {
            if case .tlsHandshake = phase {
                let done = try tls.advanceHandshake()
                tls.drainCiphertext(into: &outbound)
                guard done else {
                    writeOutbound(in: context)
                    return
                }
                phase = .exchanging
                try tls.writePlaintext(requestBytes)
                tls.drainCiphertext(into: &outbound)
                writeOutbound(in: context)
            }
            while isActive {
                let (filled, stop) = try tls.readPlaintext(into: context.plaintextBuffer)
                if filled > 0 { receive(UnsafeRawBufferPointer(rebasing: context.plaintextBuffer[0..<filled]), in: context) }
                if stop == .bufferFull { continue }
                if stop == .closedByPeer, isActive { endOfStream(in: context) }
                break
            }
        } catch {
            complete(.failure(error), in: context)
        }
    }

    private func readTLSDirectly(_ tls: TLSEngine, _ bytes: UnsafeMutableRawBufferPointer, in context: LoopContext) {
        do throws(RealtimeError) {
            let stop = try tls.readRecordsDirectly(bytes) { plaintext in
                receive(plaintext, in: context)
                return isActive
            }
            if stop == .closedByPeer, isActive { endOfStream(in: context) }
        } catch {
            complete(.failure(error), in: context)
        }
    }

    private func receive(_ bytes: UnsafeRawBufferPointer, in context: LoopContext) {
        guard isActive else { return }
        do throws(RealtimeError) {
            if case .complete(let response) = try reader.receive(bytes) { complete(.success(response), in: context) }
        } catch {
            complete(.failure(error), in: context)
        }
    }

    private func endOfStream(in context: LoopContext) {
        switch phase {
        case .tunnel(let tunnel):
            complete(.failure(tunnel.errorForEndOfStream()), in: context)
        case .tlsHandshake:
            complete(.failure(RealtimeError(.tlsFailed, "the server closed the connection during the TLS handshake")), in: context)
        default:
            do throws(RealtimeError) {
                complete(.success(try reader.endOfStream()), in: context)
            } catch {
                complete(.failure(error), in: context)
            }
        }
    }

    // MARK: Writing

    /// The request head and body; `Connection: close`, so the response ends with the stream if it must.
    private var requestBytes: [UInt8] {
        let url = request.url
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        var path = components?.percentEncodedPath ?? ""
        if path.isEmpty { path = "/" }
        if let query = components?.percentEncodedQuery { path += "?\(query)" }
        let secure = target.tlsContext != nil
        var host = target.host.contains(":") ? "[\(target.host)]" : target.host
        if target.port != (secure ? 443 : 80) { host += ":\(target.port)" }
        let managed: Set<String> = ["host", "content-length", "connection", "transfer-encoding", "proxy-authorization"]
        var lines = ["\(request.method) \(path) HTTP/1.1", "Host: \(host)"]
        for header in request.headers where HTTPHead.isToken(header.name) && HTTPHead.isSafeFieldValue(header.value)
            && !managed.contains(header.name.lowercased()) {
            lines.append("\(header.name): \(header.value)")
        }
        if let body = request.body {
            lines.append("Content-Length: \(body.count)")
        } else if ["POST", "PUT", "PATCH"].contains(request.method.uppercased()) {
            lines.append("Content-Length: 0")
        }
        lines.append("Connection: close")
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + (request.body.map { Array($0) } ?? [])
    }

    private func writeOutbound(in context: LoopContext) {
        guard socket.fd >= 0 else { return }
        while outboundStart < outbound.count {
            let written = outbound.withUnsafeBytes { raw in
                SocketIO.send(socket.fd, UnsafeRawBufferPointer(rebasing: raw[outboundStart...]))
            }
            if written == 0 { break }
            if written < 0 {
                complete(.failure(SocketError.posix("send", Int32(-written))), in: context)
                return
            }
            outboundStart += written
        }
        if outboundStart == outbound.count {
            outbound.removeAll(keepingCapacity: true)
            outboundStart = 0
        }
        socket.setInterest(SelectorInterest(read: true, write: outboundStart < outbound.count), in: context)
    }

    // MARK: Timing out and ending

    private func armTimer(at deadline: UInt64, in context: LoopContext) {
        timer = context.schedule(at: deadline) { [unowned self] in timerFired(in: context) }
    }

    private func timerFired(in context: LoopContext) {
        timer = nil
        guard isActive else { return }
        let deadline = lastActivity &+ timeoutNanoseconds
        if EventLoop.now() < deadline {
            armTimer(at: deadline, in: context)
            return
        }
        let seconds = Double(request.timeout.nanoseconds) / 1e9
        complete(.failure(RealtimeError(.timedOut, "no answer from \(target.host) through the \(target.proxy) for \(seconds) s",
                                        context: .init(detail: "phase: \(phaseName)"))), in: context)
    }

    private var isActive: Bool {
        if case .finished = phase { return false }
        return true
    }

    private var phaseName: String {
        switch phase {
        case .resolving: "resolving the proxy"
        case .connecting: "connecting to the proxy"
        case .tunnel: "proxy CONNECT"
        case .tlsHandshake: "TLS handshake"
        case .exchanging: "request"
        case .finished: "finished"
        }
    }

    /// Reports the result once, closes the socket and detaches. A transport failure before the tunnel is
    /// up is the proxy's: `.proxyFailed`, as for WebSocket connections.
    private func complete(_ result: Result<HTTPResponse, RealtimeError>, in context: LoopContext) {
        guard isActive, let completion else { return }
        var result = result
        if case .failure(let error) = result, error.code == .transportFailed {
            switch phase {
            case .resolving, .connecting:
                result = .failure(RealtimeError(.proxyFailed, "could not reach the proxy \(target.proxy.authority): \(error.message)",
                                                context: error.context))
            case .tunnel:
                result = .failure(RealtimeError(
                    .proxyFailed, "the connection to the proxy \(target.proxy.authority) failed before the tunnel was up: \(error.message)",
                    context: error.context))
            case .tlsHandshake, .exchanging, .finished:
                break
            }
        }
        phase = .finished
        self.completion = nil
        context.cancelTimer(timer)
        timer = nil
        tls = nil
        socket.close(in: context)
        context.detach(token)
        completion(result)
    }
}
