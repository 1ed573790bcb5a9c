// The README's Pusher sample, compiled with the Examples package (Tests/Fixtures/examples/smoke.sh) so it
// cannot rot; PusherReadmeSampleTests checks that the README shows exactly the lines between the markers.
// It needs a Pusher app and your auth endpoint to run.

// README: begin
import Foundation
import Realtime

let session = RealtimeSession(dialect: .pusher(key: "app-key", cluster: "eu",
                                               auth: .endpoint(URL(string: "https://example.com/pusher/auth")!)))
let room = try session.presence("presence-room")    // members, me, count; kept through removeAllHandlers()
room.onMemberAdded { member in print("joined:", member.id, member.info) }
room.onMemberRemoved { member in print("left:", member.id) }
room.channel.on(PusherEvents.pusher.subscriptionError) { event in print("refused:", event.data) }
session.on(PusherEvents.pusher.error) { event in print("server says:", event.data) }
try await session.connect()
try await room.channel.subscribed()                 // throws a typed RealtimeError if refused
print("here:", room.members.all.map(\.id), "me:", room.me?.info ?? .null)
try await room.channel.send("client-typing", ["on": true])
for await members in room.updates { print(members.count, "online") }
// README: end
