# SPDX-License-Identifier: MIT
"""pywalk record --async (3.14+) against tests/targets/async_busy.py, whose tasks take turns
on the CPU: a sample of the loop thread while a task runs is the thread's frames down to
the task's step, then each task that awaits the running one (outermost first) as
'[task NAME]' and its coroutine frames, then the running task's mark and its own frames.
Every running-task sample must be exactly one of the program's chains, at its lines, and
no sample may mix two tasks' frames. Bad input: --async on 3.10-3.13 (refused, exit 2), a
program that never imports asyncio (no tasks, no error), a forged table (rejected, said,
counted); trace refuses --async."""
import json
import os
import re
import signal
import socket
import subprocess

import pytest

import pywalk_e2e as e2e
from test_async import start, need_314
from test_formats import artifact, browser, chromium_bin, node_tools  # noqa: F401

SCRIPT = "async_busy.py"
THREAD_TAIL = "Handle._run"  # the thread's frame that runs a task's step

# The chains of the program, root first after the thread's frames: ("[task NAME]" as a
# regex, then the coroutines of that task in the program, by name). A leaf task's last
# coroutine runs burn() or yields (asyncio's own frames below it).
CHAINS = {
    "nested": [(r"nested", ["level1", "level2", "level3"])],
    "gathered": [(r"gatherer", ["gather_parent"]), (r"Task-\d+", ["gathered"])],
    "grouped": [(r"grouper", ["taskgroup_parent", "TaskGroup.__aexit__", "TaskGroup._aexit"]),
                (r"tg-child-[01]", ["tg_child"])],
    "shielded": [(r"shielder", ["shield_parent"]), (r"shielded-inner", ["shielded"])],
    "awaited": [(r"awaiter-task", ["awaiter"]), (r"awaited-task", ["awaited"])],
    # awaited by three: the chain goes on through one of them, the other two counted
    "shared": [(r"waiter-[012]", ["shared_waiter"]), (r"shared\] \(\+2 awaiting\)",
                                                      ["shared_work"])],
    # the main task, setting up its next sleep now and then
    "main": [(r"Task-1", ["main"])],
}
BUSY_CHAINS = set(CHAINS) - {"main"}
LEAVES = {"level3", "gathered", "tg_child", "shielded", "awaited", "shared_work"}
STDLIB = {"TaskGroup.__aexit__", "TaskGroup._aexit"}


def record_async(t, tmp_path, seconds=4, extra=()):
    out = str(tmp_path / "async.folded")
    r = e2e.run_pywalk(["record", "--async", "-p", t.pid, "-F", 499, "-d", seconds, "-o", out]
                       + list(extra), timeout=120)
    assert r.returncode == 0, r.stderr
    e2e.check_summary(r.stderr)
    return e2e.parse_folded(out), r.stderr


def task_part(frames):
    """The frames after the thread's (from the first task mark on), or None."""
    for i, fr in enumerate(frames):
        if e2e.TASK_MARK_RE.match(fr):
            assert i and frames[i - 1].startswith(THREAD_TAIL + " ("), frames
            return frames[i:]
    return None


def split_tasks(part):
    """[(mark, [frames])] of a task part."""
    out = []
    for fr in part:
        if e2e.TASK_MARK_RE.match(fr):
            out.append((fr, []))
        else:
            out[-1][1].append(fr)
    return out


