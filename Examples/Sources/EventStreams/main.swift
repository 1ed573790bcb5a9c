import Foundation
import Realtime
import RealtimeActionCableTesting
import RealtimeTesting

// Events, connection states and errors as async sequences, against the embedded Action Cable server of
// RealtimeActionCableTesting over a real socket. Each sequence is backed by a handler that is removed when its loop ends.
// Exit 0 when the ticks arrived in order and the states went initialized → connecting → connected.
//
//   swift run EventStreams

let cable = ActionCableTestServer()
cable.define("TickerChannel") { request in .confirm(streams: ["ticks:\(request.params["symbol"] ?? .null)"]) }
let listener = try cable.listen()

let session = RealtimeSession(dialect: .actionCable(url: URL(string: "ws://127.0.0.1:\(listener.port)/cable")!))
let ticker = session.channel(ChannelID("TickerChannel", params: ["symbol": "ACME"]))

// The sequences are made before connecting, so that nothing is missed: each one registers its handler
// when it is made, and buffers until its loop reads.
let stateSequence = session.states
let errorSequence = session.errors
// Streams are back-pressured: a slow loop pauses reading instead of dropping events or growing a buffer.
let tickSequence = ticker.events("message")

// Every state, from the current one on, until the session is connected.
let states = Task {
    var seen: [ConnectionState] = []
    for await state in stateSequence {
        seen.append(state)
        if state == .connected { break }
    }
    return seen
}
// Errors, as they happen, for as long as the program runs.
let errors = Task {
    for await error in errorSequence { print("error: \(error)") }
}
// The first five ticks.
let ticks = Task {
    var prices: [Int64] = []
    for await event in tickSequence {
        guard let price = event.data["price"]?.integerValue else { continue }
        print("tick: ACME \(price)")
        prices.append(price)
        if prices.count == 5 { break }   // ends the sequence and removes its handler
    }
    return prices
}

try await session.connect(timeout: .seconds(10))
try await ticker.subscribed()
for price in Int64(100)..<Int64(105) {
    cable.broadcast(to: "ticks:\"ACME\"", ["price": .integer(price)])
}

let prices = await ticks.value
let stateLog = await states.value
await session.disconnectAndWait()
errors.cancel()
listener.stop()

print("states: \(stateLog.map(\.description).joined(separator: " → "))")
var failures: [String] = []
if prices != [100, 101, 102, 103, 104] { failures.append("ticks were \(prices)") }
if stateLog != [.initialized, .connecting, .connected] { failures.append("states were \(stateLog)") }
print(failures.isEmpty ? "event-streams: passed" : "event-streams: FAILED: \(failures.joined(separator: "; "))")
exit(failures.isEmpty ? 0 : 1)
