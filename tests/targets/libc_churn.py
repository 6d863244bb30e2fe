# SPDX-License-Identifier: MIT
"""Workload for --native's unwind coverage: json encoding in a loop, whose C code spends
much of its time in short calls through the PLT (memcpy, ...) and in the epilogues of
small functions (PyUnicode_New, PyList_Append): the two places where a sampled thread's
CFI needs its instruction pointer as a register and the red zone below sp.

usage: libc_churn.py SECONDS
"""
import json
import sys
import time

SECONDS = float(sys.argv[1])
DOC = {"a": [1, 2.5, "x" * 20, None, True] * 40, "b": {"k%d" % i: i for i in range(50)}}


def encode():
    end = time.monotonic() + SECONDS
    print("READY", flush=True)
    while time.monotonic() < end:
        json.dumps(DOC)  # @encode_dumps


encode()
