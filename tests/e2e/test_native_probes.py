# SPDX-License-Identifier: MIT
"""--native beyond the sampler: trace's probes, off-CPU time and the agent, on the C
extension of test_native.py (tests/targets/nativeext.c, built per interpreter).

* trace: tracepoint:syscalls:sys_enter_clock_nanosleep on a thread that sleeps in C
  (sleeper -> nativeext.sleep -> ext_sleep_outer -> ext_sleep_inner -> nanosleep) gives,
  root first, the thread's native start, <module>;sleeper where the eval loop ran them,
  py_sleep;ext_sleep_outer;ext_sleep_inner, then the C library's nanosleep frames at the
  leaf, on >= 95 % of the hits; --print's lines show the same stacks; every hit is shipped
  with its native stack or counted.
* record --mode off-cpu --native (at the switch-out, and with --min-block at the exit of
  the system call): the same frames, then the '[off-cpu: sleeping]' leaf, on >= 90 % of
  the time off CPU.
* agent --native: the windows it sends over OTLP (decoded by protoc against the schema
  subset) and writes as pprof (decoded by go tool pprof, the bytes Pyroscope and Parca get)
  hold the merged stacks, the extension as a Mapping with the build-id readelf -n prints,
  and its functions' Locations at addresses inside it, typed 'native'.
"""
import glob
import os
import re
import signal
import subprocess

import pytest

import pywalk_e2e as e2e
# the extension and its checks are test_native's
from test_native import (EXT_FUNCS, HZ, IN_INNER, IN_SPIN, LOCATION_RE, MAPPING_RE,  # noqa: F401
                         _build_id, _ext_file, _native_name, _project, ext, merges)
from test_offcpu import offcpu_summary
from test_trace import check_hits

SECONDS = 3
P_SLEEP = "tracepoint:syscalls:sys_enter_clock_nanosleep"
SLEEP_CHAIN = ["<module>", "sleeper", "py_sleep", "ext_sleep_outer", "ext_sleep_inner"]
SLEEPING = "[off-cpu: sleeping]"
TRACE_MATCH_MIN = 0.95
OFFCPU_MATCH_MIN = 0.90  # of the time off CPU (a preemption or two are not sleeps)
MIN_HITS = 20  # the target sleeps 20 ms at a time: ~50 hits a second when idle
PAIRED_RE = re.compile(r"^pywalk: --native: (\d+) stacks shipped with their native stack; "
                       r"(\d+) native stack records without their sample", re.M)
UNWOUND_RE = re.compile(r"^pywalk: --native: (\d+) stacks unwound to their first frame, "
                        r"(\d+) stopped short", re.M)


def _sleep_stack(frames, leaf=None):
    """Whether frames are the sleep in C, root first: a native root, exactly SLEEP_CHAIN as
    test_native projects it, only native frames after ext_sleep_inner with the C library's
    nanosleep among them, and `leaf` last (None: a native frame is the leaf)."""
    if leaf is not None:
        if not frames or frames[-1] != leaf:
            return False
        frames = frames[:-1]
    if not frames or not _native_name(frames[0]):
        return False
    if any(f.startswith("_PyEval_EvalFrameDefault") for f in frames):
        return False
    if _project(frames) != SLEEP_CHAIN:
        return False
    below = frames[frames.index("ext_sleep_inner [native]") + 1:]
    return bool(below) and all(_native_name(f) for f in below) and \
        any("nanosleep" in f for f in below)


def _paired(stderr, shipped, describe):
    """Every shipped stack came with its native stack, none of those records alone, and
    none stopped short of its first frame when unwound (off-CPU unwinds a stack when its
    wait is counted: one whose end was never seen is not)."""
    m = PAIRED_RE.search(stderr)
    assert m, "no --native pairing line\n" + describe
    assert int(m.group(1)) == shipped and int(m.group(2)) == 0, \
        "%s, %d shipped\n%s" % (m.group(0), shipped, describe)
    u = UNWOUND_RE.search(stderr)
    assert u and int(u.group(1)) > 0 and int(u.group(2)) == 0, describe


def _not_counted(stderr):
    """The shipped stacks pywalk says it could not count."""
    total = 0
    for line in stderr.splitlines():
        m = e2e.NOT_COUNTED_RE.match(line)
        if m:
            total += int(m.group(1))
    return total


