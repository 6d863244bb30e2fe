# SPDX-License-Identifier: MIT
"""A second CPU-bound workload for the `pywalk top` end-to-end tests, beside top_target.py:
the same shape (nearly every sample has the leaf other_spin, under main <- <module>) with a
function name of its own, so a view of both processes can tell whose rows are whose.

Usage: python3.11 top_other.py [SECONDS]   (no argument: run until killed)
Prints READY (flushed) after a short warm-up. Stdlib only.
"""
import sys
import time


def other_spin(n):
    acc = 0
    for i in range(n): acc = (acc * 17 + i) & 0xFFFF
    return acc


def main(seconds):
    other_spin(200000)  # warm-up: the loop is specialized before READY
    print("READY", flush=True)
    deadline = time.monotonic() + seconds if seconds else None
    while deadline is None or time.monotonic() < deadline:
        other_spin(2000000)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
