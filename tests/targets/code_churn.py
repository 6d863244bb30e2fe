# SPDX-License-Identifier: MIT
"""Hostile to a profiler's caches (tests/e2e/test_soak.py): every sample should bring a
code object pywalk has not seen, with a line table past the sampler's 16 KiB copy, and
short-lived processes come and go all the time.

* Code churn (main thread): a function with a long body (a big line table, most of it
  never run) is copied with code.replace() into a new code object over and over, and
  each copy runs busily for about a millisecond. The copies replace a random one of the
  last RING copies, so addresses are freed and reused in an order that does not repeat:
  each copy has its own line-table object (and on 3.12+ its own co_version), so nearly
  every copy is a (code address, tag) pair pywalk has not seen. --names bounded (the
  default) rotates the copies through four names, so the profile itself (functions,
  lines, stacks) stays small and what grows is only what pywalk caches; --names unique
  gives every copy a new name, so the profile grows by one function per sampled copy;
  --names none turns code churn off. --files unique gives every copy a new file name
  too (as exec(compile(src, fresh_name, ...)) does).
* Process churn (a thread): --children N starts about N short Python processes a second
  (python -c: a few milliseconds of work, then exit) and --forks N forks about N
  children a second that run the same code for a few milliseconds and _exit.
  --child-work bz2: each child instead compresses for --child-ms in the _bz2 C extension
  (libbz2), so its native stacks are in libraries loaded at addresses of its own.

Prints READY when the template is compiled (its body grown until the line table is past
the 16 KiB a code record carries), then runs until killed.
"""
import argparse
import os
import random
import subprocess
import sys
import threading
import time
import types
import warnings

LINETABLE_MIN = 16384  # what a code record carries of a line table
RING = 256


def template(cold_lines):
    """churn(n): a busy loop on one line, then cold_lines lines that never run."""
    lines = ["def churn(n):", "    x = 0",
             "    for k in range(n): x = (x * 31 + k) & 0xFFFF  # @hot",
             "    if n >= 0:", "        return x"]
    lines += ["    x = (x + %d) & 0xFFFF" % k for k in range(cold_lines)]
    lines.append("    return x")
    ns = {}
    exec(compile("\n".join(lines) + "\n", __file__, "exec"), ns)
    return ns["churn"].__code__, ns


CHILD_SRC = ("import time\n"
             "def child_work():\n"
             "    t = time.perf_counter() + 0.005\n"
             "    while time.perf_counter() < t: pass\n"
             "child_work()\n")


BZ2_SRC = ("import bz2, os, time\n"
           "def child_work(ms):\n"
           "    data = os.urandom(1 << 16)\n"
           "    t = time.perf_counter() + ms / 1000\n"
           "    while time.perf_counter() < t: bz2.compress(data, 1)\n"
           "child_work(%d)\n")


def spawner(per_second, stop, src):
    """About per_second short Python processes a second, at most 8 alive at once."""
    alive = []
    while not stop.is_set():
        alive = [p for p in alive if p.poll() is None]
        if len(alive) < 8:
            alive.append(subprocess.Popen([sys.executable, "-c", src],
                                          stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL))
        time.sleep(1.0 / per_second)


def forker(per_second, fn):
    """About per_second fork children a second, each runs fn for a few ms and _exits."""
    next_at = time.monotonic()
    while True:
        pid = os.fork()
        if pid == 0:
            try:
                t = time.perf_counter() + 0.003
                while time.perf_counter() < t:
                    fn(200)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        next_at += 1.0 / per_second
        time.sleep(max(0.0, next_at - time.monotonic()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", choices=("bounded", "unique", "none"), default="bounded",
                    help="none: no code churn, the main thread only waits")
    ap.add_argument("--files", choices=("bounded", "unique"), default="bounded")
    ap.add_argument("--children", type=float, default=0.0)
    ap.add_argument("--child-work", choices=("python", "bz2"), default="python")
    ap.add_argument("--child-ms", type=int, default=50)
    ap.add_argument("--forks", type=float, default=0.0)
    args = ap.parse_args()

    cold = 1500
    code, ns = template(cold)
    while len(code.co_linetable) <= LINETABLE_MIN:  # 3.10's table is denser
        cold *= 2
        code, ns = template(cold)
    has_qualname = hasattr(code, "co_qualname")
    pool = [sys.intern("churn_%d" % k) for k in range(4)]
    stop = threading.Event()
    if args.children:
        src = CHILD_SRC if args.child_work == "python" else BZ2_SRC % args.child_ms
        threading.Thread(target=spawner, args=(args.children, stop, src),
                         daemon=True).start()
    if args.forks:
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() with threads
        # forks from the main thread would copy a lock held by the spawner: a thread
        # that only forks (and holds nothing else) keeps the children simple
        threading.Thread(target=forker, args=(args.forks, types.FunctionType(code, ns)),
                         daemon=True).start()
    ring = [None] * RING
    rnd = random.Random(1)
    print("READY", flush=True)
    if args.names == "none":
        stop.wait()
    i = 0
    while True:
        name = pool[i % len(pool)] if args.names == "bounded" else "churn_%d" % i
        kw = {"co_name": name, "co_linetable": bytes(bytearray(code.co_linetable))}
        if has_qualname:
            kw["co_qualname"] = name
        if args.files == "unique":
            kw["co_filename"] = "/churn/%d.py" % i
        slot = rnd.randrange(RING)
        ring[slot] = None  # the copy it replaces is freed first: its memory is reused
        fn = ring[slot] = types.FunctionType(code.replace(**kw), ns)
        t = time.perf_counter() + 0.001
        while time.perf_counter() < t:
            fn(300)
        i += 1


if __name__ == "__main__":
    main()
