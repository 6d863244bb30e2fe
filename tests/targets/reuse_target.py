# SPDX-License-Identifier: MIT
"""Code objects that live for a few milliseconds each, so their addresses are freed and
reused all the time: function f<i> (a copy of one template made with code.replace, so the
allocator hands the freed block straight back) reports file gen_<i>.py, runs ~5 ms and is
dropped. A profiler that caches symbols by address alone names later functions after
earlier ones."""
import time
import types

SRC = "def f():\n    acc = 0\n    for k in range(N): acc = (acc + k) & 0xFFFF\n    return acc\n"


def calibrate(f, g):
    n = 20000
    while True:
        g["N"] = n
        t = time.perf_counter()
        f()
        if time.perf_counter() - t > 0.005:
            return
        n *= 2


ns = {}
exec(compile(SRC, "template.py", "exec"), ns)
template = ns["f"].__code__
calibrate(ns["f"], ns)
print("READY", flush=True)
i = 0
while True:
    name = "f%d" % i
    kw = {"co_name": name, "co_filename": "gen_%d.py" % i}
    if hasattr(template, "co_qualname"):
        kw["co_qualname"] = name
    fn = types.FunctionType(template.replace(**kw), ns)
    fn()  # @call
    del fn
    i += 1
