# SPDX-License-Identifier: MIT
"""pywalk dump --async against tests/targets/async_shape.py (3.14+): every task, running or
suspended, with the same names and await edges as CPython's own `python -m asyncio ps` and
`pstree` say for the same process, and each coroutine chain with its exact lines; 1,000
idle tasks all listed; 100,000 capped, counted and said, in bounded time; the running task
shown from its thread's own frames. Bad input: --async on 3.10-3.13 (refused, exit 2), a
process that never imports asyncio (no tasks, no error), a forged table with impossible
sizes (rejected, counted)."""
import copy
import json
import os
import re
import subprocess
import time

import pytest

import pywalk_e2e as e2e

SCRIPT = "async_shape.py"
TASK_RE = re.compile(r'^Task (0x[0-9a-f]+) "(.*?)" \((.*?)\)(?:, awaited by (.*))?:$')
FRAME_RE = re.compile(r"^    (.+) \((.+):(\d+)\)$")
AWAITER_RE = re.compile(r'(0x[0-9a-f]+)(?: "(.*?)")?')

# (task name or None for gather's unnamed children, its coroutines innermost first, in the
# script only: name and marker)
NAMED = {
    "Task-1": ["main"],
    "nested": ["leaf", "level3", "level2", "level1"],
    "gatherer": ["gather_parent"],
    "grouper": ["taskgroup_parent"],
    "shielder": ["shield_parent"],
    "shielded-inner": ["shielded"],
    "awaited-task": ["awaited"],
    "awaiter-task": ["awaiter"],
    "tg-child-0": ["tg_child"],
    "tg-child-1": ["tg_child"],
    "other-loop": ["other_wait"],
}
EDGES = {("gatherer", "gathered"), ("grouper", "tg-child-0"), ("grouper", "tg-child-1"),
         ("shielder", "shielded-inner"), ("awaiter-task", "awaited-task"),
         ("second_main", "other-loop")}
# the tasks of the second loop, in thread "loop-2"
SECOND_LOOP = {"second_main", "other-loop"}


RELEASE_314 = os.path.join(os.environ.get("PYWALK_CACHE") or "/var/cache/pywalk",
                           "cpython-3.14.7", "bin", "python3.14")


def need_314(interp):
    if interp.version not in ("3.14", "3.15"):
        pytest.skip("asyncio task tables exist from 3.14 on")


def start(interp, *args, script=SCRIPT):
    """The target, with a procfs in its own mount namespace when it runs in a chroot, so
    that CPython's own reader can be run beside it (nsenter) against the same process."""
    if interp.root:
        interp = copy.copy(interp)
        interp.proc_ns = True
    return e2e.Target(interp, script, args).wait_ready()


def asyncio_tool(interp, t, what):
    """`python -m asyncio ps|pstree PID` of the same interpreter, where the target runs."""
    argv = [interp.exe, "-m", "asyncio", what, str(t.pid)]
    if interp.root:
        argv = ["nsenter", "-m", "-t", str(t.pid), "chroot", interp.root] + argv
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, (argv, r.stdout.decode()[-2000:], r.stderr.decode()[-2000:])
    return r.stdout.decode()


def parse_ps(text):
    """{task id: name}, {(awaiter id, task id)} from `python -m asyncio ps`."""
    names, edges = {}, set()
    for line in text.splitlines()[2:]:
        tok = line.split()
        if not tok:
            continue
        names[int(tok[1], 16)] = tok[2]
        if tok[-1] != "0x0":
            edges.add((int(tok[-1], 16), int(tok[1], 16)))
    return names, edges


def parse_pstree(text):
    """{(awaiter task name, task name)} and every task name, from `pstree`'s tree."""
    edges, names, stack = set(), set(), []
    for line in text.splitlines():
        m = re.match(r"^((?:[│ ]   )*)[└├]── (\(T\) )?(.*)$", line)
        assert m, line
        depth = len(m.group(1)) // 4
        del stack[depth:]
        is_task = bool(m.group(2))
        stack.append((is_task, m.group(3)))
        if is_task:
            names.add(m.group(3))
            parents = [n for k, n in stack[:-1] if k]
            if parents:
                edges.add((parents[-1], m.group(3)))
    return names, edges


