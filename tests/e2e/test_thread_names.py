# SPDX-License-Identifier: MIT
"""Python thread names in record's outputs, against tests/targets/names_target.py started
with "late" (one more thread starts a second after pywalk attached), on every interpreter:

* pprof (decoded by go tool pprof): every thread's samples carry its Python name as
  thread_name, each name on the one thread whose stacks are its own (the busy thread's
  spin, the sleeper's sleep, ...), the late thread's included; its OS name as
  os_thread_name, as /proc has it; every off-CPU sample a block_reason label saying what its
  leaf pseudo-frame says, the deadlocked thread "sleeping" for its whole time.
* HTML thread filter and speedscope profiles (Debian's 3.11): "NAME (TID)" by Python name.
"""
import json
import re
import time

import pytest

import pywalk_e2e as e2e
import receivers as rc
from test_formats import go_bin  # noqa: F401

SECONDS = 3
# {Python name: the function of names_target.py its every stack is in}
OWN = {"MainThread": "<module>", "deadlocked": "deadlocked",
       "sleeper-with-a-name-longer-than-15": "sleeper", "busy": "spin",
       "ThreadPoolExecutor-0_0": "task", "renamed-\u00e9\u2713": "renamed",
       "late-starter": "late"}
BLOCK_RE = re.compile(r"^\[off-cpu: (sleeping|uninterruptible|preempted|other)\]$")


def record(interp, start_target, tmp_path, out, *args):
    t = start_target(interp, "late", script="names_target.py")
    path = str(tmp_path / out)
    r = e2e.run_pywalk(["record", "-p", t.pid, "--mode", "wall", "-d", SECONDS, "-o", path] +
                       list(args), timeout=120)
    assert r.returncode == 0, e2e.describe_run(r, path)
    assert "Python thread names" not in r.stderr, r.stderr  # no read failed
    return t, path, r


def test_pprof_thread_names_and_block_reasons(pywalk, interp, start_target, tmp_path,
                                              go_bin):  # noqa: F811
    t, path, r = record(interp, start_target, tmp_path, "wall.pb.gz")
    with open(path, "rb") as f:
        prof = rc.PprofDecoder(go_bin, str(tmp_path)).decode(f.read())
    comms = dict((tid, t.comm(tid)) for tid in t.tids())
    names, reasons = {}, {}
    for ns, stack, sl, nl in prof.stacks():
        tid, name = nl["tid"], sl.get("thread_name")
        assert name in OWN, (tid, sl)
        assert names.setdefault(tid, name) == name, (tid, names[tid], name)
        assert sl.get("os_thread_name") == comms[tid], (tid, sl, comms[tid])
        mine = [f for f in stack if f[1] == t.script_path]
        if not mine:  # a thread starting: threading's own frames, before its function
            assert all(f[1].endswith("threading.py") or BLOCK_RE.match(f[0])
                       for f in stack), (name, stack)
        assert not mine or mine[-1][0] == OWN[name], (name, stack)
        leaf = BLOCK_RE.match(stack[-1][0])
        assert sl.get("block_reason") == (leaf.group(1) if leaf else None), (stack[-1], sl)
        if leaf:
            by = reasons.setdefault(name, {})
            by[leaf.group(1)] = by.get(leaf.group(1), 0) + ns
    # every thread named, each name once, the main thread's on the main thread
    assert sorted(names.values()) == sorted(OWN), names
    assert names[t.pid] == "MainThread", names
    # waiting for ever on its lock: all its time is off CPU, asleep
    dead = reasons["deadlocked"]
    assert dead.get("sleeping", 0) >= 0.85 * SECONDS * 1e9, dead
    assert dead.get("sleeping", 0) == sum(dead.values()), dead


@pytest.mark.core_only
def test_html_and_speedscope_name_threads_by_python_name(pywalk, interp, start_target,
                                                         tmp_path):
    for out in ("wall.html", "wall.speedscope.json"):
        t, path, r = record(interp, start_target, tmp_path, out)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if out.endswith(".html"):
            data = json.loads(re.search(
                r'<script type="application/json" id="pywalk-data">(.*?)</script>', text,
                re.S).group(1))
            labels = [th[0] for th in data["threads"]]
        else:
            labels = [p["name"] for p in json.loads(text)["profiles"]]
        tids = t.tids()
        shown = {}
        for label in labels:
            m = re.match(r"^(.*) \((\d+)\)$", label)
            assert m and int(m.group(2)) in tids, (label, tids)
            shown[m.group(1)] = int(m.group(2))
        assert sorted(shown) == sorted(OWN), (out, labels)
        assert shown["MainThread"] == t.pid, (out, labels)


NAMES_RE = re.compile(r"Python thread names: .*\((\d+) memory reads\), (\d+) failed, \d+ found "
                      r"no threading module, (\d+) held back by the process's read budget")
# pywalk's budget of memory reads for one process's names: a scan's most at once, then
# this many a second
NAMES_READS_BURST, NAMES_READS_PER_S = 200000, 10000


@pytest.mark.core_only
def test_a_crafted_active_dict_gets_only_the_read_budget(pywalk, interp, start_target):
    # every scan of names_flood.py's _active costs the most one scan may read, and a new
    # thread wants its name every 50 ms: the scans get the budget, not the sampler
    t = start_target(interp, script="names_flood.py")
    seconds = 4
    start = time.monotonic()
    r = e2e.run_pywalk(["record", "-p", t.pid, "-d", seconds, "-o", "/dev/null"],
                       timeout=120)
    elapsed = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    m = NAMES_RE.search(r.stderr)
    assert m, r.stderr
    reads, failed, held_back = (int(x) for x in m.groups())
    budget = NAMES_READS_BURST + NAMES_READS_PER_S * elapsed
    print("%d memory reads in %.1f s (budget %d), %d scans failed, %d held back" % (
        reads, elapsed, budget, failed, held_back))
    assert NAMES_READS_BURST <= reads <= budget, (reads, budget, r.stderr)
    assert held_back >= 1, r.stderr
