#!/usr/bin/env python3
"""A hostile WebSocket server for the client's reliability tests (Python 3 standard library only).

    server.py MODE [ARGS...]

Prints `port N` once listening on 127.0.0.1, then `connection K` as each client connects (K from 1), and
`done K` when it has finished with connection K. Every mode first completes a correct RFC 6455 upgrade
(unless the mode breaks the upgrade itself) and, where it speaks at all, welcomes the client as a Pusher
server would (`pusher:connection_established`).

Modes:
  flood COUNT SIZE       welcome, then COUNT connection-level events of SIZE bytes of data, as fast as
                         TCP lets it; then an `end` event; then stays open.
  welcome-then-violate KIND
                         welcome, then break the protocol: KIND is `huge-length` (a frame claiming 2^63
                         bytes), `masked` (a masked server frame), `reserved-bits`, `bad-opcode`,
                         `close-4200` (Pusher: reconnect at once), `bad-utf8`, `fragmented-ping` (a
                         control frame without FIN), `oversized` (a frame header claiming 17 MiB),
                         `fragmented-oversized` (17 fragments of 1 MiB, one message), or
                         `bad-close-code` (close code 1005, which never goes on the wire).
  dribble COUNT          welcome, then COUNT events, every byte written on its own with a pause; then an
                         `end` event.
  plain-http             answers anything (a TLS ClientHello included) with a plain HTTP 400 and closes.
  bad-accept             a 101 whose Sec-WebSocket-Accept is wrong.
  no-upgrade             a 101 without the Upgrade header.
  endless-headers        a 101 status line followed by headers that never end.
  silent                 accepts TCP and never answers the upgrade.
"""
import asyncio
import base64
import hashlib
import json
import struct
import sys

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
connections = 0


def frame(opcode, payload, rsv=0, mask=False, length_override=None, fin=True):
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    length = len(payload) if length_override is None else length_override
    mask_bit = 0x80 if mask else 0
    if length < 126:
        header = struct.pack("!BB", first, mask_bit | length)
    elif length < 65536:
        header = struct.pack("!BBH", first, mask_bit | 126, length)
    else:
        header = struct.pack("!BBQ", first, mask_bit | 127, length)
    if mask:
        key = b"\x01\x02\x03\x04"
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        header += key
    return header + payload


def text(obj):
    return frame(0x1, json.dumps(obj).encode())


WELCOME = {"event": "pusher:connection_established",
           "data": json.dumps({"socket_id": "1.1", "activity_timeout": 120})}


async def read_request(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    key = ""
    for line in head.decode("latin-1").split("\r\n"):
        if line.lower().startswith("sec-websocket-key:"):
            key = line.split(":", 1)[1].strip()
    return key


def accept_for(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


async def upgrade(reader, writer, accept=None, upgrade_header=True):
    key = await read_request(reader)
    lines = ["HTTP/1.1 101 Switching Protocols"]
    if upgrade_header:
        lines.append("Upgrade: websocket")
    lines += ["Connection: Upgrade", "Sec-WebSocket-Accept: " + (accept or accept_for(key)), "", ""]
    writer.write("\r\n".join(lines).encode())
    await writer.drain()


async def drain_client(reader):
    try:
        while await reader.read(65536):
            pass
    except (ConnectionError, asyncio.IncompleteReadError):
        pass


async def handle(reader, writer, mode, args):
    global connections
    connections += 1
    index = connections
    print("connection %d" % index, flush=True)
    try:
        if mode == "silent":
            await drain_client(reader)
        elif mode == "endless-headers":
            await read_request(reader)
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\n")
            while True:
                writer.write(b"X-Padding: " + b"a" * 1000 + b"\r\n")
                await writer.drain()
                await asyncio.sleep(0.001)
        elif mode == "plain-http":
            await reader.read(1)
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        elif mode == "bad-accept":
            await upgrade(reader, writer, accept="bm90IHRoZSByaWdodCBrZXk=")
            await drain_client(reader)
        elif mode == "no-upgrade":
            await upgrade(reader, writer, upgrade_header=False)
            await drain_client(reader)
        else:
            await upgrade(reader, writer)
            writer.write(text(WELCOME))
            await writer.drain()
            if mode == "flood":
                count, size = int(args[0]), int(args[1])
                event = text({"event": "big", "data": "x" * size})
                for _ in range(count):
                    writer.write(event)
                    await writer.drain()
                writer.write(text({"event": "end", "data": str(count)}))
                await writer.drain()
                await drain_client(reader)
            elif mode == "dribble":
                data = b"".join(text({"event": "drip", "data": "d%d" % i}) for i in range(int(args[0])))
                data += text({"event": "end", "data": ""})
                for i in range(len(data)):
                    writer.write(data[i:i + 1])
                    await writer.drain()
                    await asyncio.sleep(0.0005)
                await drain_client(reader)
            elif mode == "welcome-then-violate":
                kind = args[0]
                await asyncio.sleep(0.05)
                if kind == "huge-length":
                    writer.write(frame(0x1, b"", length_override=1 << 63))
                elif kind == "masked":
                    writer.write(frame(0x1, b'{"event":"x"}', mask=True))
                elif kind == "reserved-bits":
                    writer.write(frame(0x1, b'{"event":"x"}', rsv=0x4))
                elif kind == "bad-opcode":
                    writer.write(frame(0x3, b""))
                elif kind == "bad-utf8":
                    writer.write(frame(0x1, b'{"event":"\xff\xfe"}'))
                elif kind == "fragmented-ping":
                    writer.write(frame(0x9, b"ping", fin=False))
                elif kind == "oversized":
                    writer.write(frame(0x1, b"x" * 1024, length_override=17 << 20))
                elif kind == "fragmented-oversized":
                    chunk = b"x" * (1 << 20)
                    writer.write(frame(0x1, chunk, fin=False))
                    for _ in range(16):
                        writer.write(frame(0x0, chunk, fin=False))
                        await writer.drain()
                    writer.write(frame(0x0, chunk))
                elif kind == "bad-close-code":
                    writer.write(frame(0x8, struct.pack("!H", 1005)))
                elif kind == "close-4200":
                    writer.write(frame(0x8, struct.pack("!H", 4200) + b"reconnect"))
                await writer.drain()
                await drain_client(reader)
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        print("done %d" % index, flush=True)
        writer.close()


async def main():
    mode, args = sys.argv[1], sys.argv[2:]
    server = await asyncio.start_server(lambda r, w: handle(r, w, mode, args), "127.0.0.1", 0)
    print("port %d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
