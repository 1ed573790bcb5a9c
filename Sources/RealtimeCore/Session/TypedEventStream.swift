import Foundation

/// Received events with their data decoded as `Payload`, as an async sequence: each element is the
/// decoded value and the event it came in. Back-pressured like ``RealtimeEventStream``, which it reads.
///
/// An event whose data does not decode is skipped, and the session reports a
/// ``RealtimeError/Code/decodingFailed`` error to its error observers (``RealtimeSession/onError(id:_:)``
/// and ``RealtimeSession/errors``) as typed handlers do; the loop goes on with the next event. See
/// ``RealtimeChannel/events(_:as:decoder:)``.
public struct TypedEventStream<Payload: Decodable & SendableMetatype>: AsyncSequence, Sendable {
    public typealias Element = (Payload, RealtimeEvent)

    let events: RealtimeEventStream
    let decoder: JSONDecoder
    let report: @Sendable (RealtimeError) -> Void

    /// `events` decoded by `decoder`; the events that do not decode are reported through `engine`.
    init(_ events: RealtimeEventStream, decoder: JSONDecoder, engine: SessionEngine) {
        self.events = events
        self.decoder = decoder
        report = { [weak engine] in engine?.reportOnDeliveryTarget($0) }
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: events.makeAsyncIterator(), decoder: decoder, report: report)
    }

    /// Takes events one at a time, decoding each in the consuming task.
    public struct Iterator: AsyncIteratorProtocol {
        var base: RealtimeEventStream.Iterator
        let decoder: JSONDecoder
        let report: @Sendable (RealtimeError) -> Void

        /// The next event that decodes, or `nil` once the stream has ended (the awaiting task was cancelled).
        public mutating func next() async -> (Payload, RealtimeEvent)? {
            while let event = await base.next() {
                do {
                    return (try event.decode(Payload.self, decoder: decoder), event)
                } catch {
                    report(.undecodable(event, as: Payload.self, error))
                }
            }
            return nil
        }
    }
}

extension RealtimeSession {
    /// Events named `event`, on any channel, with their data decoded as `Payload` by `decoder`: the async
    /// sequence twin of ``on(_:as:decoder:id:perform:)``, back-pressured like ``events(_:)``. An event that
    /// does not decode is skipped and reported as `.decodingFailed` to the error observers.
    public func events<Payload: Decodable & SendableMetatype>(_ event: String, as type: Payload.Type,
                                                              decoder: JSONDecoder = JSONDecoder())
        -> TypedEventStream<Payload> {
        TypedEventStream(events(event), decoder: decoder, engine: engine)
    }
}

extension RealtimeChannel {
    /// Events named `event` on this channel with their data decoded as `Payload` by `decoder`: the async
    /// sequence twin of ``on(_:as:decoder:id:perform:)``, back-pressured like ``events(_:)``. An event that
    /// does not decode is skipped and reported as `.decodingFailed` to the session's error observers.
    public func events<Payload: Decodable & SendableMetatype>(_ event: String, as type: Payload.Type,
                                                              decoder: JSONDecoder = JSONDecoder())
        -> TypedEventStream<Payload> {
        TypedEventStream(events(event), decoder: decoder, engine: engine)
    }
}