def parse_dump(text):
    """{task id: (name, where, [awaiter ids], [(function, file, line)])}"""
    tasks, cur = {}, None
    for line in text.split("\nasyncio: ", 1)[1].splitlines()[1:]:
        m = TASK_RE.match(line)
        if m:
            cur = int(m.group(1), 16)
            awaiters = [int(a, 16) for a, _ in AWAITER_RE.findall(m.group(4) or "")]
            tasks[cur] = (m.group(2), m.group(3), awaiters, [])
            continue
        f = FRAME_RE.match(line)
        if f and cur is not None:
            tasks[cur][3].append((f.group(1), f.group(2), int(f.group(3))))
    return tasks


def dump_async(t, *extra):
    r = e2e.run_pywalk(["dump", "--async", "-p", t.pid] + list(extra), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def check_shape(tasks, t, idle):
    """Every task of the program once, named, in its loop's thread, awaited by whom it is,
    each coroutine chain exactly at its lines."""
    m = e2e.markers(SCRIPT)
    (loop2,) = [tid for tid in t.tids() if tid != t.pid]

    def role(k):
        """the task's name, or for asyncio's unnamed tasks the coroutine they run"""
        name, _, _, frames = tasks[k]
        mine = [f[0] for f in frames if f[1] == t.script_path]
        if mine in (["gathered"], ["second_main"]):
            return mine[0]
        return name

    by_role = {}
    for k, (name, where, awaiters, frames) in tasks.items():
        r = role(k)
        by_role.setdefault(r, []).append(k)
        assert where == "thread %d" % (loop2 if r in SECOND_LOOP else t.pid), (name, where)
    assert len(by_role.pop("gathered", [])) == 3, sorted(by_role)
    assert len(by_role.pop("second_main", [])) == 1, sorted(by_role)
    assert len(tasks) == len(NAMED) + 4 + idle, (len(tasks), sorted(by_role))
    for name in NAMED:
        assert len(by_role.get(name, [])) == 1, (name, by_role.get(name))
    for k, (name, where, awaiters, frames) in tasks.items():
        r = role(k)
        mine = [(f[0], f[2]) for f in frames if f[1] == t.script_path]
        want = ["idle"] if r.startswith("idle-") else [r] if r in (
            "gathered", "second_main") else NAMED[r]
        assert mine == [(fn, m[fn]) for fn in want], (name, frames)
        # no frame of the program other than its own chain
        assert all(f[1] == t.script_path or "/asyncio/" in f[1] for f in frames), frames
    edges = set()
    for k, (name, _, awaiters, _) in tasks.items():
        for a in awaiters:
            edges.add((role(a), role(k)))
    assert edges == EDGES, edges
    return {k for k in tasks if role(k) in SECOND_LOOP}


def test_dump_async_matches_cpython_reader(pywalk, interp):
    need_314(interp)
    idle = 1000
    t = start(interp, idle)
    try:
        out = dump_async(t)
        tasks = parse_dump(out)
        assert re.search(r"^asyncio: %d tasks:$" % len(tasks), out, re.M), out[-3000:]
        second = check_shape(tasks, t, idle)
        # CPython's own reader, on the same (suspended, so unchanged) process. 3.14's
        # lists the main thread's loop only: there, the second loop's tasks are pywalk's
        # alone.
        ps_names, ps_edges = parse_ps(asyncio_tool(interp, t, "ps"))
        theirs = {k: v for k, v in tasks.items()
                  if interp.version != "3.14" or k not in second}
        assert ps_names == {k: v[0] for k, v in theirs.items()}, (
            set(ps_names.items()) ^ set((k, v[0]) for k, v in theirs.items()))
        assert ps_edges == {(a, k) for k, v in theirs.items() for a in v[2]}, ps_edges
        tree_names, tree_edges = parse_pstree(asyncio_tool(interp, t, "pstree"))
        assert tree_names == {v[0] for v in theirs.values()}, tree_names
        assert tree_edges == {(tasks[a][0], v[0]) for v in theirs.values() for a in v[2]}
        # the JSON says the same
        doc = json.loads(e2e.run_pywalk(["dump", "--async", "--json", "-p", t.pid],
                                        timeout=120).stdout)
        aio = doc["processes"][0]["asyncio"]
        assert aio["status"] == "ok" and aio["listed"] == len(tasks), {
            k: v for k, v in aio.items() if k != "tasks"}
        js = {int(k["id"], 16): (k["name"], [int(a, 16) for a in k["awaited_by"]],
                                 [(f["function"], f["file"], f["line"]) for f in k["frames"]])
              for k in aio["tasks"]}
        assert js == {k: (v[0], v[2], v[3]) for k, v in tasks.items()}
        # not paused: the same, since nothing runs
        assert parse_dump(dump_async(t, "--nonblocking")) == tasks
        assert t.proc.poll() is None
    finally:
        t.stop()


def test_dump_async_release_build(pywalk):
    """The same on CPython 3.14.7 built from the release source (PIE, _asyncio a shared
    module at its own load bias), when scripts/get-cpython-release.sh has built it."""
    if not os.access(RELEASE_314, os.X_OK):
        pytest.skip("no %s (scripts/get-cpython-release.sh)" % RELEASE_314)
    interp = e2e.interpreters.Interpreter("release", "3.14", "3.14.7", RELEASE_314)
    t = start(interp, 10)
    try:
        tasks = parse_dump(dump_async(t))
        second = check_shape(tasks, t, 10)
        ps_names, ps_edges = parse_ps(asyncio_tool(interp, t, "ps"))
        theirs = {k: v for k, v in tasks.items() if k not in second}
        assert ps_names == {k: v[0] for k, v in theirs.items()}, ps_names
        assert ps_edges == {(a, k) for k, v in theirs.items() for a in v[2]}, ps_edges
    finally:
        t.stop()


def test_dump_async_running_task(pywalk, interp):
    """A task that never yields: the loop thread runs it; its chain is the thread's own
    frames from the innermost down to the task's coroutine."""
    need_314(interp)
    m = e2e.markers(SCRIPT)
    t = start(interp, 0, "spin")
    try:
        deadline = time.monotonic() + 30
        while True:
            tasks = parse_dump(dump_async(t))
            spin = [v for v in tasks.values() if v[0] == "spinner"]
            if spin or time.monotonic() > deadline:
                break
        assert spin, "no task 'spinner' within 30 s: %s" % sorted(v[0] for v in tasks.values())
        name, where, awaiters, frames = spin[0]
        assert where == "thread %d, running" % t.pid, where
        # the innermost frame anywhere in its loop
        assert [f[0] for f in frames] == ["spin_forever", "spinner"], frames
        assert frames[0][2] in (m["spin_loop"], m["spin"]), frames
        assert frames[1][2] == m["spinner"], frames
        assert [v[1] for v in tasks.values()].count("thread %d, running" % t.pid) == 1
    finally:
        t.stop()


def test_dump_async_caps_a_hundred_thousand_tasks(pywalk, interp):
    need_314(interp)
    t = start(interp, 100000)
    try:
        began = time.monotonic()
        out = dump_async(t)
        took = time.monotonic() - began
        head = re.search(r"^asyncio: (\d+) tasks \((.*)\):$", out, re.M)
        assert head, out[-2000:]
        assert int(head.group(1)) == 20000, head.group(0)
        assert head.group(2) == ("100015 tasks listed, the first 20000 shown (pywalk reads "
                                 "at most 20000)"), head.group(0)
        assert len(parse_dump(out)) == 20000
        assert took < 60, took
        assert t.proc.poll() is None
    finally:
        t.stop()


def test_dump_async_no_asyncio(pywalk, interp):
    need_314(interp)
    t = start(interp, script="no_asyncio.py")
    try:
        r = e2e.run_pywalk(["dump", "--async", "-p", t.pid])
        assert r.returncode == 0 and not r.stderr.strip(), r.stderr
        assert re.search(r"^asyncio: 0 tasks( \(no tasks: the program has not imported "
                         r"asyncio\))?$", r.stdout, re.M), r.stdout
    finally:
        t.stop()


def test_dump_async_rejects_impossible_table(pywalk, interp, tmp_path_factory):
    need_314(interp)
    src = os.path.join(e2e.TARGETS_DIR, "bad_asyncio_table.c")
    target_dir, host_dir = e2e.build_ext(interp, src, "_asyncio", tmp_path_factory)
    lib = [n for n in os.listdir(host_dir) if n.startswith("_asyncio.") and n.endswith(".so")]
    assert len(lib) == 1, os.listdir(host_dir)
    t = start(interp, os.path.join(target_dir, lib[0]), script="no_asyncio.py")
    try:
        r = e2e.run_pywalk(["dump", "--async", "-p", t.pid])
        assert r.returncode == 0, r.stderr
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("asyncio:")]
        if interp.version == "3.14":
            # the forged table is the only one: no tasks, and why
            # (its path as pywalk sees it: the target has a mount namespace of its own)
            assert len(line) == 1 and re.match(
                r"^asyncio: 0 tasks \(no tasks: the asyncio table in \S*%s is rejected: "
                r"impossible task object size\)$" % re.escape(
                    os.path.join(target_dir, lib[0])), line[0]), line
        else:
            # 3.15 has _asyncio built in: its own table is used, the forged one counted
            assert line == ["asyncio: 0 tasks"], line
            assert "(1 asyncio table with impossible sizes rejected)" in r.stdout, r.stdout
        doc = json.loads(e2e.run_pywalk(["dump", "--async", "--json", "-p", t.pid]).stdout)
        aio = doc["processes"][0]["asyncio"]
        assert aio["tables_rejected"] == 1, aio
        assert aio["status"] == ("bad table" if interp.version == "3.14" else "ok"), aio
    finally:
        t.stop()


