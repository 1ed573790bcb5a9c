#!/usr/bin/env bash
# Runs the Autobahn|Testsuite fuzzing server (cases 1.*-7.*, 9.*, 10.*, and permessage-deflate's 12.* and
# 13.*) against AutobahnTestee, which echoes through WebSocketTransport, the product path (the testee's
# --codec-only flag bypasses it).
#
# Deflate: all 216 cases of 12 and 13 run by default (AUTOBAHN_DEFLATE=full). The Python 2 server is the
# bottleneck (it compresses 1,000 messages of up to 128 KiB per case, on one core), so the cases are split
# in two shards of about equal time, each with its own fuzzingserver (ports AUTOBAHN_PORT and +1) and
# testee, run at once. AUTOBAHN_DEFLATE=ci runs a subset: every subcategory (the five corpora of 12, the
# seven parameter sets of 13) at 16 B, 256 B, 4 KiB, 32 KiB and 8 KiB in 256-byte fragments, plus 128 KiB
# (past the window) whole and fragmented in five of them: 65 cases; AUTOBAHN_DEFLATE=none runs none.
#
# Creates (once) a Python 2.7 virtualenv with autobahntestsuite 0.8.2 under .peers/ at the repo root,
# starts `wstest -m fuzzingserver` on 127.0.0.1, runs the release-built testee, prints every case that is
# not OK and a final line `autobahn: N passed, M failed`, and exits non-zero when M > 0.
# Without Python 2.7 it falls back to conformance_server.py (our own, far smaller suite) and says so.
#
# Environment: AUTOBAHN_PORT (default 9001; a second shard uses the next port), AUTOBAHN_CASES (JSON list
# run as one shard, default the groups above), AUTOBAHN_DEFLATE (full, ci or none: which cases of 12 and 13),
# PYTHON2 (default ~/.pyenv/versions/2.7.18/bin/python), AUTOBAHN_FALLBACK=1 (use the fallback anyway),
# AUTOBAHN_TESTEE_ARGS (extra testee arguments, such as --codec-only).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
port="${AUTOBAHN_PORT:-9001}"
base_cases='"1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "9.*", "10.*"'
case "${AUTOBAHN_DEFLATE:-full}" in
    full)
        # Measured per subcategory: 12.x about 260 s, 13.x about 85 s (under load); 1-10 about 100 s.
        shards=('["12.1.*", "12.2.*", "12.3.*", "13.1.*", "13.2.*"]'
                "[$base_cases, \"12.4.*\", \"12.5.*\", \"13.3.*\", \"13.4.*\", \"13.5.*\", \"13.6.*\", \"13.7.*\"]") ;;
    none) shards=("[$base_cases]") ;;
    ci)
        twelve='' thirteen=''
        for size in 1 3 5 8 11; do
            for sub in 12.1 12.2 12.3 12.4 12.5; do twelve+=", \"$sub.$size\""; done
            for sub in 13.1 13.2 13.3 13.4 13.5 13.6 13.7; do thirteen+=", \"$sub.$size\""; done
        done
        # 128 KiB: whole (the default offer; window 9 without context takeover), in 1 KiB fragments (the
        # default offer; the three offers of 13.7) and in 32 KiB fragments (window 9).
        shards=("[$base_cases$twelve, \"12.1.10\", \"12.1.16\"]"
                "[${thirteen#, }, \"13.5.10\", \"13.7.16\", \"13.3.18\"]") ;;
    *) echo "run.sh: AUTOBAHN_DEFLATE must be full, ci or none" >&2; exit 2 ;;
esac
[ -n "${AUTOBAHN_CASES:-}" ] && shards=("$AUTOBAHN_CASES")
python2="${PYTHON2:-$HOME/.pyenv/versions/2.7.18/bin/python}"
peers="$root/.peers"
venv="$peers/autobahn-venv"
work="$peers/autobahn"
python3_bin="$(command -v python3 || true)"
started_at=$(date +%s)

mkdir -p "$work"

port_open() {
    "$python3_bin" - "${1:-$port}" <<'PY'
import socket, sys
s = socket.socket()
s.settimeout(0.2)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
s.close()
PY
}

for shard in "${!shards[@]}"; do
    if port_open $((port + shard)); then
        echo "run.sh: something already listens on 127.0.0.1:$((port + shard)) (another Autobahn run?); set AUTOBAHN_PORT" >&2
        exit 2
    fi
done

echo "run.sh: building AutobahnTestee (release)"
(cd "$root" && swift build -c release --product AutobahnTestee 2>&1 | tail -1)
testee="$(cd "$root" && swift build -c release --show-bin-path)/AutobahnTestee"

server_pid=""
server_pids=()
cleanup() {
    for pid in $server_pid "${server_pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
}
trap cleanup EXIT

# wait_for_port [PORT [PID]]: until PORT listens, or the server PID is gone.
wait_for_port() {
    for _ in $(seq 1 150); do
        if port_open "${1:-$port}"; then return 0; fi
        if ! kill -0 "${2:-$server_pid}" 2>/dev/null; then return 1; fi
        sleep 0.2
    done
    return 1
}

