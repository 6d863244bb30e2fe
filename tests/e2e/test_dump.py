# SPDX-License-Identifier: MIT
"""pywalk dump against tests/targets/offcpu_target.py on every interpreter: every thread's
stack of one instant, exact (qualname, file and line of every frame, innermost first), each
thread under its own tid with its state and wait channel; the process runs on afterwards,
untraced; --json parses and says the same; --nonblocking reads without pausing; a thread
name with terminal escapes is printed inert; bad input fails with one clear line.
Against tests/targets/names_target.py: each thread's Python name (threading's, read from the
target) beside its OS name, with its exact stack and state."""
import json
import os
import re

import pytest

import pywalk_e2e as e2e
from pywalk_e2e import ks

FRAME_RE = re.compile(r"^    (.+) \((.+):(\d+)\)$")
THREAD_RE = re.compile(r'^Thread (\d+) "(.*?)"(?:, Python "(.*)")? \((.+?)\):?$')


def WAITS(script, m):
    """Where each thread other than the main one can be: (function, file, line)."""
    return {(fn, script, m[mark]) for fn, mark in (
        ("nap", "nap_sleep"), ("waiter", "wait_lock"), ("stuck", "stuck_lock"),
        ("reader", "reader_recv"), ("feeder", "feeder_sleep"), ("feeder", "feeder_send"),
        ("selector", "selector_select"))}


def parse_text(out):
    """{tid: (name, state text, [(function, file, line)] innermost first, Python name)}"""
    threads, cur = {}, None
    for line in out.splitlines():
        m = THREAD_RE.match(line)
        if m:
            cur = int(m.group(1))
            threads[cur] = (m.group(2), m.group(4), [], m.group(3))
            continue
        f = FRAME_RE.match(line)
        if f and cur is not None:
            threads[cur][2].append((f.group(1), f.group(2), int(f.group(3))))
    return threads


def check_threads(threads, t, m):
    """The three threads of the target, each exactly where it can be."""
    tids = sorted(int(x) for x in os.listdir("/proc/%d/task" % t.pid))
    assert sorted(threads) == tids, (sorted(threads), tids)
    script = t.script_path
    seen = set()
    for tid, (name, state, frames, *_) in threads.items():
        assert frames, (tid, state)
        leaf, root = frames[0], frames[-1]
        if tid == t.pid:
            assert root[:1] == ("<module>",) and root[1] == script, frames
            assert (leaf[0], leaf[2]) in (("<module>", m["main_sleep"]),) or (
                leaf[0] == "busy" and m["busy"] - 3 <= leaf[2] <= m["busy"] + 2), frames
            if leaf[0] == "busy":
                assert frames[1] == ("<module>", script, m["main_busy"]), frames
            seen.add("main")
        else:
            assert root[0].endswith("_bootstrap"), frames
            assert (leaf[0], leaf[1], leaf[2]) in WAITS(script, m), frames
            assert frames[1][0].endswith("run"), frames  # Thread.run (3.10: run)
            seen.add(leaf[0])
            if leaf[0] == "stuck":
                # deadlocked on the lock: asleep in the kernel's futex wait (but for a
                # moment after each pause, which restarts the wait)
                assert state.startswith("sleeping"), (leaf, state)
            else:
                # the others wake every 0.2-0.4 s, and a woken thread runs (or waits for a
                # CPU: runnable, also 'R') at its wait's line before it waits again, which
                # takes long on a loaded machine: asleep, or caught just woken
                assert state.startswith(("sleeping", "running")), (leaf, state)
    assert seen == {"main", "nap", "waiter", "stuck", "reader", "feeder", "selector"}, seen


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return None


def main_in_its_loop(t, timeout=10.0):
    """Wait until the target's main thread has been seen asleep in its loop's sleep: its
    first wait that is not a futex (a lock or the GIL) after READY."""
    e2e.wait_for(lambda: e2e.task_state(t.pid, t.pid)[0] == "S" and
                 not e2e.task_state(t.pid, t.pid)[1].startswith("futex"), timeout,
                 lambda: "main thread of %d not asleep in its loop: %s" % (
                     t.pid, e2e.task_state(t.pid, t.pid)))


