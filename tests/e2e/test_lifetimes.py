# SPDX-License-Identifier: MIT
"""End-to-end tests of process lifetimes (DESIGN invariant 4: a PID that is reused is
another process).

* PID reuse: `record -p A,B -d 6` on two known_shape.py processes of the core interpreter;
  A is killed after 1 s of sampling and its PID is given to a process of uid 65534 running
  Python functions named nobody_reused_pid_* (ns_last_pid = A - 1 right before the fork;
  retried while another process takes the PID first, and a failure, not a skip, if it
  cannot be forced: the core path of the test). None of the squatter's functions is in the
  output; A's stacks from before its death and B's are there, >= 95 % of each exactly on the
  known-shape stacks, B with >= 80 % of what its measured CPU time gives; the summary adds
  up and the folded counts + the not-counted stacks (<= 1 %) are `shipped`.
* Exit with records unread: exit_burst.py runs 40 functions of 5 ms CPU each, every one a
  fresh code object from a file of its own, and leaves through os._exit right after the
  last, under `record -p PID -F 4999`. Every function has stacks (>= 1; 25 expected), the
  last one included, all named with their own file and line; the not-counted stacks stay
  <= 1 % of shipped; the summary adds up.
"""
import collections
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

import pywalk_e2e as e2e
from pywalk_e2e import ks

HZ = 499
REUSE_DURATION_S = 6
KILL_AFTER_S = 1.0
REUSE_TRIES = 100
NOBODY = 65534
MATCH_MIN = 0.95
SHIPPED_FLOOR = 0.8
SQUATTER = """
import sys
def nobody_reused_pid_outer():
    while True: nobody_reused_pid_inner()
def nobody_reused_pid_inner():
    acc = 0
    for i in range(20000): acc = (acc * 31 + i) & 0xFFFF
print("READY", flush=True)
nobody_reused_pid_outer()
"""

BURST_HZ = 4999
BURST_COUNT = 40
BURST_SLICE_MS = 5
BURST_RE = re.compile(r"^burst_(\d+)$")


def start_pywalk(args, out, env=None):
    """`pywalk record -v ARGS -o OUT` in the background; returns (Popen, stderr file) once
    it samples (its "sampling at" line)."""
    err = tempfile.TemporaryFile("w+")
    rec = subprocess.Popen([e2e.pywalk_path(), "record", "-v", "-o", out] +
                           [str(a) for a in args], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + 30
    while True:
        err.seek(0)
        text = err.read()
        if "sampling at" in text:
            return rec, err
        if rec.poll() is not None or time.monotonic() > deadline:
            rec.kill()
            rec.wait()
            raise AssertionError("pywalk did not start sampling (exit %s):\n%s" % (
                rec.returncode, text))
        time.sleep(0.01)


def finish_pywalk(rec, err, timeout):
    try:
        rec.wait(timeout=timeout)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    err.seek(0)
    text = err.read()
    err.close()
    return text


def take_pid(pid, argv):
    """Start argv as PID pid (free now): ns_last_pid = pid - 1 right before the fork, again
    while another process takes it first. Fails the test if it cannot be forced."""
    got = []
    for _ in range(REUSE_TRIES):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        if p.pid == pid:
            return p
        got.append(p.pid)
        p.kill()
        p.wait()
    pytest.fail("could not start a process as PID %d in %d tries (got %s): the PID reuse "
                "path went untested" % (pid, REUSE_TRIES, got[-10:]))


def wait_line(proc, want, timeout=20):
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline and proc.poll() is None:
        line = proc.stdout.readline().decode(errors="replace")
        if line.strip() == want:
            return
    raise AssertionError("no %r from %s (exit %s, last %r): %s" % (
        want, proc.args, proc.poll(), line, proc.stderr.read().decode(errors="replace")))


@pytest.mark.core_only
def test_reused_pid_is_never_the_old_process(pywalk, interp, start_target, tmp_path):
    a, b = start_target(interp), start_target(interp)
    out = str(tmp_path / "reuse.folded")
    pid_a, pid_b = a.pid, b.pid
    squatter = None
    rec, err = start_pywalk(["-p", "%d,%d" % (pid_a, pid_b), "-d", REUSE_DURATION_S,
                             "-F", HZ], out)
    try:
        cpu_b0 = b.cpu_seconds()
        time.sleep(KILL_AFTER_S)
        a.stop()  # killed and reaped: its PID is free
        squatter = take_pid(pid_a, ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                                    "--clear-groups", "--", interp.exe, "-c", SQUATTER])
        wait_line(squatter, "READY")
        with open("/proc/%d/status" % pid_a) as f:
            uid = [l.split()[1] for l in f if l.startswith("Uid:")]
        assert uid == [str(NOBODY)], "PID %d runs as uid %s" % (pid_a, uid)
        stderr = finish_pywalk(rec, err, REUSE_DURATION_S + 60)
        cpu_b = b.cpu_seconds() - cpu_b0
        with open("/proc/%d/stat" % pid_a) as f:
            squat_cpu = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13]) \
                / os.sysconf("SC_CLK_TCK")
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
        if squatter:
            os.killpg(squatter.pid, signal.SIGKILL)
            squatter.wait()
    r = subprocess.CompletedProcess(rec.args, rec.returncode, "", stderr)
    describe = "%s\n(A = PID %d killed after %.1f s and taken by uid %d, %.2f CPU s; B = " \
        "PID %d, %.2f CPU s)" % (e2e.describe_run(r, out), pid_a, KILL_AFTER_S, NOBODY,
                                 squat_cpu, pid_b, cpu_b)
    assert rec.returncode == 0, describe
    e2e.check_summary(stderr)
    rows = e2e.parse_folded(out)
    e2e.check_folded_total(stderr, rows, describe)
    assert squat_cpu > 0.2, "the squatter got %.2f CPU s: the test proves nothing\n%s" % (
        squat_cpu, describe)
    squatted = [(frames, n) for frames, n in rows
                if any(fr.startswith("nobody_reused_pid_") for fr in frames)]
    assert not squatted, "the process that reused PID %d was sampled as the old one: %s" % (
        pid_a, ["%s %d" % (";".join(f), n) for f, n in squatted[:5]])
    expected = ks.expected_stacks(interp.version, a.script_path)
    both = dict(expected[ks.MAIN])
    both.update(expected[ks.WORKER])
    scores = {}
    for frames, n in rows:
        proc = e2e.parse_task_frame(frames[0])
        assert proc and proc[1] in (pid_a, pid_b), "first frame %r is not A or B\n%s" % (
            frames[0], describe)
        scores.setdefault(proc[1], e2e.ThreadScore(both)).add(e2e.to_py_frames(frames[1:]), n)
    assert sorted(scores) == sorted([pid_a, pid_b]), "processes sampled %s\n%s" % (
        sorted(scores), describe)
    for pid, s in scores.items():
        assert s.match_fraction >= MATCH_MIN, "PID %d: %s" % (pid, s.report())
    assert scores[pid_b].total >= SHIPPED_FLOOR * cpu_b * HZ, \
        "B: %d samples < %.0f%% of %.0f (%.2f CPU s x %d Hz)\n%s" % (
            scores[pid_b].total, 100 * SHIPPED_FLOOR, cpu_b * HZ, cpu_b, HZ, describe)
    print("PID %d reused by uid %d (%.2f CPU s): 0 of its stacks shown; A %d samples, "
          "B %d (%.1f%% exact)" % (pid_a, NOBODY, squat_cpu, scores[pid_a].total,
                                   scores[pid_b].total, 100 * scores[pid_b].match_fraction))


