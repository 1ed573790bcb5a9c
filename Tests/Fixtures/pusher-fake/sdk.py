"""The app side of the pusher-fake tests, in the official `pusher` server SDK (and pysher for a second client).

  sdk.py WS_PORT HTTP_PORT   (the venv provision.sh made)

Serves an auth endpoint on a free loopback port, signed by the SDK's authenticate() (form bodies as Pusher's
clients post them; a `user_id` form field names the presence member; encrypted channels get the SDK's
shared_secret), prints `READY <port>`, then one JSON object per line for every auth request it answers and
every command result. Commands, one JSON object per stdin line, each with an `id` echoed in its result:
  {"op": "trigger", "channel", "event", "data"}   REST trigger (the SDK encrypts private-encrypted- data);
                                                  an optional "socket_id" is left out of the recipients
  {"op": "tampered", "channel", "event", "data"}  encrypts like the SDK, flips one ciphertext byte, triggers
  {"op": "raw", "channel", "event", "data"}       triggers `data` (a string) as is, never encrypted
  {"op": "info", "channel"}                       REST channel info ({"occupied": bool}) as `result`
  {"op": "join", "channel", "user_id"}            a pysher client joins a presence channel (signed by pysher)
  {"op": "leave"}                                 that pysher client disconnects
Exits when stdin closes.
"""
import base64
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import pusher
import pusher.crypto
import pysher

APP, KEY, SECRET = "424242", "peer-key", "peer-secret"
MASTER_KEY = base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
ws_port, http_port = int(sys.argv[1]), int(sys.argv[2])
sdk = pusher.Pusher(app_id=APP, key=KEY, secret=SECRET, host="127.0.0.1", port=http_port, ssl=False,
                    encryption_master_key_base64=MASTER_KEY)
lock = threading.Lock()


def emit(**fields):
    with lock:
        print(json.dumps(fields), flush=True)


class Auth(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        form = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
        channel, socket_id = form.get("channel_name", ""), form.get("socket_id", "")
        emit(type="auth", channel=channel, socket_id=socket_id,
             content_type=self.headers.get("Content-Type"))
        custom = None
        if channel.startswith("presence-"):
            custom = {"user_id": form.get("user_id", "endpoint"), "user_info": {"via": "endpoint"}}
        answer = sdk.authenticate(channel, socket_id, custom)
        data = json.dumps({k: (v.decode() if isinstance(v, bytes) else v) for k, v in answer.items()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


member = None


def run(command):
    global member
    op = command["op"]
    if op == "info":
        return sdk.channel_info(command["channel"])
    if op == "trigger":
        sdk.trigger(command["channel"], command["event"], command["data"], socket_id=command.get("socket_id"))
    elif op == "tampered":
        plain = json.dumps(command["data"])
        sealed = pusher.crypto.encrypt(command["channel"], plain, base64.b64decode(MASTER_KEY))
        cipher = bytearray(base64.b64decode(sealed["ciphertext"]))
        cipher[len(cipher) // 2] ^= 0x01
        sealed["ciphertext"] = base64.b64encode(bytes(cipher)).decode()
        # already_encoded: the SDK sends the data as given instead of encrypting it again.
        sdk.trigger_batch([{"channel": command["channel"], "name": command["event"], "data": json.dumps(sealed)}],
                          already_encoded=True)
    elif op == "raw":
        sdk.trigger_batch([{"channel": command["channel"], "name": command["event"], "data": command["data"]}],
                          already_encoded=True)
    elif op == "join":
        channel, user_id = command["channel"], command["user_id"]
        member = pysher.Pusher(KEY, secret=SECRET, secure=False, custom_host="127.0.0.1", port=ws_port,
                               user_data={"user_id": user_id, "user_info": {"via": "pysher"}}, log_level=50)

        def connected(_data):
            joined = member.subscribe(channel)
            joined.bind("pusher_internal:subscription_succeeded",
                        lambda data: emit(type="joined", channel=channel, data=json.loads(data)))

        member.connection.bind("pusher:connection_established", connected)
        member.connect()
    elif op == "leave":
        if member is not None:
            # pysher closes the socket at once but its thread may never end on its own: wait 3 s at most.
            member.disconnect(timeout=3)
            member = None


def main():
    server = HTTPServer(("127.0.0.1", 0), Auth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("READY %d" % server.server_address[1], flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        try:
            emit(type="done", id=command.get("id"), result=run(command))
        except Exception as error:  # reported to the test, which fails on it
            emit(type="failed", id=command.get("id"), error=repr(error))
    if member is not None:
        member.disconnect(timeout=3)
    server.shutdown()


if __name__ == "__main__":
    main()
