"""realtime-bench dialects: pysher (a Python Pusher client), one handler counting the blaster's events.

Prints READY once the channel is confirmed and DONE <n> after --count events, then leaves when stdin closes.
"""
import argparse
import sys
import threading

import pysher

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--count", type=int, required=True)
args = parser.parse_args()

count = 0
ready = threading.Event()
done = threading.Event()
pusher = pysher.Pusher("bench", custom_host="127.0.0.1", port=args.port, secure=False)


def tick(data):
    global count
    count += 1
    if count == args.count:
        done.set()


def connected(data):
    # Runs on pysher's connection thread, which reads the next frame only after this returns.
    channel = pusher.subscribe("room")
    channel.bind("pusher_internal:subscription_succeeded", lambda data: ready.set())
    channel.bind("tick", tick)


pusher.connection.bind("pusher:connection_established", connected)
pusher.connect()
if not ready.wait(60):
    sys.exit("pysher: no subscription within 60 s")
print("READY", flush=True)
done.wait()
print(f"DONE {count}", flush=True)
sys.stdin.readline()
pusher.disconnect(timeout=5)
