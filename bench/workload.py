# SPDX-License-Identifier: MIT
# The benchmark workload: CPU-bound, a fixed amount of work, and a known shape. Runs on
# CPython 3.6+ (the peers' interpreters too); imports only the standard library.
#
#   split  --units N          phase_a / phase_b share one leaf (spin) in a 70/30 split of
#                             equal work units; reports the CPU time each phase really took
#   depth  --depth D          D Python frames deep, then spins in place forever: the frame
#                             chain does not change while it spins (no Python calls)
#   depth  --depth D --syscalls  the same, its one frame calling os.getppid() in a loop:
#                             most samples land in the kernel (the --kernel cost)
#   stacks --stacks 1000      cycles through 1,000 distinct 5-frame stacks until killed
#   progress --cpu C          pinned to CPU C, counts loop iterations for ever; each SIGUSR1
#                             prints "ITERATIONS THREAD_CPU_NS" (the paired bystander bench)
#   calls  --calls N          10 Python frames deep, prints "ready PID", waits for a line
#                             on stdin, calls os.getpid() N times (a probe hit each) and
#                             prints "done NS", the thread CPU time of those calls
#   asyncio --depth D --awaiters A  (3.14+ for --async) an event loop whose one running
#                             task is D coroutine frames deep and spins there for ~0.25 s
#                             between yields, awaited by a chain of A tasks of 3 coroutine
#                             frames each: nearly every sample is a running task's, with
#                             the same chain and the same stack (the --async cost)
#
# Protocol (split): with --wait-go it prints "ready PID" and waits for a line on stdin
# before working, so a profiler can attach first; after the work it prints one JSON line
# and, with --linger, waits for stdin to close so the profiler can still read its maps.
import json
import os
import sys
import threading
import time

A_UNITS, B_UNITS = 7, 3  # the known split: 70 % phase_a, 30 % phase_b
UNIT = 20000  # spin iterations per unit (~1 ms on a 2020s x86 core)


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def phase_a(units):
    for _ in range(units):
        spin(UNIT)


def phase_b(units):
    for _ in range(units):
        spin(UNIT)


def idle_wait(read):
    # Blocked outside the measured work; wall-clock samplers (austin) see this frame, and
    # the harness leaves such samples out of every profiler's count.
    read()


def run_split(rounds):
    clock = time.process_time_ns
    a_ns = b_ns = 0
    wall0, cpu0 = time.perf_counter_ns(), clock()
    for _ in range(rounds):
        t0 = clock()
        phase_a(A_UNITS)
        t1 = clock()
        phase_b(B_UNITS)
        t2 = clock()
        a_ns += t1 - t0
        b_ns += t2 - t1
    cpu_ns, wall_ns = clock() - cpu0, time.perf_counter_ns() - wall0
    return {
        "cpu_ns": cpu_ns,
        "wall_ns": wall_ns,
        "a_ns": a_ns,
        "b_ns": b_ns,
        "rounds": rounds,
        "version": "%d.%d.%d" % sys.version_info[:3],
    }


def spin_forever():
    # One frame, no calls that push Python frames: the chain above it stays as it is.
    while True:
        x = 0
        for i in range(100000):
            x += i


def syscall_forever():
    # One frame; os.getppid is a C function, so the chain above stays as it is too.
    getppid = os.getppid
    while True:
        getppid()


def descend(n):
    if n > 1:
        return descend(n - 1)
    say("ready %d" % os.getpid())
    (syscall_forever if "--syscalls" in sys.argv else spin_forever)()


def run_depth(depth):
    # <module>, main, run_depth, (depth - 4) x descend, spin_forever: depth Python frames
    if depth < 5:
        raise SystemExit("workload: --depth must be at least 5")
    sys.setrecursionlimit(depth + 100)
    descend(depth - 4)


def call_getpid(n, calls):
    # <module>, main, run_calls and 7 x call_getpid (the loop in the last): 10 Python frames
    if n > 1:
        return call_getpid(n - 1, calls)
    say("ready %d" % os.getpid())
    sys.stdin.readline()
    getpid, t0 = os.getpid, time.thread_time_ns()
    for _ in range(calls):
        getpid()
    say("done %d" % (time.thread_time_ns() - t0))


def run_calls(calls):
    call_getpid(7, calls)


STRETCH = 5000000  # spin iterations between two yields of the asyncio mode (~0.25 s)


async def burn_deep(n, started):
    # n coroutine frames, each awaiting the next; the last spins, yielding now and then
    if n > 1:
        return await burn_deep(n - 1, started)
    import asyncio

    await started.wait()  # every awaiter of the chain awaits its task by now
    say("ready %d" % os.getpid())
    while True:
        x = 0
        for i in range(STRETCH):
            x += i
        await asyncio.sleep(0)


