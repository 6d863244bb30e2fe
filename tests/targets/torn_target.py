# SPDX-License-Identifier: MIT
"""Workload for the torn-state tests: outer -> middle -> torn_window -> tornext.spin, which
busy-spins in C while the thread's current frame is forged (mode argument). Between windows
it sleeps, so nearly every on-CPU sample lands in a window.

With --changers N, N more threads change their own stacks all the time (each recurses to
a depth that changes every call, with short naps), next to the forged chain: on a free-threaded build they
run at once, the sampler meeting frame chains mid-change in many threads.

usage: torn_target.py EXT_DIR MODE SECONDS [--empty-thread] [--changers N]
"""
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import tornext  # noqa: E402

MODE = int(sys.argv[2])
SECONDS = float(sys.argv[3])
WINDOW_S = 0.2


def torn_window():
    tornext.spin(MODE, WINDOW_S)


def middle():
    torn_window()


def outer():
    middle()


def busy():
    # a Python thread unaffected by the forged chain of the main thread
    acc = 0
    end = time.monotonic() + SECONDS + 5
    while time.monotonic() < end:
        for i in range(10000): acc = (acc + i) & 0xffff  # @busy
        time.sleep(0.001)


def descend(depth):
    if depth > 0:
        descend(depth - 1)  # @descend_call
    else:
        sum(range(3000))  # @descend_leaf


def changer(k):
    # a short nap between descents leaves the CPUs to the forged windows, which the test
    # needs sampled: the stacks still change thousands of times a second
    i = k
    while True:
        descend(i % 17)  # @changer_call
        i += 1
        time.sleep(0.0005)


if "--changers" in sys.argv:
    for k in range(int(sys.argv[sys.argv.index("--changers") + 1])):
        threading.Thread(target=changer, args=(k,), daemon=True).start()

if "--empty-thread" in sys.argv:
    tornext.native_empty(SECONDS + 5)
    threading.Thread(target=busy, daemon=True).start()

print("READY", flush=True)
end = time.monotonic() + SECONDS
while time.monotonic() < end:
    outer()
    time.sleep(0.02)
