#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into corpus/<target>/ (run from anywhere).

The seeds are hand-written protocol traffic in each target's input format (see
Sources/RealtimeFuzzing); libFuzzer mutates from them. Re-run after changing a format; the files are
committed so that CI and the corpus-replay tests need no Python.
"""
import hashlib
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, seeds):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.startswith("seed-"):
            os.remove(os.path.join(folder, name))
    for data in seeds:
        name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(folder, name), "wb") as out:
            out.write(data)


# JSON: documents as the dialects see them, and the grammar's corners.
json_seeds = [
    b'{"event":"order-updated","channel":"private-orders","data":"{\\"id\\":12345,\\"total\\":99.95}"}',
    b'[1,-2.5e-3,true,false,null,"\\u00e9\\ud83d\\ude00",{"a":[{}]}]',
    b'42["chat",{"text":"h\xc3\xa9llo","n":1e2}]',
    b'{"identifier":"{\\"channel\\":\\"ChatChannel\\"}","message":{"body":"x\\ny"}}',
    b'"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"',
    b"-9223372036854775808",
    b"9223372036854775808",
    b"-0",
    b"1.7976931348623157e308",
    b"[[[[[[1]]]]]]",
    b'{"a":{"b":{"c":{"d":"deep"}}}}',
    b' \t\n{ "k" : [ ] , "k" : { } } \r\n',
    b'"\\"\\\\\\/\\b\\f\\n\\r\\t"',
]

# WebSocket codec: a limits byte (0xFF: the largest limits), a cut seed, then server frames.
def frame(opcode, payload, fin=True, rsv=0, mask=None, length_form=None):
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload)
    form = length_form or ("7" if n < 126 else "16" if n < 65536 else "64")
    second = 0x80 if mask else 0
    if form == "7":
        head = bytes([first, second | n])
    elif form == "16":
        head = bytes([first, second | 126]) + struct.pack(">H", n)
    else:
        head = bytes([first, second | 127]) + struct.pack(">Q", n)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        head += bytes(mask)
    return head + payload


def close(code, reason=b""):
    return frame(8, struct.pack(">H", code) + reason)


codec_frames = [
    frame(1, b"hello"),
    frame(2, bytes(range(40))),
    frame(1, b"fra", fin=False) + frame(0, b"gmen", fin=False) + frame(0, b"ted"),
    frame(9, b"ping") + frame(1, b"after ping"),
    frame(10, b"pong"),
    close(1000, b"bye"),
    close(1001) + frame(1, b"ignored after close"),
    frame(1, b"x" * 300),
    frame(2, b"y" * 70, length_form="64"),
    frame(1, b"masked", mask=[1, 2, 3, 4]),
    frame(1, b"rsv", rsv=4),
    frame(3, b"reserved opcode"),
    frame(1, b"\xc3\x28 invalid"),
    frame(1, b"ends inside \xe2\x82"),
    frame(9, b"p", fin=False),
    frame(9, b"z" * 126, length_form="16"),
    bytes([0x81, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 1]),
    frame(1, b"start", fin=False) + frame(9, b"mid") + frame(0, b"end"),
    frame(0, b"continuation without start"),
    close(999),
    frame(8, b"\x03"),
    frame(8, struct.pack(">H", 1000) + b"\xff"),
]
codec_seeds = [bytes([0xFF, seed]) + body for seed, body in enumerate(codec_frames)]
codec_seeds += [bytes([0x00, 3]) + frame(1, b"x" * 100), bytes([0x09, 5]) + frame(1, b"ab", fin=False) * 4]

# Upgrade response: a cut seed, then the server's bytes (the key is fixed: see UpgradeResponseFuzz).
ACCEPT = b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
ok_head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + ACCEPT
upgrade_bodies = [
    ok_head + b"\r\n\r\n",
    ok_head + b"\r\nSec-WebSocket-Protocol: chat\r\n\r\n",
    ok_head + b"\r\n\r\n" + frame(1, b"early frame"),
    ok_head + b"\r\nSec-WebSocket-Protocol: other\r\n\r\n",
    ok_head + b"\r\nSec-WebSocket-Accept: " + ACCEPT + b"\r\n\r\n",
    ok_head + b"\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\nSec-WebSocket-Accept:  " + ACCEPT + b"\t\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + ACCEPT + b"\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: wrong=\r\n\r\n",
    b"HTTP/1.0 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\nno token\r\n..",
    b"HTTP/1.1 302 Found\r\nLocation: https://example.test/socket\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\n\r\n",
    b"HTTP/1.1 200 OK\r\n bad folding\r\n\r\n",
    b"HTTP/1.1 101\r\n: empty name\r\n\r\n",
    b"HTTP/1.1 1010 Wrong\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nX-" + b"a" * 2100 + b"\r\n\r\n",
    b"",
    b"HTTP/1.1 101 Switching",
]
upgrade_seeds = [bytes([seed * 37 % 256]) + body for seed, body in enumerate(upgrade_bodies)]

# Proxy answers: a cut seed, a mode byte (even: the answer to CONNECT; odd: a long-polling response through
# the tunnel), then the proxy's or server's bytes (see ProxyAnswerFuzz).
connect_answers = [
    b"HTTP/1.1 200 Connection established\r\n\r\n",
    b"HTTP/1.0 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\n\x16\x03\x03\x00\x02hi",
    b"HTTP/1.1 200 OK\n\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
    b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"corp\"\r\n\r\n",
    b"HTTP/1.0 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"Tinyproxy\"\r\nConnection: close\r\n\r\n<html>",
    b"HTTP/1.1 403 Access violation\r\nContent-Type: text/html\r\n\r\n",
    b"HTTP/1.0 502 Bad Gateway\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
    b"SSH-2.0-OpenSSH_9.2\r\n",
    b"HTTP/1.1 200 Connection estab",
    b"HTTP/1.1 200 OK\r\nX-" + b"a" * 2100 + b"\r\n\r\n",
    b"",
]
polling_responses = [
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: 10\r\n\r\n40{\"sid\":1}",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\nuntil the end",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\nno",
    b"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\nxyz",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nCont",
]
proxy_seeds = [bytes([seed * 29 % 256, 0]) + body for seed, body in enumerate(connect_answers)]
proxy_seeds += [bytes([seed * 31 % 256, 1]) + body for seed, body in enumerate(polling_responses)]

# TLS records: a suite byte (0 AES-128-GCM, 1 AES-256-GCM, 2 ChaCha20-Poly1305), a cut seed, then
# steps: 0 data (2-byte length, pattern, padding), 1 handshake bytes (count, bytes, padding),
# 2 KeyUpdate (flags), 3 alert (level, description, extra, padding), 4 close_notify,
# 5 raw bytes (count, bytes), 6 flip (2-byte position, bit), 7 any record (type, count, bytes, padding).
def data(length, pattern=0x41, padding=0):
    return bytes([0]) + struct.pack(">H", length) + bytes([pattern, padding])


def handshake(message, padding=0):
    return bytes([1, len(message)]) + message + bytes([padding])


ticket = bytes([4, 0, 0, 25]) + struct.pack(">IIB", 7200, 1234, 4) + b"nonc" + struct.pack(">H", 8) + b"tickettt" + b"\x00\x00"
tls_programs = [
    data(100) + data(16384) + bytes([4]),
    handshake(ticket) + data(50),
    handshake(ticket[:10]) + handshake(ticket[10:]) + data(10),
    data(20) + bytes([2, 1]) + data(20) + bytes([2, 0]) + data(5000),
    data(20) + bytes([2, 2]) + data(20),
    data(1) + bytes([3, 2, 40, 0, 0]),
    data(1) + bytes([3, 1, 0, 0, 0]) + data(3),
    data(1) + bytes([3, 1, 90, 0, 0]) + data(3),
    data(300) + bytes([6, 0, 40, 3]),
    bytes([5, 7]) + bytes([21, 3, 3, 0, 2, 2, 80]),
    bytes([5, 6]) + bytes([20, 3, 3, 0, 1, 1]) + data(1),
    bytes([5, 5]) + bytes([23, 3, 3, 0x41, 0x01]),
    bytes([7, 0, 0, 9]) + data(4),
    bytes([7, 23, 0, 0]) * 3 + data(4),
    bytes([7, 99, 3]) + b"abc" + bytes([0]),
    data(16385) + data(1),
    data(16000, padding=0xC3),
    handshake(bytes([24, 0, 0, 1, 0, 4, 0, 0, 0])),
    handshake(bytes([2, 0, 0, 0])),
]
tls_seeds = []
for index, program in enumerate(tls_programs):
    tls_seeds.append(bytes([index % 3, [0, 1, 2, 3, 4][index % 5]]) + program)

# Redaction: a shape byte (0 Socket.IO CONNECT, 1 Pusher subscribe, 2 Action Cable identifier,
# 3 URL query, 4 Authorization header), then the choices that build the payload.
redaction_seeds = [bytes([shape]) + bytes((shape * 31 + i * 7) % 256 for i in range(n))
                   for shape in range(5) for n in (8, 40, 120)]

# Dialects: steps of an opcode byte (0-2 text, 3 binary, 4 timer, 5 work, 6 app command, 7 reopen)
# and operands; a message is a 2-byte length, then its bytes; a command byte is channel << 4 | command
# (0 subscribe, 1 unsubscribe, 2 send, 3 request, 4 cancel, 5 acknowledge).
def text(message):
    if isinstance(message, str):
        message = message.encode()
    return bytes([0]) + struct.pack(">H", len(message)) + message


def binary(message):
    return bytes([3]) + struct.pack(">H", len(message)) + message


socketio_programs = [
    text('42["chat",{"text":"hi"}]') + text('42/chat,["news",1,2]') + text("2"),
    text('42/chat,17["ask",{"q":1}]') + bytes([6, 5]) + text('43/chat,1["answer"]'),
    bytes([6, 3]) + text("430[\"ok\"]") + text("431[\"late\"]"),
    text('451-["upload",{"_placeholder":true,"num":0}]') + binary(b"\x01\x02\x03"),
    text('452-["two",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]') + binary(b"a") + binary(b"b"),
    text('40/admin,{"sid":"x"}') + bytes([6, 0x20]) + text('40/admin,{"sid":"y"}') + text('41/admin,'),
    text('44/chat,{"message":"not authorized"}') + text('1'),
    text("6") + text("3") + text("4" * 10) + bytes([4, 0]),
    bytes([7]) + text('0{"sid":"new","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":10}'),
    text('42["ev"' + ",[" * 40 + "]" * 40 + "]"),
    text('40/chat,{"sid":"b","pid":"p1"}') + text('42/chat,["ev","offset-1"]') + bytes([7]),
]
pusher_programs = [
    text('{"event":"greeting","channel":"room","data":"{\\"hello\\":1}"}'),
    bytes([6, 0]) + text('{"event":"pusher_internal:subscription_succeeded","channel":"room","data":"{}"}'),
    bytes([6, 0x10]) + bytes([5, 0, 0]) + text('{"event":"pusher_internal:subscription_succeeded","channel":"private-room","data":"{}"}'),
    bytes([6, 0x20]) + bytes([5, 0, 0]) + text('{"event":"pusher_internal:subscription_succeeded","channel":"presence-room","data":"{\\"presence\\":{\\"ids\\":[\\"7\\"],\\"hash\\":{\\"7\\":{}},\\"count\\":1}}"}')
    + text('{"event":"pusher_internal:member_added","channel":"presence-room","data":"{\\"user_id\\":\\"8\\"}"}'),
    bytes([6, 0x30]) + bytes([5, 0, 2]) + text('{"event":"secret","channel":"private-encrypted-room","data":"{\\"nonce\\":\\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\\",\\"ciphertext\\":\\"AAAA\\"}"}'),
    text('{"event":"pusher:error","data":{"code":4001,"message":"App key not in this cluster"}}'),
    text('{"event":"pusher:error","data":{"message":"subscription refused"}}'),
    text('{"event":"pusher:ping","data":{}}') + text('{"event":"pusher:pong"}') + bytes([4, 0]),
    text('{"event":"pusher:signin_success","data":{"user_data":"{\\"id\\":\\"7\\"}"}}'),
    text('not json') + text('{"channel":"room"}') + binary(b"\x00\x01"),
    bytes([7]) + text('{"event":"pusher:connection_established","data":"{\\"socket_id\\":\\"9.9\\",\\"activity_timeout\\":1}"}'),
]
actioncable_programs = [
    text('{"identifier":"{\\"channel\\":\\"ChatChannel\\",\\"room\\":\\"1\\"}","type":"confirm_subscription"}')
    + text('{"identifier":"{\\"channel\\":\\"ChatChannel\\",\\"room\\":\\"1\\"}","message":{"body":"hi"}}'),
    text('{"identifier":"{\\"channel\\":\\"NotificationsChannel\\"}","type":"reject_subscription"}'),
    text('{"type":"ping","message":1700000000}') * 3,
    text('{"type":"disconnect","reason":"unauthorized","reconnect":false}'),
    text('{"type":"disconnect","reason":"server_restart","reconnect":true}') + bytes([7]),
    bytes([4, 0, 4, 0, 4, 0]) + text('{"type":"welcome"}'),
    bytes([6, 2]) + bytes([6, 1]) + bytes([6, 0]) + bytes([4, 1]),
    text('{"identifier":"{\\"channel\\":\\"Unknown\\"}","message":1}') + text("[]") + binary(b"bin"),
    text('{"identifier":"{\\"channel\\":\\"ChatChannel\\",\\"room\\":2}","type":"confirm_subscription"}'),
]

# WebSocket with permessage-deflate: a config byte (limit, server window, context takeover), a cut seed,
# then frame specs: flags (bits 0-1 opcode cont/text/binary/ping, 2 FIN, 3 RSV1, 4 compressed by the
# server codec, 5 repeated), a length, the bytes, and the repeat count when repeated.
def spec(flags, payload, repeat=None):
    return bytes([flags, len(payload)]) + payload + (bytes([repeat]) if repeat is not None else b"")


hello_deflated = bytes([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
deflate_seeds = [
    bytes([0x07, 3]) + spec(0x11, b'{"event":"hello","data":"world"}') + spec(0x10, b"\x00\x01\x02" * 20)
    + spec(0x05, b"plain") + spec(0x11, b'{"event":"hello","data":"again"}'),
    bytes([0x00, 1]) + spec(0x31, b"a" * 32, repeat=200),
    bytes([0x3F, 9]) + spec(0x0D, hello_deflated) + spec(0x0D, bytes([0xF2, 0x00, 0x11, 0x00, 0x00])),
    bytes([0x07, 5]) + spec(0x09, hello_deflated[:3]) + spec(0x04, hello_deflated[3:]),
    bytes([0x07, 0]) + spec(0x01, b"ab") + spec(0x0C, b"cd"),
    bytes([0x7F, 2]) + spec(0x11, b"Hello Hello Hello") + spec(0x11, b"Hello Hello Hello"),
    bytes([0x07, 4]) + spec(0x0F, b"ping"),
    bytes([0x07, 6]) + spec(0x0D, b"\xff\xff\xff\xff"),
    bytes([0x07, 7]) + spec(0x0D, bytes([0x00, 0x05, 0x00, 0xFA, 0xFF]) + b"Hello" + b"\x00"),
]

# Socket.IO long-polling: a flags byte (bit 0: offer the upgrade), then steps: 0 GET answer (mode: 1 open
# packet with a 2-byte maxPayload, an upgrades byte and a sid byte; 2 packets; 3 raw bytes; 0 a noop; then
# a status byte, 0 for 200), 1 POST answer (status byte; 255 a failure), 2 app send (count - 1, a kind
# byte each, a compress byte), 3 close, 4 abort, 5 pause (bool), 6 probe event (kind), 7 close timer,
# 8 a failed GET.
def polling_open(max_payload=256, upgrades=0):
    return bytes([0, 1, max_payload >> 8, max_payload & 0xFF, upgrades, 5, 0])


def polling_send(kinds, compress=1):
    return bytes([2, len(kinds) - 1]) + bytes(kinds) + bytes([compress])


polling_seeds = [
    bytes([0]) + polling_open() + polling_send([0, 1, 0]) + polling_send([0, 2]) + bytes([3, 1, 0, 1, 0]),
    bytes([1]) + polling_open(64, 1) + bytes([6, 0]) + polling_send([0]) + bytes([6, 1]) + polling_send([1, 0])
    + bytes([1, 0, 0, 0, 0]) + polling_send([0, 0]) + bytes([3, 6, 3]),
    bytes([0]) + polling_open() + polling_send([0]) + bytes([3, 7, 1, 0]),
    bytes([0]) + polling_open() + bytes([0, 3, 4]) + b"4a\x1e1" + bytes([0]) + bytes([0, 2, 1, 4, 3]) + b"hey"
    + bytes([2, 0, 1, 0]),
    bytes([0]) + polling_open(900) + polling_send([0, 0, 0, 0]) * 6 + bytes([3, 1, 0, 1, 0, 1, 0, 1, 0]),
    bytes([0]) + polling_open() + polling_send([1]) + bytes([1, 255]),
    bytes([1]) + polling_open(300, 1) + bytes([5, 1, 6, 0, 6, 2, 1, 8]),
    bytes([0]) + polling_send([0]) + bytes([4]),
]

write("json", json_seeds)
write("websocket-codec", codec_seeds)
write("websocket-deflate", deflate_seeds)
write("upgrade-response", upgrade_seeds)
write("proxy-answer", proxy_seeds)
write("tls-records", tls_seeds)
write("redaction", redaction_seeds)
write("socketio-inbound", socketio_programs)
write("pusher-inbound", pusher_programs)
write("actioncable-inbound", actioncable_programs)
write("socketio-polling", polling_seeds)