def all_asleep(t, timeout=10.0):
    """Wait until one look at /proc sees every thread but the main one asleep, so that a
    dump usually finds them so (one woken meanwhile is still a possible state)."""
    def states():
        return dict((tid, e2e.task_state(t.pid, tid)) for tid in t.tids() if tid != t.pid)
    e2e.wait_for(lambda: all(st == "S" for st, _ in states().values()), timeout,
                 lambda: "threads of %d not all asleep: %s" % (t.pid, states()))


def test_dump_every_thread_exactly(pywalk, interp, start_target):
    m = e2e.markers("offcpu_target.py")
    t = start_target(interp, script="offcpu_target.py")
    main_in_its_loop(t)
    all_asleep(t)
    r = e2e.run_pywalk(["dump", "-p", t.pid])
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0]
    # 3.10 does not record its micro version: it is not guessed
    shown = "3.10" if interp.version == "3.10" else interp.full_version
    assert re.match(r"^Process %d \(.+\), CPython %s, 7 threads:$" % (
        t.pid, re.escape(shown)), head), head
    check_threads(parse_text(r.stdout), t, m)
    # it runs on, and nobody traces it any more
    assert status(t.pid, "TracerPid") == "0"
    # it goes on running: its threads' CPU time grows (the main thread is busy 30 %)
    cpu0 = e2e.task_cpu_seconds(t.pid)
    e2e.wait_for(lambda: e2e.task_cpu_seconds(t.pid) > cpu0, 10.0,
                 lambda: "PID %d used no CPU after the dump, state %s" % (
                     t.pid, status(t.pid, "State")))
    assert status(t.pid, "State")[0] in "RS", status(t.pid, "State")
    assert t.proc.poll() is None


def test_dump_json_and_nonblocking(pywalk, interp, start_target):
    m = e2e.markers("offcpu_target.py")
    t = start_target(interp, script="offcpu_target.py")
    main_in_its_loop(t)
    for extra in ([], ["--nonblocking"]):
        all_asleep(t)  # the stuck thread too, after the first dump restarted its wait
        r = e2e.run_pywalk(["dump", "-p", t.pid, "--json"] + extra)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        (p,) = doc["processes"]
        assert p["pid"] == t.pid and p["paused"] == (not extra), p
        threads = {}
        for th in p["threads"]:
            assert th["status"] == "ok", th
            threads[th["tid"]] = (th["name"], "sleeping" if th["state"] == "S" else th["state"],
                                  [(f["function"], f["file"], f["line"]) for f in th["frames"]])
        check_threads(threads, t, m)


@pytest.mark.core_only
def test_dump_escapes_a_hostile_thread_name(pywalk, interp):
    # only a thread itself may rename itself: the target's nap thread does, with prctl
    t = e2e.Target(interp, "offcpu_target.py",
                   argv=["env", "HOSTILE_COMM=1"] + interp.argv("offcpu_target.py"))
    try:
        t.wait_ready()
        _check_hostile(t)
    finally:
        t.stop()


def _check_hostile(t):
    for args in ([], ["--json"]):
        r = e2e.run_pywalk(["dump", "-p", t.pid] + args)
        assert r.returncode == 0, r.stderr
        assert "\x1b" not in r.stdout and "\x07" not in r.stdout, repr(r.stdout)
    assert "\\x1b[2J" in e2e.run_pywalk(["dump", "-p", t.pid]).stdout


def test_dump_bad_input(pywalk, tmp_path):
    cases = [(["dump"], 2, "give the process to dump: -p PID"),
             (["dump", "-p", "x"], 2, "invalid PID list 'x'"),
             (["dump", "-p", "999999999"], 1, "999999999"),
             (["dump", "-p", str(os.getpid()), "--max-depth", "0"], 2, "invalid --max-depth")]
    for args, rc, msg in cases:
        r = e2e.run_pywalk(args)
        assert r.returncode == rc and msg in r.stderr, (args, r.returncode, r.stderr)
    sleeper = e2e.subprocess.Popen(["sleep", "30"])
    try:
        r = e2e.run_pywalk(["dump", "-p", sleeper.pid])
        assert r.returncode == 1 and "not a Python process" in r.stderr, r.stderr
    finally:
        sleeper.kill()
        sleeper.wait()


