"""realtime-bench dialects: python-socketio's AsyncClient, one handler counting the blaster's events.

Prints READY once the namespace is joined and DONE <n> after --count events, then leaves when stdin closes.
The library runs as it ships (each message is handled in a task of its own, its default).
"""
import argparse
import asyncio
import sys

import socketio


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    args = parser.parse_args()
    done = asyncio.Event()
    count = 0
    sio = socketio.AsyncClient(reconnection=False)

    @sio.on("tick")
    def tick(data):
        nonlocal count
        count += 1
        if count == args.count:
            done.set()

    await sio.connect(f"http://127.0.0.1:{args.port}", transports=["websocket"])
    print("READY", flush=True)
    await done.wait()
    print(f"DONE {count}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await sio.disconnect()


asyncio.run(main())
