@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// The close 4000 "use TLS" rule alone (the close-code table is covered by the machine's tests).
@Suite("Pusher close classification")
struct PusherCloseClassificationTests {
    static let useTLS = TransportClosure(.closedByPeer(code: 4000, reason: "use TLS"))

    @Test("a 4000 over ws earns one wss attempt from Pusher, once; never over wss, never from Bird or other codes")
    func tlsRetry() {
        #expect(PusherMachine.retriesOverTLS(Self.useTLS, vendor: .pusher, usedTLS: false, switchedBefore: false))
        #expect(!PusherMachine.retriesOverTLS(Self.useTLS, vendor: .pusher, usedTLS: false, switchedBefore: true))
        #expect(!PusherMachine.retriesOverTLS(Self.useTLS, vendor: .pusher, usedTLS: true, switchedBefore: false))
        #expect(!PusherMachine.retriesOverTLS(Self.useTLS, vendor: .bird, usedTLS: false, switchedBefore: false))
        #expect(!PusherMachine.retriesOverTLS(TransportClosure(.closedByPeer(code: 4001, reason: "")), vendor: .pusher,
                                              usedTLS: false, switchedBefore: false))
        #expect(!PusherMachine.retriesOverTLS(TransportClosure(.closedLocally(code: 4000, reason: "")), vendor: .pusher,
                                              usedTLS: false, switchedBefore: false))
    }
}