async def await_task(n, task):
    # 3 coroutine frames each (n = 3): awaits the task below it in the chain
    if n > 1:
        return await await_task(n - 1, task)
    await task


async def run_asyncio(depth, awaiters):
    """The running task (`depth` coroutine frames) awaited by `awaiters` tasks in a chain,
    each awaiting the one created before it; main awaits none of them."""
    import asyncio

    started = asyncio.Event()
    task = asyncio.create_task(burn_deep(depth, started), name="burner")
    for i in range(awaiters):
        task = asyncio.create_task(await_task(3, task), name="awaiter-%d" % (i + 1))
    for _ in range(3):  # every task has run once: each awaiter awaits its task
        await asyncio.sleep(0)
    started.set()
    await asyncio.Event().wait()


def make_stacks(n):
    """n distinct stacks: top(i) -> mid(j) -> leaf(k) over fanouts whose product is >= n,
    each a separate code object so each stack symbolizes differently."""
    fan = 1
    while fan**3 < n:
        fan += 1
    src = []
    for k in range(fan):
        src.append("def leaf%d(n):\n    for _ in range(n): pass\n" % k)
    for j in range(fan):
        src.append("def mid%d(k, n):\n    return LEAF[k](n)\n" % j)
    for i in range(fan):
        src.append("def top%d(j, k, n):\n    return MID[j](k, n)\n" % i)
    ns = {}
    exec(compile("".join(src), "<bench-stacks>", "exec"), ns)
    ns["LEAF"] = [ns["leaf%d" % k] for k in range(fan)]
    ns["MID"] = [ns["mid%d" % j] for j in range(fan)]
    tops = [ns["top%d" % i] for i in range(fan)]
    paths = [(i, j, k) for i in range(fan) for j in range(fan) for k in range(fan)][:n]
    return tops, paths


def run_stacks(n, seconds):
    tops, paths = make_stacks(n)
    say("ready %d" % os.getpid())
    end = time.monotonic() + seconds if seconds else None
    while end is None or time.monotonic() < end:
        for i, j, k in paths:
            tops[i](j, k, 200)


def run_switches(seconds, depth):
    """Two threads hand a byte back and forth over two pipes, 10 frames deep: every round
    is two switch-outs (each thread blocks in os.read), tens of thousands a second."""
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()

    def echo():
        while os.read(r1, 1):
            os.write(w2, b"x")

    def ping(d, end):
        if d > 1:
            return ping(d - 1, end)
        n = 0
        while time.monotonic() < end:
            for _ in range(100):
                os.write(w1, b"x")
                os.read(r2, 1)
            n += 100
        return n

    threading.Thread(target=echo, daemon=True).start()
    say("ready %d" % os.getpid())
    sys.stdin.readline()
    t0 = time.monotonic()
    n = ping(depth, t0 + seconds)
    say(json.dumps({"rounds": n, "seconds": time.monotonic() - t0}))


def run_progress(cpu):
    """A counter that only advances while this process runs: two copies pinned to one CPU
    share it evenly, so the ratio of their counts is what the sampling cost each of them."""
    import signal

    os.sched_setaffinity(0, {cpu})
    n = [0]
    signal.signal(signal.SIGUSR1, lambda *_: say("%d %d" % (n[0], time.thread_time_ns())))
    say("ready %d" % os.getpid())
    while True:
        for _ in range(10000):
            pass
        n[0] += 1


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def arg(name, default):
    if name in sys.argv:
        return int(sys.argv[sys.argv.index(name) + 1])
    return default


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "split"
    if mode == "depth":
        run_depth(arg("--depth", 100))
    elif mode == "switches":
        run_switches(arg("--seconds", 3), arg("--depth", 10))
    elif mode == "progress":
        run_progress(arg("--cpu", 0))
    elif mode == "calls":
        run_calls(arg("--calls", 100000))
    elif mode == "asyncio":
        import asyncio

        asyncio.run(run_asyncio(arg("--depth", 10), arg("--awaiters", 2)))
    elif mode == "stacks":
        run_stacks(arg("--stacks", 1000), arg("--seconds", 0))
    elif mode == "split":
        rounds = arg("--units", 1000) // (A_UNITS + B_UNITS)
        if "--wait-go" in sys.argv:
            say("ready %d" % os.getpid())
            idle_wait(sys.stdin.readline)
        say(json.dumps(run_split(max(rounds, 1))))
        if "--linger" in sys.argv:
            idle_wait(sys.stdin.read)
    else:
        raise SystemExit("workload: unknown mode %r (split, depth, stacks, calls, progress, "
                         "asyncio)" % mode)


if __name__ == "__main__":
    main()
