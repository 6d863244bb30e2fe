# SPDX-License-Identifier: MIT
"""Workload for the --native demangling test: spin_cxx -> (ctypes) cxx_spin ->
pwtest::Spinner::spin, busy, over and over.

usage: cxx_target.py LIBRARY SECONDS
"""
import ctypes
import sys
import time

LIB = ctypes.CDLL(sys.argv[1])
LIB.cxx_spin.argtypes = [ctypes.c_double]
SECONDS = float(sys.argv[2])


def spin_cxx():
    LIB.cxx_spin(0.01)


print("READY", flush=True)
end = time.monotonic() + SECONDS
while time.monotonic() < end:
    spin_cxx()
