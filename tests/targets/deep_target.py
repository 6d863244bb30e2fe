# SPDX-License-Identifier: MIT
"""Deep recursion of a known exact depth: <module> -> rec x (DEPTH + 1) -> spin.

usage: deep_target.py DEPTH
"""
import sys

DEPTH = int(sys.argv[1])
sys.setrecursionlimit(DEPTH + 1000)


def spin():
    acc = 0
    for i in range(100000): acc = (acc + i) & 0xFFFF  # @spin
    return acc


def rec(n):
    if n == 0:
        return spin()  # @rec_base
    return rec(n - 1)  # @rec_call


rec(3)
print("READY", flush=True)
while True:  # @main_loop
    rec(DEPTH)  # @main_call
