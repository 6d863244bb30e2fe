# SPDX-License-Identifier: MIT
"""COUNT live Python processes at once, cheaply: this process forks COUNT - 1 children
that never exec (copy-on-write: each costs the pages it writes, not a whole interpreter),
and is the COUNT-th itself. Each process, parent included, sleeps most of the time and
every PERIOD seconds (first at a random point of the first period, so the bursts spread
out) spends BURST_MS of its own CPU time in a function named scale_<its PID>, compiled in
that process (the code of a template renamed, its file scale_<PID>.py): a stack under PID P names P and no other.

Usage: python3 many_procs.py COUNT [BURST_MS [PERIOD [LIFETIME]]]
       (defaults 1 ms, 10 s, 900 s)
Prints each child's PID on a line as it is forked, then "ready COUNT" once all exist; then
"died PID STATUS" for any child that ends before the parent. Every process ends by itself
after LIFETIME seconds, when its parent is gone (PR_SET_PDEATHSIG and a check of its
parent's PID), or with its process group (the test kills the group). Runs on CPython
3.10-3.15, Linux, stdlib only.
"""
import ctypes
import gc
import os
import signal
import sys
import time
import types

COUNT = int(sys.argv[1])
BURST_S = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.001
PERIOD_S = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
LIFETIME_S = float(sys.argv[4]) if len(sys.argv) > 4 else 900.0
PR_SET_PDEATHSIG = 1

QUALNAME = sys.version_info >= (3, 11)

libc = ctypes.CDLL(None, use_errno=True)


def TEMPLATE(end):
    while time.thread_time() < end:
        pass


def die_with_parent(parent):
    """SIGKILL when the parent goes; and if it went before the prctl, go now."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


def run(parent, deadline, tick=None):
    """The life of one process: a burst of CPU in scale_<PID> every PERIOD_S; tick() after
    each sleep."""
    pid = os.getpid()
    name = "scale_%d" % pid
    # the template's code renamed, not compiled anew: the compiler's allocations would
    # cost every child its own pages
    code = TEMPLATE.__code__.replace(co_name=name, co_filename=name + ".py",
                                     **({"co_qualname": name} if QUALNAME else {}))
    work = types.FunctionType(code, TEMPLATE.__globals__, name)
    due = time.monotonic() + PERIOD_S * ((pid * 2654435761) % 1000) / 1000
    while True:
        now = time.monotonic()
        if now >= deadline or (parent and os.getppid() != parent):
            os._exit(0)
        if now < due:
            time.sleep(min(due - now, 1.0))
            if tick:
                tick()
            continue
        work(time.thread_time() + BURST_S)  # @call
        due += PERIOD_S
        if due < now:  # fell behind (a loaded machine): start afresh, no catching up
            due = now + PERIOD_S


def main():
    me = os.getpid()
    die_with_parent(os.getppid())
    deadline = time.monotonic() + LIFETIME_S
    # the children write no object the parent made: no collection walks them, so the
    # pages stay shared
    gc.collect()
    gc.freeze()
    gc.disable()
    sys.stdout.flush()
    for _ in range(COUNT - 1):
        pid = os.fork()
        if pid == 0:
            die_with_parent(me)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            run(me, deadline)
        os.write(1, b"%d\n" % pid)
    os.write(1, b"ready %d\n" % COUNT)
    # the parent is a process like the others, and reaps any child that ends early
    children = COUNT - 1

    def reap():
        nonlocal children
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            children -= 1
            os.write(1, b"died %d %d\n" % (pid, status))

    run(0, deadline, reap)


if __name__ == "__main__":
    main()
