#!/usr/bin/env bash
# Smoke run of `realtime-bench json`, `transport`, `dialects`, `latency` and `scale` with --quick --json, and of
# `session` over several channels (Tests/run-all runs it):
# checks that every expected figure comes out as a number, never what the number is, and that
# readme-table.py still turns the output into the README's tables.
# Usage: Tests/Fixtures/bench/check.sh [path/to/realtime-bench]   (default: the debug build run-all makes)
# With REALTIME_REQUIRE_PEERS=1 (run-all) a Python baseline must come out too; otherwise a skipped one
# (null, with a note saying why) is accepted.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bench="${1:-.build/debug/realtime-bench}"
if [ ! -x "$bench" ]; then
    echo "bench smoke: $bench is not built" >&2
    exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for suite in json transport dialects latency scale; do
    started=$SECONDS
    if ! timeout 900 "$bench" "$suite" --quick --json >"$out/$suite.jsonl" 2>"$out/$suite.log"; then
        echo "bench smoke: realtime-bench $suite --quick --json failed; its last lines:"
        tail -n 20 "$out/$suite.log"
        status=1
    fi
    echo "bench smoke: $suite --quick took $((SECONDS - started)) s"
done
python3 - "$out" "${REALTIME_REQUIRE_PEERS:-0}" <<'EOF' || status=1
import json
import sys

folder, require_python = sys.argv[1], sys.argv[2] == "1"
dialects = ["socketio", "pusher", "actioncable"]
python_names = {"python-socketio AsyncClient", "pysher", "websockets+json loop", "python"}
expected = {}  # (bench, case, metric, baseline kind) -> description
for dialect in dialects:
    for metric in ["events_per_cpu_s", "events_per_cpu_s_median", "events_per_wall_s", "events_per_wall_s_median"]:
        expected[("dialects", dialect, metric, "transport")] = True
        expected[("dialects", dialect, metric, "python")] = require_python
        for variant in ["_reading", "_stream"]:  # a handler that reads data; an events() loop that does
            named = metric.replace("_s", "_s" + variant, 1)  # events_per_cpu_s_reading_median, …
            expected[("dialects", dialect, named, "python")] = require_python
    for metric in ["allocations_per_event", "allocations_per_event_reading", "allocations_per_event_stream"]:
        expected[("dialects", dialect, metric, "transport")] = True  # counted with glibc, as here
for rate in [1000, 10000]:
    cases = [f"transport@{rate}"] + [f"{d}/{t}@{rate}" for d in dialects for t in ["default", "inline", "main", "coalesced", "busy"]]
    for case in cases:
        for metric in ["p50_us", "p99_us", "p999_us", "max_us", "cpu_us_per_event"]:
            expected[("latency", case, metric, "transport" if "/" in case else "floor")] = True
            expected[("latency", f"floor@{rate}", metric, None)] = True
            expected[("latency", f"floor-handoff@{rate}", metric, "floor")] = True
expected[("latency", "coalesced", "window_us", None)] = True
expected[("dialects", "clients", "pinned", None)] = True
for metric in ["event_bytes", "nested_bytes", "rounds"]:
    expected[("json", "run", metric, None)] = True
for row in ["parse-jsonvalue.parse-string", "parse-jsondecoder-struct-data", "nested-jsonvalue.parse-string",
            "write-jsonvalue.serialized"]:
    for metric in ["ns_per_op", "ns_per_op_median"]:
        baseline = "nested-jsonserialization-data" if row.startswith("nested") else (
            "write-jsonserialization-sorted-keys" if row.startswith("write") else "parse-jsonserialization-data")
        expected[("json", row, metric, baseline)] = True
for metric in ["frames_per_round", "rounds", "deflate_rounds", "idle_connections", "record_layer_passes"]:
    expected[("transport", "run", metric, None)] = True
expected[("transport", "codec-floor", "msg_per_s", None)] = True
for case, baseline in [("ws", "codec-floor"), ("wss-direct", "ws"), ("wss-openssl", "ws"),
                       ("deflate-event", "uncompressed"), ("deflate-document", "uncompressed")]:
    for metric in ["msg_per_cpu_s", "msg_per_cpu_s_median"]:
        expected[("transport", case, metric, baseline)] = True
    for metric in ["msg_per_s", "msg_per_s_median"]:
        expected[("transport", case, metric, None)] = True
for case in ["deflate-event", "deflate-document"]:
    for metric in ["wire_bytes_per_message", "compress_us_per_message", "decode_us_per_message"]:
        expected[("transport", case, metric, "uncompressed")] = True
for metric in ["ms_per_1m_frames", "ms_per_1m_frames_median"]:
    expected[("transport", "record-layer-direct", metric, "record-layer-openssl")] = True
expected[("transport", "aead-vaes", "bytes_per_s", "aead-evp")] = True  # its value is null (with a note) without VAES
for case in ["idle-ws", "idle-wss"]:
    for metric in ["connections_open", "rss_bytes_per_connection", "threads"]:
        expected[("transport", case, metric, None)] = True
for metric in ["rss_bytes_per_connection", "heap_bytes_per_connection", "threads"]:
    expected[("scale", "transport", metric, None)] = True