def possible(stack, chains):
    """Can the program be at `stack` (root first) at some instant? Every caller exactly at
    its call line in one of the chains, the innermost frame anywhere in its function."""
    for chain in chains:
        if not stack or len(stack) > len(chain):
            continue
        if all(ks.frame_matches(f, w) for f, w in zip(stack[:-1], chain)) and \
                stack[-1][0] == chain[len(stack) - 1].qualname:
            return True
    return False


def test_dumps_of_a_busy_program_are_always_possible(pywalk, interp, start_target):
    """20 dumps in a row of the known-shape workload (two threads busy all the time,
    stacks 3-30 deep changing every few microseconds): every stack printed is one the
    program can have. Paused, every thread has one; not paused, a running thread cannot be
    read as one instant and is said to have run while read, never printed torn."""
    t = start_target(interp)
    expected = ks.expected_stacks(interp.version, t.script_path)
    chains = {tid: list(expected[ks.MAIN if tid == t.pid else ks.WORKER].values())
              for tid in t.tids()}
    shown = rejected = 0
    for i in range(20):
        args = ["dump", "-p", t.pid, "--json"] + (["--nonblocking"] if i % 2 else [])
        r = e2e.run_pywalk(args)
        assert r.returncode == 0, r.stderr
        (p,) = json.loads(r.stdout)["processes"]
        assert sorted(th["tid"] for th in p["threads"]) == sorted(chains), p
        for th in p["threads"]:
            if th["status"] != "ok":
                # never a partial stack: a thread that ran while it was read (not
                # paused: these two always run) is shown without frames
                assert not th["frames"] and i % 2 and th["status"] == "ran while read", th
                rejected += 1
                continue
            stack = [(f["function"], f["file"], f["line"]) for f in reversed(th["frames"])]
            assert possible(stack, chains[th["tid"]]), "dump %d, thread %d: %s" % (
                i, th["tid"], ks.format_stack(stack))
            shown += 1
    print("%s: %d stacks shown, %d rejected (not paused) in 20 dumps" % (
        interp, shown, rejected))
    assert shown >= 20, (shown, rejected)


# names_target.py: {Python name: (OS name on 3.14+ (None: the process's), function names
# root first below the leaf's (suffixes: 3.10 has no qualnames), leaf function, marker)}
THREADING = ("_bootstrap", "_bootstrap_inner", "run")
NAMED = {
    "MainThread": (None, (), "<module>", "main_sleep"),
    "deadlocked": ("deadlocked", THREADING, "deadlocked", "dead_lock"),
    "sleeper-with-a-name-longer-than-15": ("sleeper-with-a-", THREADING, "sleeper",
                                           "sleeper_sleep"),
    "busy": ("busy", THREADING, "spin", "spin"),
    "ThreadPoolExecutor-0_0": ("ThreadPoolExecu", THREADING + ("_worker", "run"), "task",
                               "task_sleep"),
    "renamed-\u00e9\u2713": ("before-rename", THREADING, "renamed", "renamed_sleep"),
}


def check_named(threads, t, interp, m):
    """{tid: (OS name, state text, frames leaf first, Python name)}: every thread under its
    Python name, at its exact place, with its OS name and state."""
    with open("/proc/%d/comm" % t.pid) as f:
        comm = f.read().rstrip("\n")
    assert sorted(threads) == sorted(t.tids()), (sorted(threads), t.tids())
    by_name = {}
    for tid, (os_name, state, frames, py_name) in threads.items():
        assert py_name in NAMED, (tid, os_name, py_name)
        by_name[py_name] = (tid, os_name, state, frames)
    assert sorted(by_name) == sorted(NAMED), sorted(by_name)
    assert by_name["MainThread"][0] == t.pid
    modern = tuple(int(x) for x in interp.version.split(".")) >= (3, 14)
    for py_name, (tid, os_name, state, frames) in by_name.items():
        want_os, below, leaf_fn, mark = NAMED[py_name]
        # the OS name tells the long name and the renamed thread apart from their Python
        # names on every version: cut to 15 bytes, or the name it had when it started
        assert os_name == (want_os if modern and want_os else comm), (py_name, os_name)
        if py_name.startswith("ThreadPoolExecutor") and modern:
            below = below + ("WorkerContext.run",)  # 3.14+: the worker's context runs it
        fns = [f[0] for f in reversed(frames)]
        assert len(fns) == len(below) + 1, (py_name, frames)
        assert all(fn.endswith(w) for fn, w in zip(fns, below)), (py_name, frames)
        leaf = frames[0]
        assert leaf[0] == leaf_fn and leaf[1] == t.script_path, (py_name, frames)
        if py_name == "busy":
            # anywhere in its loop; running, or waiting a moment for the GIL
            assert m["spin"] - 2 <= leaf[2] <= m["spin"] + 1, frames
            assert state.startswith(("running", "sleeping in futex")), state
        else:
            assert leaf[2] == m[mark], (py_name, frames)
            if py_name == "deadlocked":
                assert state.startswith("sleeping in futex"), state  # on its lock
            else:
                # in its sleep; or, for a moment, just woken (still at its sleep's line)
                assert state.startswith(("sleeping", "running")), (py_name, state)


