#!/usr/bin/env bash
# Runs the Autobahn|Testsuite fuzzing server (cases 1.*-7.*, 9.*, 10.*, and permessage-deflate's 12.* and
# 13.*) against AutobahnTestee, which echoes through WebSocketTransport, the product path (the testee's
# --codec-only flag bypasses it).
#
# Deflate: all 216 cases of 12 and 13 take about 30 minutes here (the Python 2 server compresses 1,000
# messages of up to 128 KiB per case). By default (AUTOBAHN_DEFLATE=ci) every subcategory runs (the five
# corpora of 12, the seven parameter sets of 13) at 16 B, 256 B, 4 KiB, 32 KiB and 8 KiB in 256-byte
# fragments, plus 128 KiB (past the window) whole and fragmented in five of them: 65 cases, about 3
# minutes. AUTOBAHN_DEFLATE=full runs all 216, AUTOBAHN_DEFLATE=none none.
#
# Creates (once) a Python 2.7 virtualenv with autobahntestsuite 0.8.2 under .peers/ at the repo root,
# starts `wstest -m fuzzingserver` on 127.0.0.1, runs the release-built testee, prints every case that is
# not OK and a final line `autobahn: N passed, M failed`, and exits non-zero when M > 0.
# Without Python 2.7 it falls back to conformance_server.py (our own, far smaller suite) and says so.
#
# Environment: AUTOBAHN_PORT (default 9001), AUTOBAHN_CASES (JSON list, default the groups above),
# AUTOBAHN_DEFLATE (ci, full or none: which cases of 12 and 13 the default list has),
# PYTHON2 (default ~/.pyenv/versions/2.7.18/bin/python), AUTOBAHN_FALLBACK=1 (use the fallback anyway),
# AUTOBAHN_TESTEE_ARGS (extra testee arguments, such as --codec-only).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
port="${AUTOBAHN_PORT:-9001}"
case "${AUTOBAHN_DEFLATE:-ci}" in
    full) deflate_cases=', "12.*", "13.*"' ;;
    none) deflate_cases='' ;;
    ci)
        deflate_cases=''
        for sub in 12.1 12.2 12.3 12.4 12.5 13.1 13.2 13.3 13.4 13.5 13.6 13.7; do
            for size in 1 3 5 8 11; do deflate_cases+=", \"$sub.$size\""; done
        done
        # 128 KiB: whole (the default offer; window 9 without context takeover), in 1 KiB fragments (the
        # default offer; the three offers of 13.7) and in 32 KiB fragments (window 9).
        deflate_cases+=', "12.1.10", "13.5.10", "12.1.16", "13.7.16", "13.3.18"' ;;
    *) echo "run.sh: AUTOBAHN_DEFLATE must be ci, full or none" >&2; exit 2 ;;
esac
cases="${AUTOBAHN_CASES:-[\"1.*\", \"2.*\", \"3.*\", \"4.*\", \"5.*\", \"6.*\", \"7.*\", \"9.*\", \"10.*\"$deflate_cases]}"
python2="${PYTHON2:-$HOME/.pyenv/versions/2.7.18/bin/python}"
peers="$root/.peers"
venv="$peers/autobahn-venv"
work="$peers/autobahn"
python3_bin="$(command -v python3 || true)"
started_at=$(date +%s)

mkdir -p "$work"

port_open() {
    "$python3_bin" - "$port" <<'PY'
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

if port_open; then
    echo "run.sh: something already listens on 127.0.0.1:$port (another Autobahn run?); set AUTOBAHN_PORT" >&2
    exit 2
fi

echo "run.sh: building AutobahnTestee (release)"
(cd "$root" && swift build -c release --product AutobahnTestee 2>&1 | tail -1)
testee="$(cd "$root" && swift build -c release --show-bin-path)/AutobahnTestee"

server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

wait_for_port() {
    for _ in $(seq 1 150); do
        if port_open; then return 0; fi
        if ! kill -0 "$server_pid" 2>/dev/null; then return 1; fi
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

rm -rf "$work/reports"
cat > "$work/spec.json" <<JSON
{
  "url": "ws://127.0.0.1:$port",
  "outdir": "$work/reports",
  "cases": $cases,
  "exclude-cases": [],
  "exclude-agent-cases": {}
}
JSON

echo "run.sh: starting wstest -m fuzzingserver on 127.0.0.1:$port"
(cd "$work" && exec "$venv/bin/wstest" -m fuzzingserver -s "$work/spec.json") > "$work/wstest.log" 2>&1 &
server_pid=$!
wait_for_port || { tail -20 "$work/wstest.log"; echo "run.sh: fuzzingserver did not start" >&2; exit 2; }

cases_started=$(date +%s)
"$testee" --port "$port" --agent Realtime ${AUTOBAHN_TESTEE_ARGS:-}
echo "run.sh: testee finished in $(( $(date +%s) - cases_started )) s"

set +e
"$python3_bin" - "$work/reports/index.json" <<'PY'
import json, sys

with open(sys.argv[1]) as f:
    index = json.load(f)

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