for dialect in dialects:
    for metric in ["heap_bytes_per_channel", "rss_bytes_per_channel", "heap_bytes_per_handler", "rss_bytes_per_handler",
                   "heap_bytes_per_handler_distinct_events", "rss_bytes_per_handler_distinct_events",
                   "sessions_open", "reconnect_resubscribe_ms", "reconnect_resubscribe_ms_median",
                   "reconnect_resubscribe_from_attempt_ms", "reconnect_resubscribe_from_attempt_ms_median"]:
        expected[("scale", dialect, metric, None)] = True
    for metric in ["rss_bytes_per_session", "heap_bytes_per_session", "threads", "threads_idle"]:
        expected[("scale", dialect, metric, "transport")] = True

problems, seen, count, skipped = [], {}, 0, set()
for suite in ["json", "transport", "dialects", "latency", "scale"]:
    try:
        lines = open(f"{folder}/{suite}.jsonl").read().splitlines()
    except OSError:
        lines = []
    for number, line in enumerate(lines, 1):
        try:
            figure = json.loads(line)
        except ValueError:
            problems.append(f"{suite} line {number} is not JSON: {line[:120]}")
            continue
        count += 1
        keys = {"bench", "case", "metric", "value", "baseline", "baseline_value"}
        if not keys <= figure.keys():
            problems.append(f"{suite} line {number} lacks {sorted(keys - figure.keys())}")
            continue
        baseline = figure["baseline"]
        kind = "python" if baseline in python_names else baseline
        seen[(figure["bench"], figure["case"], figure["metric"], kind)] = figure
for key, must_have_baseline in expected.items():
    figure = seen.get(key)
    if figure is None:
        if key[3] == "python" and not must_have_baseline:
            continue
        problems.append(f"missing: {key[0]} {key[1]} {key[2]}" + (f" beside {key[3]}" if key[3] else ""))
        continue
    if not isinstance(figure["value"], (int, float)) and not (key[1] == "aead-vaes" and figure.get("note")):
        problems.append(f"no value: {key[0]} {key[1]} {key[2]}")
    if key[3] is not None and not isinstance(figure["baseline_value"], (int, float)):
        if key[3] == "python" and not must_have_baseline:
            if key[1] not in skipped:
                skipped.add(key[1])
                print(f"bench smoke: Python baseline skipped for {key[1]}: {figure.get('note', 'no note')}")
        else:
            problems.append(f"no baseline value: {key[0]} {key[1]} {key[2]} beside {key[3]}")
for problem in problems:
    print("bench smoke: " + problem)
print(f"bench smoke: {count} figures read, {len(problems)} problems")
sys.exit(1 if problems else 0)
EOF
# `--unpinned` says so in its output and still measures.
if "$bench" dialects --quick --json --unpinned --skip-python --only actioncable >"$out/unpinned.jsonl" 2>"$out/unpinned.log" \
        && grep -Eq '"case":"clients","metric":"pinned","value":0(\.0)?,' "$out/unpinned.jsonl" \
        && grep -q '"case":"actioncable","metric":"events_per_cpu_s",' "$out/unpinned.jsonl"; then
    echo "bench smoke: dialects --unpinned reports unpinned figures"
else
    echo "bench smoke: dialects --quick --unpinned did not report unpinned figures; its last lines:"
    tail -n 5 "$out/unpinned.log" "$out/unpinned.jsonl"
    status=1
fi
# `session` (in-memory transport) over several channels: every dialect's row comes out, so every event
# reached a handler (a missing one times the row out).
if timeout 300 "$bench" session --events 500 --rounds 1 --channels 5 >"$out/session.log" 2>&1 \
        && [ "$(grep -c '^  \(socket.io\|pusher\|actioncable\) .*inline delivery' "$out/session.log")" -eq 3 ]; then
    echo "bench smoke: session --channels 5 reports every dialect"
else
    echo "bench smoke: session --channels 5 failed; its last lines:"
    tail -n 5 "$out/session.log"
    status=1
fi
# A bad option is one clear line and exit 1, not a crash report.
if message=$("$bench" latency --window abc 2>&1); then
    echo "bench smoke: latency --window abc did not fail"
    status=1
elif [ "$message" != "realtime-bench latency: --window takes a positive number of microseconds, not abc" ]; then
    echo "bench smoke: latency --window abc said: $message"
    status=1
fi
# The README's tables are made from this output by readme-table.py: check that it still reads it.
if python3 Tests/Fixtures/bench/readme-table.py "$out" >"$out/tables.md" 2>&1 \
        && [ "$(grep -c '^| \(Socket.IO\|Pusher\|Action Cable\)' "$out/tables.md")" -ge 6 ] \
        && [ "$(grep -c '^| \(JSON parse\|ws receive\|wss receive\|permessage-deflate\)' "$out/tables.md")" -ge 6 ]; then
    echo "bench smoke: readme-table.py made $(grep -c '^| ' "$out/tables.md") table rows"
else
    echo "bench smoke: readme-table.py failed on this output:"
    tail -n 20 "$out/tables.md"
    status=1
fi
exit $status
