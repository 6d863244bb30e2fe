# SPDX-License-Identifier: MIT
"""Hostile to pywalk's thread-name reader: threading._active holds, besides the real
threads, an entry (under an ident no thread has) whose object has 60,000 instance
attributes, none of them _name, so that every scan of _active reads through them until
the reader's bound. A new short-lived busy thread starts every 50 ms, so that there is
always a sampled thread whose name is still looked for.

Usage: python3 names_flood.py     Prints READY (flushed) once the entry is in place."""
import threading
import time


class Fake:
    pass


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main():
    fake = Fake()
    for i in range(60000):
        setattr(fake, "attr_%d" % i, i)
    threading._active[-1] = fake
    print("READY", flush=True)
    while True:
        t = threading.Thread(target=spin, args=(0.05,))
        t.start()
        t.join()


if __name__ == "__main__":
    main()