def judge(part, t, m):
    """('exact', which of CHAINS) when the task part is one of them at the program's lines,
    'mixed' when a task's frames are another task's coroutines, else 'other'."""
    tasks = split_tasks(part)
    mine = set(n for chain in CHAINS.values() for _, fns in chain for n in fns)
    for kind, chain in CHAINS.items():
        if len(chain) != len(tasks):
            continue
        ok = True
        for (name_re, fns), (mark, frames) in zip(chain, tasks):
            if not re.match(r"^\[task %s(\])?$" % name_re, mark):
                ok = False
                break
        if not ok:
            continue
        for i, ((_, fns), (mark, frames)) in enumerate(zip(chain, tasks)):
            py = [e2e.parse_py_frame(f) for f in frames]
            if any(p is None for p in py):
                return "other", None
            leaf = i == len(chain) - 1
            want = list(fns)
            got = [p[0] for p in py[:len(want)]]
            if got != want:
                return "mixed" if set(got) & mine - set(want) else "other", None
            for (fn, path, line) in py[:len(want)]:
                if fn in STDLIB:
                    continue
                if path != t.script_path:
                    return "other", None
                lines = {m[fn], m.get(fn + "_yield")} if leaf and fn == want[-1] else {m[fn]}
                if line not in lines:
                    return "other", None
            rest = py[len(want):]
            if not leaf:
                if rest:
                    return "mixed", None
                continue
            last_line = py[len(want) - 1][2]
            if last_line == m[want[-1]] and want[-1] in LEAVES:
                # in burn(), or right at its call
                if rest and not (len(rest) == 1 and rest[0][0] == "burn" and
                                 rest[0][2] in (m["burn"], m["burn_add"])):
                    return "other", None
            elif any(p[1] == t.script_path for p in rest):
                return "mixed", None  # yielding: only asyncio's frames below
        return "exact", kind
    # a chain of the wrong shape: mixed if it holds two leaf tasks' coroutines
    leaves = [p[0] for _, fr in tasks for p in map(e2e.parse_py_frame, fr)
              if p and p[0] in LEAVES]
    return ("mixed" if len(set(leaves)) > 1 else "other"), None


def test_record_async_every_running_task_chain_exact(pywalk, interp, tmp_path):
    need_314(interp)
    m = e2e.markers(SCRIPT)
    t = start(interp, script=SCRIPT)
    try:
        rows, err = record_async(t, tmp_path)
    finally:
        t.stop()
    verdicts = {"exact": 0, "mixed": 0, "other": 0}
    odd = []
    kinds = set()
    total = sum(n for _, n in rows)
    for frames, n in rows:
        part = task_part(frames)
        if part is None:
            continue
        v, kind = judge(part, t, m)
        verdicts[v] += n
        if v != "exact":
            odd.append((n, v, part))
        else:
            kinds.add(kind)
    running = sum(verdicts.values())
    odd.sort(key=lambda x: -x[0])
    print("%s: %d samples, %d with a running task: %s; chains seen: %s; not exact: %s" % (
        interp.id, total, running, verdicts, sorted(kinds), odd[:3]))
    assert verdicts["mixed"] == 0, odd[:5]
    # the loop's own work (select, the ready queue) has no running task; the tasks' burn
    # is most of the program's CPU
    assert running >= total / 2, (running, total, err)
    assert verdicts["exact"] >= 0.95 * running, (verdicts, odd[:5])
    # every shape of the program was seen running, with its awaiters
    assert kinds >= BUSY_CHAINS, sorted(kinds)
    assert re.search(r"^pywalk: --async: \d+ samples of a thread running a task, \d+ in a "
                     r"task's step outside its coroutine \(no chain\), \d+ of processes "
                     r"whose task table was not known \(yet\); task tables of 1 process "
                     r"found, 0 rejected; 0 processes before 3.14", err, re.M), err


@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13"])
def test_record_async_refused_before_314(pywalk, all_interpreters, version, tmp_path):
    found = [i for i in all_interpreters if i.version == version]
    if not found:
        pytest.skip("no %s interpreter" % version)
    t = start(found[0], script="no_asyncio.py")
    try:
        r = e2e.run_pywalk(["record", "--async", "-p", t.pid, "-d", 1, "-o",
                            str(tmp_path / "x.folded")])
        assert r.returncode == 2, (r.returncode, r.stderr)
        lines = r.stderr.strip().splitlines()
        # (3.10 does not record its micro version: pywalk never invents one)
        shown = version if version == "3.10" else found[0].full_version
        assert lines == ["pywalk: --async: PID %d runs Python %s, which has no asyncio task "
                         "table (3.14+)" % (t.pid, shown)], lines
        assert not os.path.exists(tmp_path / "x.folded")
    finally:
        t.stop()


