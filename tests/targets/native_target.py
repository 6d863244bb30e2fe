# SPDX-License-Identifier: MIT
"""Workload for the --native tests: run -> nativeext.outer (ext_outer -> ext_middle ->
ext_inner, busy) -> reenter (Python) -> nativeext.spin (ext_spin, busy), over and over.

usage: native_target.py EXT_DIR SECONDS [--late] [--forge]
--late: the extension is imported (dlopen) only after READY, once recording has begun.
--forge: the chain goes through a fake eval-loop activation (a mismatch).
"""
import sys
import time

sys.path.insert(0, sys.argv[1])
SECONDS = float(sys.argv[2])
LATE = "--late" in sys.argv
FORGE = "--forge" in sys.argv
SLICE_S = 0.004

if not LATE:
    import nativeext  # noqa: E402


def reenter():
    nativeext.spin(SLICE_S)


def run():
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        nativeext.outer(reenter, SLICE_S, FORGE)


print("READY", flush=True)
if LATE:
    time.sleep(1.0)
    import nativeext  # noqa: E402,F811
run()
