# SPDX-License-Identifier: MIT
"""Threads that start after the profiler attached: prints READY and waits for SIGUSR1;
then `late_parent` starts and, from inside it, `late_child` (a thread started by a thread
that did not exist when the profiler attached); both spin for SPIN_S of wall time and
print one JSON line with the CPU time each spent spinning. Then waits to be killed.
"""
import json
import signal
import sys
import threading
import time

SPIN_S = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
cpu = {}


def spin(name):
    t0, end = time.thread_time(), time.perf_counter() + SPIN_S
    n = 0
    while time.perf_counter() < end:
        n += 1
    cpu[name] = time.thread_time() - t0


def late_child_spin():
    spin("child")  # @late_child


def late_parent_spin():
    child = threading.Thread(target=late_child_spin)
    child.start()
    spin("parent")  # @late_parent
    child.join()


go = threading.Event()
signal.signal(signal.SIGUSR1, lambda *_: go.set())
print("READY", flush=True)
while not go.wait(0.05):
    pass
parent = threading.Thread(target=late_parent_spin)
parent.start()
parent.join()
print(json.dumps(cpu), flush=True)
while True:
    time.sleep(60)
