@_spi(DialectAuthoring) @testable import RealtimeCore
import Testing

@Suite("ChannelTable")
struct ChannelTableTests {
    private let room: ChannelID = "room"
    private let lobby: ChannelID = "lobby"
    private let refused = RealtimeError(.channelUnavailable, "refused")

    private func message(on channel: ChannelID) -> OutgoingMessage {
        OutgoingMessage(channel: channel, event: "say", arguments: [])
    }

    private func buffered(_ leftovers: ChannelTable.Leftovers) -> [ChannelTable.BufferedSend.Kind] {
        leftovers.queue.map(\.kind)
    }

    private func send(_ operation: UInt64) -> ChannelTable.BufferedSend.Kind { .send(OperationID(operation)) }
    private func request(_ operation: UInt64) -> ChannelTable.BufferedSend.Kind { .request(RequestID(operation)) }

    @Test("channels keep their join order; joining twice asks the server once")
    func joinOrder() {
        var table = ChannelTable(joined: [room, room], sendBufferLimit: 10)
        #expect(table.order == [room])
        let asksFirst = table.join(lobby), asksAgain = table.join(lobby)
        #expect(asksFirst && !asksAgain)
        #expect(table.order == [room, lobby])
        #expect(table.state(of: lobby) == .pending)
        #expect(table.state(of: "elsewhere") == nil)
    }

    @Test("the join order survives the join counter running out, and a channel left and joined again goes last")
    func joinOrderPastTheCounter() {
        var table = ChannelTable(joined: [room, lobby], sendBufferLimit: 10, firstSerial: .max - 3)
        _ = table.join("third")
        // The counter is at its end now: the next join numbers every channel afresh.
        _ = table.join("fourth")
        _ = table.leave(room)
        _ = table.join(room)
        #expect(table.order == [lobby, "third", "fourth", room])
    }

    @Test("a failed or ended channel joins again as pending")
    func rejoin() {
        var table = ChannelTable(joined: [room], sendBufferLimit: 10)
        _ = table.markStopped(room, as: .rejected(refused))
        #expect(table.unavailability(of: room)?.code == .channelUnavailable)
        let asks = table.join(room)
        #expect(asks)
        #expect(table.state(of: room) == .pending)
        #expect(table.unavailability(of: room) == nil)
    }

    @Test("the buffer is bounded across all channels")
    func bound() {
        var table = ChannelTable(joined: [room, lobby], sendBufferLimit: 2)
        table.buffer(message(on: room), as: send(1))
        #expect(table.overflow(for: lobby) == nil)
        table.buffer(message(on: lobby), as: request(2))
        #expect(table.bufferedCount == 2)
        #expect(table.overflow(for: lobby)?.code == .bufferFull)
    }

    @Test("a send on a channel that is not joined is neither buffered nor counted")
    func notJoined() {
        var table = ChannelTable(joined: [], sendBufferLimit: 2)
        #expect(table.unavailability(of: room)?.code == .channelUnavailable)
        table.buffer(message(on: room), as: send(1))
        #expect(table.bufferedCount == 0)
    }

    @Test("a subscription hands back waiters and buffered sends in order, and says whether it is a resubscription")
    func subscribed() throws {
        var table = ChannelTable(joined: [room], sendBufferLimit: 10)
        table.buffer(message(on: room), as: send(1))
        table.buffer(message(on: room), as: request(2))
        table.addWaiter(OperationID(3), to: room)
        table.storePayload(["since": 5], for: room)
        let confirmed = table.markSubscribed(room, recovered: true, at: .seconds(1))
        let first = try #require(confirmed)
        #expect(first.info == SubscriptionInfo(isResubscription: false, recovered: true, serverPayload: ["since": 5]))
        #expect(buffered(first.leftovers) == [send(1), request(2)])
        #expect(first.leftovers.waiters == [OperationID(3)])
        #expect(table.bufferedCount == 0)
        #expect(table.isSubscribed(room))

        table.connectionLost(at: .seconds(10))
        #expect(table.state(of: room) == .pending)
        let reconfirmed = table.markSubscribed(room, recovered: nil, at: .milliseconds(12_500))
        let again = try #require(reconfirmed)
        // The gap runs from the lost connection to this confirmation.
        #expect(again.info == SubscriptionInfo(isResubscription: true, recovered: nil, gap: .milliseconds(2_500)))

        table.markPending(room, at: .seconds(20))      // the server dropped it; the dialect re-joins
        let resubscribed = table.markSubscribed(room, recovered: nil, at: .seconds(21))
        #expect(try #require(resubscribed).info.gap == .seconds(1))
    }

