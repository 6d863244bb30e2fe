# SPDX-License-Identifier: MIT
"""A server-shaped asyncio program (stdlib only): an HTTP/1.0 server on loopback whose
every request runs in its connection's task, in its own handler by path: /a, /b and /c do
1, 2 and 3 units of CPU work, each request's a random 0.5-1.5 times that (a fixed cycle of
1, 2 and 3 ms would beat against a 1 ms sampling period). Each handler measures its own
CPU time (time.thread_time around its work); GET /stats answers {"a": s, "b": s, "c": s,
"requests": n} so far.

Prints "PORT N", then "READY", once it listens on a free port."""
import asyncio
import json
import random
import time

UNIT = 20000  # iterations of one unit of work: ~1 ms
cpu = {"a": 0.0, "b": 0.0, "c": 0.0}
served = 0


def work(units):
    n = 0
    for _ in range(int(units * UNIT * random.uniform(0.5, 1.5))):  # @work
        n += 1
    return n


async def respond(writer, body):
    writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()


async def handle_a(writer):
    t0 = time.thread_time()
    work(1)  # @handle_a
    cpu["a"] += time.thread_time() - t0
    await respond(writer, b"a")


async def handle_b(writer):
    t0 = time.thread_time()
    work(2)  # @handle_b
    cpu["b"] += time.thread_time() - t0
    await respond(writer, b"b")


async def handle_c(writer):
    t0 = time.thread_time()
    work(3)  # @handle_c
    cpu["c"] += time.thread_time() - t0
    await respond(writer, b"c")


HANDLERS = {b"/a": handle_a, b"/b": handle_b, b"/c": handle_c}


async def client_connected(reader, writer):
    global served
    try:
        line = await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        parts = line.split()
        path = parts[1] if len(parts) > 1 else b"/"
        if path in HANDLERS:
            served += 1
            await HANDLERS[path](writer)  # @dispatch
        elif path == b"/stats":
            await respond(writer, json.dumps(dict(cpu, requests=served)).encode())
        else:
            writer.write(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(client_connected, "127.0.0.1", 0, backlog=512)
    print("PORT %d\nREADY" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
