#!/usr/bin/env python3
"""A small scripted WebSocket conformance server: the fallback when Autobahn (Python 2.7) is missing.

It speaks the fuzzing server's URL protocol (/getCaseCount, /runCase?case=N&agent=A,
/updateReports?agent=A), so AutobahnTestee drives it unchanged. Each case writes raw frames and checks
the client's answer byte for byte: echoes, pongs, close codes for protocol errors, UTF-8 fail-fast,
fragmentation, and opening-handshake cases Autobahn lacks (bad accept, missing Upgrade, 3xx/4xx,
unoffered subprotocol or extension, frames right after the 101).

Stdlib only. Listens on 127.0.0.1 only.

    conformance_server.py --port 9001 --results results.json   # serve until /updateReports
    conformance_server.py --summary results.json                 # print the table, exit 1 on failures
"""
import argparse
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time
import urllib.parse

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TIMEOUT = 3.0


class Failed(Exception):
    pass


def frame(opcode, payload=b"", fin=True, rsv=0, mask=None, length_override=None):
    head = bytes([(0x80 if fin else 0) | (rsv << 4) | opcode])
    mask_bit = 0x80 if mask else 0
    length = len(payload) if length_override is None else length_override
    if length_override is not None and length_override >= 1 << 16:
        head += bytes([mask_bit | 127]) + struct.pack(">Q", length)
    elif length < 126:
        head += bytes([mask_bit | length])
    elif length < 1 << 16:
        head += bytes([mask_bit | 126]) + struct.pack(">H", length)
    else:
        head += bytes([mask_bit | 127]) + struct.pack(">Q", length)
    if mask:
        head += mask
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + payload


def close_frame(code=None, reason=b""):
    return frame(8, b"" if code is None else struct.pack(">H", code) + reason)


