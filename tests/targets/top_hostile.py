# SPDX-License-Identifier: MIT
"""A busy function whose name is hostile terminal input, for `pywalk top`: it holds a
clear-screen escape, a window-title escape (OSC 2, "PWNED"), a newline, a C1 CSI (U+009B)
and a bidi override (U+202E). A view that prints names raw would clear the screen, set the
pane title, or start a line with "EVIL". The file name is plain, so the view's other
columns stay readable.

Usage: python3.11 top_hostile.py [SECONDS]   (no argument: run until killed)
Prints READY (flushed) after a short warm-up. Stdlib only (3.11+: co_qualname).
"""
import sys
import time

HOSTILE = "\x1b[2J\x1b]2;PWNED\x07spin\nEVIL\u009b31m\u202eevil"


def spin(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF
    return acc


# the name is what the code object says: co_name and co_qualname both hostile
spin.__code__ = spin.__code__.replace(co_name=HOSTILE, co_qualname=HOSTILE)


def main(seconds):
    spin(200000)
    print("READY", flush=True)
    deadline = time.monotonic() + seconds if seconds else None
    while deadline is None or time.monotonic() < deadline:
        spin(2000000)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