def test_record_async_no_asyncio(pywalk, interp, tmp_path):
    """A 3.14+ program that never imports asyncio: its stacks as without --async, no error,
    and the summary says it had no table (3.15 builds _asyncio in: its table is there, and
    no task runs)."""
    need_314(interp)
    t = start(interp, script="known_shape.py")
    try:
        rows, err = record_async(t, tmp_path, seconds=2)
    finally:
        t.stop()
    assert rows and not any(task_part(f) for f, _ in rows), rows[:3]
    assert "task tables of %s found, 0 rejected" % (
        "1 process" if interp.version == "3.15" else "0 processes") in err, err
    assert re.search(r"--async: 0 samples of a thread running a task", err), err
    assert "warning" not in err and "error" not in err, err


def test_record_async_forged_table(pywalk, interp, tmp_path, tmp_path_factory):
    """A loaded '_asyncio' whose table has impossible sizes: rejected and counted, said
    once, its path escaped; on 3.15 (built-in _asyncio) the real table is used."""
    need_314(interp)
    src = os.path.join(e2e.TARGETS_DIR, "bad_asyncio_table.c")
    target_dir, host_dir = e2e.build_ext(interp, src, "_asyncio", tmp_path_factory)
    lib = [n for n in os.listdir(host_dir) if n.startswith("_asyncio.") and n.endswith(".so")]
    t = start(interp, os.path.join(target_dir, lib[0]), script="no_asyncio.py")
    try:
        _, err = record_async(t, tmp_path, seconds=2)
    finally:
        t.stop()
    assert re.search(r"task tables of %d process(es)? found, 1 rejected" % (
        0 if interp.version == "3.14" else 1), err), err
    said = [ln for ln in err.splitlines() if "asyncio table" in ln]
    if interp.version == "3.14":
        assert len(said) == 1 and said[0].endswith(
            "is rejected: impossible task object size; its tasks are not read"), said
    else:
        assert said == [], said


def test_trace_refuses_async(pywalk):
    r = e2e.run_pywalk(["trace", "--async", "-p", "1", "tracepoint:syscalls:sys_enter_read"])
    assert r.returncode == 2, r.stderr
    assert "trace takes no --async" in r.stderr, r.stderr


def test_record_async_labels_and_page(pywalk, interp, node_tools, tmp_path):
    """pprof carries the running task as the label task_name (go tool pprof reads it back,
    its samples adding up with the stacks' marks), and the HTML page offers each task in
    its thread menu: choosing one draws that task's frames only."""
    need_314(interp)
    if interp.free_threaded or interp.kind != "unstable":
        pytest.skip("one interpreter of each of 3.14 and 3.15 is enough for the writers")
    t = start(interp, script=SCRIPT)
    try:
        pb = str(tmp_path / "async.pb.gz")
        html = str(tmp_path / "async.html")
        for out in (pb, html):
            r = e2e.run_pywalk(["record", "--async", "-p", t.pid, "-d", 2, "-o", out],
                               timeout=120)
            assert r.returncode == 0, r.stderr
    finally:
        t.stop()
    tags = e2e.go_pprof(tmp_path, "-tags", pb)
    block = tags.split("task_name:", 1)[1].split("\n\n", 1)[0]
    names = set(re.findall(r"^\s+\S+ \(\s*[\d.]+%\): (.+)$", block, re.M))
    assert {"nested", "tg-child-0", "tg-child-1", "shielded-inner", "awaited-task",
            "shared"} <= names, block
    assert not any(n.startswith("[") or n.endswith("]") for n in names), names
    # the running task's samples: those under its mark in the stacks pprof shows
    raw = e2e.go_pprof(tmp_path, "-traces", "-tagfocus=task_name=nested", pb)
    assert "[task nested]" in raw and "[task gatherer]" not in raw, raw[:2000]
    res = browser(node_tools, "flame", html, artifact("flame-tasks.png"), "", "",
                  json.dumps({"who": ["level1", "gather_parent", "shared_work"]}))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    tasks = dict((w["text"], w) for w in res["who"] if w["value"].startswith("k"))
    assert {"task nested", "task shared", "task tg-child-0"} <= set(tasks), sorted(tasks)
    assert tasks["task nested"]["drawn"] == {"level1": True, "gather_parent": False,
                                            "shared_work": False}, tasks["task nested"]
    assert tasks["task shared"]["drawn"] == {"level1": False, "gather_parent": False,
                                            "shared_work": True}, tasks["task shared"]
    assert sum(w["total"] for w in tasks.values()) <= res["total"]
    assert all(w["total"] > 0 for w in tasks.values()), tasks


