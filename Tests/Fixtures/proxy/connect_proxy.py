"""A hand-made HTTP CONNECT proxy for what tinyproxy will not do, for Tests/IntegrationTests/ProxyTests.swift.

Usage: connect_proxy.py (--answer-hex HEX | --tunnel-to PORT | --silent)

Binds 127.0.0.1 on a free port and prints "READY <port>". For each connection it reads the request head
(up to the empty line), prints "REQUEST <head as JSON>", then:
  --answer-hex HEX   writes those bytes and closes (a proxy that answers garbage, or cuts its answer short);
  --tunnel-to PORT   answers 200 and relays both ways to 127.0.0.1:PORT, whatever host the request named
                     (so the origin can be a name that resolves nowhere: only the proxy "resolves" it);
  --silent           never answers (a proxy that hangs).
Exits when stdin reaches EOF (the test that started it is gone).
"""

import argparse
import asyncio
import json
import sys
import threading
import os

parser = argparse.ArgumentParser()
group = parser.add_mutually_exclusive_group(required=True)
group.add_argument("--answer-hex")
group.add_argument("--tunnel-to", type=int)
group.add_argument("--silent", action="store_true")
args = parser.parse_args()


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def handle(reader, writer):
    head = b""
    try:
        while b"\r\n\r\n" not in head and len(head) < 16384:
            chunk = await reader.read(1)
            if not chunk:
                break
            head += chunk
    except ConnectionError:
        writer.close()
        return
    print("REQUEST " + json.dumps(head.decode("latin-1")), flush=True)
    if args.answer_hex is not None:
        writer.write(bytes.fromhex(args.answer_hex))
        await writer.drain()
        writer.close()
        return
    if args.silent:
        await reader.read()  # until the client gives up
        writer.close()
        return
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", args.tunnel_to)
    except OSError:
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()
        return
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def exit_when_parent_goes():
    def watch():
        try:
            while sys.stdin.buffer.read(4096):
                pass
        finally:
            os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


async def main():
    if not sys.stdin.isatty():
        exit_when_parent_goes()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(f"READY {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