def _sleeper(interp, ext, seconds):
    t = e2e.Target(interp, argv=interp.argv("native_target.py", ext[0], seconds, "--sleep"))
    t.wait_ready()
    return t


def test_trace_a_syscall_made_in_c_has_the_merged_stack(pywalk, interp, merges, ext, tmp_path):
    out = str(tmp_path / "trace.folded")
    t = _sleeper(interp, ext, SECONDS + 30)
    try:
        r = e2e.run_pywalk(["trace", "-p", t.pid, "--native", "--print", "-d", SECONDS,
                            "-o", out, P_SLEEP], timeout=SECONDS + 60)
    finally:
        t.stop()
    describe = e2e.describe_run(r, out)
    assert r.returncode == 0, describe
    hits = check_hits(r.stderr, [P_SLEEP])
    shipped = hits[P_SLEEP][1]["shipped"]
    rows = e2e.parse_folded(out)
    total = sum(n for _, n in rows)
    assert total + _not_counted(r.stderr) == shipped, describe
    assert total >= MIN_HITS, "only %d hits counted\n%s" % (total, describe)
    exact = sum(n for frames, n in rows if _sleep_stack(frames))
    assert exact >= TRACE_MATCH_MIN * total, \
        "%d of %d hits: native root, %s, then the C library's nanosleep\n%s" % (
            exact, total, SLEEP_CHAIN, describe)
    _paired(r.stderr, shipped, describe)
    # --print: one line per hit counted, its STACK column the same merged stack
    lines = [line.split("\t") for line in r.stdout.splitlines()]
    assert len(lines) == total and all(len(f) == 8 for f in lines), r.stdout[-2000:]
    printed = sum(1 for f in lines if _sleep_stack(f[7].split(";")))
    assert printed >= TRACE_MATCH_MIN * total, "%d of %d --print lines\n%s" % (
        printed, total, r.stdout[-2000:])


@pytest.mark.parametrize("extra", [(), ("--min-block", "1ms")], ids=["at-switch", "at-exit"])
def test_offcpu_native_frames_between_python_and_the_wait(pywalk, interp, merges, ext,
                                                          tmp_path, extra):
    out = str(tmp_path / "off.folded")
    t = _sleeper(interp, ext, SECONDS + 30)
    try:
        r = e2e.run_pywalk(["record", "-p", t.pid, "--mode", "off-cpu", "--native", "-d",
                            SECONDS, "-o", out] + list(extra), timeout=SECONDS + 60)
    finally:
        t.stop()
    describe = e2e.describe_run(r, out)
    assert r.returncode == 0, describe
    _, outcomes, pair = offcpu_summary(r.stderr)
    rows = e2e.parse_folded(out)
    total = sum(n for _, n in rows)
    exact = sum(n for frames, n in rows if _sleep_stack(frames, leaf=SLEEPING))
    assert total >= 0.5 * SECONDS * 1e9, "%.3f s off CPU counted\n%s" % (total / 1e9, describe)
    assert exact >= OFFCPU_MATCH_MIN * total, \
        "%.3f of %.3f s: native root, %s, the C library's nanosleep, then %s\n%s" % (
            exact / 1e9, total / 1e9, SLEEP_CHAIN, SLEEPING, describe)
    _paired(r.stderr, outcomes["shipped"], describe)
    if extra:
        assert pair["at_exit"] >= MIN_HITS, "the system call exits walked %d\n%s" % (
            pair["at_exit"], describe)


def _project_otlp(frames, ext_path):
    """An OTLP sample's frames as test_native projects folded ones: Python by qualname,
    the extension's native frames by name (each in the extension's Mapping)."""
    out = []
    for f in frames:
        if isinstance(f[1], dict):
            if f[0] in EXT_FUNCS:
                assert f[1]["path"] == ext_path and f[3] == "native", f
                out.append(f[0])
        else:
            out.append(f[0])
    return out


