# SPDX-License-Identifier: MIT
"""An asyncio program of known shape whose tasks take turns on the CPU (3.14+), for
record --async: every leaf task runs burn() for a slice, then yields with sleep(0). Its
shapes: a task 4 coroutines deep, a gather of 3, a TaskGroup of 2, a shielded task, a task
that awaits another task, and a task awaited by 3 others (the chain goes on through one of
them, the others counted). Lines ending in '# @NAME' are where each frame is when sampled
(tests read them with markers()): a leaf task's coroutine is in burn() or yielding.
READY is printed once every task has run once.

argv: [SECONDS]  -- how long to run (default: until killed)."""
import asyncio
import sys
import time

SLICE = 20000  # iterations of burn() between yields: ~1 ms


def burn():
    n = 0
    for _ in range(SLICE):  # @burn
        n += 1  # @burn_add
    return n


async def level3():
    while True:
        burn()  # @level3
        await asyncio.sleep(0)  # @level3_yield


async def level2():
    await level3()  # @level2


async def level1():
    await level2()  # @level1


async def gathered():
    while True:
        burn()  # @gathered
        await asyncio.sleep(0)  # @gathered_yield


async def gather_parent():
    await asyncio.gather(gathered(), gathered(), gathered())  # @gather_parent


async def tg_child():
    while True:
        burn()  # @tg_child
        await asyncio.sleep(0)  # @tg_child_yield


async def taskgroup_parent():
    async with asyncio.TaskGroup() as tg:  # @taskgroup_parent
        tg.create_task(tg_child(), name="tg-child-0")
        tg.create_task(tg_child(), name="tg-child-1")


async def shielded():
    while True:
        burn()  # @shielded
        await asyncio.sleep(0)  # @shielded_yield


async def shield_parent():
    inner = asyncio.create_task(shielded(), name="shielded-inner")
    await asyncio.shield(inner)  # @shield_parent


async def awaited():
    while True:
        burn()  # @awaited
        await asyncio.sleep(0)  # @awaited_yield


async def awaiter(task):
    await task  # @awaiter


async def shared_work():
    while True:
        burn()  # @shared_work
        await asyncio.sleep(0)  # @shared_work_yield


async def shared_waiter(task):
    await task  # @shared_waiter


async def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0
    keep = [
        asyncio.create_task(level1(), name="nested"),
        asyncio.create_task(gather_parent(), name="gatherer"),
        asyncio.create_task(taskgroup_parent(), name="grouper"),
        asyncio.create_task(shield_parent(), name="shielder"),
    ]
    target = asyncio.create_task(awaited(), name="awaited-task")
    keep.append(asyncio.create_task(awaiter(target), name="awaiter-task"))
    shared = asyncio.create_task(shared_work(), name="shared")
    keep.extend(asyncio.create_task(shared_waiter(shared), name="waiter-%d" % i)
                for i in range(3))
    for _ in range(3):  # every task has run once
        await asyncio.sleep(0)
    print("READY", flush=True)
    end = time.monotonic() + seconds
    while not seconds or time.monotonic() < end:
        await asyncio.sleep(0.05)  # @main


asyncio.run(main())
