@_spi(DialectAuthoring) import RealtimeCore
@_spi(DialectAuthoring) import RealtimePusher
import Testing

@Suite("Pusher trace lines")
struct PusherLoggingTests {
    static let pusher = PusherDialect(vendor: .pusher, key: "app-key", host: "127.0.0.1", auth: .inline(secret: "s"))
    static let bird = PusherDialect(vendor: .bird, key: "app-key", host: "127.0.0.1", auth: .inline(secret: "s"))

    @Test("a presence subscribe shows the channel and the member id, never the rest of the identity or the signature")
    func presenceSubscribe() {
        let frame = TransportFrame.text(#"{"event":"pusher:subscribe","data":{"auth":"app-key:S3CRET-sig","channel":"presence-room","channel_data":"{\"user_id\":\"7\",\"user_info\":{\"name\":\"S3CRET-name\",\"data\":{\"data\":\"S3CRET-deep\"}}}"}}"#)
        let line = Self.pusher.logDescription(of: frame)
        #expect(!line.contains("S3CRET"), "\(line)")
        #expect(line.contains("presence-room") && line.contains(#"\"user_id\":\"7\""#), "\(line)")
    }

    @Test("a sign-in shows the user id only; Bird's member_data likewise")
    func signIn() {
        let pusher = TransportFrame.text(#"{"event":"pusher:signin","data":{"auth":"app-key:S3CRET-sig","user_data":"{\"id\":\"u1\",\"watchlist\":[\"S3CRET-w\"],\"user_info\":{\"x\":\"S3CRET-i\"}}"}}"#)
        let line = Self.pusher.logDescription(of: pusher)
        #expect(!line.contains("S3CRET") && line.contains(#"\"id\":\"u1\""#), "\(line)")
        let bird = TransportFrame.text(#"{"event":"bird:subscribe","data":{"auth":"k:S3CRET-sig","channel":"presence-x","member_data":"{\"member_id\":\"m9\",\"member_info\":\"S3CRET-i\"}"}}"#)
        let birdLine = Self.bird.logDescription(of: bird)
        #expect(!birdLine.contains("S3CRET") && birdLine.contains(#"\"member_id\":\"m9\""#), "\(birdLine)")
    }

    @Test("an identity that is not JSON is masked whole; other events keep their data")
    func otherFrames() {
        let broken = TransportFrame.text(#"{"event":"pusher:subscribe","data":{"channel":"presence-x","channel_data":"S3CRET{"}}"#)
        #expect(!Self.pusher.logDescription(of: broken).contains("S3CRET"))
        let event = TransportFrame.text(#"{"event":"client-typing","channel":"private-a","data":{"text":"hello"}}"#)
        #expect(Self.pusher.logDescription(of: event).contains("hello"))
    }
}