@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13"])
def test_dump_async_refused_before_314(pywalk, all_interpreters, version):
    found = [i for i in all_interpreters if i.version == version]
    if not found:
        pytest.skip("no %s interpreter" % version)
    t = start(found[0], script="no_asyncio.py")
    try:
        r = e2e.run_pywalk(["dump", "--async", "-p", t.pid])
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert r.stdout == "", r.stdout
        lines = r.stderr.strip().splitlines()
        assert lines == ["pywalk: dump --async: PID %d runs Python %s, which has no asyncio "
                         "task table (3.14+)" % (t.pid, version)], lines
        # refused before pausing it: nobody traces it
        assert t.proc.poll() is None
    finally:
        t.stop()


def test_dump_async_escapes_a_hostile_task_name(pywalk, interp):
    """A task name is the program's to choose: terminal escapes, quotes, a newline, a
    bidirectional control are printed inert, and JSON gives the name back exactly."""
    need_314(interp)
    hostile = 'evil\x1b[2J"quoted"\nline;semi\u202e'
    t = start(interp, 0, "-", "hostile")
    try:
        out = dump_async(t)
        assert "\x1b" not in out and "\u202e" not in out, repr(out)
        lines = [ln for ln in out.splitlines() if ln.startswith("Task ") and "evil" in ln]
        assert len(lines) == 1, repr(out)
        assert '"evil\\x1b[2J"quoted"\\nline\\x3bsemi\\u202E"' in lines[0] or \
            '"evil\\x1b[2J"quoted"\\nline\\x3bsemi\\u202e"' in lines[0], lines[0]
        doc = json.loads(e2e.run_pywalk(["dump", "--async", "--json", "-p", t.pid]).stdout)
        names = [k["name"] for k in doc["processes"][0]["asyncio"]["tasks"]]
        assert hostile in names, names
    finally:
        t.stop()
