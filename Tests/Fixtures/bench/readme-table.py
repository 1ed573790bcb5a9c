#!/usr/bin/env python3
"""Turns `realtime-bench json|transport|dialects|latency|scale --json` output into the README's measured tables.

Usage:
  realtime-bench dialects --json > out/dialects.jsonl   (and json, transport, latency, scale)
  Tests/Fixtures/bench/readme-table.py out/ [--update README.md]

Prints the tables (markdown); with --update, replaces what lies between the README's
`<!-- bench-transport:begin -->` and `<!-- bench-transport:end -->` markers (json, transport) and between
`<!-- bench-tables:begin -->` and `<!-- bench-tables:end -->` (dialects, latency, scale), each only when its
suites' files are in the folder. Every figure comes from the JSON lines; nothing here is typed by hand.
"""
import json
import os
import sys

DIALECTS = [("socketio", "Socket.IO"), ("pusher", "Pusher"), ("actioncable", "Action Cable")]
SUITES = ("json", "transport", "dialects", "latency", "scale")


def load(folder):
    figures = {}
    for suite in SUITES:
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


def value(figures, bench, case, metric):
    figure = find(figures, bench, case, metric)
    return None if figure is None else figure["value"]


def m(value):
    return "–" if value is None else f"{value / 1e6:.2f} M"


def below(ours, theirs):
    """How far `ours` is below `theirs`, in percent."""
    return "–" if not ours or not theirs else f"{(1 - ours / theirs) * 100:.0f} %"


def best_median(figures, case, unit=m):
    best = value(figures, "transport", case, "msg_per_cpu_s")
    median = value(figures, "transport", case, "msg_per_cpu_s_median")
    return f"{unit(best)} / {unit(median)}", best, median


