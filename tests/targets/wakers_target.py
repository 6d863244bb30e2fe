# SPDX-License-Identifier: MIT
"""Workload for off-CPU pairing under many switches: N threads that each sleep P seconds
over and over (thousands of switch-outs and returns a second).

usage: wakers_target.py N P
"""
import sys
import threading
import time

N = int(sys.argv[1])
P = float(sys.argv[2])


def nap():
    while True:
        time.sleep(P)


for _ in range(N):
    threading.Thread(target=nap, daemon=True).start()
print("READY", flush=True)
time.sleep(3600)
