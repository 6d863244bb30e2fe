# SPDX-License-Identifier: MIT
"""`pywalk trace`: exact counts per Python stack on syscall tracepoints, tracefs
tracepoints, uprobes (libc through ctypes, looked up in the target's own maps), USDT
notes, with every hit shipped and with --aggregate (counted in the kernel, drained every
second; a full map counted); --latency weights; --filter decided in BPF; --print lines
parsed back; speedscope's profile per probe; -l; every bad input with its message and exit
code, before anything is attached.

The ground truth is tests/targets/trace_target.py: known numbers of calls from known
functions, made after the tracer is attached (the target waits for SIGUSR1)."""
import collections
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
import urllib.parse

import pytest

import pywalk_e2e as e2e
import test_formats as tf
import trace_target as tt

# the format tests' real consumers: the speedscope app in headless Chromium
node_tools = tf.node_tools
chromium_bin = tf.chromium_bin

CORE_PY = "/usr/bin/python3.11"
KPROBE_PMU = "/sys/bus/event_source/devices/kprobe"

P_GETPID = "tracepoint:syscalls:sys_enter_getpid"
P_GETPPID = "tracepoint:syscalls:sys_enter_getppid"
P_STAT = "tracepoint:syscalls:sys_enter_*stat*"   # newfstatat or statx, by C library
P_WRITE = "tracepoint:syscalls:sys_enter_write"
P_LABS = "uprobe:libc.so.6:labs"
P_FORK = "tracepoint:sched:sched_process_fork*"  # a wildcard resolved in tracefs
HITS_HEAD_RE = re.compile(r"^pywalk: (\d+) hits of (\S+), accounted as:\s*$")
AGG_RE = re.compile(r"^pywalk: (\S+): --aggregate: of the (\d+) shipped, (\d+) counted in the "
                    r"kernel, (\d+) shipped as the first of their stack, (\d+) shipped whole "
                    r"\((\d+) deeper than 256 frames, (\d+) whose stack hash another stack "
                    r"held\)$", re.M)
DRAINS_RE = re.compile(r"^pywalk: debug: --aggregate: (\d+) generations drained", re.M)
AGG_FULL = "lost (aggregate map full)"


def parse_hits(stderr):
    """{probe: (hits, {bucket: count})} from trace's summary."""
    out = {}
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        m = HITS_HEAD_RE.match(line)
        if not m:
            continue
        buckets = {}
        for row in lines[i + 1:]:
            r = e2e.SUMMARY_ROW_RE.match(row)
            if not r:
                break
            buckets[r.group(1).strip()] = int(r.group(2))
        out[m.group(2)] = (int(m.group(1)), buckets)
    return out


def check_hits(stderr, probes):
    hits = parse_hits(stderr)
    assert sorted(hits) == sorted(probes), stderr
    for probe, (n, buckets) in hits.items():
        assert "shipped" in buckets and "filtered out (--filter)" in buckets, stderr
        assert sum(buckets.values()) == n, \
            "%s: buckets add up to %d, not %d hits:\n%s" % (probe, sum(buckets.values()),
                                                            n, stderr)
    return hits


def parse_aggregate(stderr):
    """{probe: (shipped, counted in the kernel, shipped first, shipped whole)}"""
    out = {}
    for m in AGG_RE.finditer(stderr):
        shipped, counted, first, whole, deep, taken = (int(x) for x in m.groups()[1:])
        assert whole == deep + taken, m.group(0)
        assert counted + first + whole == shipped, \
            "counted + first + whole != shipped: %s" % m.group(0)
        out[m.group(1)] = (shipped, counted, first, whole)
    return out


def names(frames):
    """Function names of folded frames (file:line dropped)."""
    out = []
    for fr in frames:
        py = e2e.parse_py_frame(fr)
        assert py, "not a Python frame: %r" % fr
        out.append(py[0])
    return out


def by_probe(rows, several):
    """{probe: Counter(tuple of names, root first)}; one probe: under None."""
    out = collections.defaultdict(collections.Counter)
    for frames, n in rows:
        probe = frames[0] if several else None
        out[probe][tuple(names(frames[1:] if several else frames))] += n
    return out


def leaf_counts(stacks):
    c = collections.Counter()
    for st, n in stacks.items():
        c[st[-1] if st else None] += n
    return c


def run_on_target(pywalk, target, args, timeout=120, every=False):
    """pywalk trace -v -p TARGET ARGS (every: --all ARGS, stopped by SIGINT once the
    target is done), the target released once tracing has begun;
    (CompletedProcess-like (returncode, stdout, stderr), target's stdout)."""
    cmd = [pywalk, "trace", "-v"] + (["--all"] if every else ["-p", str(target.pid)]) + \
        [str(a) for a in args]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    err = b""
    deadline = time.monotonic() + 30
    while b"debug: tracing:" not in err:
        left = deadline - time.monotonic()
        if left <= 0 or p.poll() is not None:
            out, rest = p.communicate(timeout=timeout)
            raise AssertionError("pywalk did not start tracing (exit %s):\n%s" % (
                p.returncode, (err + rest).decode(errors="replace")))
        if select.select([p.stderr], [], [], left)[0]:
            chunk = os.read(p.stderr.fileno(), 65536)
            err += chunk
    os.kill(target.pid, signal.SIGUSR1)
    if every:
        # its records were written by its own threads before it exited; pywalk's stop
        # drains the ring buffer, so no wait is needed for them
        target.proc.wait(timeout=timeout)
        p.send_signal(signal.SIGINT)
    out, rest = p.communicate(timeout=timeout)
    target.proc.wait(timeout=timeout)
    tout = target.proc.stdout.read().decode()
    return (p.returncode, out.decode(errors="replace"),
            (err + rest).decode(errors="replace")), tout


