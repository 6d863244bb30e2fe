# SPDX-License-Identifier: MIT
"""Threads that wait in known places for known shares of their time.

* main: ~30% busy in `busy` (by the wall clock, so a busy machine does not change the
  split), ~70% asleep in time.sleep, in a loop of 100 ms.
* nap: asleep in time.sleep(0.2), all the time.
* waiter: waits on a lock the main thread holds for ever, 0.3 s at a time.
* stuck: waits on that lock with no timeout: deadlocked from before READY on.
* reader: blocked in socket.recv on a socket pair that feeder writes a byte to every
  0.25 s (feeder sleeps in between).
* selector: blocked in select.select on a socket nothing is ever written to, 0.4 s at a
  time.

Before READY it prints each waiting thread's kernel thread id ("TIDS nap=123 ..."): the
tests read how long each one ran from /proc.
"""
import os
import select
import socket
import threading
import time

held = threading.Lock()
held.acquire()


def busy(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:  # @busy
        n += 1
    return n


named = threading.Event()
native_ids = {}


def started(name):
    native_ids[name] = threading.get_native_id()


def nap():
    started("nap")
    if os.environ.get("HOSTILE_COMM"):
        # a thread name that would clear a terminal and retitle it, if printed raw
        import ctypes
        ctypes.CDLL(None).prctl(15, b"\x1b[2J\x1b]0;x\x07", 0, 0, 0)  # PR_SET_NAME
        # and threading's name, which outputs show where they name a thread
        threading.current_thread().name = "\x1b[2J\x1b]0;x\x07"
    named.set()
    while True:
        time.sleep(0.2)  # @nap_sleep


def waiter():
    started("waiter")
    while True:
        if held.acquire(timeout=0.3):  # @wait_lock
            held.release()


def stuck():
    started("stuck")
    held.acquire()  # @stuck_lock


fed, feeding = socket.socketpair()
quiet, _quiet_peer = socket.socketpair()


def reader():
    started("reader")
    while True:
        fed.recv(1)  # @reader_recv


def feeder():
    started("feeder")
    while True:
        time.sleep(0.25)  # @feeder_sleep
        feeding.send(b"x")  # @feeder_send


def selector():
    started("selector")
    while True:
        select.select([quiet], [], [], 0.4)  # @selector_select


threading.Thread(target=nap, daemon=True).start()
threading.Thread(target=stuck, daemon=True).start()
for fn in (reader, feeder, selector):
    threading.Thread(target=fn, daemon=True).start()
threading.Thread(target=waiter, daemon=True).start()
named.wait()
while len(native_ids) < 6:
    time.sleep(0.001)
print("TIDS " + " ".join("%s=%d" % kv for kv in sorted(native_ids.items())), flush=True)
print("READY", flush=True)
while True:
    busy(0.03)  # @main_busy
    time.sleep(0.07)  # @main_sleep
