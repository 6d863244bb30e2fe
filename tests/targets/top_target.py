# SPDX-License-Identifier: MIT
"""CPU-bound workload for the `pywalk top` end-to-end tests: nearly all on-CPU time is spent
in one function, hot_spin, as the leaf frame (a pure-Python loop that calls nothing), under
main <- <module>. So hot_spin's own% is close to 100, and main and <module> have total%
close to 100 with own% close to 0; by name the order is <module>, hot_spin, main.

Usage: python3.11 top_target.py [SECONDS]   (no argument: run until killed)
Prints READY (flushed) after a short warm-up. Stdlib only.
"""
import sys
import time


def hot_spin(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF
    return acc


def main(seconds):
    hot_spin(200000)  # warm-up: the loop is specialized before READY
    print("READY", flush=True)
    deadline = time.monotonic() + seconds if seconds else None
    # check the clock rarely, so the sampled leaf is hot_spin, not time.monotonic
    while deadline is None or time.monotonic() < deadline:
        hot_spin(2000000)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