class Connection:
    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.closed = False  # a close frame was exchanged

    def send(self, data, chop=None, delay=0.0):
        if chop is None:
            self.sock.sendall(data)
            return
        for index in range(0, len(data), chop):
            self.sock.sendall(data[index:index + chop])
            if delay:
                time.sleep(delay)

    def read_exact(self, count, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while len(self.buffer) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Failed("timed out waiting for the client")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise Failed("timed out waiting for the client")
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise Failed("client closed TCP (%d bytes pending)" % len(self.buffer))
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def read_frame(self, timeout=TIMEOUT):
        first, second = self.read_exact(2, timeout)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack(">H", self.read_exact(2, timeout))[0]
        elif length == 127:
            length = struct.unpack(">Q", self.read_exact(8, timeout))[0]
        if not second & 0x80:
            raise Failed("client frame is not masked")
        mask = self.read_exact(4, timeout)
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self.read_exact(length, timeout)))
        return first & 0x80 != 0, first & 0x0F, payload

    def read_message(self, timeout=TIMEOUT):
        """The next data message (opcode, payload), or ('pong'/'close', payload) for control frames."""
        opcode, parts = None, []
        while True:
            fin, op, payload = self.read_frame(timeout)
            if op == 8:
                return "close", payload
            if op == 10:
                return "pong", payload
            if op == 9:
                return "ping", payload
            if op in (1, 2):
                opcode = op
            parts.append(payload)
            if fin:
                return opcode, b"".join(parts)

    def expect_echo(self, opcode, payload):
        got = self.read_message()
        if got != (opcode, payload):
            raise Failed("expected echo of %d bytes (opcode %d), got %s" % (len(payload), opcode, describe(got)))

    def expect_pong(self, payload):
        got = self.read_message()
        if got != ("pong", payload):
            raise Failed("expected pong of %d bytes, got %s" % (len(payload), describe(got)))

    def expect_close(self, codes, timeout=TIMEOUT):
        got = self.read_message(timeout)
        if got[0] != "close":
            raise Failed("expected close %s, got %s" % (codes, describe(got)))
        self.closed = True
        code = struct.unpack(">H", got[1][:2])[0] if len(got[1]) >= 2 else None
        if code not in codes:
            raise Failed("expected close code %s, got %s" % (codes, code))

    def expect_tcp_close(self, timeout=TIMEOUT):
        """The client must drop the connection without sending any frame."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Failed("client kept the connection open")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                return
            if not chunk:
                if self.buffer:
                    raise Failed("client sent %d bytes before closing" % len(self.buffer))
                return
            self.buffer += chunk


def describe(message):
    kind, payload = message
    return "%s with %d bytes %r" % (kind, len(payload), payload[:40])


def accept_value(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def upgrade_response(key, extra=(), accept=None):
    lines = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Accept: %s" % (accept or accept_value(key))]
    lines.extend(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# Each case: (id, description, handshake override or None, script(conn)).
CASES = []


def case(case_id, description, handshake=None):
    def register(function):
        CASES.append((case_id, description, handshake, function))
        return function
    return register


# --- Framing and lengths ----------------------------------------------------------------------------
for number, size in enumerate([0, 1, 125, 126, 127, 128, 65535, 65536, 1 << 20]):
    def script(conn, size=size):
        payload = ("é" * (size // 2) + "x" * (size % 2)).encode()
        conn.send(frame(1, payload))
        conn.expect_echo(1, payload)
        binary = bytes((i * 7) & 0xFF for i in range(size))
        conn.send(frame(2, binary))
        conn.expect_echo(2, binary)
    case("1.%d" % (number + 1), "text and binary of %d bytes echoed" % size)(script)


@case("1.10", "frame delivered one byte per write")
def one_byte_chops(conn):
    payload = "chopped into single bytes ✓".encode()
    conn.send(frame(1, payload), chop=1, delay=0.002)
    conn.expect_echo(1, payload)


@case("1.11", "many frames in one write")
def many_frames(conn):
    messages = [("message %d" % i).encode() for i in range(200)]
    conn.send(b"".join(frame(1, m) for m in messages))
    for message in messages:
        conn.expect_echo(1, message)


@case("1.12", "non-minimal 16-bit length for a short payload is accepted")
def non_minimal(conn):
    conn.send(bytes([0x81, 126, 0, 2]) + b"hi")
    conn.expect_echo(1, b"hi")


# --- Ping and pong ----------------------------------------------------------------------------------
@case("2.1", "ping answered with identical pong")
def ping(conn):
    conn.send(frame(9, b"ping payload"))
    conn.expect_pong(b"ping payload")


@case("2.2", "125-byte ping answered")
def ping125(conn):
    conn.send(frame(9, b"\xfe" * 125))
    conn.expect_pong(b"\xfe" * 125)


@case("2.3", "126-byte ping fails with 1002")
def ping126(conn):
    conn.send(frame(9, b"x" * 126))
    conn.expect_close({1002})


@case("2.4", "unsolicited pong ignored")
def unsolicited_pong(conn):
    conn.send(frame(10, b"unasked") + frame(1, b"after"))
    conn.expect_echo(1, b"after")


# --- Reserved bits and opcodes ----------------------------------------------------------------------
for number, rsv in enumerate([1, 2, 4]):
    def script(conn, rsv=rsv):
        conn.send(frame(1, b"ok") + frame(1, b"bad", rsv=rsv))
        conn.expect_echo(1, b"ok")
        conn.expect_close({1002})
    case("3.%d" % (number + 1), "RSV %d set fails with 1002" % rsv)(script)

for number, opcode in enumerate([3, 7, 11, 15]):
    def script(conn, opcode=opcode):
        conn.send(frame(opcode, b"x"))
        conn.expect_close({1002})
    case("4.%d" % (number + 1), "reserved opcode %d fails with 1002" % opcode)(script)


# --- Fragmentation ----------------------------------------------------------------------------------
@case("5.1", "fragments with a ping between them")
def fragments_with_ping(conn):
    conn.send(frame(1, b"frag", fin=False) + frame(9, b"mid") + frame(0, b"men", fin=False) + frame(0, b"ts"))
    conn.expect_pong(b"mid")
    conn.expect_echo(1, b"fragments")


@case("5.2", "continuation without a message fails with 1002")
def orphan_continuation(conn):
    conn.send(frame(0, b"orphan"))
    conn.expect_close({1002})


@case("5.3", "fragmented ping fails with 1002")
def fragmented_ping(conn):
    conn.send(frame(9, b"a", fin=False) + frame(0, b"b"))
    conn.expect_close({1002})


@case("5.4", "new text frame inside a fragmented message fails with 1002")
def interleaved(conn):
    conn.send(frame(1, b"one", fin=False) + frame(1, b"two"))
    conn.expect_close({1002})


@case("5.5", "binary message in 1000 fragments of 64 bytes")
def many_fragments(conn):
    data = bytes(range(256)) * 250
    pieces = [data[i:i + 64] for i in range(0, len(data), 64)]
    out = b"".join(frame(2 if i == 0 else 0, p, fin=i == len(pieces) - 1) for i, p in enumerate(pieces))
    conn.send(out)
    conn.expect_echo(2, data)


# --- UTF-8 ------------------------------------------------------------------------------------------
@case("6.1", "valid text split inside code points across fragments")
def split_code_points(conn):
    text = "κόσμε 😀 \ufffe \U0010ffff".encode()
    conn.send(b"".join(frame(1 if i == 0 else 0, text[i:i + 1], fin=i == len(text) - 1) for i in range(len(text))))
    conn.expect_echo(1, text)


@case("6.2", "surrogate in a single frame fails with 1007")
def surrogate(conn):
    conn.send(frame(1, b"ab\xed\xa0\x80cd"))
    conn.expect_close({1007})


@case("6.3", "overlong encoding fails with 1007")
def overlong(conn):
    conn.send(frame(1, b"\xc0\xaf"))
    conn.expect_close({1007})


@case("6.4", "fail-fast: invalid fragment closes before the message ends")
def fail_fast_fragments(conn):
    conn.send(frame(1, "κόσμε".encode(), fin=False) + frame(0, b"\xf4\x90\x80\x80", fin=False))
    conn.expect_close({1007}, timeout=1.0)  # the final fragment is never sent


@case("6.5", "fail-fast: invalid bytes in the middle of a frame close before it ends")
def fail_fast_frame(conn):
    whole = frame(1, b"valid start " + b"\xed\xa0\x80" + b"x" * 100)
    conn.send(whole[:2 + 15])
    conn.expect_close({1007}, timeout=1.0)  # the rest of the frame is never sent


@case("6.6", "truncated code point at the end of a message fails with 1007")
def truncated(conn):
    conn.send(frame(1, b"abc\xe2\x82"))
    conn.expect_close({1007})


# --- Close ------------------------------------------------------------------------------------------
@case("7.1", "close 1000 with a reason is echoed")
def close_normal(conn):
    conn.send(close_frame(1000, "bye ✓".encode()))
    conn.expect_close({1000})


@case("7.2", "empty close answered")
def close_empty(conn):
    conn.send(close_frame())
    conn.expect_close({None, 1000})


@case("7.3", "data after close is ignored")
def data_after_close(conn):
    conn.send(close_frame(1000) + frame(1, b"ignored"))
    conn.expect_close({1000})
    try:
        got = conn.read_message(timeout=0.5)
        raise Failed("client answered data after close: %s" % describe(got))
    except Failed as error:
        if "answered" in str(error):
            raise


@case("7.4", "1-byte close payload fails with 1002")
def close_one_byte(conn):
    conn.send(frame(8, b"\x03"))
    conn.expect_close({1002})


for number, code in enumerate([0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000]):
    def script(conn, code=code):
        conn.send(close_frame(code))
        conn.expect_close({1002})
    case("7.%d" % (5 + number), "invalid close code %d answered with 1002" % code)(script)

for number, code in enumerate([1001, 1003, 1011, 3000, 4999]):
    def script(conn, code=code):
        conn.send(close_frame(code))
        conn.expect_close({code})
    case("7.%d" % (14 + number), "valid close code %d echoed" % code)(script)


@case("7.19", "close reason that is not UTF-8 fails with 1007")
def close_bad_reason(conn):
    conn.send(close_frame(1000, b"\xff"))
    conn.expect_close({1007})


# --- Masking and lengths ----------------------------------------------------------------------------
@case("8.1", "masked frame from the server fails with 1002")
def masked_from_server(conn):
    conn.send(frame(1, b"masked", mask=b"\x01\x02\x03\x04"))
    conn.expect_close({1002})


@case("8.2", "64-bit length with the top bit set fails with 1002")
def huge_length(conn):
    conn.send(bytes([0x82, 127]) + struct.pack(">Q", 1 << 63))
    conn.expect_close({1002})


# --- Opening handshake (Autobahn has none) ----------------------------------------------------------
@case("11.1", "wrong Sec-WebSocket-Accept is refused",
      handshake=lambda key: upgrade_response(key, accept=base64.b64encode(b"\0" * 20).decode()))
def bad_accept(conn):
    conn.expect_tcp_close()


@case("11.2", "101 without Upgrade is refused",
      handshake=lambda key: ("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: %s\r\n\r\n" % accept_value(key)).encode())
def missing_upgrade(conn):
    conn.expect_tcp_close()


@case("11.3", "404 is refused",
      handshake=lambda key: b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found")
def not_found(conn):
    conn.expect_tcp_close()


@case("11.4", "302 is not followed",
      handshake=lambda key: b"HTTP/1.1 302 Found\r\nLocation: ws://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n")
def redirect(conn):
    conn.expect_tcp_close()


@case("11.5", "a subprotocol the client did not offer is refused",
      handshake=lambda key: upgrade_response(key, extra=["Sec-WebSocket-Protocol: chat"]))
def unoffered_subprotocol(conn):
    conn.expect_tcp_close()


@case("11.6", "an extension the client did not offer is refused",
      handshake=lambda key: upgrade_response(key, extra=["Sec-WebSocket-Extensions: permessage-deflate"]))
def unoffered_extension(conn):
    conn.expect_tcp_close()


@case("11.7", "a frame in the same segment as the 101 is not lost",
      handshake=lambda key: upgrade_response(key) + frame(1, b"right after the 101"))
def frame_after_101(conn):
    conn.expect_echo(1, b"right after the 101")


# --- Server -----------------------------------------------------------------------------------------
def read_request(sock):
    data = b""
    sock.settimeout(TIMEOUT)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise Failed("client closed during the handshake")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ")
    headers = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        headers[name.strip().lower()] = value.strip()
    return target, headers, rest


def check_request(headers):
    problems = []
    if headers.get("upgrade", "").lower() != "websocket":
        problems.append("Upgrade")
    if "upgrade" not in headers.get("connection", "").lower():
        problems.append("Connection")
    if headers.get("sec-websocket-version") != "13":
        problems.append("Sec-WebSocket-Version")
    try:
        if len(base64.b64decode(headers.get("sec-websocket-key", ""), validate=True)) != 16:
            problems.append("Sec-WebSocket-Key length")
    except ValueError:
        problems.append("Sec-WebSocket-Key")
    if "host" not in headers:
        problems.append("Host")
    return problems


def serve(port, results_path):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(8)
    results = {}
    print("conformance_server: %d cases on 127.0.0.1:%d" % (len(CASES), port), flush=True)
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            target, headers, rest = read_request(sock)
        except (Failed, ValueError, OSError) as error:
            print("bad request: %s" % error, flush=True)
            sock.close()
            continue
        url = urllib.parse.urlparse(target)
        query = urllib.parse.parse_qs(url.query)
        key = headers.get("sec-websocket-key", "")
        conn = Connection(sock)
        conn.buffer = rest
        try:
            if url.path == "/getCaseCount":
                sock.sendall(upgrade_response(key) + frame(1, str(len(CASES)).encode()) + close_frame(1000))
                try:
                    conn.expect_close({1000})
                except Failed:
                    pass
            elif url.path == "/runCase":
                number = int(query["case"][0])
                case_id, description, handshake, script = CASES[number - 1]
                started = time.monotonic()
                problems = check_request(headers)
                try:
                    if problems:
                        raise Failed("bad upgrade request: " + ", ".join(problems))
                    sock.sendall(handshake(key) if handshake else upgrade_response(key))
                    script(conn)
                    if not handshake and not conn.closed:
                        # Finish every passing case with a clean close handshake.
                        try:
                            sock.sendall(close_frame(1000))
                            while conn.read_message(timeout=1.0)[0] != "close":
                                pass
                        except (Failed, OSError):
                            pass
                    verdict, detail = "OK", ""
                except (Failed, OSError) as error:
                    verdict, detail = "FAILED", str(error)
                results[case_id] = {"description": description, "behavior": verdict, "detail": detail,
                                    "duration": int((time.monotonic() - started) * 1000)}
                print("%-6s %-6s %s %s" % (case_id, verdict, description, detail), flush=True)
            elif url.path == "/updateReports":
                sock.sendall(upgrade_response(key) + close_frame(1000))
                with open(results_path, "w") as out:
                    json.dump(results, out, indent=1)
                sock.close()
                return
            else:
                sock.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        except OSError as error:
            print("connection error: %s" % error, flush=True)
        finally:
            sock.close()


def summary(path):
    def key(case_id):
        return [int(part) for part in case_id.split(".")]
    try:
        with open(path) as source:
            results = json.load(source)
    except OSError:
        results = {}
    missing = [case_id for case_id, _, _, _ in CASES if case_id not in results]
    failed = [case_id for case_id in results if results[case_id]["behavior"] != "OK"] + missing
    for case_id in sorted(failed, key=key):
        result = results.get(case_id, {"behavior": "MISSING", "description": "", "detail": "not run"})
        print("%-6s %-8s %s: %s" % (case_id, result["behavior"], result["description"], result["detail"]))
    passed = len(CASES) - len(failed)
    print("!!! FALLBACK conformance server, NOT Autobahn: %d cases of our own !!!" % len(CASES))
    print("autobahn: %d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9001)
    parser.add_argument("--results", default=os.path.join(os.getcwd(), "conformance-results.json"))
    parser.add_argument("--summary", metavar="RESULTS")
    arguments = parser.parse_args()
    if arguments.summary:
        sys.exit(summary(arguments.summary))
    serve(arguments.port, arguments.results)


if __name__ == "__main__":
    main()