def transport_table(figures):
    rows = ["| what | figure: best / median | baseline in the same run |", "| --- | --- | --- |"]
    parse = find(figures, "json", "parse-jsonvalue.parse-string", "ns_per_op")
    parse_median = find(figures, "json", "parse-jsonvalue.parse-string", "ns_per_op_median")
    event_bytes = value(figures, "json", "run", "event_bytes")
    if parse and parse_median:
        rows.append(f"| JSON parse, {event_bytes:.0f}-byte event (`JSONValue.parse`) | {parse['value']:.0f} / "
                    f"{parse_median['value']:.0f} ns | JSONSerialization {parse['baseline_value']:.0f} / "
                    f"{parse_median['baseline_value']:.0f} ns, {parse['baseline_value'] / parse['value']:.1f}× / "
                    f"{parse_median['baseline_value'] / parse_median['value']:.1f}× as long |")
    frames = value(figures, "transport", "run", "frames_per_round")
    rounds = value(figures, "transport", "run", "rounds")
    ws_text, ws_best, ws_median = best_median(figures, "ws")
    if ws_best is not None:
        floor = value(figures, "transport", "codec-floor", "msg_per_s")
        rows.append(f"| ws receive, {frames / 1e6:g} M × 150-byte frames per round, {rounds:.0f} rounds: msg per client "
                    f"CPU-second | {ws_text} | the codec alone, from memory: {m(floor)} msg/s |")
        openssl_text, openssl_best, openssl_median = best_median(figures, "wss-openssl")
        direct_text, direct_best, direct_median = best_median(figures, "wss-direct")
        if openssl_best is not None:
            rows.append(f"| wss receive, same (TLS 1.3, AES-128-GCM), OpenSSL's record layer (the default) | "
                        f"{openssl_text} | {below(openssl_best, ws_best)} / {below(openssl_median, ws_median)} below ws |")
        if direct_best is not None:
            rows.append(f"| wss receive, same, `.directDecryptionOptimization` | {direct_text} | "
                        f"{below(direct_best, ws_best)} / {below(direct_median, ws_median)} below ws; "
                        f"{direct_best / openssl_best:.2f}× / {direct_median / openssl_median:.2f}× OpenSSL's record layer |")
    record = find(figures, "transport", "record-layer-direct", "ms_per_1m_frames")
    if record:
        aead = find(figures, "transport", "aead-vaes", "bytes_per_s")
        opener = ("" if aead is None else
                  f"; AES-GCM alone: EVP {aead['baseline_value'] / 1e9:.1f} GB/s" +
                  ("" if aead["value"] is None else f", the VAES opener {aead['value'] / 1e9:.1f} GB/s"))
        record_median = find(figures, "transport", "record-layer-direct", "ms_per_1m_frames_median")
        passes = value(figures, "transport", "run", "record_layer_passes")
        if record_median is None:  # runs before the median was reported
            rows.append(f"| TLS 1.3 record layer alone, 1 M frames from memory (best of 3) | `.directDecryptionOptimization` "
                        f"{record['value']:.0f} ms | OpenSSL's record layer {record['baseline_value']:.0f} ms "
                        f"({record['baseline_value'] / record['value']:.1f}× as long){opener} |")
        else:
            rows.append(f"| TLS 1.3 record layer alone, 1 M frames from memory, best / median of {passes:.0f} interleaved "
                        f"passes | `.directDecryptionOptimization` {record['value']:.0f} / {record_median['value']:.0f} ms "
                        f"| OpenSSL's record layer {record['baseline_value']:.0f} / {record_median['baseline_value']:.0f} ms "
                        f"({record['baseline_value'] / record['value']:.1f}× / "
                        f"{record_median['baseline_value'] / record_median['value']:.1f}× as long){opener} |")
    idle = value(figures, "transport", "run", "idle_connections")
    ws_idle = value(figures, "transport", "idle-ws", "rss_bytes_per_connection")
    wss_idle = value(figures, "transport", "idle-wss", "rss_bytes_per_connection")
    if idle and ws_idle is not None:
        threads = max(value(figures, "transport", f"idle-{s}", "threads") or 0 for s in ("ws", "wss"))
        wss = "" if wss_idle is None else f", wss {wss_idle / 1024:.1f} KiB"
        rows.append(f"| {idle:,.0f} idle connections, RSS each | ws {ws_idle / 1024:.1f} KiB{wss}; {threads:.0f} threads "
                    f"in the process | — |")
    deflate_rounds = value(figures, "transport", "run", "deflate_rounds")
    for case, title in (("deflate-event", "150-byte events of changing content"),
                        ("deflate-document", "4 KiB JSON documents")):
        wire = find(figures, "transport", case, "wire_bytes_per_message")
        text, best, median = best_median(figures, case)
        if wire is None or best is None:
            continue
        plain = find(figures, "transport", case, "msg_per_cpu_s")
        plain_median = find(figures, "transport", case, "msg_per_cpu_s_median")
        compress = find(figures, "transport", case, "compress_us_per_message")
        decode = find(figures, "transport", case, "decode_us_per_message")
        rounds_text = f"{deflate_rounds:.0f} round" + ("" if deflate_rounds == 1 else "s")
        rows.append(f"| permessage-deflate, {title}: ws receive, msg per client CPU-second ({rounds_text}) "
                    f"| {text}; {wire['value']:.1f} B on the wire per message (ratio {wire['value'] / wire['baseline_value']:.3f}); "
                    f"compressing {compress['value']:.1f} µs per message; inflating from memory {decode['value']:.1f} µs "
                    f"| uncompressed {m(plain['baseline_value'])} / {m(plain_median['baseline_value'])} "
                    f"({best / plain['baseline_value']:.2f}× / {median / plain_median['baseline_value']:.2f}×); "
                    f"decoding plain frames {decode['baseline_value']:.1f} µs |")
    return "\n".join(rows)


