import Foundation

// Handlers that receive a Decodable value instead of a JSONValue. An event whose data does not decode
// reaches no typed handler; the session reports it through `onError` / `errors`, so a payload that changed
// shape on the server is heard about instead of dropped in silence.

extension RealtimeSession {
    /// Calls `handler` with the `data` of every event named `event`, on any channel, decoded as `Payload`
    /// with `decoder`, and the event itself. An event whose data does not decode is not passed on: the
    /// session reports a ``RealtimeError/Code/decodingFailed`` error to ``onError(id:_:)`` and ``errors``
    /// (the event's name, channel and payload in it, the decoder's explanation in `context.detail`), and
    /// the handler waits for the next event. `id`: as in ``on(_:id:perform:)``.
    @discardableResult
    public func on<Payload: Decodable & SendableMetatype>(_ event: String, as type: Payload.Type, decoder: JSONDecoder = JSONDecoder(),
                                       id: HandlerID? = nil,
                                       perform handler: @escaping @Sendable (Payload, RealtimeEvent) -> Void) -> HandlerID {
        on(event, id: id, perform: engine.registry.decoding(type, with: decoder, handler))
    }
}

extension RealtimeChannel {
    /// Calls `handler` with the `data` of every event named `event` on this channel, decoded as `Payload`
    /// with `decoder`, and the event itself; an event that does not decode is reported as in
    /// ``RealtimeSession/on(_:as:decoder:id:perform:)``.
    @discardableResult
    public func on<Payload: Decodable & SendableMetatype>(_ event: String, as type: Payload.Type, decoder: JSONDecoder = JSONDecoder(),
                                       id handlerID: HandlerID? = nil,
                                       perform handler: @escaping @Sendable (Payload, RealtimeEvent) -> Void) -> HandlerID {
        on(event, id: handlerID, perform: engine.registry.decoding(type, with: decoder, handler))
    }

    /// As ``on(_:as:decoder:id:perform:)``, for the next event named `event` on this channel only. An
    /// event that does not decode still uses it up: `once` means one event, decoded or reported.
    @discardableResult
    public func once<Payload: Decodable & SendableMetatype>(_ event: String, as type: Payload.Type, decoder: JSONDecoder = JSONDecoder(),
                                         id handlerID: HandlerID? = nil,
                                         perform handler: @escaping @Sendable (Payload, RealtimeEvent) -> Void) -> HandlerID {
        once(event, id: handlerID, perform: engine.registry.decoding(type, with: decoder, handler))
    }
}

extension HandlerRegistry {
    /// An event handler that decodes the event's data and calls `handler`, or reports why it could not to
    /// the error observers, on the same delivery turn (so in order with the events around it).
    func decoding<Payload: Decodable & SendableMetatype>(_: Payload.Type, with decoder: JSONDecoder,
                                      _ handler: @escaping @Sendable (Payload, RealtimeEvent) -> Void)
        -> @Sendable (RealtimeEvent) -> Void {
        { [weak self] event in
            let value: Payload
            do {
                value = try event.decode(Payload.self, decoder: decoder)
            } catch {
                self?.dispatchError(.undecodable(event, as: Payload.self, error))
                return
            }
            handler(value, event)
        }
    }
}

extension RealtimeError {
    /// What typed handlers and typed event streams report for an event whose data is not a `Payload`.
    static func undecodable<Payload>(_ event: RealtimeEvent, as _: Payload.Type, _ error: any Error) -> RealtimeError {
        let channel = event.channel.map { " on \($0)" } ?? ""
        return RealtimeError(.decodingFailed, "\"\(event.name)\"\(channel) was not passed on: its data is not a \(Payload.self)",
                             context: .init(serverPayload: event.data, channel: event.channel,
                                            detail: String(describing: error)))
    }
}