def target_report(tout):
    callbacks = int(re.search(r"^CALLBACKS (\d+)$", tout, re.M).group(1))
    tids = [int(x) for x in re.search(r"^TIDS (\d+) (\d+)$", tout, re.M).groups()]
    return callbacks, tids


def chain(*leaf):
    return ("<module>", "main", "calls") + leaf


# --- exact counts, several probes in one run ----------------------------------------------

@pytest.fixture(scope="module", params=[False, True], ids=["shipped", "aggregate"])
def several(request, pywalk, interp, tmp_path_factory):
    """The exact-count run, every hit shipped, and again with --aggregate: the same counts
    must come out of the kernel's map."""
    out = str(tmp_path_factory.mktemp("trace") / "out.folded")
    t = e2e.Target(interp, "trace_target.py", ["calls"]).wait_ready()
    aggregate = request.param
    try:
        probes = [P_GETPID, P_GETPPID, P_STAT, P_WRITE, P_LABS, P_FORK]
        (rc, stdout, stderr), tout = run_on_target(
            pywalk, t, probes + ["-o", out] + (["--aggregate"] if aggregate else []))
    finally:
        t.stop()
    assert rc == 0, stderr
    return {"probes": probes, "stderr": stderr, "rows": e2e.parse_folded(out),
            "report": target_report(tout), "pid": t.pid, "aggregate": aggregate}


def test_several_probes_account_for_every_hit(several):
    hits = check_hits(several["stderr"], several["probes"])
    rows = several["rows"]
    for probe in several["probes"]:
        shipped = hits[probe][1]["shipped"]
        written = sum(n for frames, n in rows if frames[0] == probe)
        assert written == shipped, "%s: %d shipped, %d in the profile" % (probe, shipped,
                                                                          written)


def test_aggregate_counts_in_the_kernel(several):
    """With --aggregate nearly every hit is counted in the kernel: only the first hit of
    each (stack, thread) is shipped; without it nothing is."""
    agg = parse_aggregate(several["stderr"])
    if not several["aggregate"]:
        assert agg == {}, several["stderr"]
        assert AGG_FULL not in several["stderr"]
        return
    hits = check_hits(several["stderr"], several["probes"])
    assert sorted(agg) == sorted(several["probes"]), several["stderr"]
    for probe, (shipped, counted, first, whole) in agg.items():
        assert shipped == hits[probe][1]["shipped"], several["stderr"]
        assert hits[probe][1][AGG_FULL] == 0, several["stderr"]
        assert whole == 0, several["stderr"]
    # getpid: two stacks in the main thread (getpid_caller, the callback), one in each
    # worker; a drain (every second) between two hits of a stack ships its next one first
    shipped, counted, first, whole = agg[P_GETPID]
    drains = int(DRAINS_RE.search(several["stderr"]).group(1))
    assert 4 <= first <= 4 * drains, (agg[P_GETPID], drains)
    assert counted == shipped - first


def test_syscall_counts_are_exact_per_stack(several):
    stacks = by_probe(several["rows"], True)
    callbacks, _ = several["report"]
    getpid = stacks[P_GETPID]
    assert getpid[chain("getpid_caller")] == tt.N_GETPID, getpid
    assert getpid[chain("callback_caller", "compare")] == callbacks, getpid
    assert callbacks > 0
    # the threads' roots are threading's bootstrap frames: counted by their leaf
    assert leaf_counts(getpid) == {"getpid_caller": tt.N_GETPID, "compare": callbacks,
                                   "thread_worker": 2 * tt.N_THREAD}, getpid
    assert stacks[P_GETPPID] == {chain("getppid_caller"): tt.N_GETPPID}
    assert stacks[P_STAT][chain("stat_caller")] == tt.N_STAT, stacks[P_STAT]
    writes = stacks[P_WRITE]
    assert writes[chain("write_caller")] == tt.N_WRITE, writes
    assert writes[chain("write_other")] == tt.N_OTHER, writes


def test_uprobe_in_the_targets_own_libc_is_exact(several):
    # the library is looked up in the target's maps: a chroot's libc is its own file
    assert by_probe(several["rows"], True)[P_LABS] == {chain("labs_caller"): tt.N_LABS}


def test_wildcard_tracepoint_from_tracefs_is_exact(several):
    assert by_probe(several["rows"], True)[P_FORK][chain("fork_caller")] == tt.N_FORK


