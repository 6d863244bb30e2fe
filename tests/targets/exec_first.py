# SPDX-License-Identifier: MIT
"""The first program of a process that execs: burns first_work, then os.execv's
exec_second.py in the same interpreter (same PID, a new program).

Usage: python3 exec_first.py [--wait]
  --wait  print READY and start only after SIGUSR1 (the test attaches pywalk first)

Writes its PWRESULT line (tree_common.py) before the exec; exec_second.py writes its own.
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import os
import sys

import tree_common as tc

FIRST_CPU_S = 0.3


def first_work(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # @leaf:first_work
    return acc


def main():
    if "--wait" in sys.argv[1:]:
        tc.ready_and_wait()
    busy, callers = tc.burn(first_work, FIRST_CPU_S)  # @call:main
    tc.report(first_work, busy, callers)
    second = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exec_second.py")
    os.execv(sys.executable, [sys.executable, second])


if __name__ == "__main__":
    main()
