# SPDX-License-Identifier: MIT
"""Known numbers of known calls, the ground truth for `pywalk trace`'s exact counts.

Usage: python3 trace_target.py MODE
  calls - prints READY, waits for SIGUSR1 (the tracer is attached), then makes the calls
          below, prints "CALLBACKS N" (how many times qsort called back into Python) and
          "TIDS A B" (the two threads), and exits
  gc    - no READY, no wait (launched by the tracer): gc.collect() N_GC times from
          gc_caller, with automatic collection off so that no other collection lands there
  sleep - prints READY, waits for SIGUSR1, then usleep(SLEEP_US) N_SLEEP times through
          ctypes from sleep_caller
  loop  - prints READY, then calls os.getpid() from spin_getpid until killed
  nested - prints READY, waits for SIGUSR1, then one qsort from nested_caller whose
          comparator (nested_compare) runs a qsort of its own each time; prints
          "CALLBACKS N"
  tls CERT KEY - a TLS connection over a socket pair (OpenSSL through the ssl module), the
          handshake made, prints READY, waits for SIGUSR1; then another thread writes
          N_TLS messages TLS_GAP_S apart and tls_reader reads each (SSL_read_ex)
  spread - prints READY, waits for SIGUSR1, then os.getpid() N_SPREAD times from
          spread_caller over SPREAD_S seconds: a run that outlasts trace --aggregate's
          drains

Each syscall or C function is called from one function that calls nothing else, so a
probe's stacks are known by their leaf: os.getpid from getpid_caller (and from
thread_worker in two threads, and from compare, a ctypes callback qsort calls), os.getppid
from getppid_caller, os.stat from stat_caller, os.write to fd WRITE_FD from write_caller
and to fd OTHER_FD from write_other, libc's labs through ctypes from labs_caller,
os.fork from fork_caller. Plain functions only: 3.10 names frames without qualnames.
Must run unmodified on CPython 3.10-3.15, stdlib only.
"""
import ctypes
import gc
import os
import signal
import sys
import threading
import time

N_GETPID = 1234
N_THREAD = 321      # per thread
N_GETPPID = 77
N_STAT = 345
N_WRITE = 67
N_OTHER = 45
N_LABS = 89
N_FORK = 5
N_GC = 7
N_SLEEP = 10
SLEEP_US = 20000
N_TLS = 10
TLS_GAP_S = 0.02
N_SPREAD = 12000
SPREAD_ROUNDS = 30
SPREAD_S = 3.0
QSORT_ITEMS = 16
WRITE_FD = 100
OTHER_FD = 101

libc = ctypes.CDLL("libc.so.6")
libc.labs.restype = ctypes.c_long
libc.labs.argtypes = [ctypes.c_long]
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
callbacks = 0


def getpid_caller():
    for _ in range(N_GETPID):
        os.getpid()


def getppid_caller():
    for _ in range(N_GETPPID):
        os.getppid()


def stat_caller():
    for _ in range(N_STAT):
        os.stat("/")


def write_caller():
    for _ in range(N_WRITE):
        os.write(WRITE_FD, b"x")


def write_other():
    for _ in range(N_OTHER):
        os.write(OTHER_FD, b"y")


def labs_caller():
    for i in range(N_LABS):
        libc.labs(-i)


def fork_caller():
    for _ in range(N_FORK):
        pid = os.fork()
        if not pid:
            os._exit(0)
        os.waitpid(pid, 0)


def thread_worker(tids, i):
    tids[i] = threading.get_native_id()
    for _ in range(N_THREAD):
        os.getpid()


def compare(a, b):
    global callbacks
    callbacks += 1
    os.getpid()
    return a[0] - b[0]


# made before tracing: libffi may call getpid when it allocates the closure
COMPARE = CMP(compare)


def callback_caller():
    arr = (ctypes.c_int * QSORT_ITEMS)(*range(QSORT_ITEMS, 0, -1))
    libc.qsort(arr, QSORT_ITEMS, ctypes.sizeof(ctypes.c_int), COMPARE)


def inner_compare(a, b):
    return a[0] - b[0]


INNER = CMP(inner_compare)


def nested_compare(a, b):
    """Sorts a small array of its own: a qsort inside the outer qsort, same thread."""
    global callbacks
    callbacks += 1
    arr = (ctypes.c_int * 3)(3, 1, 2)
    libc.qsort(arr, 3, ctypes.sizeof(ctypes.c_int), INNER)
    return a[0] - b[0]


NESTED = CMP(nested_compare)


def nested_caller():
    arr = (ctypes.c_int * QSORT_ITEMS)(*range(QSORT_ITEMS, 0, -1))
    libc.qsort(arr, QSORT_ITEMS, ctypes.sizeof(ctypes.c_int), NESTED)


def gc_caller():
    for _ in range(N_GC):
        gc.collect()


def sleep_caller():
    for _ in range(N_SLEEP):
        libc.usleep(SLEEP_US)


def tls_reader(conn):
    for _ in range(N_TLS):
        conn.recv(16)  # waits in SSL_read_ex for the writer's next message


def tls(cert, key):
    import socket
    import ssl
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # threads inherit it
    a, b = socket.socketpair()
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.check_hostname = False
    cctx.verify_mode = ssl.CERT_NONE
    go = threading.Event()

    def writer():
        srv = sctx.wrap_socket(a, server_side=True)
        go.wait()
        for _ in range(N_TLS):
            time.sleep(TLS_GAP_S)
            srv.sendall(b"message!")

    th = threading.Thread(target=writer)
    th.start()
    cli = cctx.wrap_socket(b, server_hostname="localhost")
    wait_go()
    go.set()
    tls_reader(cli)
    th.join()


def spread_caller():
    for _ in range(SPREAD_ROUNDS):
        for _ in range(N_SPREAD // SPREAD_ROUNDS):
            os.getpid()
        time.sleep(SPREAD_S / SPREAD_ROUNDS)


def spin_getpid():
    while True:
        os.getpid()


def wait_go():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print("READY", flush=True)
    signal.sigwait({signal.SIGUSR1})


def calls():
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, WRITE_FD)
    os.dup2(devnull, OTHER_FD)
    wait_go()
    getpid_caller()
    getppid_caller()
    stat_caller()
    write_caller()
    write_other()
    labs_caller()
    fork_caller()
    tids = [0, 0]
    threads = [threading.Thread(target=thread_worker, args=(tids, i)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    callback_caller()
    print("CALLBACKS %d" % callbacks, flush=True)
    print("TIDS %d %d" % tuple(tids), flush=True)


def main():
    mode = sys.argv[1]
    if mode == "calls":
        calls()
    elif mode == "gc":
        gc.disable()
        gc_caller()
    elif mode == "sleep":
        wait_go()
        sleep_caller()
    elif mode == "loop":
        print("READY", flush=True)
        spin_getpid()
    elif mode == "tls":
        tls(sys.argv[2], sys.argv[3])
    elif mode == "spread":
        wait_go()
        spread_caller()
    elif mode == "nested":
        wait_go()
        nested_caller()
        print("CALLBACKS %d" % callbacks, flush=True)
    else:
        sys.exit("unknown mode %r" % mode)


if __name__ == "__main__":
    main()
