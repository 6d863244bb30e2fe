# SPDX-License-Identifier: MIT
"""An image of exec_storm.py's chains: spins SPIN_CPU_S of its CPU time in storm_a_work,
then execs exec_storm_b.py, until the chain's deadline (CLOCK_MONOTONIC, argv[1]); the
last image writes the chain's exec count (argv[2]) to the launcher's pipe (fd argv[3]).
"""
import os
import sys
import time

SPIN_CPU_S = 0.003
NEXT = "exec_storm_b.py"


def storm_a_work(seconds):
    end, acc = time.thread_time() + seconds, 0
    while time.thread_time() < end: acc = (acc * 31 + 1) & 0xFFFF  # @leaf:storm_a_work
    return acc


def main():
    deadline, n, fd = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    storm_a_work(SPIN_CPU_S)  # @call:storm_a_work
    if time.monotonic() >= deadline:
        os.write(fd, b"%d\n" % n)
        return
    nxt = os.path.join(os.path.dirname(os.path.abspath(__file__)), NEXT)
    os.execv(sys.executable, [sys.executable, "-S", "-I", nxt, sys.argv[1], str(n + 1),
                              sys.argv[3]])


if __name__ == "__main__":
    main()  # @call:main