    @Test("a lost connection drops payloads not yet reported")
    func payloadsLapse() throws {
        var table = ChannelTable(joined: [room], sendBufferLimit: 10)
        table.storePayload(["since": 5], for: room)
        table.connectionLost(at: .zero)
        let confirmed = table.markSubscribed(room, recovered: nil, at: .zero)
        let info = try #require(confirmed).info
        #expect(info.serverPayload == nil)
        #expect(info.gap == nil)        // never subscribed: nothing lapsed
    }

    @Test("leaving forgets the channel and hands back what it held")
    func leave() throws {
        var table = ChannelTable(joined: [room, lobby], sendBufferLimit: 10)
        table.buffer(message(on: room), as: send(1))
        let leaving = table.leave(room)
        let left = try #require(leaving)
        #expect(left.state == .pending)
        #expect(buffered(left.leftovers) == [send(1)])
        #expect(table.order == [lobby])
        #expect(table.bufferedCount == 0)
        let leavingAgain = table.leave(room)
        #expect(leavingAgain == nil)
    }

    @Test("withdrawing finds a waiter or a buffered send or request by operation")
    func withdraw() {
        var table = ChannelTable(joined: [room, lobby], sendBufferLimit: 10)
        table.buffer(message(on: room), as: send(1))
        table.buffer(message(on: lobby), as: request(2))
        table.addWaiter(OperationID(3), to: lobby)
        let withdrawn = [3, 2, 1, 1].map { table.withdraw(OperationID($0)) }
        #expect(withdrawn == [.waiter(OperationID(3)), .buffered(.init(message: message(on: lobby), kind: request(2))),
                              .buffered(.init(message: message(on: room), kind: send(1))), nil])
        #expect(table.bufferedCount == 0)
    }

    @Test("deadlines take out exactly the send or request they name")
    func deadlines() {
        var table = ChannelTable(joined: [room], sendBufferLimit: 10)
        table.buffer(message(on: room), as: send(1))
        table.buffer(message(on: room), as: request(2))
        let unknown = table.removeBufferedSend(OperationID(2)), known = table.removeBufferedSend(OperationID(1))
        #expect(unknown == nil)
        #expect(known == room)
        table.removeBufferedRequest(RequestID(2))
        #expect(table.bufferedCount == 0)
    }

    @Test("a stopped channel keeps its place, takes the new state and hands back what it held")
    func stopped() throws {
        var table = ChannelTable(joined: [room], sendBufferLimit: 10)
        table.buffer(message(on: room), as: send(1))
        let stopped = table.markStopped(room, as: .endedByServer(refused))
        let leftovers = try #require(stopped)
        #expect(buffered(leftovers) == [send(1)])
        #expect(table.state(of: room) == .endedByServer(refused))
        #expect(table.order == [room])
        #expect(table.bufferedCount == 0)
        table.markPending(room, at: .zero)
        #expect(table.state(of: room) == .pending)
    }

    @Test("giving up takes everything from every channel, in join order")
    func takeAll() {
        var table = ChannelTable(joined: [room, lobby], sendBufferLimit: 10)
        table.buffer(message(on: lobby), as: send(2))
        table.buffer(message(on: room), as: send(1))
        let all = table.takeAllLeftovers()
        #expect(all.map { buffered($0) } == [[send(1)], [send(2)]])
        #expect(table.bufferedCount == 0)
        let again = table.takeAllLeftovers()
        #expect(again.allSatisfy { $0.queue.isEmpty && $0.waiters.isEmpty })
    }
}