@pytest.mark.core_only
@pytest.mark.parametrize("aggregate", [False, True], ids=["shipped", "aggregate"])
def test_all_processes_with_a_uprobe_by_path(pywalk, interp, start_target, out_path,
                                             aggregate):
    """--all and a uprobe on a library's path: every Python process is traced, each under
    its own root frame; the target's calls are exact among them."""
    t = start_target(interp, "calls", script="trace_target.py")
    probe = "uprobe:%s:labs" % libc_of(t.pid)
    (rc, stdout, stderr), _ = run_on_target(
        pywalk, t, [probe, "-o", out_path] + (["--aggregate"] if aggregate else []),
        every=True)
    assert rc == 0, stderr
    check_hits(stderr, [probe])
    mine = collections.Counter()
    for frames, n in e2e.parse_folded(out_path):
        m = e2e.TASK_FRAME_RE.match(frames[0])
        assert m, frames
        if int(m.group("id")) == t.pid:
            mine[tuple(names(frames[1:]))] += n
    assert mine == {chain("labs_caller"): tt.N_LABS}, mine


# --- --print ------------------------------------------------------------------------------

def test_print_lines_parse_back(pywalk, interp, start_target):
    t = start_target(interp, "calls", script="trace_target.py")
    (rc, stdout, stderr), tout = run_on_target(pywalk, t, ["--print", P_GETPID])
    assert rc == 0, stderr
    callbacks, tids = target_report(tout)
    hits = check_hits(stderr, [P_GETPID])
    lines = stdout.splitlines()
    assert len(lines) == hits[P_GETPID][1]["shipped"]
    per_tid = collections.Counter()
    stacks = collections.Counter()
    last = 0.0
    for line in lines:
        fields = line.split("\t")
        assert len(fields) == 8, line
        secs, pid, tid, tcomm, probe, weight, args, stack = fields
        # a syscall entry: its six argument registers (getpid takes none: whatever they hold)
        assert re.match(r"^arg0=-?\d+ arg1=-?\d+ arg2=-?\d+ arg3=-?\d+ arg4=-?\d+ "
                        r"arg5=-?\d+$", args), line
        assert re.match(r"^\d+\.\d{6}$", secs), line
        assert float(secs) < 120
        last = max(last, float(secs))
        assert int(pid) == t.pid and probe == P_GETPID and weight == "1", line
        st = tuple(names(stack.split(";")))
        stacks[st] += 1
        if st[-1] == "thread_worker":
            per_tid[int(tid)] += 1
        else:
            # the thread is named as threading names it (the main thread's OS name is
            # the interpreter's comm)
            assert int(tid) == t.pid and tcomm == "MainThread", line
    assert stacks[chain("getpid_caller")] == tt.N_GETPID
    assert stacks[chain("callback_caller", "compare")] == callbacks
    assert per_tid == {tids[0]: tt.N_THREAD, tids[1]: tt.N_THREAD}
    assert last > 0


def test_print_shows_what_each_probe_saw(pywalk, interp, start_target):
    """ARGS: a syscall entry's arguments, a uprobe's, a uretprobe's return value, a
    syscall exit's; '-' for a probe without them."""
    t = start_target(interp, "calls", script="trace_target.py")
    probes = [P_WRITE, "uprobe:libc.so.6:labs", "uretprobe:libc.so.6:labs",
              "tracepoint:syscalls:sys_exit_getppid", P_FORK]
    (rc, stdout, stderr), _ = run_on_target(pywalk, t, ["--print"] + probes)
    assert rc == 0, stderr
    seen = collections.defaultdict(collections.Counter)
    for line in stdout.splitlines():
        secs, pid, tid, tcomm, probe, weight, args, stack = line.split("\t")
        leaf = names(stack.split(";"))[-1]
        if probe == P_WRITE:
            a = dict(kv.split("=") for kv in args.split())
            assert sorted(a) == ["arg%d" % i for i in range(6)], line
            if leaf in ("write_caller", "write_other"):  # not the report's prints
                seen[probe][(leaf, int(a["arg0"]), int(a["arg2"]))] += 1
        elif probe.startswith("uprobe:") or probe.startswith("uretprobe:"):
            seen[probe][(leaf, args.split()[0])] += 1
        else:
            seen[probe][(leaf, args)] += 1
    # os.write(fd, b"x"): fd and length
    assert seen[P_WRITE] == {("write_caller", tt.WRITE_FD, 1): tt.N_WRITE,
                             ("write_other", tt.OTHER_FD, 1): tt.N_OTHER}, seen[P_WRITE]
    # labs(-i) from labs_caller returns i
    assert seen["uprobe:libc.so.6:labs"] == collections.Counter(
        dict((("labs_caller", "arg0=%d" % -i), 1) for i in range(tt.N_LABS))), seen
    assert seen["uretprobe:libc.so.6:labs"] == collections.Counter(
        dict((("labs_caller", "ret=%d" % i), 1) for i in range(tt.N_LABS))), seen
    assert seen["tracepoint:syscalls:sys_exit_getppid"] == {
        ("getppid_caller", "ret=%d" % os.getpid()): tt.N_GETPPID}, seen
    forks = seen["tracepoint:sched:sched_process_fork"]
    assert forks[("fork_caller", "-")] == tt.N_FORK, forks


# --- --filter -----------------------------------------------------------------------------

