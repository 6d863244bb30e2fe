# SPDX-License-Identifier: MIT
"""A storm of execs, Python each time: CHAINS children, each a process that execs
exec_storm_a.py, which execs exec_storm_b.py, which execs exec_storm_a.py again, and so on
as fast as the interpreter starts, until SECONDS have passed.

Usage: python3 exec_storm.py CHAINS SECONDS

Prints READY and waits for SIGUSR1 (the test attaches pywalk first), then prints
"STORM CHAIN_PIDS..." (space-separated) and starts the chains; once every chain has ended
it prints "EXECS N" (the execs all chains made) and "DONE", and waits to be killed. Each
image spins a fixed share of its own CPU time in a function of its own, in a file of its
own (storm_a_work in exec_storm_a.py, storm_b_work in exec_storm_b.py), so a sample
always says which image it was taken in. The images run with -S -I (no site, nothing
imported from here): the storm's rate is the interpreter's start.
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import os
import signal
import sys
import time


def wait_here(pids):
    while pids: pids.discard(os.wait()[0])  # @call:wait


def main():
    chains, seconds = int(sys.argv[1]), float(sys.argv[2])
    here = os.path.dirname(os.path.abspath(__file__))
    first = os.path.join(here, "exec_storm_a.py")
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    os.write(1, b"READY\n")
    signal.sigwait({signal.SIGUSR1})
    rfd, wfd = os.pipe()
    os.set_inheritable(wfd, True)
    deadline = time.monotonic() + seconds
    pids = set()
    for _ in range(chains):
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            os.execv(sys.executable, [sys.executable, "-S", "-I", first, repr(deadline),
                                      "1", str(wfd)])
        pids.add(pid)
    os.close(wfd)
    os.write(1, ("STORM %s\n" % " ".join(map(str, sorted(pids)))).encode())
    wait_here(set(pids))
    with os.fdopen(rfd) as f:
        execs = sum(int(line) for line in f if line.strip())
    os.write(1, b"EXECS %d\nDONE\n" % execs)
    signal.sigwait({signal.SIGUSR1})  # until killed


if __name__ == "__main__":
    main()