def server_stats(port):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"GET /stats HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def test_record_async_server_handlers_share_their_time(pywalk, interp, all_interpreters,
                                                       tmp_path):
    """An asyncio HTTP server (stdlib only) answering 200 concurrent loopback requests at a
    time from a bounded client, each request in its own handler (1, 2 and 3 units of CPU):
    each handler's share of the handlers' samples is within 5 points of its share of the
    CPU time the handlers measured themselves over the recording, and its samples carry
    the connection's task."""
    need_314(interp)
    if interp.kind != "unstable" and not interp.free_threaded:
        pytest.skip("the 3.14 and 3.15 builds of Debian and the free-threaded one suffice")
    m = e2e.markers("async_server.py")
    srv = start(interp, script="async_server.py")
    client = None
    try:
        port = int(re.search(r"^PORT (\d+)$", srv.ready_output, re.M).group(1))
        stop = str(tmp_path / "stop")
        # the core interpreter drives the load: it is not profiled
        client = e2e.Target(all_interpreters[0], "async_client.py",
                            args=(port, 120, 200, stop))
        e2e.wait_for(lambda: server_stats(port)["requests"] > 200, 30,
                     "the server answering the client")
        before = server_stats(port)
        out = str(tmp_path / "server.folded")
        r = e2e.run_pywalk(["record", "--async", "-p", srv.pid, "-F", 997, "-d", 5, "-o", out],
                           timeout=120)
        after = server_stats(port)
        open(stop, "w").close()
        assert r.returncode == 0, r.stderr
        e2e.check_summary(r.stderr)
    finally:
        if client:
            client.stop()
        srv.stop()
    rows = e2e.parse_folded(out)
    spent = dict((h, after[h] - before[h]) for h in "abc")
    samples = dict((h, 0) for h in "abc")
    in_task = 0
    for frames, n in rows:
        names = [fr.split(" (", 1)[0] for fr in frames]
        hs = [h for h in "abc" if "handle_" + h in names]
        if not hs:
            continue
        assert len(hs) == 1, frames
        samples[hs[0]] += n
        # the handler runs in its connection's task, called by the server's callback
        part = task_part(frames)
        if part and e2e.TASK_MARK_RE.match(part[0]) and \
                names[names.index("handle_" + hs[0]) - 1] == "client_connected" and \
                "client_connected (%s:%d)" % (srv.script_path, m["dispatch"]) in frames:
            in_task += n
    total = sum(samples.values())
    print("%s: handler samples %s (%d), CPU s measured %s" % (interp.id, samples, total,
                                                              spent))
    assert total >= 1000, (samples, r.stderr)
    assert in_task >= 0.95 * total, (in_task, total)
    for h in "abc":
        share, want = samples[h] / total, spent[h] / sum(spent.values())
        sigma = (want * (1 - want) / total) ** 0.5
        print("  handle_%s: %.1f%% of samples, %.1f%% of CPU (binomial sigma %.2f points)" % (
            h, 100 * share, 100 * want, 100 * sigma))
        assert abs(share - want) <= 0.05, (h, share, want, samples, spent)