def test_filter_is_decided_in_bpf(pywalk, interp, start_target, out_path):
    t = start_target(interp, "calls", script="trace_target.py")
    (rc, stdout, stderr), _ = run_on_target(
        pywalk, t, [P_WRITE, "--filter", "arg0 == %d && pid == %d" % (tt.WRITE_FD, t.pid),
                    "-o", out_path])
    assert rc == 0, stderr
    hits = check_hits(stderr, [P_WRITE])[P_WRITE][1]
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    assert stacks == {chain("write_caller"): tt.N_WRITE}
    # write_other's writes and the report's lines were the target's, turned away
    assert hits["filtered out (--filter)"] >= tt.N_OTHER + 2, stderr


def test_filter_on_a_tracepoint_field(pywalk, interp, start_target, out_path):
    # sched_process_fork's own record: child_pid, parent_pid (from its tracefs format)
    probe = "tracepoint:sched:sched_process_fork"
    t = start_target(interp, "calls", script="trace_target.py")
    (rc, stdout, stderr), _ = run_on_target(
        pywalk, t, [probe, "--filter", "args.parent_pid == %d && args.child_pid > 0" % t.pid,
                    "-o", out_path])
    assert rc == 0, stderr
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    assert stacks[chain("fork_caller")] == tt.N_FORK, stacks
    t = start_target(interp, "calls", script="trace_target.py")
    (rc, stdout, stderr), _ = run_on_target(pywalk, t, [probe, "--filter", "args.child_pid < 0"])
    assert rc == 0, stderr
    hits = check_hits(stderr, [probe])[probe][1]
    # the target's forks and its two threads' clones, all turned away in the kernel
    assert hits["shipped"] == 0 and hits["filtered out (--filter)"] >= tt.N_FORK + 2, stderr


# --- --latency ----------------------------------------------------------------------------

@pytest.mark.parametrize("aggregate", [False, True], ids=["shipped", "aggregate"])
def test_latency_weighs_the_time_inside(pywalk, interp, start_target, out_path, aggregate):
    """With --aggregate the kernel sums each key's nanoseconds: the same total."""
    t = start_target(interp, "sleep", script="trace_target.py")
    (rc, stdout, stderr), _ = run_on_target(
        pywalk, t, ["--latency", "uprobe:libc.so.6:usleep", "-o", out_path] +
        (["--aggregate"] if aggregate else []))
    assert rc == 0, stderr
    hits = check_hits(stderr, ["uprobe:libc.so.6:usleep"])
    assert hits["uprobe:libc.so.6:usleep"][1]["shipped"] == tt.N_SLEEP, stderr
    if aggregate:
        shipped, counted, first, whole = parse_aggregate(stderr)["uprobe:libc.so.6:usleep"]
        drains = int(DRAINS_RE.search(stderr).group(1))
        assert 1 <= first <= drains and counted == tt.N_SLEEP - first, stderr
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    want = ("<module>", "main", "sleep_caller")
    assert list(stacks) == [want], stacks
    ns = stacks[want]
    floor = tt.N_SLEEP * tt.SLEEP_US * 1000
    # usleep never returns early; a loaded 2-CPU machine may wake it up to 50 ms late
    assert floor <= ns <= floor + tt.N_SLEEP * 50 * 10**6, ns


def test_latency_pairs_syscall_entry_and_exit(pywalk, interp, start_target, out_path):
    t = start_target(interp, "sleep", script="trace_target.py")
    probe = "tracepoint:syscalls:sys_enter_clock_nanosleep"
    (rc, stdout, stderr), _ = run_on_target(pywalk, t, ["--latency", probe, "-o", out_path])
    assert rc == 0, stderr
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    want = ("<module>", "main", "sleep_caller")
    floor = tt.N_SLEEP * tt.SLEEP_US * 1000
    assert floor <= stacks[want] <= floor + tt.N_SLEEP * 50 * 10**6, stacks
    assert check_hits(stderr, [probe])[probe][1]["shipped"] == tt.N_SLEEP


def test_latency_pairs_nested_calls_with_their_own_entry(pywalk, interp, start_target):
    # qsort -> Python comparator -> qsort, in one thread: each return pairs with its own
    # entry, so the outer call weighs more than all the inner ones together
    t = start_target(interp, "nested", script="trace_target.py")
    probe = "uprobe:libc.so.6:qsort"
    (rc, stdout, stderr), tout = run_on_target(pywalk, t, ["--latency", "--print", probe])
    assert rc == 0, stderr
    callbacks = int(re.search(r"^CALLBACKS (\d+)$", tout, re.M).group(1))
    outer, inner = [], []
    for line in stdout.splitlines():
        secs, pid, tid, tcomm, lprobe, weight, args, stack = line.split("\t")
        assert args == "ret=0", line  # a --latency line is the return's
        st = tuple(names(stack.split(";")))
        if st == ("<module>", "main", "nested_caller"):
            outer.append(int(weight))
        elif st == ("<module>", "main", "nested_caller", "nested_compare"):
            inner.append(int(weight))
        else:
            raise AssertionError("unexpected stack: %s" % line)
    assert len(outer) == 1 and len(inner) == callbacks > 0, stdout
    assert min(inner) > 0 and outer[0] > sum(inner), (outer, inner)
    hits = check_hits(stderr, [probe])[probe][1]
    assert hits["shipped"] == callbacks + 1, stderr
    assert re.search(r"%s: %d entries; 0 returns without their entry" % (
        re.escape(probe), callbacks + 1), stderr), stderr


