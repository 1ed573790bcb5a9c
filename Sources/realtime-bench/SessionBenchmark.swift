import Foundation
import Realtime
import RealtimeTesting

/// Events per second from a received frame to the app's handler, through the session engine and each
/// dialect, over the in-memory transport (no sockets: `transport` measures those). The baseline, measured
/// in the same run, is `JSONValue.parse` of the same frames' JSON: what any client must pay at least.
///
/// Usage: `realtime-bench session [--events N] [--rounds R] [--batch FRAMES] [--channels C]` (build with
/// `-c release`); `--batch 1` shows what each read costs beside its events, which paced traffic (one event per
/// read) pays in full; `--channels C` (1) spreads the events over C channels in a scattered order, so that
/// each event is routed afresh, as when broadcasts come on many channels at once.
enum SessionBenchmark {
    /// One dialect: how to build it, what the in-memory server answers, and an event frame.
    struct Case {
        var name: String
        var dialect: any RealtimeDialect
        /// Channel `number` of the `--channels`; number 0 alone when there is one.
        var channel: @Sendable (_ number: Int, _ count: Int) -> ChannelID
        var event: String
        /// Answers the client's handshake and subscriptions on `peer`.
        var serve: @Sendable (InMemoryPeer) -> Void
        /// Event number `index` on channel `number` of `count`, as the server sends it.
        var frame: @Sendable (_ index: Int, _ number: Int, _ count: Int) -> String
    }

    /// Frames per delivered batch, as from one socket read, unless `--batch` says otherwise.
    static let defaultBatchSize = 64

