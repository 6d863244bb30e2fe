# SPDX-License-Identifier: MIT
"""A Python process that forks COUNT children which run Python without exec'ing: each child
is a copy of the parent's memory and interpreter, busy for SECONDS of its own CPU time in a
function named forked_child_<i>, compiled from a file forked_child_<i>.py, then leaves
through os._exit. A profiler following forks must sample each child under its own PID.

Usage: python3 fork_children.py [COUNT [SECONDS]]   (defaults 6 and 0.2)
Each child prints "PID INDEX" when its function returns; the parent waits for all.
Runs on CPython 3.10-3.15, stdlib only.
"""
import os
import sys
import time

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 6
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
SOURCE = "def %s(end):\n    while time.thread_time() < end: pass\n"

children = []
for i in range(COUNT):
    pid = os.fork()
    if pid == 0:
        name = "forked_child_%d" % i
        ns = {"time": time}
        exec(compile(SOURCE % name, name + ".py", "exec"), ns)
        ns[name](time.thread_time() + SECONDS)  # @call
        os.write(1, b"%d %d\n" % (os.getpid(), i))  # one write: the children share stdout
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
