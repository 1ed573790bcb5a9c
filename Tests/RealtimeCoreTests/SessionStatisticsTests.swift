import Foundation
@_spi(DialectAuthoring) import RealtimeCore
import RealtimeTesting
import Testing

@Suite("Session statistics")
struct SessionStatisticsTests {
    @Test("attempts, connections, frames, bytes and events each way, and the connection's age, through a failed attempt and a reconnect")
    func countsThroughAReconnect() async throws {
        let harness = EngineHarness(script: { index in
            switch index {
            case 1: return [.drop]                                  // the first retry fails
            default: return EngineHarness.welcome(id: "c\(index)") + [.expect(subRoom, reply: [subOkRoom])]
            }
        })
        #expect(harness.session.statistics == SessionStatistics())
        let room = harness.session.channel("room")
        try await harness.session.connect()
        try await room.subscribed()
        harness.clock.advance(by: .seconds(2))
        var statistics = harness.session.statistics
        #expect(statistics.attempts == 1)
        #expect(statistics.connections == 1)
        #expect(statistics.reconnections == 0)
        #expect(statistics.connectedFor == .seconds(2))
        let welcome = #"{"t":"welcome","id":"c0"}"#
        #expect(statistics.framesReceived == 2)                    // welcome, subok
        #expect(statistics.bytesReceived == welcome.utf8.count + #"{"t":"subok","ch":"room"}"#.utf8.count)
        #expect(statistics.framesSent == 1)                        // sub
        #expect(statistics.eventsReceived == 0)

        let event = #"{"t":"ev","ch":"room","name":"x","data":1}"#
        harness.peers[0].send([.text(event), .text(event)])
        try await room.send("note", "hi")
        statistics = harness.session.statistics
        #expect(statistics.eventsReceived == 2)
        #expect(statistics.framesReceived == 4)
        #expect(statistics.framesSent == 2)
        #expect(statistics.bytesSent == texts(harness.peers[0]).reduce(0) { $0 + $1.utf8.count })

        harness.peers[0].drop()
        #expect(harness.session.statistics.connectedFor == nil)
        harness.clock.advance(by: .seconds(1))                     // attempt 2: dropped
        harness.clock.advance(by: .seconds(2))                     // attempt 3: connects
        try await room.subscribed()
        statistics = harness.session.statistics
        #expect(statistics.attempts == 3)
        #expect(statistics.connections == 2)
        #expect(statistics.reconnections == 1)
        #expect(statistics.connectedFor == .zero)
        #expect(statistics.eventsReceived == 2)
    }
}
