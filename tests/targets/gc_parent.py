# SPDX-License-Identifier: MIT
"""Three generations: this parent starts gc_child.py with subprocess.Popen (fork + exec of
a new interpreter), and that child forks (os.fork, no exec) a grandchild.

Usage: python3 gc_parent.py [--wait]
  --wait  print READY and start the child only after SIGUSR1

The parent burns parent_work while the child and grandchild burn theirs, waits for the
child, and writes its PWRESULT line (tree_common.py) with the child's exit status.
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import os
import subprocess
import sys

import tree_common as tc

PARENT_CPU_S = 0.3


def parent_work(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # @leaf:parent_work
    return acc


def main():
    if "--wait" in sys.argv[1:]:
        tc.ready_and_wait()
    child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gc_child.py")
    proc = subprocess.Popen([sys.executable, child])
    busy, callers = tc.burn(parent_work, PARENT_CPU_S)  # @call:main
    code = proc.wait()
    tc.report(parent_work, busy, callers, child=proc.pid, exitcode=code)
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()
