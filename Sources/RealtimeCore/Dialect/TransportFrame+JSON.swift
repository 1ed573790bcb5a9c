extension TransportFrame {
    /// The JSON document in a text frame, for dialects whose every frame is one JSON text (Pusher, Action
    /// Cable). A binary frame is a `.protocolViolation`, bad JSON an `.invalidJSON` error carrying the byte
    /// offset and the start of the text; `peer` names the server in the messages. Returns the text too, for
    /// dialects that keep raw members.
    @_spi(DialectAuthoring) public func jsonDocument(from peer: String) throws(RealtimeError) -> (document: JSONValue, text: String) {
        guard case .text(let text) = self else {
            throw RealtimeError(.protocolViolation, "\(peer) sent a binary frame")
        }
        do {
            return (try JSONValue.parse(text), text)
        } catch {
            throw RealtimeError(.invalidJSON, "\(peer) sent a frame that is not JSON",
                                context: .init(offset: error.context.offset, detail: String(text.prefix(120))))
        }
    }
}

extension TransportFrame {
    /// `jsonDocument(from:)` for dialects that read a few top-level members: the same errors, no dictionary
    /// for the top-level object, and the members in `deferred` checked but left as text (see ``JSONEnvelope``).
    package func jsonEnvelope(from peer: String, deferring deferred: [String] = [], pick: JSONEnvelope.Pick? = nil,
                              scratch: inout JSONParseScratch) throws(RealtimeError) -> JSONEnvelope {
        guard case .text(let text) = self else {
            throw RealtimeError(.protocolViolation, "\(peer) sent a binary frame")
        }
        do {
            return try JSONEnvelope(parsing: text, deferring: deferred, pick: pick, scratch: &scratch)
        } catch {
            throw RealtimeError(.invalidJSON, "\(peer) sent a frame that is not JSON",
                                context: .init(offset: error.context.offset, detail: String(text.prefix(120))))
        }
    }
}
