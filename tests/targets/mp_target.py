# SPDX-License-Identifier: MIT
"""A multiprocessing parent with two workers, each burning its own measured CPU time.

Usage: python3 mp_target.py METHOD [--wait]
  METHOD  fork, forkserver or spawn (the multiprocessing start method)
  --wait  print READY and start the workers only after SIGUSR1

The parent starts worker 0 and worker 1, then burns PARENT_CPU_S of its own CPU in
parent_work while they burn CHILD_CPU_S[i] in child_work_<i>, and joins them. Every process
writes its PWRESULT line (tree_common.py): PID, CPU time, and the stack it saw itself in.
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import multiprocessing
import sys

import tree_common as tc

PARENT_CPU_S = 0.4
CHILD_CPU_S = (0.25, 0.6)


def child_work_0(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # @leaf:child_work_0
    return acc


def child_work_1(n):
    acc = 0
    for i in range(n): acc = (acc * 37 + i) & 0xFFFF  # @leaf:child_work_1
    return acc


def parent_work(n):
    acc = 0
    for i in range(n): acc = (acc * 41 + i) & 0xFFFF  # @leaf:parent_work
    return acc


WORK = (child_work_0, child_work_1)


def child_entry(index):
    busy, callers = tc.burn(WORK[index], CHILD_CPU_S[index])  # @call:child_entry
    tc.report(WORK[index], busy, callers)


def main():
    method = sys.argv[1]
    if "--wait" in sys.argv[2:]:
        tc.ready_and_wait()
    ctx = multiprocessing.get_context(method)
    workers = [ctx.Process(target=child_entry, args=(i,)) for i in range(len(WORK))]
    for w in workers:
        w.start()  # @call:start
    busy, callers = tc.burn(parent_work, PARENT_CPU_S)  # @call:main
    for w in workers:
        w.join()
    codes = [w.exitcode for w in workers]
    tc.report(parent_work, busy, callers, workers=[w.pid for w in workers],
              exitcodes=codes)
    sys.exit(0 if codes == [0] * len(WORK) else 1)


if __name__ == "__main__":
    main()
