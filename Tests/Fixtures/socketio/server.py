"""python-socketio peer for the Socket.IO integration tests.

Usage: server.py PORT [--fast-ping] [--tls-cert PEM --tls-key PEM]     (PORT 0 picks a free port)

Binds 127.0.0.1:PORT, serves Engine.IO at /socket.io/ (WebSocket and long-polling) and /health, and
prints "READY <port>" once listening. --fast-ping sets ping_interval=1 s, ping_timeout=3 s. With
--tls-cert and --tls-key it serves HTTPS and WSS only (the proxy tests' wss sessions).

Namespaces "/" and "/chat" share the handlers below. "/chat" requires auth {"token": "secret"}; "/"
refuses a token other than "secret" and accepts none.

WebSockets are aiohttp's, which accept permessage-deflate (and then compress every frame they send). The
"deflate_report" event answers, from the server's side, what the client offered, what aiohttp answered,
and the flags and sizes of the frames the client sent on that Engine.IO session's WebSocket.
"""

import argparse
import asyncio
import sys

import engineio.async_drivers.aiohttp as engineio_aiohttp
import socketio
from aiohttp import web

VALID_TOKEN = "secret"
# "/slow" answers CONNECT only after 30 s: a client that waits for its confirmation times out first.
NAMESPACES = ["/", "/chat", "/slow"]

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("--fast-ping", action="store_true")
parser.add_argument("--tls-cert")
parser.add_argument("--tls-key")
args = parser.parse_args()

# 3 s for a pong: a loaded 2-core CI machine can hold one back for more than 2 s.
ping = {"ping_interval": 1, "ping_timeout": 3} if args.fast_ping else {}
sio = socketio.AsyncServer(async_mode="aiohttp", cors_allowed_origins="*", **ping)
app = web.Application()

# Engine.IO sid -> the TCP transports serving it, so "drop_transport" can cut them without a close.
live_transports = {}
# "drop_once" key -> calls seen, on any connection.
calls = {}


@web.middleware
async def track_transports(request, handler):
    sid = request.query.get("sid")
    if sid and request.transport is not None:
        live_transports.setdefault(sid, set()).add(request.transport)
    return await handler(request)


app.middlewares.append(track_transports)

# Engine.IO sid -> what the client's WebSocket negotiated and sent (see DeflateRecordingResponse).
deflate_stats = {}


class FrameSniffer:
    """Sits in front of aiohttp's WebSocket reader and notes each client frame's RSV1 bit and length."""

    def __init__(self, parser, stats):
        self._parser = parser
        self._stats = stats
        self._buffer = bytearray()

    def feed_data(self, data):
        self._buffer += data
        while True:
            frame = self._next_frame()
            if frame is None:
                break
            if len(self._stats["frames"]) < 1000:
                self._stats["frames"].append(frame)
        return self._parser.feed_data(data)

    def feed_eof(self):
        return self._parser.feed_eof()

    def _next_frame(self):
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        length = buffer[1] & 0x7F
        offset = 2
        if length == 126:
            if len(buffer) < 4:
                return None
            length = int.from_bytes(buffer[2:4], "big")
            offset = 4
        elif length == 127:
            if len(buffer) < 10:
                return None
            length = int.from_bytes(buffer[2:10], "big")
            offset = 10
        if buffer[1] & 0x80:
            offset += 4
        if len(buffer) < offset + length:
            return None
        frame = {"rsv1": bool(buffer[0] & 0x40), "opcode": buffer[0] & 0x0F, "length": length}
        del buffer[:offset + length]
        return frame


class DeflateRecordingResponse(web.WebSocketResponse):
    """engineio's WebSocketResponse, recording the negotiation and sniffing the frames it reads."""

    async def prepare(self, request):
        writer = await super().prepare(request)
        stats = {
            "offer": request.headers.get("Sec-WebSocket-Extensions"),
            "answer": self.headers.get("Sec-WebSocket-Extensions"),
            "window_bits": int(self.compress or 0),
            "frames": [],
        }
        request["deflate_stats"] = stats
        if request.query.get("sid"):
            deflate_stats[request.query["sid"]] = stats
        protocol = request.protocol
        protocol._payload_parser = FrameSniffer(protocol._payload_parser, stats)
        return writer


engineio_aiohttp.WebSocketResponse = DeflateRecordingResponse
sio.attach(app)


async def health(_request):
    return web.Response(text="ok")


app.router.add_get("/health", health)


