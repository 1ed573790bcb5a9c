/// The one way a call that belongs to one dialect fails on a session of another: `.unsupported`, thrown
/// at the call before anything is queued or waited for, with the call, the session's dialect and the
/// dialect the call needs in the message.
extension RealtimeError {
    /// `call` (`"perform"`, `"request"`, `"signIn"`, `"presence"`) is not part of `dialect`; it needs `needs`.
    package static func unsupported(_ call: String, dialect: String, needs: String,
                                    channel: ChannelID? = nil) -> RealtimeError {
        RealtimeError(.unsupported, "\(call) is not supported by the \(dialect) dialect; it needs \(needs)",
                      context: .init(channel: channel, detail: call))
    }
}

extension RealtimeSession {
    /// Whether this session speaks dialect `D`.
    package func speaks<D: RealtimeDialect>(_ dialect: D.Type) -> Bool {
        engine.dialect is D
    }

    /// Throws ``RealtimeError/unsupported(_:dialect:needs:channel:)`` unless this session speaks `D`.
    package func requireDialect<D: RealtimeDialect>(_ dialect: D.Type, for call: String, needs: String,
                                                    channel: ChannelID? = nil) throws(RealtimeError) {
        guard speaks(dialect) else {
            throw .unsupported(call, dialect: dialectName, needs: needs, channel: channel)
        }
    }
}

extension RealtimeChannel {
    /// Throws ``RealtimeError/unsupported(_:dialect:needs:channel:)`` unless the channel's session speaks `D`.
    package func requireDialect<D: RealtimeDialect>(_ dialect: D.Type, for call: String,
                                                    needs: String) throws(RealtimeError) {
        guard engine.dialect is D else {
            throw .unsupported(call, dialect: engine.dialectName, needs: needs, channel: id)
        }
    }
}
