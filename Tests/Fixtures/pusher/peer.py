"""Independent Pusher peers for the cross-checks in Tests/IntegrationTests/PusherPeerTests.swift.

  peer.py sign KEY SECRET          reads a JSON list of cases on stdin, prints the official `pusher` SDK's
                                   authenticate() / authenticate_user() answers as one JSON list.
  peer.py box                      reads [{key, nonce, plain}] (base64) on stdin, prints PyNaCl SecretBox
                                   ciphertexts (tag ‖ cipher, base64) as one JSON list.
  peer.py auth-server KEY SECRET   serves /pusher/auth and /pusher/user-auth on a free loopback port, signed by
                                   the `pusher` SDK (form bodies; Bearer ok required; private-forbidden → 403);
                                   prints READY <port>, exits when stdin closes.
  peer.py client PORT KEY SECRET   runs a pysher client against ws://127.0.0.1:PORT, prints one JSON object
                                   per line for what it sees, and answers `client-hello` with `client-reply`.
                                   Exits when stdin closes.
"""
import json
import sys
import time


def sign(key, secret):
    import pusher
    sdk = pusher.Pusher(app_id="1", key=key, secret=secret)
    out = []
    for case in json.load(sys.stdin):
        if "user_data" in case:
            answer = sdk.authenticate_user(case["socket_id"], case["user_data"])
        else:
            answer = sdk.authenticate(case["channel"], case["socket_id"], case.get("custom_data"))
        out.append({k: (v.decode() if isinstance(v, bytes) else v) for k, v in answer.items()})
    print(json.dumps(out), flush=True)


def client(port, key, secret):
    import pysher

    def emit(**fields):
        print(json.dumps(fields), flush=True)

    peer = pysher.Pusher(key, secret=secret, secure=False, custom_host="127.0.0.1", port=int(port),
                         user_data={"user_id": "py", "user_info": {"name": "pysher"}}, log_level=50)

    def connected(data):
        emit(type="connected", socket_id=json.loads(data)["socket_id"])
        for name in ("private-room", "presence-room"):
            channel = peer.subscribe(name)
            channel.bind("pusher_internal:subscription_succeeded",
                         lambda data, name=name: emit(type="subscribed", channel=name, data=json.loads(data)))
            channel.bind("pusher_internal:member_added",
                         lambda data, name=name: emit(type="member_added", channel=name, data=json.loads(data)))
            channel.bind("server-news", lambda data, name=name: emit(type="event", channel=name, event="server-news",
                                                                     data=json.loads(data)))
        private = peer.channel("private-room")

        def hello(data):
            emit(type="event", channel="private-room", event="client-hello", data=json.loads(data))
            private.trigger("client-reply", {"echo": json.loads(data)})

        private.bind("client-hello", hello)

    peer.connection.bind("pusher:connection_established", connected)
    peer.connection.bind("pusher:error", lambda data: emit(type="error", data=data))
    peer.connect()
    sys.stdin.read()
    peer.disconnect()
    time.sleep(0.1)


def box():
    import base64
    import nacl.secret
    out = []
    for case in json.load(sys.stdin):
        key, nonce, plain = (base64.b64decode(case[k]) for k in ("key", "nonce", "plain"))
        out.append(base64.b64encode(nacl.secret.SecretBox(key).encrypt(plain, nonce).ciphertext).decode())
    print(json.dumps(out), flush=True)


def auth_server(key, secret):
    import threading
    import urllib.parse
    from http.server import BaseHTTPRequestHandler, HTTPServer
    import pusher
    sdk = pusher.Pusher(app_id="1", key=key, secret=secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            form = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
            if self.headers.get("Authorization") != "Bearer ok":
                return self.answer(401, {"error": "no token"})
            if self.headers.get("Content-Type") != "application/x-www-form-urlencoded":
                return self.answer(415, {"error": "form expected"})
            if self.path == "/pusher/user-auth":
                answer = sdk.authenticate_user(form["socket_id"], {"id": form.get("team", "http-user")})
            elif form.get("channel_name") == "private-forbidden":
                return self.answer(403, {"error": "forbidden"})
            else:
                custom = {"user_id": "http", "user_info": {"team": form.get("team")}}
                channel = form["channel_name"]
                answer = sdk.authenticate(channel, form["socket_id"], custom if channel.startswith("presence-") else None)
            self.answer(200, answer)

        def answer(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("READY %d" % server.server_address[1], flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    if sys.argv[1] == "sign":
        sign(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "box":
        box()
    elif sys.argv[1] == "auth-server":
        auth_server(sys.argv[2], sys.argv[3])
    else:
        client(sys.argv[2], sys.argv[3], sys.argv[4])
