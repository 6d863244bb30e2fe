# SPDX-License-Identifier: MIT
"""CPU-bound workload of known shape, the ground truth for pywalk's end-to-end tests.

Usage: python3 known_shape.py [SECONDS]   (no argument: run until killed)

Prints READY (flushed) after a warm-up, then runs for SECONDS of wall time.
Two threads are busy all the time and share the GIL:
  * main thread: cycles through three phases, split by the main thread's own CPU time
    (time.thread_time) in the fixed ratio PHASES, so on-CPU samples of that thread
    split the same way whatever the other thread or the machine is doing;
      sort    - sorted(data, key=sort_key): C -> Python re-entry, sort_key burns CPU
      recurse - recurse() RECURSION_DEPTH levels deep, busy work at the bottom
      gen     - a consumer loop pulling from a generator that does the busy work
  * worker thread: worker_main -> crunch, a stack of its own.

Every busy loop is one source line (marked "# @leaf:NAME"), so an on-CPU sample's leaf
line is exact; every call on a sampled stack sits on a line marked "# @call:NAME".
known_shape_expected.py builds the expected stacks from these markers: keep one marker
per line, and keep calls and busy loops on their marked lines.
Deliberately avoided on hot paths: class instantiation (3.13+ __init__ shim frame),
stdlib Python code, and time polling inside a busy loop.
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import sys
import threading
import time

# Fraction of the main thread's CPU time spent in each phase (run() cycles through them
# in the order sort, recurse, gen).
PHASES = (("sort", 0.5), ("recurse", 0.3), ("gen", 0.2))
SHARE = dict(PHASES)
CYCLE_CPU_S = 0.1           # one cycle of all phases, in main-thread CPU seconds
RECURSION_DEPTH = 25        # frames of recurse() on the stack while it is busy
SORT_ITEMS = 10             # keys computed per sorted() call
KEY_WORK = 2000             # iterations of the busy line per sort_key() call
UNIT_WORK = 20000           # iterations per recursion, generator step, or worker step


def sort_key(x):
    acc = x
    for i in range(KEY_WORK): acc = (acc * 31 + i) & 0xFFFF  # @leaf:sort_key
    return acc


def recurse(depth, work):
    if depth > 1:
        return recurse(depth - 1, work)  # @call:recurse
    acc = 0
    for i in range(work): acc = (acc * 31 + i) & 0xFFFF  # @leaf:recurse
    return acc


def crunch(work):
    acc = 0
    for i in range(work): acc = (acc * 31 + i) & 0xFFFF  # @leaf:worker
    return acc


def worker_main():
    while True: crunch(UNIT_WORK)  # @call:crunch


class Workload:
    def __init__(self):
        self.data = list(range(SORT_ITEMS, 0, -1))
        self.sink = 0

    def chunks(self, end):
        while time.thread_time() < end:
            acc = 0
            for i in range(UNIT_WORK): acc = (acc * 31 + i) & 0xFFFF  # @leaf:gen
            yield acc

    def phase_sort(self, end):
        while time.thread_time() < end: self.sink ^= sorted(self.data, key=sort_key)[0]  # @call:sorted

    def phase_recurse(self, end):
        while time.thread_time() < end: self.sink ^= recurse(RECURSION_DEPTH, UNIT_WORK)  # @call:recurse_top

    def phase_gen(self, end):
        for acc in self.chunks(end): self.sink ^= acc  # @call:chunks

    def run(self, wall_end):
        # Phase boundaries are absolute points on the thread's CPU clock, so a phase that
        # overshoots its end by part of a work unit takes that time from the next phase
        # instead of stretching the cycle: over many cycles the split is exact.
        t = time.thread_time()
        while time.monotonic() < wall_end:
            t += CYCLE_CPU_S * SHARE["sort"]
            self.phase_sort(t)  # @call:phase_sort
            t += CYCLE_CPU_S * SHARE["recurse"]
            self.phase_recurse(t)  # @call:phase_recurse
            t += CYCLE_CPU_S * SHARE["gen"]
            self.phase_gen(t)  # @call:phase_gen


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else float("inf")
    worker = threading.Thread(target=worker_main, name="ks-worker", daemon=True)
    worker.start()
    wl = Workload()
    # 0.2 s of warm-up (every code path runs and specializes), then READY, then the run;
    # both go through the same call line, so launch-mode samples of the warm-up match too.
    for i, wall_s in enumerate((0.2, seconds)):
        if i:
            print("READY", flush=True)
        wl.run(time.monotonic() + wall_s)  # @call:run


if __name__ == "__main__":
    main()  # @call:main
