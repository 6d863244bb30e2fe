# SPDX-License-Identifier: MIT
"""The program exec_first.py execs into: burns second_work (other names, other file, same
PID) and writes its PWRESULT line (tree_common.py).

Usage: python3 exec_second.py
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import tree_common as tc

SECOND_CPU_S = 0.45


def second_work(n):
    acc = 0
    for i in range(n): acc = (acc * 37 + i) & 0xFFFF  # @leaf:second_work
    return acc


def main():
    busy, callers = tc.burn(second_work, SECOND_CPU_S)  # @call:main
    tc.report(second_work, busy, callers)


if __name__ == "__main__":
    main()
