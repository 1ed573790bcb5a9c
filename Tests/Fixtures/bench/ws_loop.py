"""realtime-bench dialects: a websockets + json loop, the least a Python client of the protocol does.

--dialect actioncable: welcome, subscribe, confirm_subscription, then count broadcasts of the channel.
--dialect pusher: the fallback when pysher does not run (connection_established, subscribe, count events).
Prints READY once subscribed and DONE <n> after --count events, then leaves when stdin closes.
"""
import argparse
import asyncio
import json
import sys

import websockets


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--dialect", choices=["actioncable", "pusher"], required=True)
    args = parser.parse_args()
    cable = args.dialect == "actioncable"
    if cable:
        url, subprotocols = f"ws://127.0.0.1:{args.port}/cable", ["actioncable-v1-json"]
        identifier = json.dumps({"channel": "RoomChannel"})
    else:
        url, subprotocols = f"ws://127.0.0.1:{args.port}/app/bench?protocol=7&client=py&version=1", None
    # No keepalive pings: the blaster does not read while it writes.
    async with websockets.connect(url, subprotocols=subprotocols, compression=None, max_size=None,
                                  ping_interval=None) as ws:
        async for text in ws:
            message = json.loads(text)
            if cable and message.get("type") == "welcome":
                await ws.send(json.dumps({"command": "subscribe", "identifier": identifier}))
            elif cable and message.get("type") == "confirm_subscription":
                break
            elif not cable and message.get("event") == "pusher:connection_established":
                await ws.send(json.dumps({"event": "pusher:subscribe", "data": {"channel": "room"}}))
            elif not cable and message.get("event") == "pusher_internal:subscription_succeeded":
                break
        print("READY", flush=True)
        count = 0
        async for text in ws:
            message = json.loads(text)
            if cable:
                if "message" in message and message.get("identifier") == identifier:
                    count += 1
            elif message.get("event") == "tick" and message.get("channel") == "room":
                count += 1
            if count == args.count:
                break
        print(f"DONE {count}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


asyncio.run(main())