def register(ns):
    async def connect(sid, environ, auth):
        if ns == "/slow":
            await asyncio.sleep(30)
        token = auth.get("token") if isinstance(auth, dict) else None
        if ns == "/chat" and token != VALID_TOKEN:
            raise socketio.exceptions.ConnectionRefusedError("invalid token")
        if token is not None and token != VALID_TOKEN:
            raise socketio.exceptions.ConnectionRefusedError("invalid token")
        request = environ.get("aiohttp.request")
        eio_sid = sio.manager.eio_sid_from_sid(sid, ns)
        if request is not None and request.transport is not None and eio_sid:
            live_transports.setdefault(eio_sid, set()).add(request.transport)
        if request is not None and eio_sid and request.get("deflate_stats") is not None:
            deflate_stats[eio_sid] = request["deflate_stats"]
        # Emitted from the connect handler: may reach the client before the CONNECT ack.
        await sio.emit("welcome", {"namespace": ns, "auth": auth}, to=sid, namespace=ns)

    async def sum_(sid, numbers):
        return {"sum": sum(numbers)}

    async def echo(sid, *values):
        return values

    async def binary_echo(sid, *values):
        return values

    async def send_binary(sid):
        await sio.emit("binary_from_server",
                       {"first": b"\x01\x02", "nested": {"second": b"\x03\x04"}, "len": 4},
                       to=sid, namespace=ns)
        return "sent"

    async def ask_me(sid, payload):
        answer = await sio.call("server_ask", payload, to=sid, namespace=ns, timeout=10)
        await sio.emit("server_ask_answer", answer, to=sid, namespace=ns)

    async def join(sid, room):
        await sio.enter_room(sid, room, namespace=ns)
        return "joined"

    async def broadcast(sid, room, message):
        await sio.emit("room_message", {"room": room, "message": message}, room=room, namespace=ns)
        return "sent"

    async def kick_me(sid):
        await sio.disconnect(sid, namespace=ns)

    async def close_engine(sid):
        await sio.eio.disconnect(sio.manager.eio_sid_from_sid(sid, ns))

    async def go_silent(sid):
        socket = sio.eio._get_socket(sio.manager.eio_sid_from_sid(sid, ns))

        async def swallow(_packet):
            return None

        socket.send = swallow

    async def drop_transport(sid):
        # As if the server crashed: no CLOSE packet, the TCP connections cut, the session forgotten (a
        # polling client that retries its request gets HTTP 400).
        eio_sid = sio.manager.eio_sid_from_sid(sid, ns)
        socket = sio.eio._get_socket(eio_sid)
        await socket.close(wait=False, abort=True)
        for transport in live_transports.pop(eio_sid, set()):
            transport.abort()

    async def drop_once(sid, key):
        # The first call for a key is never answered: the connection is cut as drop_transport cuts it.
        calls[key] = calls.get(key, 0) + 1
        if calls[key] == 1:
            await drop_transport(sid)
            return None
        return {"key": key, "calls": calls[key]}

    async def which_transport(sid):
        return sio.transport(sid, namespace=ns)

    async def bomb(sid, size):
        # aiohttp compresses it (deflate negotiated) into a few KB on the wire.
        await sio.emit("bomb", "a" * size, to=sid, namespace=ns)

    async def deflate_report(sid):
        stats = deflate_stats.get(sio.manager.eio_sid_from_sid(sid, ns))
        return stats if stats is not None else {"window_bits": 0, "frames": []}

    async def burst(sid, count):
        for index in range(count):
            await sio.emit("burst_item", index, to=sid, namespace=ns)
        await sio.emit("burst_done", count, to=sid, namespace=ns)

    handlers = {
        "connect": connect, "sum": sum_, "echo": echo, "binary_echo": binary_echo,
        "send_binary": send_binary, "ask_me": ask_me, "join": join, "broadcast": broadcast,
        "kick_me": kick_me, "close_engine": close_engine, "go_silent": go_silent,
        "drop_transport": drop_transport, "drop_once": drop_once, "burst": burst, "which_transport": which_transport,
        "deflate_report": deflate_report, "bomb": bomb,
    }
    for name, handler in handlers.items():
        sio.on(name, handler, namespace=ns)


for namespace in NAMESPACES:
    register(namespace)


def exit_when_parent_goes():
    """The test harness keeps stdin open; EOF means it died, so the peer must not outlive it."""
    import os
    import threading

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
    runner = web.AppRunner(app)
    await runner.setup()
    ssl_context = None
    if args.tls_cert:
        import ssl

        ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ssl_context.load_cert_chain(args.tls_cert, args.tls_key)
    site = web.TCPSite(runner, "127.0.0.1", args.port, ssl_context=ssl_context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # the real port when 0 was asked for
    print(f"READY {port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
