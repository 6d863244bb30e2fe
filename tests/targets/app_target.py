# SPDX-License-Identifier: MIT
"""A plain Python program for the shell and make runs: burns app_work_<ROLE> for SECONDS
of its own CPU time and writes its PWRESULT line (tree_common.py).

Usage: python3 app_target.py ROLE SECONDS   (ROLE: a or b, two programs' own names)
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import sys

import tree_common as tc


def app_work_a(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # @leaf:app_work_a
    return acc


def app_work_b(n):
    acc = 0
    for i in range(n): acc = (acc * 37 + i) & 0xFFFF  # @leaf:app_work_b
    return acc


def main():
    work = {"a": app_work_a, "b": app_work_b}[sys.argv[1]]
    busy, callers = tc.burn(work, float(sys.argv[2]))  # @call:main
    tc.report(work, busy, callers)


if __name__ == "__main__":
    main()
