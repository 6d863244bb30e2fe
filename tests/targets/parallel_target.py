# SPDX-License-Identifier: MIT
"""Workload for tests/e2e/test_parallel.py: NTHREADS threads (default 8), thread k running
only its own function work_k, which loops calling the shared function mix. mix is fed a
value whose type changes every few hundred calls (int, float, str), so its specialised
instructions keep failing and being specialised again while the profiler samples. On a
free-threaded build each thread specialises its own copy of the bytecode (co_tlbc), so
mix's code object has one copy per thread, all executing at once.

Thread k is named "w<k>". Prints READY (flushed) once every thread has started, then
runs until killed.

usage: parallel_target.py [NTHREADS]
"""
import sys
import threading

NTHREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
VALUES = (7, 2.5, "ab")
started = threading.Barrier(NTHREADS + 1)


def mix(v, n):
    acc = v  # @mix_first
    for _ in range(n):
        acc = acc + v  # @mix_add
    return acc  # @mix_return


def loop(k):
    i = k
    started.wait()
    while True:
        mix(VALUES[(i // 300) % 3], 40)  # @loop_call
        i += 1


# One function per thread (not one function called with k): a stack names its thread.
def work_0(): loop(0)  # @work_0
def work_1(): loop(1)  # @work_1
def work_2(): loop(2)  # @work_2
def work_3(): loop(3)  # @work_3
def work_4(): loop(4)  # @work_4
def work_5(): loop(5)  # @work_5
def work_6(): loop(6)  # @work_6
def work_7(): loop(7)  # @work_7


WORKS = [work_0, work_1, work_2, work_3, work_4, work_5, work_6, work_7]

threads = [threading.Thread(target=WORKS[k], name="w%d" % k, daemon=True)
           for k in range(NTHREADS)]
for t in threads:
    t.start()
started.wait()
print("READY", flush=True)
threading.Event().wait()
