// The README's Bird sample, compiled with the Examples package (Tests/Fixtures/examples/smoke.sh) so it
// cannot rot; PusherReadmeSampleTests checks that the README shows exactly the lines between the markers.
// It needs a Bird Realtime app and your auth endpoints to run.

// README: begin
import Foundation
import Realtime

let auth = PusherAuth.endpoint(URL(string: "https://example.com/bird/auth")!,
                               userURL: URL(string: "https://example.com/bird/member-auth")!)
let session = RealtimeSession(dialect: .bird(key: "app-key", cluster: "eu1", auth: auth))
let lobby = try session.presence("presence-lobby")
try session.user.on("invite") { event in print("invited:", event.data) }   // #server-to-user-<my id>
session.onSignInError { error in print("sign-in failed again:", error) }  // after a reconnect
try await session.connect()
let me = try await session.signIn()                 // bird:signin; repeated after every reconnect
try await lobby.channel.subscribed()
print("I am", me.id, "- myID:", lobby.myID ?? "?", "- others:", lobby.count - 1)
// README: end
