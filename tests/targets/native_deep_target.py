# SPDX-License-Identifier: MIT
"""Workload for test_native's activation bound: <module> -> rec x (DEPTH + 1) -> spin, each
rec called through map() (C), so on 3.12+ each runs in an eval-loop activation of its own
(DEPTH + 2 with <module>'s), each with its entry frame on the C stack.

usage: native_deep_target.py DEPTH SECONDS
"""
import sys
import time

DEPTH = int(sys.argv[1])
SECONDS = float(sys.argv[2])


def spin():
    acc = 0
    for i in range(400000):
        acc = (acc + i) & 0xFFFF
    return acc


def rec(n):
    if n == 0:
        return spin()
    return list(map(rec, [n - 1]))[0]


rec(3)
print("READY", flush=True)
end = time.monotonic() + SECONDS
while time.monotonic() < end:
    rec(DEPTH)
