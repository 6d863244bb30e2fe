# SPDX-License-Identifier: MIT
"""Workload for the --native tests: run -> nativeext.outer (ext_outer -> ext_middle ->
ext_inner, busy) -> reenter (Python) -> nativeext.spin (ext_spin, busy), over and over.

usage: native_target.py EXT_DIR SECONDS [--late] [--forge] [--sleep]
--late: the extension is imported (dlopen) only at SIGUSR1, after pure Python until then
(warmup): the test sends it once recording has begun and unwound the first stacks.
--forge: the chain goes through a fake eval-loop activation (a mismatch).
--sleep: sleeper() -> nativeext.sleep (ext_sleep_outer -> ext_sleep_inner -> nanosleep),
20 ms at a time, instead: a thread off CPU in a system call made from C.
"""
import signal
import sys
import time

sys.path.insert(0, sys.argv[1])
SECONDS = float(sys.argv[2])
LATE = "--late" in sys.argv
FORGE = "--forge" in sys.argv
SLEEP = "--sleep" in sys.argv
SLICE_S = 0.004
SLEEP_S = 0.02

if not LATE:
    import nativeext  # noqa: E402


def reenter():
    nativeext.spin(SLICE_S)


def run():
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        nativeext.outer(reenter, SLICE_S, FORGE)


def sleeper():
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        nativeext.sleep(SLEEP_S)


go = False


def on_usr1(signum, frame):
    global go
    go = True


def warmup():
    end = time.monotonic() + 60
    acc = 0
    while not go and time.monotonic() < end:
        for i in range(1000):
            acc = (acc + i) & 0xffff


signal.signal(signal.SIGUSR1, on_usr1)
print("READY", flush=True)
if LATE:
    warmup()
    import nativeext  # noqa: E402,F811
if SLEEP:
    sleeper()
else:
    run()
