#!/usr/bin/env bash
# Builds the Examples package (warnings are errors) and runs every runnable example:
# - FourBackendChat, CodableMessages, EventStreams and PresenceRoster start the embedded servers of
#   the dialect test kits on loopback, check what they received and exit 0 with a `<name>: passed` line;
# - ChatClient runs against the python-socketio peer: it must connect, get the server's "welcome" event and
#   leave cleanly.
# Needs the socketio peer provisioned (Tests/Fixtures/socketio/provision.sh). Prints `examples: passed`.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
peers=${REALTIME_PEERS:-$root/.peers}
python="$peers/socketio-venv/bin/python"
fail() { echo "examples: FAILED ($1)" >&2; exit 1; }

swift build --package-path "$root/Examples" -Xswiftc -warnings-as-errors 2>&1 \
    | grep -vE '^\[[0-9]+/[0-9]+\]|^Building|^Compiling|^Write' | tail -n 20
[ "${PIPESTATUS[0]}" = 0 ] || fail "swift build --package-path Examples"
bin="$(swift build --package-path "$root/Examples" --show-bin-path)"

work=$(mktemp -d)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null
    [ -n "${writer:-}" ] && kill "$writer" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# 1. The examples that bring their own servers.
for example in FourBackendChat:four-backend-chat CodableMessages:codable-messages EventStreams:event-streams \
        PresenceRoster:presence-roster; do
    name=${example%%:*}
    tag=${example##*:}
    echo "-- $name"
    timeout 60 "$bin/$name" >"$work/$name.out" 2>&1
    status=$?
    cat "$work/$name.out"
    [ "$status" = 0 ] || fail "$name exited with $status"
    grep -q "^$tag: passed$" "$work/$name.out" || fail "$name did not print '$tag: passed'"
done

# 2. ChatClient against python-socketio.
echo "-- ChatClient"
[ -x "$python" ] || fail "no python-socketio peer at $python"
# The peer exits when its standard input closes: hold it open with a writer we can stop by its pid.
mkfifo "$work/stdin"
sleep 600 >"$work/stdin" &
writer=$!
"$python" "$root/Tests/Fixtures/socketio/server.py" 0 <"$work/stdin" >"$work/server.out" 2>"$work/server.err" &
server=$!
port=""
for _ in $(seq 1 200); do
    port=$(grep -oE '^READY [0-9]+' "$work/server.out" | grep -oE '[0-9]+' || true)
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$work/server.err" >&2; fail "the python-socketio peer printed no READY line"; }

# One line typed after the session is up; end of input makes the client disconnect and exit.
(sleep 2; echo "hello from the example") \
    | timeout 60 "$bin/ChatClient" socketio "http://127.0.0.1:$port" / >"$work/client.out" 2>&1
status=$?
cat "$work/client.out"
[ "$status" = 0 ] || fail "ChatClient exited with $status"
grep -q '^\[connected\]' "$work/client.out" || fail "ChatClient never printed [connected]"
grep -q '^welcome: ' "$work/client.out" || fail "ChatClient never printed the server's welcome event"
grep -q '^bye$' "$work/client.out" || fail "ChatClient did not reach .disconnected at the end of its input"
if grep -q '^\[error\]' "$work/client.out"; then fail "ChatClient reported an error"; fi
echo "examples: passed"