@pytest.mark.core_only
def test_latency_of_tls_reads_in_the_targets_libssl(pywalk, interp, start_target, tmp_path,
                                                    out_path):
    """The issue's `uprobe:libssl.so.3:SSL_read --latency`: libssl found in the target's
    maps, the time inside each read by its Python caller (CPython 3.11 calls
    SSL_read_ex)."""
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                        "1", "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    t = start_target(interp, "tls", cert, key, script="trace_target.py")
    probe = "uprobe:libssl.so.3:SSL_read_ex"
    (rc, stdout, stderr), _ = run_on_target(pywalk, t, ["--latency", probe, "-o", out_path])
    assert rc == 0, stderr
    assert check_hits(stderr, [probe])[probe][1]["shipped"] == tt.N_TLS, stderr
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    want = ("<module>", "main", "tls", "tls_reader", "SSLSocket.recv", "SSLSocket.read")
    assert list(stacks) == [want], stacks
    # each read waits for a message written TLS_GAP_S after the one before
    gap = int(tt.TLS_GAP_S * 1e9)
    assert (tt.N_TLS - 1) * gap <= stacks[want] <= tt.N_TLS * (gap + 50 * 10**6), stacks


# --- --aggregate: drains and a full map --------------------------------------------------

@pytest.mark.core_only
def test_aggregate_counts_stay_exact_across_drains(pywalk, interp, start_target, out_path):
    """A run that lasts several of the kernel map's one-second generations: every
    generation's counts are added, none twice, none lost between two."""
    t = start_target(interp, "spread", script="trace_target.py")
    (rc, stdout, stderr), _ = run_on_target(pywalk, t, ["--aggregate", P_GETPID,
                                                        "-o", out_path])
    assert rc == 0, stderr
    hits = check_hits(stderr, [P_GETPID])[P_GETPID][1]
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    assert stacks == {("<module>", "main", "spread_caller"): tt.N_SPREAD}, stacks
    assert hits["shipped"] == tt.N_SPREAD and hits[AGG_FULL] == 0, stderr
    drains = int(DRAINS_RE.search(stderr).group(1))
    assert drains >= int(tt.SPREAD_S), stderr
    shipped, counted, first, whole = parse_aggregate(stderr)[P_GETPID]
    # the stack's first hit of each generation that saw it is shipped, the rest counted
    assert 1 <= first <= drains and counted == shipped - first, stderr


@pytest.mark.core_only
def test_aggregate_map_full_is_counted(pywalk, interp, start_target, out_path):
    """A kernel map of one key: the hits of every other (stack, thread) while it holds
    one are lost, each counted in its own bucket; what was kept is written exactly."""
    t = start_target(interp, "calls", script="trace_target.py")
    (rc, stdout, stderr), tout = run_on_target(
        pywalk, t, ["--aggregate", "--aggregate-entries", "1", P_GETPID, "-o", out_path])
    assert rc == 0, stderr
    callbacks, _ = target_report(tout)
    hits = check_hits(stderr, [P_GETPID])[P_GETPID][1]
    written = sum(n for frames, n in e2e.parse_folded(out_path))
    assert written == hits["shipped"], stderr
    # every getpid of the target is either written or lost to the full map
    assert hits["shipped"] + hits[AGG_FULL] == tt.N_GETPID + callbacks + 2 * tt.N_THREAD, \
        stderr
    assert hits[AGG_FULL] > 0, stderr
    assert re.search(r"^pywalk: warning: %d hits were lost \(aggregate map full\): more "
                     r"distinct stacks and threads in one second than the kernel holds "
                     r"\(1\); raise --aggregate-entries$" % hits[AGG_FULL], stderr, re.M), \
        stderr


# --- speedscope: a profile per probe --------------------------------------------------------

@pytest.mark.core_only
@pytest.mark.parametrize("latency", [False, True], ids=["count", "latency"])
def test_speedscope_has_a_profile_per_probe(pywalk, interp, tmp_path, latency):
    out = str(tmp_path / "out.speedscope.json")
    r = e2e.run_pywalk(["trace", P_GETPID, P_GETPPID, "-o", out] +
                       (["--latency"] if latency else []) + ["--", CORE_PY, "-c", PPROF_SCRIPT])
    assert r.returncode == 0, r.stderr
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    profiles = dict((p["name"].split(" / ")[0], p) for p in doc["profiles"])
    assert sorted(profiles) == sorted([P_GETPID, P_GETPPID]), [p["name"] for p in
                                                                 doc["profiles"]]
    for probe, n in ((P_GETPID, 5), (P_GETPPID, 3)):
        prof = profiles[probe]
        assert re.match(r"^%s / python3\.11 \(\d+\)$" % re.escape(probe), prof["name"]), prof
        assert prof["type"] == "sampled"
        assert prof["unit"] == ("nanoseconds" if latency else "none"), prof
        assert len(prof["samples"]) == len(prof["weights"]) == 1, prof
        stack = [frames[i]["name"] for i in prof["samples"][0]]
        assert stack == ["<module>"], stack
        assert prof["endValue"] == sum(prof["weights"])
        if latency:
            assert prof["weights"][0] > 0
        else:
            assert prof["weights"] == [n], prof