def _check_pprof(raw, ext_path, host_so, describe):
    """pprof: one Mapping of the extension with its build-id, and Locations of its
    functions at addresses inside it."""
    maps = [m for m in MAPPING_RE.finditer(raw.split("Mappings")[-1])
            if m.group(5) == ext_path]
    assert len(maps) == 1, "no single Mapping for %s:\n%s" % (ext_path, raw[-3000:])
    m = maps[0]
    assert m.group(6) == _build_id(host_so), m.group(0)
    start, limit = int(m.group(2), 16), int(m.group(3), 16)
    seen = set()
    for loc in LOCATION_RE.finditer(raw):
        if loc.group(3) in EXT_FUNCS[1:]:
            addr = int(loc.group(1), 16)
            assert int(loc.group(2)) == int(m.group(1)) and start <= addr < limit, \
                "%s outside %s" % (loc.group(0), m.group(0))
            seen.add(loc.group(3))
    assert {"ext_outer", "ext_middle", "ext_inner"} <= seen, \
        "Locations of %s only\n%s" % (sorted(seen), describe)


def test_agent_native_frames_reach_otlp_and_pprof(pywalk, interp, merges, ext, tmp_path):
    from test_agent_otlp import Receiver, Request
    so = _ext_file(ext[1])
    # the Mapping's path is the one the target's maps show pywalk: a chrooted target's
    # file under its root, the host's path
    ext_path = host_so = os.path.join(ext[1], so)
    export = str(tmp_path / "export")
    os.makedirs(export)
    receiver = Receiver()
    t = e2e.Target(interp, argv=interp.argv("native_target.py", ext[0], 120))
    agent = None
    try:
        t.wait_ready()
        agent = subprocess.Popen(
            [pywalk, "agent", "-p", str(t.pid), "--native", "--interval", "2s", "-F",
             str(HZ), "--otlp", receiver.url, "--export-dir", export, "--flush-timeout",
             "10s"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True)
        receiver.wait_for(2, 60, agent)
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=60)
    finally:
        if agent and agent.poll() is None:
            agent.kill()
            agent.communicate()
        t.stop()
        receiver.stop()
    describe = "agent exit %s, %d requests, refused %s\n%s" % (
        agent.returncode, len(receiver.requests), receiver.refused, stderr)
    assert agent.returncode == 0 and not receiver.refused, describe
    assert len(receiver.requests) >= 2, describe
    total = exact = 0
    for _, headers, body in receiver.requests:
        req = Request(headers, body)
        for frames, _, value, _ in req.samples():
            total += value
            got = _project_otlp(frames, ext_path)
            if got in (IN_INNER, IN_SPIN):
                exact += value
            for f in frames:
                if isinstance(f[1], dict) and f[1]["path"] == ext_path:
                    assert f[1]["build_id"] == _build_id(host_so), (f, describe)
    assert total > 0, describe
    assert exact >= 0.95 * total, "%d of %d ns in OTLP exactly %s or %s\n%s" % (
        exact, total, IN_INNER, IN_SPIN, describe)
    files = sorted(glob.glob(os.path.join(export, "*.pb.gz")))
    assert files, "nothing exported\n" + describe
    _check_pprof(e2e.go_pprof(tmp_path, "-raw", files[0]), ext_path, host_so, describe)
    e2e.check_summary(stderr)


@pytest.mark.parametrize("args, line", [
    (["trace", "--native", "--aggregate", P_SLEEP],
     "pywalk: --native cannot go with --aggregate: the kernel counts stacks of Python frames "
     "only, and a native stack is unwound per hit"),
    (["trace", "--native-stack", "8K", P_SLEEP], "pywalk: --native-stack needs --native"),
    (["agent", "--native-stack", "8K", "--export-dir", "/nonexistent"],
     "pywalk: --native-stack needs --native"),
    (["trace", "--native-cache", "8M", P_SLEEP], "pywalk: --native-cache needs --native"),
    (["record", "--native", "--native-stack", "12K"],
     "pywalk: invalid --native-stack '12K' (4K-64K, a power of two)"),
], ids=["trace-aggregate", "trace-stack-alone", "agent-stack-alone", "trace-cache-alone",
        "record-bad-size"])
def test_native_usage_errors(pywalk, args, line):
    """One line that says what is wrong, exit 2, before any process is looked at."""
    r = e2e.run_pywalk(args + ["-p", os.getpid()])
    assert r.returncode == 2, r
    assert r.stderr.splitlines()[0] == line, r.stderr
