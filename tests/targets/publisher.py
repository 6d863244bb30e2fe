# SPDX-License-Identifier: MIT
"""CPU-bound workload where one function calls another from three lines, for --function.

Usage: python3 publisher.py SECONDS

Publisher.publish is called from three lines of main's loop, and itself runs its busy
line from two places, so by line it shows as three sibling frames under main (and deliver
as two under each); by function, as one each. Stdlib only, CPython 3.10+.
"""
import sys
import time

WORK = 20000


def deliver(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # the busy line
    return acc


class Publisher:
    def publish(self, n):
        deliver(n)
        return deliver(n // 2)


def main(seconds):
    p = Publisher()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        p.publish(WORK)
        p.publish(WORK)
        p.publish(WORK)


if __name__ == "__main__":
    main(float(sys.argv[1]))
