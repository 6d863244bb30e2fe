# SPDX-License-Identifier: MIT
"""A process of N threads in all (the main one included), every one but main blocked on an
Event, for as long as it runs.

Usage: python3 many_threads.py N

Prints READY (flushed) once all N threads exist. Small stacks keep 4,097 threads cheap."""
import sys
import threading
import time


def main():
    total = int(sys.argv[1])
    threading.stack_size(128 * 1024)
    never = threading.Event()
    threads = [threading.Thread(target=never.wait, daemon=True) for _ in range(total - 1)]
    for t in threads:
        t.start()
    print("READY", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