def test_exit_with_records_unread(pywalk, interp, tmp_path):
    out = str(tmp_path / "burst.folded")
    argv = interp.argv("exit_burst.py", BURST_COUNT, BURST_SLICE_MS)
    target = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, start_new_session=True)
    rec = err = None
    try:
        wait_line(target, "READY")
        rec, err = start_pywalk(["-p", target.pid, "-F", BURST_HZ, "-d", 60], out)
        target.stdin.write(b"go\n")
        target.stdin.flush()
        target.wait(timeout=60)
        stderr = finish_pywalk(rec, err, 60)
    finally:
        if target.poll() is None:
            os.killpg(target.pid, signal.SIGKILL)
            target.wait()
        if rec is not None and rec.poll() is None:
            rec.kill()
            rec.wait()
    r = subprocess.CompletedProcess(rec.args, rec.returncode, "", stderr)
    describe = e2e.describe_run(r, out)
    assert target.returncode == 0, target.stderr.read().decode(errors="replace")
    assert rec.returncode == 0, describe
    _, buckets = e2e.check_summary(stderr)
    rows = e2e.parse_folded(out)
    e2e.check_folded_total(stderr, rows, describe)
    per_fn = collections.Counter()
    for frames, n in rows:
        leaf = e2e.parse_py_frame(frames[-1])
        m = BURST_RE.match(leaf[0])
        if not m:
            continue
        # line 2 is the busy loop, line 1 the def (the function's entry, RESUME)
        assert leaf[1] == leaf[0] + ".py" and leaf[2] in (1, 2), \
            "frame %r: not its own file, line 1 or 2" % frames[-1]
        per_fn[int(m.group(1))] += n
    missing = [i for i in range(BURST_COUNT) if not per_fn[i]]
    assert not missing, "burst functions without stacks: %s (samples %s)\n%s" % (
        missing, dict(per_fn), describe)
    not_counted = buckets["shipped"] - sum(n for _, n in rows)
    print("%s: %d burst samples over %d functions (last: %d), %d of %d shipped not "
          "counted" % (interp.id, sum(per_fn.values()), BURST_COUNT, per_fn[BURST_COUNT - 1],
                       not_counted, buckets["shipped"]))
