"""A Pusher auth endpoint for the CLI tests: signs private channels as an app's backend would.

Usage: auth_endpoint.py SECRET KEY TOKEN     prints "READY <port>" once listening on 127.0.0.1

POST /pusher/auth (form: socket_id, channel_name) with "Authorization: Bearer TOKEN" answers
{"auth": "KEY:<HMAC-SHA256 of socket_id:channel_name>"}; any other token gets HTTP 403. Exits when stdin closes.
"""

import hashlib
import hmac
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs

secret, key, token = sys.argv[1], sys.argv[2], sys.argv[3]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        form = {name: values[0] for name, values in parse_qs(self.rfile.read(length).decode()).items()}
        if self.path != "/pusher/auth" or self.headers.get("Authorization") != f"Bearer {token}":
            self.send_response(403)
            self.end_headers()
            self.wfile.write(b"forbidden")
            return
        signed = f"{form.get('socket_id', '')}:{form.get('channel_name', '')}".encode()
        body = json.dumps({"auth": f"{key}:" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *arguments):
        pass


def exit_when_parent_goes():
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


server = HTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=exit_when_parent_goes, daemon=True).start()
print(f"READY {server.server_port}", flush=True)
server.serve_forever()
