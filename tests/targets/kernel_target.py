# SPDX-License-Identifier: MIT
"""Known kernel paths under known Python frames, the ground truth for --kernel.

Usage: python3 kernel_target.py MODE
  read  - prints READY, then reads /dev/zero from zero_reader until killed: almost all its
          time is in the read system call, under zero_reader's read line
  sleep - prints READY, then sleeps 20 ms at a time from nap until killed: its time off
          CPU is in the nanosleep system call, under nap's sleep line

Plain functions only (3.10 names frames without qualnames); stdlib only; runs unmodified
on CPython 3.10-3.15.
"""
import os
import sys
import time


def zero_reader(fd):
    while True:
        os.read(fd, 1 << 16)  # @read


def nap():
    while True:
        time.sleep(0.02)  # @sleep


def main(mode):
    print("READY", flush=True)
    if mode == "read":
        zero_reader(os.open("/dev/zero", os.O_RDONLY))  # @call_read
    else:
        nap()  # @call_nap


main(sys.argv[1])  # @main