@pytest.mark.core_only
def test_speedscope_per_probe_loads_in_the_speedscope_app(pywalk, interp, tmp_path, node_tools):
    """The real app imports the file and offers its two profiles, one per probe."""
    site = str(tmp_path / "site")
    shutil.copytree(os.path.join(node_tools, "node_modules", "speedscope", "dist", "release"),
                    site)
    out = os.path.join(site, "profile.speedscope.json")
    r = e2e.run_pywalk(["trace", P_GETPID, P_GETPPID, "-o", out, "--", CORE_PY, "-c",
                        PPROF_SCRIPT])
    assert r.returncode == 0, r.stderr
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    with tf.http_server(site) as base:
        url = "%s/index.html#profileURL=%s" % (
            base, urllib.parse.quote(base + "/profile.speedscope.json", safe=""))
        res = tf.browser(node_tools, "speedscope", url, tf.artifact("speedscope-trace.png"))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    assert res["title"] == "%s - speedscope" % doc["name"], res["title"]
    # the toolbar names the profile shown and how many the file has
    active = doc["profiles"][doc["activeProfileIndex"]]["name"]
    assert active in res["text"] and "(%d/2)" % (doc["activeProfileIndex"] + 1) in res["text"], \
        res["text"]


# --- USDT ---------------------------------------------------------------------------------

@pytest.mark.core_only
def test_usdt_gc_start_counts_every_collection(pywalk, interp, out_path):
    assert interp.exe == CORE_PY
    probe = "usdt:%s:python:gc__start" % CORE_PY
    r = e2e.run_pywalk(["trace", probe, "-o", out_path, "--",
                        CORE_PY, interp.script_path("trace_target.py"), "gc"])
    assert r.returncode == 0, r.stderr
    check_hits(r.stderr, [probe])
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    assert stacks[("<module>", "main", "gc_caller")] == tt.N_GC, stacks
    assert leaf_counts(stacks)["gc_caller"] == tt.N_GC


# --- pprof ---------------------------------------------------------------------------------

PPROF_SCRIPT = "import os\nfor i in range(5): os.getpid()\nfor i in range(3): os.getppid()\n"


@pytest.mark.core_only
@pytest.mark.parametrize("latency", [False, True], ids=["count", "latency"])
def test_pprof_has_a_sample_type_per_probe(pywalk, interp, tmp_path, latency):
    go = shutil.which("go")
    if not go:
        pytest.skip("go tool pprof is not installed (apt-get install golang-go)")
    pb = str(tmp_path / "out.pb.gz")
    r = e2e.run_pywalk(["trace", P_GETPID, P_GETPPID, "-o", pb] +
                       (["--latency"] if latency else []) + ["--", CORE_PY, "-c", PPROF_SCRIPT])
    assert r.returncode == 0, r.stderr
    raw = subprocess.run([go, "tool", "pprof", "-raw", pb], capture_output=True, text=True,
                         timeout=120)
    assert raw.returncode == 0, raw.stderr
    lines = raw.stdout.splitlines()
    unit = "nanoseconds" if latency else "count"
    head = lines.index("Samples:")
    assert lines[head + 1].split() == ["%s/%s" % (P_GETPID, unit), "%s/%s" % (P_GETPPID, unit)]
    values = [[int(v) for v in l.split(":")[0].split()] for l in lines[head + 2:]
              if re.match(r"^\s+\d+\s+\d+:", l)]
    assert len(values) == 2, raw.stdout
    getpid = [v for v in values if v[1] == 0]
    getppid = [v for v in values if v[0] == 0]
    assert len(getpid) == len(getppid) == 1, values
    if latency:
        assert getpid[0][0] > 0 and getppid[0][1] > 0
    else:
        assert getpid[0][0] == 5 and getppid[0][1] == 3


@pytest.mark.core_only
def test_html_roots_each_probe(pywalk, interp, tmp_path):
    page = str(tmp_path / "out.html")
    r = e2e.run_pywalk(["trace", P_GETPID, P_GETPPID, "-o", page, "--", CORE_PY, "-c",
                        PPROF_SCRIPT])
    assert r.returncode == 0, r.stderr
    with open(page, encoding="utf-8") as f:
        text = f.read()
    start = text.index(">", text.index('<script type="application/json" id="pywalk-data">'))
    data = json.loads(text[start + 1:text.index("</script>", start)])
    assert data["total"] == 8 and data["period_ns"] == 0, data
    assert P_GETPID in data["strings"] and P_GETPPID in data["strings"]


# --- perf events ---------------------------------------------------------------------------

FAULT_SCRIPT = ("import mmap\n"
                "def toucher(m):\n"
                "    for off in range(0, len(m), 4096):\n"
                "        m[off] = 1\n"
                "toucher(mmap.mmap(-1, 4096 * 2000))\n")


