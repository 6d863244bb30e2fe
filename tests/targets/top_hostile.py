# SPDX-License-Identifier: MIT
"""A busy function whose name is hostile terminal input, for `pywalk top`: it holds a
clear-screen escape, a window-title escape (OSC 2, "PWNED"), a newline, a C1 CSI (U+009B)
and a bidi override (U+202E). A view that prints names raw would clear the screen, set the
pane title, or start a line with "EVIL". The file name is plain, so the view's other
columns stay readable.

With --comm the process also names itself with a hostile comm (an OSC 2 title "PW", a
clear-screen escape and a C1 CSI, then "EV"), for the PROCESS column of a view of several
processes.

Usage: python3.11 top_hostile.py [SECONDS] [--comm]   (no SECONDS: run until killed)
Prints READY (flushed) after a short warm-up. Stdlib only (3.11+: co_qualname).
"""
import sys
import time

HOSTILE = "\x1b[2J\x1b]2;PWNED\x07spin\nEVIL\u009b31m\u202eevil"
# at most 15 bytes: the kernel keeps no more of a comm
HOSTILE_COMM = b"\x1b]2;PW\x07\x1b[2J\xc2\x9bEV"


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


args = [a for a in sys.argv[1:] if a != "--comm"]
if "--comm" in sys.argv[1:]:
    # before READY: pywalk reads the comm when it finds the process
    with open("/proc/self/comm", "wb") as f:
        f.write(HOSTILE_COMM)
main(float(args[0]) if args else 0)
