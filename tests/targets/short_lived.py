# SPDX-License-Identifier: MIT
"""A short-lived process, busy from its first line: runs a function named NAME, compiled
from a file named NAME.py, for SECONDS of wall time (of its own CPU time with --cpu, so a
loaded machine does not shorten the busy part), then exits, or replaces itself with
PROGRAM (same PID, another process lifetime) when one is given. Each process gets names of
its own, so a stack shown under another process's root frame, or with another process's
file, is detectable.

Usage: python3 short_lived.py [--cpu] NAME SECONDS [PROGRAM [ARG...]]

When the busy function returns it prints "PID NAME BUSY TOTAL": its PID (as it sees it),
the function, the CPU seconds the busy function used (time.thread_time), from which a test
derives how many samples it should get, and the CPU seconds of its whole life so far
(time.process_time). The busy line is line 2 of NAME.py; the caller's frame is this file's
<module> at the line marked "# @call".
Runs on CPython 3.10-3.15, stdlib only.
"""
import os
import sys
import time

CPU = sys.argv[1:2] == ["--cpu"]
NAME, SECONDS, PROGRAM = sys.argv[1 + CPU], float(sys.argv[2 + CPU]), sys.argv[3 + CPU:]
CLOCK = time.thread_time if CPU else time.monotonic
SOURCE = "def %s(end):\n    while clock() < end: pass\n" % NAME
ns = {"clock": CLOCK}
exec(compile(SOURCE, NAME + ".py", "exec"), ns)
cpu0 = time.thread_time()
ns[NAME](CLOCK() + SECONDS)  # @call
print(os.getpid(), NAME, "%.6f %.6f" % (time.thread_time() - cpu0, time.process_time()),
      flush=True)
if PROGRAM:
    os.execv(PROGRAM[0], PROGRAM)
