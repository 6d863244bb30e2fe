# SPDX-License-Identifier: MIT
"""The middle generation of gc_parent.py's tree: forks (os.fork, no exec) a grandchild
that burns grandchild_work, burns child_work itself, and reaps the grandchild. Both write
their PWRESULT line (tree_common.py).

Usage: python3 gc_child.py
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import os
import sys

import tree_common as tc

CHILD_CPU_S = 0.35
GRANDCHILD_CPU_S = 0.5


def child_work(n):
    acc = 0
    for i in range(n): acc = (acc * 37 + i) & 0xFFFF  # @leaf:child_work
    return acc


def grandchild_work(n):
    acc = 0
    for i in range(n): acc = (acc * 41 + i) & 0xFFFF  # @leaf:grandchild_work
    return acc


def grandchild():
    busy, callers = tc.burn(grandchild_work, GRANDCHILD_CPU_S)  # @call:grandchild
    tc.report(grandchild_work, busy, callers)


def main():
    pid = os.fork()
    if pid == 0:
        try:
            grandchild()  # @call:fork
        finally:
            os._exit(0)
    busy, callers = tc.burn(child_work, CHILD_CPU_S)  # @call:main
    _, status = os.waitpid(pid, 0)
    tc.report(child_work, busy, callers, grandchild=pid, status=status)
    sys.exit(0 if status == 0 else 1)


if __name__ == "__main__":
    main()
