import RealtimeCore
import Testing

@Suite("RealtimeError and lifecycle descriptions")
struct RealtimeErrorDescriptionTests {
    @Test("the description lists the context once: a detail the message already says is left out")
    func detailNotRepeated() {
        let refused = RealtimeError(.connectionRefused, "the server refused the connection: Could not find app by key",
                                    context: .init(closeCode: 4001, detail: "Could not find app by key"))
        #expect(refused.description
                == "connection-refused: the server refused the connection: Could not find app by key; close code 4001")
        let distinct = RealtimeError(.transportFailed, "bind 127.0.0.1:3000 failed: Address already in use",
                                     context: .init(detail: "EADDRINUSE"))
        #expect(distinct.description == "transport-failed: bind 127.0.0.1:3000 failed: Address already in use; EADDRINUSE")
    }

    @Test("a context prints what is set, not a memberwise dump")
    func contextDescription() {
        #expect(RealtimeError.Context().description == "no context")
        let context = RealtimeError.Context(httpStatus: 404, serverPayload: .object(["message": "gone"]),
                                            channel: ChannelID("/chat"), detail: "GET /socket.io/")
        #expect(context.description == #"HTTP 404; channel /chat; GET /socket.io/; server payload {"message":"gone"}"#)
    }

    @Test("lifecycle events print as short text")
    func lifecycleDescriptions() {
        let first = SubscriptionInfo(isResubscription: false, recovered: nil, serverPayload: .object(["sid": "a1"]))
        #expect(first.description == #"subscribed, payload {"sid":"a1"}"#)
        let again = SubscriptionInfo(isResubscription: true, recovered: true)
        #expect(ChannelLifecycleEvent(channel: ChannelID("/chat"), kind: .subscribed(again)).description
                == "/chat: resubscribed, recovered")
        let ended = ChannelLifecycleEvent(channel: ChannelID("/chat"),
                                          kind: .endedByServer(RealtimeError(.channelUnavailable, "the server ended /chat")))
        #expect(ended.description == "/chat: ended by the server: channel-unavailable: the server ended /chat")
        #expect(ChannelLifecycleEvent.Kind.unsubscribed.description == "unsubscribed")
    }
}