    static func run(arguments: [String]) async throws {
        let events = intOption("--events", in: arguments) ?? 200_000
        let rounds = intOption("--rounds", in: arguments) ?? 5
        let batchSize = max(1, intOption("--batch", in: arguments) ?? defaultBatchSize)
        let channels = intOption("--channels", in: arguments) ?? 1
        print("session: \(events) events per row, frame → handler over the in-memory transport, "
              + "batches of \(batchSize), \(channels) channel\(channels == 1 ? "" : "s"), best of \(rounds) interleaved rounds")
        let cases = [socketIO, pusher, actionCable]
        var best: [String: (inline: Double, queue: Double, parse: Double)] = [:]
        for _ in 0..<rounds {
            for item in cases {
                let frames = (0..<events).map { item.frame($0, scattered($0, over: channels), channels) }
                // Socket.IO frames are a packet type (and a namespace), then JSON: the baseline parses the JSON.
                let json = frames.map { String($0.drop { $0 != "{" && $0 != "[" }) }
                let parse = try parseSeconds(json)
                let inline = try await deliverySeconds(item, frames: frames, channels: channels, batchSize: batchSize,
                                                       delivery: .inline)
                let queue = try await deliverySeconds(item, frames: frames, channels: channels, batchSize: batchSize,
                                                      delivery: nil)
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

    /// The channel of event `index`: every channel in turn over `count` events, in a scattered order.
    static func scattered(_ index: Int, over count: Int) -> Int {
        count == 1 ? 0 : (index &* 7919) % count  // 7919 is prime: a stride that visits every channel
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
    static func deliverySeconds(_ item: Case, frames: [String], channels: Int, batchSize: Int,
                                delivery: DeliveryTarget?) async throws -> Double {
        let (session, peer) = try await connected(item, channels: channels, delivery: delivery)
        defer { session.disconnect() }
        let events = frames.count
        let handled = Locked(0)
        let done = DispatchSemaphore(value: 0)
        for number in 0..<channels {
            session.channel(item.channel(number, channels)).on(item.event) { _ in
                let count = handled.withLock { value -> Int in
                    value += 1
                    return value
                }
                if count == events { done.signal() }
            }
        }
        let batches = stride(from: 0, to: events, by: batchSize).map { first in
            frames[first..<min(first + batchSize, events)].map { TransportFrame.text($0) }
        }
        let start = DispatchTime.now().uptimeNanoseconds
        for batch in batches { peer.send(batch) }
        guard done.wait(timeout: .now() + 120) == .success else {
            throw RealtimeError(.timedOut, "\(item.name): \(handled.withLock { $0 }) of \(events) events handled")
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func connected(_ item: Case, channels: Int, delivery: DeliveryTarget?) async throws -> (RealtimeSession, InMemoryPeer) {
        let transport = InMemoryTransport(autoAccept: false) { item.serve($0) }
        let session = RealtimeSession(dialect: item.dialect, transport: transport,
                                      options: SessionOptions(delivery: delivery))
        let held = (0..<channels).map { session.channel(item.channel($0, channels)) }
        try await session.connect()
        for channel in held { _ = try await channel.subscribed() }
        return (session, await transport.peer(0))
    }

    // MARK: Dialects

    static let socketIO = Case(
        name: "socket.io", dialect: .socketIO(url: URL(string: "http://127.0.0.1:1")!),
        channel: { number, count in count == 1 ? "/" : ChannelID("/c\(number)") }, event: "tick",
        serve: { peer in
            peer.onReceive { frame, peer in
                // `40` or `40/cN,`, with or without a payload: answered for the same namespace.
                guard case .text(let text) = frame, text.hasPrefix("40") else { return }
                let namespace = text.dropFirst(2).prefix { $0 != "{" }
                peer.send(text: "40" + namespace + #"{"sid":"bench"}"#)
            }
            peer.accept()
            peer.send(text: #"0{"sid":"e","upgrades":[],"pingInterval":60000,"pingTimeout":60000,"maxPayload":1000000}"#)
        },
        frame: { index, number, count in
            let namespace = count == 1 ? "" : "/c\(number),"
            return #"42\#(namespace)["tick",{"n":\#(index),"text":"hello world","ok":true}]"#
        })

    static let pusher = Case(
        name: "pusher", dialect: .pusher(key: "bench", host: "127.0.0.1"),
        channel: { number, count in count == 1 ? "room" : ChannelID("room-\(number)") }, event: "tick",
        serve: { peer in
            peer.onReceive { frame, peer in
                guard case .text(let text) = frame, let command = try? JSONValue.parse(text),
                      command["event"]?.stringValue == "pusher:subscribe",
                      let channel = command["data"]?["channel"]?.stringValue else { return }
                peer.send(text: JSONValue.object(["event": "pusher_internal:subscription_succeeded",
                                                  "channel": .string(channel), "data": "{}"]).serialized())
            }
            peer.accept()
            peer.send(text: #"{"event":"pusher:connection_established","data":"{\"socket_id\":\"1.1\",\"activity_timeout\":120}"}"#)
        },
        frame: { index, number, count in
            let channel = count == 1 ? "room" : "room-\(number)"
            return #"{"event":"tick","channel":"\#(channel)","data":"{\"n\":\#(index),\"text\":\"hello world\",\"ok\":true}"}"#
        })

    static let actionCable = Case(
        name: "actioncable", dialect: .actionCable(url: URL(string: "ws://127.0.0.1:1/cable")!),
        channel: { number, count in
            count == 1 ? ChannelID("RoomChannel") : ChannelID("RoomChannel", params: ["room": .integer(Int64(number))])
        }, event: "message",
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
        frame: { index, number, count in
            let room = count == 1 ? "" : #",\"room\":\#(number)"#
            return #"{"identifier":"{\"channel\":\"RoomChannel\"\#(room)}","message":{"n":\#(index),"text":"hello world","ok":true}}"#
        })

    static func intOption(_ name: String, in arguments: [String]) -> Int? {
        guard let flag = arguments.firstIndex(of: name), flag + 1 < arguments.count,
              let value = Int(arguments[flag + 1]), value > 0 else { return nil }
        return value
    }
}
