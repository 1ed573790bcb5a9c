import Foundation
import Realtime
import RealtimeSocketIOTesting
import RealtimeTesting

// Typed payloads end to end, against the embedded Socket.IO server of RealtimeSocketIOTesting:
// - `send(_:encoding:)` sends an Encodable value as the event's argument;
// - `request` waits for the server's acknowledgement, whose argument decodes with `JSONValue.decode`;
// - `on(_:as:decoder:)` hands a handler the event's data as a Decodable value, here with a decoder configured
//   for the server's snake_case keys and ISO 8601 dates; `RealtimeEvent.decode(_:decoder:)` does the same in
//   any handler.
// Exit 0 when every value came back as sent.
//
//   swift run CodableMessages

struct Order: Codable, Sendable, Equatable {
    var id: Int
    var item: String
    var quantity: Int
}

struct Receipt: Codable, Sendable, Equatable {
    var orderID: Int
    var total: Double
}

/// What the server pushes when an order moves, in its own conventions: snake_case keys, ISO 8601 dates.
struct OrderUpdate: Decodable, Sendable {
    var orderId: Int
    var status: String
    var updatedAt: Date
}

let server = try SocketIOServer()
// The server side, as a backend would do it: acknowledge `place` with a receipt, then push an update.
server.on("place", in: "/shop") { socket, arguments, ack in
    guard let order = try? arguments.first?.decode(Order.self) else {
        ack?(["error": "not an order"])
        return
    }
    let receipt = Receipt(orderID: order.id, total: Double(order.quantity) * 2.5)
    ack?((try? JSONValue(encoding: receipt)) ?? .null)
    socket.emit("order-updated", [["order_id": .integer(Int64(order.id)), "status": "packed",
                                   "updated_at": "2025-01-31T12:00:00Z"]])
}
server.on("note", in: "/shop") { socket, arguments, _ in
    socket.emit("note-seen", arguments)   // echoes the note back as it came
}

let session = RealtimeSession(dialect: .socketIO(url: server.url, defaultNamespaces: []))
let shop = session.channel("/shop")
let updates = Guarded<[OrderUpdate]>([])
let notes = Guarded<[Order]>([])
let snakeCaseDates = JSONDecoder()
snakeCaseDates.keyDecodingStrategy = .convertFromSnakeCase
snakeCaseDates.dateDecodingStrategy = .iso8601
// A typed handler: the data arrives decoded; data that does not decode goes to onError, not here.
shop.on("order-updated", as: OrderUpdate.self, decoder: snakeCaseDates) { update, _ in
    updates.withLock { $0.append(update) }
    print("update: order \(update.orderId) is \(update.status) since \(update.updatedAt)")
}
session.onError { error in print("error: \(error)") }
shop.on("note-seen") { event in
    if let order = try? event.decode(Order.self) { notes.withLock { $0.append(order) } }
}

try await session.connect(timeout: .seconds(10))
let order = Order(id: 42, item: "coffee", quantity: 3)

// 1. An Encodable value as an event's argument.
try await shop.send("note", encoding: order)

// 2. A request with a typed argument and a typed answer.
let answer = try await shop.request("place", arguments: [try JSONValue(encoding: order)], timeout: .seconds(5))
let receipt = try answer.first?.decode(Receipt.self)
print("receipt: \(receipt.map { "order \($0.orderID), total \($0.total)" } ?? "none")")

// 3. The pushed update, decoded by the handler above.
let deadline = ContinuousClock.now + .seconds(5)
while (updates.withLock(\.isEmpty) || notes.withLock(\.isEmpty)), ContinuousClock.now < deadline {
    try await Task.sleep(for: .milliseconds(20))
}
await session.disconnectAndWait()
server.stop()

var failures: [String] = []
if receipt != Receipt(orderID: 42, total: 7.5) { failures.append("the receipt was \(String(describing: receipt))") }
if notes.withLock({ $0 }) != [order] { failures.append("the echoed note was \(notes.withLock { $0 })") }
let update = updates.withLock { $0.first }
if update?.orderId != 42 || update?.status != "packed" || update?.updatedAt != Date(timeIntervalSince1970: 1_738_324_800) {
    failures.append("the update was \(String(describing: update))")
}
print(failures.isEmpty ? "codable-messages: passed" : "codable-messages: FAILED: \(failures.joined(separator: "; "))")
exit(failures.isEmpty ? 0 : 1)