def dialects_table(figures):
    rows = ["| dialect | ours, handler only counts: best / median | ours, handler reads each payload: best / median "
            "| ours, an `events()` loop reads each payload: best / median "
            "| Python client of the protocol: best / median | ours ÷ Python, medians: counting / reading "
            "| transport alone, median | heap allocations per event: counting / reading / loop; transport alone |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
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
        counted = [find(figures, "dialects", case, metric) for metric in
                   ("allocations_per_event", "allocations_per_event_reading", "allocations_per_event_stream")]
        if all(figure and figure["value"] is not None for figure in counted):
            allocations = (" / ".join(f"{figure['value']:.1f}" for figure in counted)
                           + (f"; {counted[0]['baseline_value']:.1f}" if counted[0]["baseline_value"] is not None else ""))
        else:
            allocations = "not counted"
        rows.append(f"| {title} | {k(best['value'])} / {k(median['value'])} | {reading} | {stream} | {python} "
                    f"| {ratio} | {transport} | {allocations} |")
    return "\n".join(rows)


def latency_table(figures, rate):
    rows = [f"| {rate:,} events/s | p50 | p99 | p99.9 | max | CPU per event |", "| --- | --- | --- | --- | --- | --- |"]
    window_figure = find(figures, "latency", "coalesced", "window_us")
    window = 250 if window_figure is None else f"{window_figure['value']:.0f}"  # runs before the figure existed
    cases = [("floor", "floor: a bare epoll + recv loop"), ("floor-handoff", "floor + a handoff to a second thread"),
             ("transport", "transport alone")]
    for dialect, title in DIALECTS:
        for target in ("default", "inline", "main"):
            cases.append((f"{dialect}/{target}", f"{title}, `{target}` delivery"))
        cases.append((f"{dialect}/coalesced", f"{title}, `default` delivery, reads coalesced within {window} µs"))
        cases.append((f"{dialect}/busy", f"{title}, `default` delivery, the app's tasks busy on every core"))
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


def machine_line(figures, suites):
    """Says which processor the suites ran on, from their `machine` figures (nothing for older output)."""
    machines = []
    for suite in suites:
        figure = find(figures, suite, "machine", "cores")
        if figure:
            text = f"{figure.get('note', 'unknown processor')}, {figure['value']:.0f} cores"
            if text not in machines:
                machines.append(text)
    return "" if not machines else f"Measured on: {'; '.join(machines)}.\n\n"


def replace_between(content, name, text):
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    start, stop = content.index(begin) + len(begin), content.index(end)
    return content[:start] + "\n" + text + "\n" + content[stop:]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    figures = load(folder)
    has = lambda *suites: any(os.path.exists(os.path.join(folder, f"{suite}.jsonl")) for suite in suites)
    blocks = {}
    if has("json", "transport"):
        blocks["bench-transport"] = machine_line(figures, ("json", "transport")) + transport_table(figures)
    if has("dialects", "latency", "scale"):
        blocks["bench-tables"] = machine_line(figures, ("dialects", "latency", "scale")) + tables(figures)
    if "--update" in sys.argv:
        readme = sys.argv[sys.argv.index("--update") + 1]
        content = open(readme).read()
        for name, text in blocks.items():
            content = replace_between(content, name, text)
        open(readme, "w").write(content)
    print("\n\n".join(blocks.values()))


def pinning(figures):
    """Says where the bulk run's client and blaster ran, from its `clients pinned` figure (nothing for older output)."""
    figure = find(figures, "dialects", "clients", "pinned")
    if figure is None:
        return ""
    if figure["value"]:
        return (" The client process (ours, or the Python one) runs pinned to core 0 and the blaster to core 1, so"
                " that rounds repeat; unpinned figures follow the table.")
    return " The client's threads are not pinned: they share the cores with the blaster, which is pinned to core 1."


def tables(figures):
    parts = ["Bulk: 1 M ~150-byte events per round over loopback to one session, one channel and one handler "
             "(`realtime-bench dialects`). The handler either only counts, so payloads are never parsed (each "
             "dialect parses a payload when a handler first reads it), or reads each event's `data`, which "
             "parses every payload as the Python clients parse theirs, in a handler or in a `for await` loop over "
             "`channel.events(_:)`. Heap allocations are counted in one more pass of each after the timed rounds "
             "(every `malloc` of the process, every thread), not in the timed ones." + pinning(figures), "",
             dialects_table(figures), ""]
    for rate in (1000, 10000):
        if find(figures, "latency", f"floor@{rate}", "p50_us"):
            parts += [f"Paced at {rate:,} events/s for 5 s (`realtime-bench latency`): delay from the server's write "
                      f"to the handler, CPU of the client process over the run divided by the events; the two floor "
                      f"rows are what this machine charges before any library code:", "", latency_table(figures, rate), ""]
    parts += ["Memory and reconnection (`realtime-bench scale`):", "", scale_table(figures)]
    return "\n".join(parts)


main()