@pytest.mark.core_only
def test_software_event_counts_page_faults_by_stack(pywalk, interp, out_path):
    probe = "software:page-faults"
    r = e2e.run_pywalk(["trace", probe, "-o", out_path, "--", CORE_PY, "-c", FAULT_SCRIPT])
    assert r.returncode == 0, r.stderr
    check_hits(r.stderr, [probe])
    stacks = by_probe(e2e.parse_folded(out_path), False)[None]
    # one fault per fresh anonymous page touched (the kernel may fault around: not more)
    assert 1000 <= stacks[("<module>", "toucher")] <= 2000, stacks


@pytest.mark.core_only
def test_hardware_event_runs_or_is_refused_clearly(pywalk, interp):
    r = e2e.run_pywalk(["trace", "hardware:cycles", "-d", "200ms", "--", CORE_PY, "-c", "0"])
    if r.returncode == 0:
        check_hits(r.stderr, ["hardware:cycles"])
        return
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "pywalk: 'hardware:cycles': this machine has no such perf event (a VM without a "
        "hardware PMU has no hardware: events; try software:cpu-clock)"]


# --- -l -----------------------------------------------------------------------------------

@pytest.mark.core_only
def test_list_probes(pywalk, interp, start_target):
    r = e2e.run_pywalk(["trace", "-l", "tracepoint:syscalls:*getpid*"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["tracepoint:syscalls:sys_enter_getpid",
                                "tracepoint:syscalls:sys_exit_getpid"]
    r = e2e.run_pywalk(["trace", "-l", "tracepoint:sched:sched_process_*"])
    assert r.returncode == 0, r.stderr
    assert {"tracepoint:sched:sched_process_fork",
            "tracepoint:sched:sched_process_exit"} <= set(r.stdout.split())
    r = e2e.run_pywalk(["trace", "-l", "usdt:%s:*" % CORE_PY])
    assert r.returncode == 0, r.stderr
    assert "usdt:%s:python:gc__start" % CORE_PY in r.stdout.split()
    r = e2e.run_pywalk(["trace", "-l", "software:*"])
    assert "software:page-faults" in r.stdout.split()
    t = start_target(interp, "calls", script="trace_target.py")
    r = e2e.run_pywalk(["trace", "-l", "uprobe:libc.so.6:lab*", "-p", t.pid])
    assert r.returncode == 0, r.stderr
    assert "uprobe:libc.so.6:labs" in r.stdout.split()


# --- bad input ----------------------------------------------------------------------------

BAD = [
    (["fentry:vfs_read"], 2,
     "pywalk: unknown probe type in 'fentry:vfs_read' (use tracepoint:, uprobe:, uretprobe:, "
     "usdt:, kprobe:, kretprobe:, software: or hardware:)"),
    (["tracepoint:sched"], 2,
     "pywalk: 'tracepoint:sched': a tracepoint is tracepoint:CATEGORY:NAME (e.g. "
     "tracepoint:syscalls:sys_enter_openat)"),
    (["tracepoint:nosuch:thing"], 1,
     "pywalk: 'tracepoint:nosuch:thing': no such tracepoint (list them with pywalk trace -l "
     "'tracepoint:nosuch:*')"),
    (["tracepoint:syscalls:sys_enter_nosuch"], 1,
     "pywalk: 'tracepoint:syscalls:sys_enter_nosuch': no syscall is named 'nosuch' (list them "
     "with pywalk trace -l 'tracepoint:syscalls:*')"),
    (["uprobe:libnosuch.so:f"], 1,
     "pywalk: 'uprobe:libnosuch.so:f': no library 'libnosuch.so' in the maps of PID {pid} (is "
     "it loaded? give its path)"),
    (["uprobe:libc.so.6:no_such_function_xyz"], 1,
     "pywalk: 'uprobe:libc.so.6:no_such_function_xyz': {libc} has no function "
     "'no_such_function_xyz' (list them with pywalk trace -l 'uprobe:libc.so.6:*' -p PID)"),
    (["usdt:%s:python:nosuch" % CORE_PY], 1,
     "pywalk: 'usdt:%s:python:nosuch': %s has no USDT probe python:nosuch (list them with "
     "pywalk trace -l 'usdt:%s:*')" % (CORE_PY, CORE_PY, CORE_PY)),
    ([P_WRITE, "--filter", "arg0 =="], 2,
     "pywalk: --filter 'arg0 ==': expected an integer near ''"),
    (["software:page-faults", "--filter", "arg0 == 1"], 2,
     "pywalk: --filter 'arg0 == 1': probe 'software:page-faults' has no arguments (arg0..arg5 "
     "are for uprobe:, usdt: and sys_enter_ probes)"),
    ([P_WRITE, "--filter", "size > 1"], 2,
     "pywalk: --filter 'size > 1': unknown field 'size' (use arg0..arg5, ret, pid, tid, comm, "
     "args.NAME)"),
    ([P_FORK, "--filter", "args.nosuch == 1"], 2,
     "pywalk: --filter 'args.nosuch == 1': tracepoint sched:sched_process_fork has no field "
     "'nosuch' (its fields are in /sys/kernel/tracing/events/sched/sched_process_fork/format)"),
    ([P_WRITE, "--filter", "args.fd == 1"], 2,
     "pywalk: --filter 'args.fd == 1': args.fd is for tracepoint: probes (syscall entries take "
     "arg0..arg5, their exits ret)"),
    ([P_FORK, "--latency"], 2,
     "pywalk: '%s': --latency pairs uprobe: probes and syscalls:sys_enter_ tracepoints with "
     "their returns; this probe has none" % P_FORK),
    ([], 2,
     "pywalk: no probe given (e.g. tracepoint:syscalls:sys_enter_openat; list them with -l)"),
    (["-F", "99", P_GETPID], 2,
     "pywalk: trace takes no -F/--frequency: a probe's rate is in its spec (e.g. "
     "software:cpu-clock:99hz); tracepoints, uprobes and USDT probes count every hit"),
    (["-e", "cycles", P_GETPID], 2,
     "pywalk: trace takes no -e/--event: the probe is the event (e.g. software:cpu-clock:99hz, "
     "hardware:cycles:1000000)"),
    (["--mode", "off-cpu", P_GETPID], 2,
     "pywalk: trace takes no --mode: it counts the probes' hits (--latency weighs them by the "
     "time inside; off-CPU time is pywalk record --mode off-cpu)"),
    ([P_GETPID, "--min-block", "1ms"], 2,
     "pywalk: trace takes no --min-block: it is pywalk record --mode off-cpu's (trace "
     "--filter chooses which hits count)"),
    ([P_GETPID, "--aggregate", "--print"], 2,
     "pywalk: --print writes every hit and --aggregate ships only the first of each stack: "
     "give one of them"),
    ([P_GETPID, "--aggregate-entries", "0", "--aggregate"], 2,
     "pywalk: invalid --aggregate-entries '0' (1-1048576)"),
    ([P_GETPID, "--aggregate-entries", "10"], 2,
     "pywalk: --aggregate-entries is for --aggregate"),
    ([P_GETPID, "--aggregate", "--latency", "-f", "timeline"], 2,
     "pywalk: the timeline format places each hit in time and --aggregate counts hits in the "
     "kernel, without their times: give one of them"),
]


def libc_of(pid):
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and os.path.basename(parts[5]).startswith("libc.so"):
                return parts[5]
    raise AssertionError("no libc in the maps of %d" % pid)


@pytest.mark.core_only
@pytest.mark.parametrize("args,code,message", BAD, ids=[" ".join(b[0]) or "none" for b in BAD])
def test_bad_input_fails_before_attaching(pywalk, interp, start_target, args, code, message):
    t = start_target(interp, "calls", script="trace_target.py")
    r = e2e.run_pywalk(["trace", "-p", t.pid] + args)
    lines = r.stderr.splitlines()
    assert r.returncode == code, r.stderr
    assert lines and lines[0] == message.format(pid=t.pid, libc=libc_of(t.pid)), r.stderr
    # usage errors add the pointer to --help; nothing else ran
    assert len(lines) == (2 if code == 2 else 1), r.stderr
    assert r.stdout == ""
    assert "accounted as" not in r.stderr


@pytest.mark.core_only
def test_kprobe_is_refused_on_a_kernel_without_kprobes(pywalk, interp, start_target):
    if os.path.exists(KPROBE_PMU):
        pytest.skip("this kernel has kprobes")
    t = start_target(interp, "calls", script="trace_target.py")
    r = e2e.run_pywalk(["trace", "-p", t.pid, "kprobe:do_sys_openat2"])
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        "pywalk: 'kprobe:do_sys_openat2': kprobes are not supported by this kernel (%s is "
        "absent: built without CONFIG_KPROBES); use a tracepoint: instead" % KPROBE_PMU]


@pytest.mark.core_only
def test_kprobe_listing_is_refused_on_a_kernel_without_kprobes(pywalk, interp):
    if os.path.exists(KPROBE_PMU):
        pytest.skip("this kernel has kprobes")
    for pattern in ("kprobe:*", "kretprobe:vfs_*"):
        r = e2e.run_pywalk(["trace", "-l", pattern])
        assert r.returncode == 1, r.stderr
        assert r.stdout == ""
        assert r.stderr.splitlines() == [
            "pywalk: -l '%s': kprobes are not supported by this kernel (%s is absent: built "
            "without CONFIG_KPROBES); use a tracepoint: instead (list them with pywalk trace "
            "-l 'tracepoint:*')" % (pattern, KPROBE_PMU)]


def tracefs_mounted():
    with open("/proc/self/mountinfo") as f:
        return any(" - tracefs " in line for line in f)


@pytest.mark.core_only
def test_tracefs_is_mounted_for_pywalk_alone(pywalk):
    """A tracefs probe on a host without tracefs mounted: pywalk mounts it in a mount
    namespace of its own, so the host has no new mount afterwards (nor after a kill)."""
    was = tracefs_mounted()
    if was:
        subprocess.run(["umount", "/sys/kernel/tracing"], check=True)
    try:
        r = e2e.run_pywalk(["trace", "-l", "tracepoint:sched:sched_process_e*"])
        assert r.returncode == 0 and "tracepoint:sched:sched_process_exec" in r.stdout, r
        assert not tracefs_mounted(), "pywalk left tracefs mounted on the host"
    finally:
        if was and not tracefs_mounted():
            subprocess.run(["mount", "-t", "tracefs", "tracefs", "/sys/kernel/tracing"],
                           check=True)