def test_dump_python_thread_names(pywalk, interp, start_target):
    m = e2e.markers("names_target.py")
    t = start_target(interp, script="names_target.py")
    main_in_its_loop(t)
    r = e2e.run_pywalk(["dump", "-p", t.pid])
    assert r.returncode == 0, r.stderr
    assert "Python thread names" not in r.stdout, r.stdout  # nothing missing
    check_named(parse_text(r.stdout), t, interp, m)
    r = e2e.run_pywalk(["dump", "-p", t.pid, "--json"])
    assert r.returncode == 0, r.stderr
    (p,) = json.loads(r.stdout)["processes"]
    assert p["python_names"] == {"threads": 6, "named": 6, "unreadable": 0}, p["python_names"]
    check_named({th["tid"]: (th["name"], "sleeping in " + th["wchan"] if th["state"] == "S" else
                             "running" if th["state"] == "R" else th["state"],
                             [(f["function"], f["file"], f["line"]) for f in th["frames"]],
                             th["python_name"]) for th in p["threads"]}, t, interp, m)


def task_state(pid, tid):
    try:
        with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def _all_running(t, deadline_s=10.0):
    """Every thread of t untraced and not stopped, within a bounded wait (a detached thread
    leaves its stop as it is scheduled)."""
    def stopped():
        return [tid for tid in t.tids() if task_state(t.pid, tid) in ("t", "T")]

    e2e.wait_for(lambda: status(t.pid, "TracerPid") == "0" and not stopped(), deadline_s,
                 lambda: "PID %d left traced (TracerPid %s) or with stopped threads: %s" % (
                     t.pid, status(t.pid, "TracerPid"), stopped()[:10]))


@pytest.mark.core_only
@pytest.mark.parametrize("extra", [[], ["--nonblocking"]])
def test_dump_refuses_more_threads_than_it_holds(pywalk, interp, extra):
    # 4,097 threads: one more than dump pauses; refused in one line, the process untouched
    t = e2e.Target(interp, "many_threads.py", args=["4097"])
    try:
        t.wait_ready(timeout=60)
        assert len(t.tids()) == 4097, len(t.tids())
        r = e2e.run_pywalk(["dump", "-p", t.pid] + extra, timeout=120)
        assert r.returncode == 1, (r.returncode, r.stdout[:300], r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "more than 4096 threads" in lines[0], r.stderr
        assert t.proc.poll() is None
        _all_running(t)
    finally:
        t.stop()


@pytest.mark.core_only
def test_dump_holds_as_many_threads_as_it_can(pywalk, interp):
    # the bound is exact: 4,096 threads are all paused and shown, then resumed
    t = e2e.Target(interp, "many_threads.py", args=["4096"])
    try:
        t.wait_ready(timeout=60)
        r = e2e.run_pywalk(["dump", "-p", t.pid], timeout=120)
        assert r.returncode == 0, r.stderr
        head = r.stdout.splitlines()[0]
        assert head.endswith(", 4096 threads:"), head
        assert sorted(parse_text(r.stdout)) == t.tids()
        _all_running(t)
    finally:
        t.stop()
