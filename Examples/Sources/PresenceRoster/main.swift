import Foundation
import Realtime
import RealtimePusherTesting
import RealtimeTesting

// Who is in a Pusher presence channel, kept up to date, against the embedded PusherTestServer of
// RealtimePusherTesting. Alice watches the roster while bob and carol join and carol leaves.
// Exit 0 when alice's roster ends with alice and bob, and she is `me`.
//
//   swift run PresenceRoster

let server = try PusherTestServer(key: "lobby-key", secret: "lobby-secret")

/// A session for `user`. Each one signs its presence identity with the app secret, which only a test or a demo
/// may do: an app asks its backend (`PusherAuth.endpoint`), which knows who the user is.
func session(for user: String) -> RealtimeSession {
    let identity = #"{"user_id":"\#(user)","user_info":{"name":"\#(user.capitalized)"}}"#
    return RealtimeSession(dialect: .pusher(key: server.key,
                                            auth: .inline(secret: server.secret, presenceData: identity),
                                            host: "127.0.0.1", port: server.port))
}

func waitUntil(_ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(5)
    while !condition(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
    return condition()
}

let alice = session(for: "alice")
let roster = try alice.presence("presence-lobby") { members in
    let names = members.ids.map { members.members[$0]?["name"]?.stringValue ?? $0 }
    print("roster (\(members.count)): \(names.isEmpty ? "empty, not joined" : names.joined(separator: ", "))")
}
try await alice.connect(timeout: .seconds(10))
try await alice.channel("presence-lobby").subscribed()

var others: [String: RealtimeSession] = [:]
for user in ["bob", "carol"] {
    let guest = session(for: user)
    guest.channel("presence-lobby")
    try await guest.connect(timeout: .seconds(10))
    others[user] = guest
}
let everyoneHere = await waitUntil { roster.members.ids == ["alice", "bob", "carol"] }
others["carol"]?.disconnect()
let carolLeft = await waitUntil { roster.members.ids == ["alice", "bob"] }

var failures: [String] = []
if !everyoneHere { failures.append("alice never saw bob and carol together") }
if !carolLeft { failures.append("carol's leaving never reached alice (roster: \(roster.members.ids))") }
if roster.members.myID != "alice" { failures.append("me is \(roster.members.myID ?? "nil")") }
if roster.members.members["bob"]?["name"] != "Bob" { failures.append("bob's info is missing") }
await alice.disconnectAndWait()
await others["bob"]?.disconnectAndWait()
server.stop()
print(failures.isEmpty ? "presence-roster: passed" : "presence-roster: FAILED: \(failures.joined(separator: "; "))")
exit(failures.isEmpty ? 0 : 1)