def test_record_async_table_found_after_attach(pywalk, interp, tmp_path):
    """A launched program imports asyncio after pywalk attached: its table is found then,
    and from that on its running tasks are in the stacks."""
    need_314(interp)
    if interp.kind != "unstable":
        pytest.skip("one 3.14 and one 3.15 build suffice")
    out = str(tmp_path / "late.folded")
    r = e2e.run_pywalk(["record", "--async", "-F", 499, "-d", 4, "-o", out, "--"] +
                       interp.argv(SCRIPT, 10), timeout=120)
    assert r.returncode == 0, r.stderr
    e2e.check_summary(r.stderr)
    rows = e2e.parse_folded(out)
    chained = sum(n for f, n in rows if task_part(f))
    assert chained >= sum(n for _, n in rows) / 3, (chained, r.stderr)
    assert "task tables of 1 process found" in r.stderr, r.stderr


def test_record_async_all_counts_older_pythons(pywalk, interp, all_interpreters, tmp_path):
    """Under --all a 3.10-3.13 process is sampled without tasks and counted; a 3.14+ one
    has its chains."""
    need_314(interp)
    if interp.kind != "unstable":
        pytest.skip("one 3.14 and one 3.15 build suffice")
    old = [i for i in all_interpreters if i.version in ("3.10", "3.11", "3.12", "3.13")][0]
    a = start(interp, script=SCRIPT)
    b = e2e.Target(old, "known_shape.py").wait_ready()
    try:
        out = str(tmp_path / "all.folded")
        r = e2e.run_pywalk(["record", "--async", "--all", "-d", 3, "-o", out], timeout=120)
        assert r.returncode == 0, r.stderr
    finally:
        a.stop()
        b.stop()
    m = re.search(r"task tables of (\d+) process(?:es)? found, 0 rejected; (\d+) process(?:es)? "
                  r"before 3.14", r.stderr)
    assert m and int(m.group(1)) >= 1 and int(m.group(2)) >= 1, r.stderr
    rows = e2e.parse_folded(out)
    mine = [(f, n) for f, n in rows if any("(%d)" % a.pid in x for x in f[:1])]
    theirs = [(f, n) for f, n in rows if any("(%d)" % b.pid in x for x in f[:1])]
    assert mine and theirs, [f[:1] for f, _ in rows][:20]
    assert any(task_part(f[1:]) for f, _ in mine)
    assert not any(task_part(f[1:]) for f, _ in theirs)


def test_agent_async_labels_every_window(pywalk, interp, tmp_path):
    """The agent with --async: each exported window's pprof labels the running task
    (task_name) and holds the '[task NAME]' marks (go tool pprof reads them)."""
    need_314(interp)
    if interp.kind != "unstable":
        pytest.skip("one 3.14 and one 3.15 build suffice")
    t = start(interp, script=SCRIPT)
    d = tmp_path / "export"
    d.mkdir()
    err = tmp_path / "agent.err"
    with open(err, "w") as ef:
        ag = subprocess.Popen([pywalk, "agent", "--async", "-p", str(t.pid), "--interval", "1s",
                               "-F", "499", "--export-dir", str(d)], stderr=ef,
                              start_new_session=True)
    try:
        e2e.wait_for(lambda: len([n for n in os.listdir(d) if n.endswith(".pb.gz")]) >= 3,
                     30, "three windows exported")
    finally:
        ag.send_signal(signal.SIGTERM)
        rc = ag.wait(30)
        t.stop()
    assert rc == 0, err.read_text()
    # every window but the last, which SIGTERM cut short: each a whole second of samples
    files = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".pb.gz"))[:-1]
    for f in files:
        tags = e2e.go_pprof(tmp_path, "-tags", f)
        assert "task_name:" in tags and "nested" in tags, (f, tags)
        traces = e2e.go_pprof(tmp_path, "-traces", f)
        assert "[task nested]" in traces and "[task grouper]" in traces, traces[:2000]
