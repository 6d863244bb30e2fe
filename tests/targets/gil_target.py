# SPDX-License-Identifier: MIT
"""Two CPU-bound threads that contend for the GIL, and one that runs C code without it.

* Spinner: pure Python, for ever: whenever it is on a CPU it holds the GIL.
* Mixer: turns between pure Python (@mixer_py) and hashlib.sha256 over 4 MiB
  (@mixer_hash), which releases the GIL while it hashes. It measures its own CPU time
  (time.thread_time) in each phase: the share in Python is the share of its on-CPU time
  it held the GIL.
* Hasher: only hashes (@hasher_hash): on a CPU, almost never holding the GIL.
* main: asleep; on SIGUSR1 prints 'ACCT <spinner tid> <mixer tid> <hasher tid>
  <mixer's CPU seconds in Python> <in hashlib>' and flushes.
"""
import hashlib
import signal
import sys
import threading
import time

BUF = b"\x5a" * (4 << 20)
acct = {"py": 0.0, "hash": 0.0}
tids = {}
lock = threading.Lock()


def spin():
    tids["Spinner"] = threading.get_native_id()
    n = 0
    while True:
        n += 1  # @spinner_py


def python_for(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += 1  # @mixer_py
    return n


def mix():
    tids["Mixer"] = threading.get_native_id()
    while True:
        t0 = time.thread_time()
        python_for(0.01)
        t1 = time.thread_time()
        hashlib.sha256(BUF).digest()  # @mixer_hash
        t2 = time.thread_time()
        with lock:
            acct["py"] += t1 - t0
            acct["hash"] += t2 - t1


def hash_only():
    tids["Hasher"] = threading.get_native_id()
    while True:
        hashlib.sha256(BUF).digest()  # @hasher_hash


def report(signum, frame):
    with lock:
        sys.stdout.write("ACCT %d %d %d %.6f %.6f\n" % (
            tids["Spinner"], tids["Mixer"], tids["Hasher"], acct["py"], acct["hash"]))
    sys.stdout.flush()


signal.signal(signal.SIGUSR1, report)
for name, fn in (("Spinner", spin), ("Mixer", mix), ("Hasher", hash_only)):
    threading.Thread(target=fn, name=name, daemon=True).start()
while len(tids) < 3:
    time.sleep(0.01)
print("READY", flush=True)
while True:
    time.sleep(0.05)
