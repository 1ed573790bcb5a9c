"""python-socketio client running the core scenario against a Socket.IO server (our embedded one).

Usage: client.py URL
Prints one "PASS <check>" or "FAIL <check>: <detail>" line per check, then "ALL OK" when every check
passed; exits 0 only then. The server must offer "/" and "/chat" (token "secret") with the handlers of
server.py: sum, binary_echo, ask_me (asks the client "server_ask", emits "server_ask_answer"),
send_binary.
"""

import asyncio
import sys

import socketio

failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        failures.append(name)


async def scenario(url):
    client = socketio.AsyncClient(reconnection=False)
    answers = asyncio.Queue()
    binaries = asyncio.Queue()

    @client.on("server_ask", namespace="/chat")
    async def server_ask(data):
        return "yes", data

    @client.on("server_ask_answer", namespace="/chat")
    async def server_ask_answer(*values):
        await answers.put(list(values))

    @client.on("binary_from_server", namespace="/chat")
    async def binary_from_server(data):
        await binaries.put(data)

    await client.connect(url, namespaces=["/", "/chat"], auth={"token": "secret"},
                         transports=["websocket"], wait_timeout=5)
    check("connect with auth", set(client.namespaces) == {"/", "/chat"}, client.namespaces)

    reply = await client.call("sum", [1, 2, 3], namespace="/chat", timeout=5)
    check("ack from server", reply == {"sum": 6}, reply)

    await client.emit("ask_me", {"q": 1}, namespace="/chat")
    answer = await asyncio.wait_for(answers.get(), 5)
    check("ack from client", answer == ["yes", {"q": 1}], answer)

    payload = {"blob": b"\x00\x01\xff", "nested": {"deeper": [b"\x07" * 3000, "text"]}}
    echoed = await client.call("binary_echo", payload, namespace="/chat", timeout=5)
    check("binary to server and back, nested", echoed == payload, echoed)

    await client.emit("send_binary", namespace="/chat")
    data = await asyncio.wait_for(binaries.get(), 5)
    expected = {"first": b"\x01\x02", "nested": {"second": b"\x03\x04"}, "len": 4}
    check("binary from server, nested", data == expected, data)
    await client.disconnect()

    refused = socketio.AsyncClient(reconnection=False)
    try:
        await refused.connect(url, namespaces=["/chat"], auth={"token": "wrong"}, transports=["websocket"],
                              wait_timeout=5)
        check("wrong token refused", False, "connected")
        await refused.disconnect()
    except socketio.exceptions.ConnectionError:
        check("wrong token refused", True)


async def main():
    try:
        await asyncio.wait_for(scenario(sys.argv[1]), 30)
    except Exception as error:  # a crash is a failed check, with its reason
        check("scenario ran to the end", False, repr(error))
    if failures:
        sys.exit(1)
    print("ALL OK", flush=True)


asyncio.run(main())
