# SPDX-License-Identifier: MIT
"""A process that exits with its last samples still unread: after READY it waits for a line
on stdin, then runs COUNT functions burst_0 .. burst_<COUNT-1>, each compiled afresh from
a file of its own (burst_<i>.py) and dropped after SLICE_MS of its own CPU time, and leaves
at once through os._exit, without the interpreter's finalization. The last functions'
code objects, and then the whole process, are gone before a profiler that reads memory
after the fact could look: only what was copied at sample time can name them.

Usage: python3 exit_burst.py [COUNT [SLICE_MS]]   (defaults 40 and 5)
Prints READY, and "PID COUNT" when the line arrives (before the burst).
Runs on CPython 3.10-3.15, stdlib only.
"""
import os
import sys
import time

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 40
SLICE_S = (float(sys.argv[2]) if len(sys.argv) > 2 else 5.0) / 1000
SOURCE = "def %s(end):\n    while time.thread_time() < end: pass\n"

print("READY", flush=True)
sys.stdin.readline()
print(os.getpid(), COUNT, flush=True)
for i in range(COUNT):
    name = "burst_%d" % i
    ns = {"time": time}
    exec(compile(SOURCE % name, name + ".py", "exec"), ns)
    ns[name](time.thread_time() + SLICE_S)  # @call
    del ns
os._exit(0)