if [[ ! -x "$python2" || -n "${AUTOBAHN_FALLBACK:-}" ]]; then
    echo "################################################################################"
    if [[ -x "$python2" ]]; then
        echo "run.sh: AUTOBAHN_FALLBACK is set: NOT RUNNING AUTOBAHN."
    else
        echo "run.sh: NO PYTHON 2.7 at $python2: AUTOBAHN CANNOT RUN HERE."
    fi
    echo "run.sh: FALLING BACK to Tests/Fixtures/autobahn/conformance_server.py, our own much"
    echo "run.sh: smaller scripted suite. Its result is NOT an Autobahn result."
    echo "################################################################################"
    rm -f "$work/conformance-results.json"
    "$python3_bin" "$here/conformance_server.py" --port "$port" --results "$work/conformance-results.json" \
        > "$work/conformance.log" 2>&1 &
    server_pid=$!
    wait_for_port || { cat "$work/conformance.log"; echo "run.sh: conformance server did not start" >&2; exit 2; }
    "$testee" --port "$port" --agent Realtime ${AUTOBAHN_TESTEE_ARGS:-} > "$work/testee.log" 2>&1 || true
    wait "$server_pid" 2>/dev/null || true
    set +e
    "$python3_bin" "$here/conformance_server.py" --summary "$work/conformance-results.json"
    status=$?
    echo "run.sh: took $(( $(date +%s) - started_at )) s"
    exit $status
fi

if [[ ! -x "$venv/bin/wstest" ]]; then
    echo "run.sh: creating the Autobahn virtualenv in $venv (about a minute)"
    "$python2" -m pip install -q 'virtualenv<20.22' 2>&1 | grep -v DEPRECATION || true
    "$python2" -m virtualenv -q "$venv"
    "$venv/bin/pip" install -q 'pip==20.3.4' 2>&1 | grep -v DEPRECATION || true
    "$venv/bin/pip" install -q 'autobahntestsuite==0.8.2' 2>&1 | grep -v DEPRECATION || true
    [[ -x "$venv/bin/wstest" ]] || { echo "run.sh: installing autobahntestsuite failed" >&2; exit 2; }
fi

rm -rf "$work"/reports*
testee_pids=()
for shard in "${!shards[@]}"; do
    shard_port=$((port + shard))
    cat > "$work/spec-$shard.json" <<JSON
{
  "url": "ws://127.0.0.1:$shard_port",
  "outdir": "$work/reports-$shard",
  "cases": ${shards[$shard]},
  "exclude-cases": [],
  "exclude-agent-cases": {}
}
JSON
    echo "run.sh: shard $shard: wstest -m fuzzingserver on 127.0.0.1:$shard_port, cases ${shards[$shard]}"
    # --webport 0: no embedded web server (it would take port 8080, once per shard).
    (cd "$work" && exec "$venv/bin/wstest" -m fuzzingserver --webport 0 -s "$work/spec-$shard.json") > "$work/wstest-$shard.log" 2>&1 &
    server_pids+=($!)
    wait_for_port "$shard_port" "${server_pids[$shard]}" \
        || { tail -20 "$work/wstest-$shard.log"; echo "run.sh: fuzzingserver $shard did not start" >&2; exit 2; }
done

cases_started=$(date +%s)
for shard in "${!shards[@]}"; do
    "$testee" --port $((port + shard)) --agent Realtime ${AUTOBAHN_TESTEE_ARGS:-} > "$work/testee-$shard.log" 2>&1 &
    testee_pids+=($!)
done
for shard in "${!shards[@]}"; do
    wait "${testee_pids[$shard]}" || echo "run.sh: testee $shard exited with $?"
    echo "run.sh: shard $shard finished after $(( $(date +%s) - cases_started )) s"
    tail -n 3 "$work/testee-$shard.log"
done

set +e
"$python3_bin" - "$work"/reports-*/index.json <<'PY'
import json, sys

# One index per shard, each {agent: {case: result}}: merged.
index = {}
for path in sys.argv[1:]:
    with open(path) as f:
        for agent, results in json.load(f).items():
            index.setdefault(agent, {}).update(results)

def case_key(case_id):
    return [int(part) for part in case_id.split(".")]

# UNIMPLEMENTED is a failure too: every group run here (deflate included) is implemented.
passing = {"OK", "INFORMATIONAL"}
verdicts = ["OK", "NON-STRICT", "FAILED", "INFORMATIONAL", "UNIMPLEMENTED"]
passed, failed, rows, groups = 0, 0, [], {}
for agent, results in sorted(index.items()):
    for case_id in sorted(results, key=case_key):
        result = results[case_id]
        behavior = result.get("behavior", "?")
        close = result.get("behaviorClose", "?")
        counts = groups.setdefault(int(case_id.split(".")[0]), dict((v, 0) for v in verdicts + ["ms"]))
        counts[behavior if behavior in verdicts else "FAILED"] += 1
        counts["ms"] += result.get("duration", 0)
        if behavior in passing and close in passing:
            passed += 1
        else:
            failed += 1
        if behavior != "OK" or close != "OK":
            rows.append((case_id, behavior, close, result.get("duration", 0), result.get("reportfile", "")))

if rows:
    print("%-10s %-14s %-14s %8s  %s" % ("case", "behavior", "close", "ms", "report"))
    for row in rows:
        print("%-10s %-14s %-14s %8s  %s" % row)
print("%-6s %5s %10s %6s %13s %13s %9s" % ("group", "OK", "NON-STRICT", "FAILED", "INFORMATIONAL", "UNIMPLEMENTED", "case s"))
for group in sorted(groups):
    c = groups[group]
    print("%-6s %5d %10d %6d %13d %13d %9.1f" % (group, c["OK"], c["NON-STRICT"], c["FAILED"], c["INFORMATIONAL"],
                                                 c["UNIMPLEMENTED"], c["ms"] / 1000.0))
print("autobahn: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
status=$?
echo "run.sh: took $(( $(date +%s) - started_at )) s in all"
exit $status
