# SPDX-License-Identifier: MIT
"""A bounded load client for async_server.py: CONCURRENCY connections at a time, each one
request, paths /a, /b, /c in turn, until SECONDS have passed or the stop file exists.
Prints "DONE N" with the requests answered.

argv: PORT SECONDS [CONCURRENCY] [STOPFILE]"""
import asyncio
import os
import sys
import time

PATHS = [b"/a", b"/b", b"/c"]


async def one(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET " + path + b" HTTP/1.0\r\n\r\n")
    await writer.drain()
    body = await reader.read()
    writer.close()
    assert body.startswith(b"HTTP/1.0 200"), body[:80]


async def worker(port, end, stop, k, counter):
    i = k
    while time.monotonic() < end and not (stop and os.path.exists(stop)):
        await one(port, PATHS[i % 3])
        counter[0] += 1
        i += 1


async def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    stop = sys.argv[4] if len(sys.argv) > 4 else None
    end, counter = time.monotonic() + seconds, [0]
    await asyncio.gather(*(worker(port, end, stop, k, counter) for k in range(concurrency)))
    print("DONE %d" % counter[0], flush=True)


asyncio.run(main())
