import Foundation
import Realtime
import RealtimeTesting

/// Events per second from a received frame to the app's handler, through the session engine and each
/// dialect, over the in-memory transport (no sockets: `transport` measures those). The baseline, measured
/// in the same run, is `JSONValue.parse` of the same frames' JSON: what any client must pay at least.
///
/// Usage: `realtime-bench session [--events N] [--rounds R] [--batch FRAMES]` (build with `-c release`); `--batch 1`
/// shows what each read costs beside its events, which paced traffic (one event per read) pays in full.
enum SessionBenchmark {
    /// One dialect: how to build it, what the in-memory server answers, and an event frame.
    struct Case {
        var name: String
        var dialect: any RealtimeDialect
        var channel: ChannelID
        var event: String
        /// Answers the client's handshake and subscription on `peer`.
        var serve: @Sendable (InMemoryPeer) -> Void
        /// Event number `index` as the server sends it.
        var frame: @Sendable (_ index: Int) -> String
    }

    /// Frames per delivered batch, as from one socket read, unless `--batch` says otherwise.
    static let defaultBatchSize = 64

    static func run(arguments: [String]) async throws {
        let events = intOption("--events", in: arguments) ?? 200_000
        let rounds = intOption("--rounds", in: arguments) ?? 5
        let batchSize = max(1, intOption("--batch", in: arguments) ?? defaultBatchSize)
        print("session: \(events) events per row, frame → handler over the in-memory transport, "
              + "batches of \(batchSize), best of \(rounds) interleaved rounds")
        let cases = [socketIO, pusher, actionCable]
        var best: [String: (inline: Double, queue: Double, parse: Double)] = [:]
        for _ in 0..<rounds {
            for item in cases {
                // Socket.IO frames are a packet type, then JSON: the baseline parses the JSON part.
                let json = (0..<events).map { String(item.frame($0).drop { $0.isNumber }) }
                let parse = try parseSeconds(json)
                let inline = try await deliverySeconds(item, events: events, batchSize: batchSize, delivery: .inline)
                let queue = try await deliverySeconds(item, events: events, batchSize: batchSize, delivery: nil)
                let old = best[item.name] ?? (.infinity, .infinity, .infinity)
                best[item.name] = (min(old.inline, inline), min(old.queue, queue), min(old.parse, parse))
            }
        }
        for item in cases {
            guard let row = best[item.name] else { continue }
            func rate(_ seconds: Double) -> String { String(format: "%.2f M/s", Double(events) / seconds / 1e6) }
            print("  \(item.name.padding(toLength: 12, withPad: " ", startingAt: 0)) "
                  + "inline delivery \(rate(row.inline)) (\(String(format: "%.1f", row.inline / row.parse))× the parse), "
                  + "default queue \(rate(row.queue)) (\(String(format: "%.1f", row.queue / row.parse))× the parse); "
                  + "JSON parse alone \(rate(row.parse))")
        }
    }

    static func parseSeconds(_ frames: [String]) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        var sink = 0
        for frame in frames { sink &+= try JSONValue.parse(frame).objectValue?.count ?? 1 }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        if sink == -1 { print(sink) }
        return seconds
    }

    /// Seconds from the first batch sent to the last event handled.
    static func deliverySeconds(_ item: Case, events: Int, batchSize: Int, delivery: DeliveryTarget?) async throws -> Double {
        let (session, peer) = try await connected(item, delivery: delivery)
        defer { session.disconnect() }
        let handled = Locked(0)
        let done = DispatchSemaphore(value: 0)
        session.channel(item.channel).on(item.event) { _ in
            let count = handled.withLock { value -> Int in
                value += 1
                return value
            }
            if count == events { done.signal() }
        }
        let batches = stride(from: 0, to: events, by: batchSize).map { first in
            (first..<min(first + batchSize, events)).map { TransportFrame.text(item.frame($0)) }
        }
        let start = DispatchTime.now().uptimeNanoseconds
        for batch in batches { peer.send(batch) }
        guard done.wait(timeout: .now() + 120) == .success else {
            throw RealtimeError(.timedOut, "\(item.name): \(handled.withLock { $0 }) of \(events) events handled")
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func connected(_ item: Case, delivery: DeliveryTarget?) async throws -> (RealtimeSession, InMemoryPeer) {
        let transport = InMemoryTransport(autoAccept: false) { item.serve($0) }
        let session = RealtimeSession(dialect: item.dialect, transport: transport,
                                      options: SessionOptions(delivery: delivery))
        let channel = session.channel(item.channel)
        try await session.connect()
        _ = try await channel.subscribed()
        return (session, await transport.peer(0))
    }

    // MARK: Dialects

    static let socketIO = Case(
        name: "socket.io", dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!), channel: "/", event: "tick",
        serve: { peer in
            peer.onReceive { frame, peer in
                if case .text(let text) = frame, text.hasPrefix("40") { peer.send(text: #"40{"sid":"bench"}"#) }
            }
            peer.accept()
            peer.send(text: #"0{"sid":"e","upgrades":[],"pingInterval":60000,"pingTimeout":60000,"maxPayload":1000000}"#)
        },
        frame: { index in #"42["tick",{"n":\#(index),"text":"hello world","ok":true}]"# })

    static let pusher = Case(
        name: "pusher", dialect: .pusher(key: "bench", host: "127.0.0.1"), channel: "room", event: "tick",
        serve: { peer in
            peer.onReceive { frame, peer in
                if case .text(let text) = frame, text.contains("pusher:subscribe") {
                    peer.send(text: #"{"event":"pusher_internal:subscription_succeeded","channel":"room","data":"{}"}"#)
                }
            }
            peer.accept()
            peer.send(text: #"{"event":"pusher:connection_established","data":"{\"socket_id\":\"1.1\",\"activity_timeout\":120}"}"#)
        },
        frame: { index in
            #"{"event":"tick","channel":"room","data":"{\"n\":\#(index),\"text\":\"hello world\",\"ok\":true}"}"#
        })

    static let actionCable = Case(
        name: "actioncable", dialect: .actionCable(url: URL(string: "ws://127.0.0.1:1/cable")!),
        channel: ChannelID("RoomChannel"), event: "message",
        serve: { peer in
            peer.onReceive { frame, peer in
                guard case .text(let text) = frame, let command = try? JSONValue.parse(text),
                      command["command"]?.stringValue == "subscribe",
                      let identifier = command["identifier"]?.stringValue else { return }
                peer.send(text: JSONValue.object(["identifier": .string(identifier),
                                                  "type": "confirm_subscription"]).serialized())
            }
            peer.accept(subprotocol: "actioncable-v1-json")
            peer.send(text: #"{"type":"welcome"}"#)
        },
        frame: { index in
            #"{"identifier":"{\"channel\":\"RoomChannel\"}","message":{"n":\#(index),"text":"hello world","ok":true}}"#
        })

    static func intOption(_ name: String, in arguments: [String]) -> Int? {
        guard let flag = arguments.firstIndex(of: name), flag + 1 < arguments.count,
              let value = Int(arguments[flag + 1]), value > 0 else { return nil }
        return value
    }
}
