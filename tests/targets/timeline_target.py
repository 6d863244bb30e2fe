# SPDX-License-Identifier: MIT
"""Phases in a known order for known wall-clock times, for the timeline format.

* main: for ever, `compute` 0.3 s busy (bounded by the wall clock, so a loaded machine
  does not stretch it), then `rest` 0.3 s asleep, then `crunch` 0.3 s busy.
* idler: asleep in `doze` all the time, 0.2 s at a time.
"""
import threading
import time

PHASE_S = 0.3


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:  # @spin
        pass


def compute():
    spin(PHASE_S)  # @compute


def rest():
    time.sleep(PHASE_S)  # @rest


def crunch():
    spin(PHASE_S)  # @crunch


def doze():
    while True:
        time.sleep(0.2)  # @doze


threading.Thread(target=doze, name="idler", daemon=True).start()
print("READY", flush=True)
while True:
    compute()
    rest()
    crunch()
