# SPDX-License-Identifier: MIT
"""A process that never imports asyncio; sleeps after READY. argv: [LIBRARY]: a shared
library loaded first with ctypes (tests load one with a forged asyncio table)."""
import sys
import time

if len(sys.argv) > 1:
    import ctypes
    ctypes.CDLL(sys.argv[1])
print("READY", flush=True)
while True:
    time.sleep(1)
