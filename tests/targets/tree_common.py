# SPDX-License-Identifier: MIT
"""Shared pieces of the process-tree targets (mp_target.py, exec_first.py, exec_second.py,
gc_parent.py, gc_child.py, app_target.py) used by tests/e2e/test_subprocesses.py.

Each process of a tree burns CPU in a function of its own (its "work", a single busy line
whose comment marks it @leaf:NAME in its script) called from burn() here (the call marked
@call:burn), for a fixed amount of its own CPU time (time.process_time, so the amount
holds whatever the machine does). At its end it writes one line to stdout:

    PWRESULT {"role": ..., "pid": ..., "ppid": ..., "cpu": ..., "cpu_before_go": ...,
              "busy": ..., "callers": ..., "leaf_file": ..., "burn_file": ...}

cpu is the process's whole CPU time so far (cpu_before_go of it before the test let it
go), busy the part spent in burn(), and callers the
Python frames below burn() as the interpreter itself sees them (qualname, as pywalk names
it: co_name before 3.11; co_filename; the line of the call), root first. The tests add
burn's frame and the leaf from the markers, so every frame of the expected stack is exact.

Lines go out with one os.write each (short: atomic on a pipe, and nothing is buffered to
be copied into a fork child). Must run unmodified on CPython 3.10-3.15, stdlib only, with
no /proc (a chroot).
"""
import json
import os
import signal
import sys
import time

UNIT_WORK = 20000  # iterations of a busy line per call of a work function
RESULT_PREFIX = "PWRESULT "
_went = None  # (PID, its CPU time) when ready_and_wait returned in this process


def callers_of(frame):
    """[(qualname, filename, line)] of frame and what called it, root first."""
    out = []
    while frame is not None:
        code = frame.f_code
        out.append((getattr(code, "co_qualname", code.co_name), code.co_filename,
                    frame.f_lineno))
        frame = frame.f_back
    return out[::-1]


def burn(work, seconds):
    """Call work(UNIT_WORK) until this process used `seconds` more CPU.
    Returns (CPU seconds used here, the caller's stack as callers_of gives it)."""
    callers = callers_of(sys._getframe(1))
    t0 = time.process_time()
    while time.process_time() - t0 < seconds: work(UNIT_WORK)  # @call:burn
    return time.process_time() - t0, callers


def say(text):
    os.write(1, (text + "\n").encode())


def report(work, busy, callers, **extra):
    """The PWRESULT line of this process (cpu: its CPU time up to now; after an exec that
    includes the earlier program's; cpu_before_go the part used before ready_and_wait
    returned, before pywalk was attached). role is the work function's name; leaf_file and
    burn_file are the co_filename of it and of burn, as this process sees them."""
    went = _went[1] if _went and _went[0] == os.getpid() else 0.0  # not a fork child's
    rec = {"role": work.__name__, "pid": os.getpid(), "ppid": os.getppid(),
           "cpu": time.process_time(), "cpu_before_go": went, "busy": busy,
           "callers": callers, "leaf_file": work.__code__.co_filename,
           "burn_file": burn.__code__.co_filename}
    rec.update(extra)
    say(RESULT_PREFIX + json.dumps(rec, separators=(",", ":")))


def ready_and_wait():
    """Print READY, then wait for SIGUSR1 (the test sends it once pywalk is attached)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    say("READY")
    signal.sigwait({signal.SIGUSR1})
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    global _went
    _went = (os.getpid(), time.process_time())
