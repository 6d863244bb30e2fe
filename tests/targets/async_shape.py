# SPDX-License-Identifier: MIT
"""An asyncio program of known shape, every task suspended once READY is printed (the loop
thread then sleeps in the selector): a task 4 coroutines deep, a gather of 3, a TaskGroup
of 2, a task named by the program, a shielded task, a task that awaits another task, and
IDLE more suspended tasks ("idle-N"). Lines ending in '# @NAME' are where each coroutine
waits (tests read them with markers()).

A second thread ("loop-2") runs a loop of its own with a task "other-loop" waiting.

argv: [IDLE] [spin] [hostile]  -- with "spin" the task "spinner" then runs forever (never
yields), so the loop thread is running it when it is read; with "hostile" one more task
is named with terminal escapes, quotes, a newline and a ';'."""
import asyncio
import sys
import threading

HOSTILE_NAME = 'evil\x1b[2J"quoted"\nline;semi\u202e'


async def leaf(ev):
    await ev.wait()  # @leaf


async def level3(ev):
    await leaf(ev)  # @level3


async def level2(ev):
    await level3(ev)  # @level2


async def level1(ev):
    await level2(ev)  # @level1


async def gathered(ev):
    await ev.wait()  # @gathered


async def gather_parent(ev):
    await asyncio.gather(gathered(ev), gathered(ev), gathered(ev))  # @gather_parent


async def tg_child(ev):
    await ev.wait()  # @tg_child


async def taskgroup_parent(ev):
    async with asyncio.TaskGroup() as tg:  # @taskgroup_parent
        tg.create_task(tg_child(ev), name="tg-child-0")
        tg.create_task(tg_child(ev), name="tg-child-1")


async def shielded(ev):
    await ev.wait()  # @shielded


async def shield_parent(ev):
    inner = asyncio.create_task(shielded(ev), name="shielded-inner")
    await asyncio.shield(inner)  # @shield_parent


async def awaited(ev):
    await ev.wait()  # @awaited


async def awaiter(task):
    await task  # @awaiter


async def idle(ev):
    await ev.wait()  # @idle


def spin_forever():
    n = 0
    while True:  # @spin_loop
        n += 1  # @spin


async def spinner():
    spin_forever()  # @spinner


async def other_wait(ev):
    await ev.wait()  # @other_wait


async def second_main(started):
    ev = asyncio.Event()
    task = asyncio.create_task(other_wait(ev), name="other-loop")
    await asyncio.sleep(0)
    started.set()
    await task  # @second_main


async def main():
    idle_count = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    ev = asyncio.Event()
    keep = [
        asyncio.create_task(level1(ev), name="nested"),
        asyncio.create_task(gather_parent(ev), name="gatherer"),
        asyncio.create_task(taskgroup_parent(ev), name="grouper"),
        asyncio.create_task(shield_parent(ev), name="shielder"),
    ]
    target = asyncio.create_task(awaited(ev), name="awaited-task")
    keep.append(target)
    keep.append(asyncio.create_task(awaiter(target), name="awaiter-task"))
    keep.extend(asyncio.create_task(idle(ev), name="idle-%d" % i) for i in range(idle_count))
    for _ in range(3):  # every task reaches its wait
        await asyncio.sleep(0)
    if "hostile" in sys.argv[2:]:
        keep.append(asyncio.create_task(idle(ev), name=HOSTILE_NAME))
    started = threading.Event()
    threading.Thread(target=asyncio.run, args=(second_main(started),), name="loop-2",
                     daemon=True).start()
    started.wait()
    for _ in range(3):
        await asyncio.sleep(0)
    if "spin" in sys.argv[2:]:
        keep.append(asyncio.create_task(spinner(), name="spinner"))
    print("READY", flush=True)
    await ev.wait()  # @main


asyncio.run(main())
