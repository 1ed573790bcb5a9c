#!/usr/bin/env python3
"""Turns `realtime-bench dialects|latency|scale --json` output into the README's measured tables.

Usage:
  realtime-bench dialects --json > out/dialects.jsonl   (and latency, scale)
  Tests/Fixtures/bench/readme-table.py out/ [--update README.md]

Prints the tables (markdown); with --update, replaces what lies between the README's
`<!-- bench-tables:begin -->` and `<!-- bench-tables:end -->` markers. Every figure comes from the
JSON lines; nothing here is typed by hand.
"""
import json
import os
import sys

DIALECTS = [("socketio", "Socket.IO"), ("pusher", "Pusher"), ("actioncable", "Action Cable")]


def load(folder):
    figures = {}
    for suite in ("dialects", "latency", "scale"):
        path = os.path.join(folder, f"{suite}.jsonl")
        if not os.path.exists(path):
            continue
        for line in open(path):
            line = line.strip()
            if not line:
                continue
            figure = json.loads(line)
            figures[(figure["bench"], figure["case"], figure["metric"], figure.get("baseline"))] = figure
    return figures


def find(figures, bench, case, metric, baseline=...):
    for (b, c, m, base), figure in figures.items():
        if b == bench and c == case and m == metric and (baseline is ... or base == baseline):
            return figure
    return None


def k(value):
    return "–" if value is None else f"{value / 1e3:.0f} k"


def dialects_table(figures):
    rows = ["| dialect | ours, handler only counts: best / median | ours, handler reads each payload: best / median "
            "| ours, an `events()` loop reads each payload: best / median "
            "| Python client of the protocol: best / median | ours ÷ Python, medians: counting / reading "
            "| transport alone, median |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for case, title in DIALECTS:
        best = find(figures, "dialects", case, "events_per_cpu_s", "transport")
        median = find(figures, "dialects", case, "events_per_cpu_s_median", "transport")
        if best is None or median is None:
            continue
        reading_best = find(figures, "dialects", case, "events_per_cpu_s_reading")
        reading_median = find(figures, "dialects", case, "events_per_cpu_s_reading_median")
        reading = (f"{k(reading_best['value'])} / {k(reading_median['value'])}"
                   if reading_best and reading_median else "not run")
        stream_best = find(figures, "dialects", case, "events_per_cpu_s_stream")
        stream_median = find(figures, "dialects", case, "events_per_cpu_s_stream_median")
        stream = (f"{k(stream_best['value'])} / {k(stream_median['value'])}"
                  if stream_best and stream_median else "not run")
        python_best = next((f for (b, c, m, base), f in figures.items() if b == "dialects" and c == case
                            and m == "events_per_cpu_s" and base not in (None, "transport")), None)
        python_median = next((f for (b, c, m, base), f in figures.items() if b == "dialects" and c == case
                              and m == "events_per_cpu_s_median" and base not in (None, "transport")), None)
        if python_best and python_best["baseline_value"]:
            python = f"{python_best['baseline']}: {k(python_best['baseline_value'])} / {k(python_median['baseline_value'])}"
            ratio = f"{median['value'] / python_median['baseline_value']:.1f}×"
            if reading_median:
                ratio += f" / {reading_median['value'] / python_median['baseline_value']:.1f}×"
        else:
            python, ratio = "not run", "–"
        transport = f"{median['baseline_value'] / 1e6:.2f} M"
        rows.append(f"| {title} | {k(best['value'])} / {k(median['value'])} | {reading} | {stream} | {python} "
                    f"| {ratio} | {transport} |")
    return "\n".join(rows)


def latency_table(figures, rate):
    rows = [f"| {rate:,} events/s | p50 | p99 | p99.9 | max | CPU per event |", "| --- | --- | --- | --- | --- | --- |"]
    cases = [("floor", "floor: a bare epoll + recv loop"), ("floor-handoff", "floor + a handoff to a second thread"),
             ("transport", "transport alone")]
    for dialect, title in DIALECTS:
        for target in ("default", "inline", "main"):
            cases.append((f"{dialect}/{target}", f"{title}, `{target}` delivery"))
        cases.append((f"{dialect}/coalesced", f"{title}, `default` delivery, reads coalesced within 250 µs"))
    for case, title in cases:
        values = [find(figures, "latency", f"{case}@{rate}", metric)
                  for metric in ("p50_us", "p99_us", "p999_us", "max_us", "cpu_us_per_event")]
        if any(v is None for v in values):
            continue
        p50, p99, p999, peak, cpu = (v["value"] for v in values)
        rows.append(f"| {title} | {p50:.0f} µs | {p99:.0f} µs | {p999:.0f} µs | {peak:.0f} µs | {cpu:.1f} µs |")
    return "\n".join(rows)


def scale_table(figures):
    rows = ["| dialect | per channel (10,000), heap / RSS | per handler (100,000 on one event), heap / RSS "
            "| per session (10,000 sessions), RSS | reconnect + re-subscribe 100 channels: best / median |",
            "| --- | --- | --- | --- | --- |"]
    for case, title in DIALECTS:
        def value(metric):
            figure = find(figures, "scale", case, metric)
            return None if figure is None else figure["value"]
        channel = (value("heap_bytes_per_channel"), value("rss_bytes_per_channel"))
        handler = (value("heap_bytes_per_handler"), value("rss_bytes_per_handler"))
        session = value("rss_bytes_per_session")
        best, median = value("reconnect_resubscribe_ms"), value("reconnect_resubscribe_ms_median")
        if None in channel or None in handler:
            continue
        session_text = "–" if session is None else f"{session / 1024:.1f} KiB"
        reconnect = "–" if best is None else f"{best:.2f} / {median:.2f} ms"
        rows.append(f"| {title} | {channel[0]:.0f} / {channel[1]:.0f} B | {handler[0]:.0f} / {handler[1]:.0f} B "
                    f"| {session_text} | {reconnect} |")
    return "\n".join(rows)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    figures = load(sys.argv[1])
    parts = ["Bulk: 1 M ~150-byte events per round over loopback to one session, one channel and one handler "
             "(`realtime-bench dialects`). The handler either only counts, so payloads are never parsed (each "
             "dialect parses a payload when a handler first reads it), or reads each event's `data`, which "
             "parses every payload as the Python clients parse theirs, in a handler or in a `for await` loop over "
             "`channel.events(_:)`.", "", dialects_table(figures), ""]
    for rate in (1000, 10000):
        if find(figures, "latency", f"floor@{rate}", "p50_us"):
            parts += [f"Paced at {rate:,} events/s for 5 s (`realtime-bench latency`): delay from the server's write "
                      f"to the handler, CPU of the client process over the run divided by the events; the two floor "
                      f"rows are what this machine charges before any library code:", "", latency_table(figures, rate), ""]
    parts += ["Memory and reconnection (`realtime-bench scale`):", "", scale_table(figures)]
    text = "\n".join(parts)
    if "--update" in sys.argv:
        readme = sys.argv[sys.argv.index("--update") + 1]
        content = open(readme).read()
        begin, end = "<!-- bench-tables:begin -->", "<!-- bench-tables:end -->"
        start, stop = content.index(begin) + len(begin), content.index(end)
        open(readme, "w").write(content[:start] + "\n" + text + "\n" + content[stop:])
    print(text)


main()
