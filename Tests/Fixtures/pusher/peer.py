"""Independent Pusher peers for the cross-checks in Tests/IntegrationTests/PusherPeerTests.swift.

  peer.py sign KEY SECRET          reads a JSON list of cases on stdin, prints the official `pusher` SDK's
                                   authenticate() / authenticate_user() answers as one JSON list.
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


if __name__ == "__main__":
    if sys.argv[1] == "sign":
        sign(sys.argv[2], sys.argv[3])
    else:
        client(sys.argv[2], sys.argv[3], sys.argv[4])
