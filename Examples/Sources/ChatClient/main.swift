import Foundation
import Realtime

// A chat client that runs unchanged against Socket.IO or Action Cable: only the dialect differs.
//
//   swift run ChatClient socketio http://127.0.0.1:3000 /chat
//   swift run ChatClient actioncable ws://127.0.0.1:3000/cable ChatChannel
//
// Lines typed on standard input are sent as "message" (an emit, or a perform of that action); everything
// received is printed. `realtime serve socketio` relays a message to the namespace's other sockets and
// `realtime serve actioncable` broadcasts it to the subscription's stream, sender included; a Rails server
// needs a `message` action on the channel.

let arguments = CommandLine.arguments
guard arguments.count == 4, let url = URL(string: arguments[2]) else {
    print("usage: ChatClient socketio|actioncable <url> <namespace-or-channel>")
    exit(2)
}

let session: RealtimeSession
let room: RealtimeChannel
switch arguments[1] {
case "actioncable":
    session = RealtimeSession(dialect: .actionCable(url: url))
    room = session.channel(ChannelID(arguments[3], params: ["room": "lobby"]))
default:
    session = RealtimeSession(dialect: .socketIO(url: url, defaultNamespaces: []))
    room = session.channel(ChannelID(arguments[3]))
}

// The handlers are the same whichever backend is in use.
session.onStateChange { _, state in print("[\(state)]") }
session.onError { error in print("[error] \(error)") }
room.onAny { event in print("\(event.name): \(event.data)") }

try await session.connect()
while let line = readLine() {
    try await room.send("message", ["text": .string(line)])
}
// Returns once the server has the close (and every message before it) and the handlers have run.
await session.disconnectAndWait()
print("bye")
