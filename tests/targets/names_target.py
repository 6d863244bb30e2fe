# SPDX-License-Identifier: MIT
"""Threads with Python names that their OS names do not tell (before 3.14 every thread's
OS name is the process's; from 3.14 on Python sets it, cut to 15 bytes, at the start).

* MainThread: asleep in time.sleep, in a loop.
* "deadlocked": waits for ever on a lock the main thread holds.
* "sleeper-with-a-name-longer-than-15": asleep in time.sleep, all the time.
* "busy": burns CPU in `spin` (by the wall clock), without a pause.
* "ThreadPoolExecutor-0_0": the one worker of an executor, asleep in a task.
* "renamed-é✓" (a 2-byte-wide str): started as "before-rename", renamed by the main thread
  before READY (its OS name, on 3.14+, stays "before-rename").
* with the argument "late": "late-starter", started 1 s after READY, asleep in time.sleep.
"""
import concurrent.futures
import sys
import threading
import time

held = threading.Lock()
held.acquire()
# set by each thread just before it waits
there = dict((k, threading.Event()) for k in ("dead", "sleeper", "task", "renamed"))


def deadlocked():
    there["dead"].set()
    held.acquire()  # @dead_lock


def sleeper():
    there["sleeper"].set()
    while True:
        time.sleep(0.2)  # @sleeper_sleep


def spin():
    n = 0
    while True:
        end = time.perf_counter() + 0.1
        while time.perf_counter() < end:  # @spin
            n += 1


def task():
    there["task"].set()
    while True:
        time.sleep(0.3)  # @task_sleep


def renamed():
    there["renamed"].set()
    while True:
        time.sleep(0.25)  # @renamed_sleep


def late():
    while True:
        time.sleep(0.15)  # @late_sleep


threading.Thread(target=deadlocked, name="deadlocked", daemon=True).start()
threading.Thread(target=sleeper, name="sleeper-with-a-name-longer-than-15", daemon=True).start()
threading.Thread(target=spin, name="busy", daemon=True).start()
pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
pool.submit(task)
r = threading.Thread(target=renamed, name="before-rename", daemon=True)
r.start()
r.name = "renamed-\u00e9\u2713"
for e in there.values():
    e.wait(10)
time.sleep(0.2)  # from their marks into their waits, on a loaded machine too
print("READY", flush=True)
if "late" in sys.argv[1:]:
    time.sleep(1.0)
    threading.Thread(target=late, name="late-starter", daemon=True).start()
while True:
    time.sleep(0.1)  # @main_sleep
