# SPDX-License-Identifier: MIT
"""End-to-end tests of `pywalk record` against tests/targets/known_shape.py.

Per interpreter, one 5 s recording of a running workload (-p PID --threads) is shared by
the tests that check it: ground-truth stacks per thread, the main thread's phase split,
the recursion depth, the accounting summary. Then launch mode (`-- python script`), two
processes at once, and the error cases. Ground truth: tests/targets/known_shape_expected.py.
"""
import collections
import os
import subprocess
import time

import pytest

import pywalk_e2e as e2e
from pywalk_e2e import ks

HZ = 499
DURATION_S = 5
MATCH_MIN = 0.95          # share of a thread's samples that must be an expected stack
LAUNCH_MATCH_MIN = 0.90   # launch mode also samples interpreter start-up
SPLIT_SIGMAS = 5          # main thread phase split: binomial error of its sample count
SHIPPED_FLOOR = 0.8       # of the samples the target's CPU time should give
THREAD_SHARE_MIN = 0.2    # each thread's share of samples (the two share one GIL)


class Recording:
    """One `pywalk record -p PID --threads` run of the workload and what was seen."""

    def __init__(self, interp, out_path, extra_args=()):
        self.interp = interp
        self.out_path = out_path
        self.target = e2e.Target(interp, "known_shape.py", ())
        try:
            self.target.wait_ready()
            self.pid = self.target.pid
            self.script = self.target.script_path
            self.tids = self.target.tids()
            self.comms = dict((tid, self.target.comm(tid)) for tid in self.tids)
            cpu0, wall0 = self.target.cpu_seconds(), time.monotonic()
            self.result = e2e.run_pywalk(
                ["record", "-p", self.pid, "-d", DURATION_S, "-F", HZ, "--threads",
                 "-o", out_path] + list(extra_args), timeout=DURATION_S + 60)
            cpu1, wall1 = self.target.cpu_seconds(), time.monotonic()
            self.alive_after = self.target.proc.poll() is None
            self.target_stderr = self.target.stderr()
        finally:
            self.target.stop()
        self.cpu_rate = (cpu1 - cpu0) / (wall1 - wall0)  # CPUs the target kept busy
        self.rows = e2e.parse_folded(out_path) if os.path.exists(out_path) else None
        self.expected = ks.expected_stacks(interp.version, self.script)
        self.shape = ks.Shape()

    def describe(self):
        return "%s\n(target %s, tids %s, comms %s, cpu rate %.2f)" % (
            e2e.describe_run(self.result, self.out_path), " ".join(self.target.argv),
            self.tids, self.comms, self.cpu_rate)

    def require_output(self):
        assert self.result.returncode == 0, self.describe()
        assert self.rows is not None, "no output file\n" + self.describe()
        assert self.rows, "empty profile\n" + self.describe()
        return self.rows

    def by_thread(self):
        """{tid: ThreadScore} (main thread scored against main stacks, others worker)."""
        main_exp, worker_exp = self.expected[ks.MAIN], self.expected[ks.WORKER]
        scores = {}
        for frames, n in self.require_output():
            task = e2e.parse_task_frame(frames[0])
            assert task, "first frame %r is not 'COMM (TID)'\n%s" % (frames[0], self.describe())
            tid = task[1]
            if tid not in scores:
                scores[tid] = (e2e.ThreadScore(main_exp, [worker_exp]) if tid == self.pid
                               else e2e.ThreadScore(worker_exp, [main_exp]))
            scores[tid].add(e2e.to_py_frames(frames[1:]), n)
        return scores


@pytest.fixture(scope="module")
def recording(pywalk, interp, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("record-%s" % interp.id) / "out.folded")
    return Recording(interp, out)


# --- 1 and 5: one recording, checked from every side ---------------------------------

def test_record_exits_zero_and_accounts_for_every_event(recording):
    r = recording
    r.require_output()
    e2e.check_summary(r.result.stderr)
    e2e.check_folded_total(r.result.stderr, r.rows, r.describe())
    assert r.alive_after, "the target died while pywalk recorded it\n" + r.target_stderr


def test_record_ships_most_on_cpu_samples(recording):
    r = recording
    r.require_output()
    _, buckets = e2e.parse_summary(r.result.stderr)  # the invariant is checked above
    # Two threads sharing one GIL keep about one CPU busy; measured, not assumed, so a
    # loaded machine lowers the bar instead of failing the test.
    want = r.cpu_rate * DURATION_S * HZ
    assert r.cpu_rate > 0.05, "target got only %.2f CPUs: did it run?" % r.cpu_rate
    assert buckets["shipped"] >= SHIPPED_FLOOR * want, \
        "shipped %d < %.0f%% of %.0f (%.2f CPUs x %d s x %d Hz)\n%s" % (
            buckets["shipped"], 100 * SHIPPED_FLOOR, want, r.cpu_rate, DURATION_S, HZ,
            r.describe())


def test_record_has_no_unknown_frames(recording):
    bad = e2e.unknown_frames(recording.require_output())
    assert not bad, "unknown-looking frames: %s\n%s" % (bad.most_common(10),
                                                        recording.describe())


def test_record_thread_frames_are_the_targets_threads(recording):
    r = recording
    seen = set()
    for frames, _ in r.require_output():
        task = e2e.parse_task_frame(frames[0])
        assert task, "first frame %r is not 'COMM (TID)'" % frames[0]
        name, tid = task
        assert tid in r.tids, "TID %d is not a thread of PID %d (%s)" % (tid, r.pid, r.tids)
        want = e2e.ks_thread_names(r.pid, r.tids)[tid]
        assert name == want, "TID %d: named %r, threading says %r" % (tid, name, want)
        seen.add(tid)
    assert len(r.tids) == 2, "workload should have 2 threads, has %s" % r.tids
    assert seen == set(r.tids), "sampled threads %s, workload threads %s\n%s" % (
        sorted(seen), r.tids, r.describe())


def test_record_both_threads_get_their_share(recording):
    scores = recording.by_thread()
    total = sum(s.total for s in scores.values())
    for tid, s in scores.items():
        assert s.total >= THREAD_SHARE_MIN * total, \
            "thread %d has %d of %d samples\n%s" % (tid, s.total, total, recording.describe())


def test_record_main_thread_matches_ground_truth(recording):
    r = recording
    main = r.by_thread().get(r.pid)
    assert main and main.total, "no samples of the main thread (TID == PID %d)\n%s" % (
        r.pid, r.describe())
    print("main thread: %.1f%% of %d samples exact" % (100 * main.match_fraction, main.total))
    assert main.match_fraction >= MATCH_MIN, \
        "main thread: %s\nexpected one of:\n%s" % (main.report(), "\n".join(
            "  %s: %s" % (p, ks.format_stack(s)) for p, s in r.expected[ks.MAIN].items()))
    assert main.foreign == 0, "main thread shows worker stacks: " + main.report()


def test_record_main_thread_phase_split(recording):
    r = recording
    main = r.by_thread().get(r.pid)
    assert main and main.matched, "no matched main-thread samples\n" + r.describe()
    got = main.split()
    print("main thread split: %s, designed %s" % (
        dict((p, round(100 * v, 1)) for p, v in got.items()),
        dict((p, round(100 * v)) for p, v in r.shape.phases.items())))
    for phase, want in r.shape.phases.items():
        tolerance = e2e.binomial_tolerance(main.matched, want, SPLIT_SIGMAS)
        assert abs(got[phase] - want) <= tolerance, \
            "phase %s: %.1f%% of main-thread samples, designed %.0f%% +- %.1f (split %s)\n%s" % (
                phase, 100 * got[phase], 100 * want, 100 * tolerance,
                dict((p, round(100 * v, 1)) for p, v in got.items()), main.report())


def test_record_recursion_has_exact_depth(recording):
    r = recording
    main = r.by_thread().get(r.pid)
    assert main, "no samples of the main thread\n" + r.describe()
    leaf_line = r.shape.markers["leaf:recurse"][1]
    recurse_name = r.expected[ks.MAIN]["recurse"][-1].qualname
    depths = collections.Counter()
    for stack, n in main.stacks.items():
        if stack and stack[-1][0] == recurse_name and stack[-1][2] == leaf_line:
            depths[sum(1 for fr in stack if fr[0] == recurse_name)] += n
    assert sum(depths.values()) >= 20, "too few samples at the recursion's leaf (%s)\n%s" % (
        dict(depths), main.report())
    assert set(depths) == {r.shape.recursion_depth}, \
        "recursion depths seen %s (depth: samples), designed %d" % (
            dict(depths), r.shape.recursion_depth)


def test_record_worker_thread_has_its_own_stack(recording):
    r = recording
    workers = dict((tid, s) for tid, s in r.by_thread().items() if tid != r.pid)
    assert workers, "no samples of the worker thread\n" + r.describe()
    for tid, s in workers.items():
        print("worker %d: %.1f%% of %d samples exact" % (tid, 100 * s.match_fraction, s.total))
        assert s.match_fraction >= MATCH_MIN, "worker %d: %s\nexpected: %s" % (
            tid, s.report(), ks.format_stack(r.expected[ks.WORKER]["worker"]))
        assert s.foreign == 0, "worker %d shows main-thread stacks: %s" % (tid, s.report())


# --- 2: launch mode ------------------------------------------------------------------

def test_launch_mode_profiles_the_command(pywalk, interp, out_path):
    argv = interp.argv("known_shape.py", 2)
    r = e2e.run_pywalk(["record", "-F", HZ, "-o", out_path, "--"] + argv, timeout=60)
    assert r.returncode == 0, e2e.describe_run(r, out_path)
    e2e.check_summary(r.stderr)
    assert os.path.exists(out_path), "no output file\n" + e2e.describe_run(r)
    rows = e2e.parse_folded(out_path)
    e2e.check_folded_total(r.stderr, rows, e2e.describe_run(r, out_path))
    expected = ks.expected_stacks(interp.version, interp.script_path("known_shape.py"))
    both = dict(("main/" + p, s) for p, s in expected[ks.MAIN].items())
    both.update(("worker/" + p, s) for p, s in expected[ks.WORKER].items())
    score = e2e.ThreadScore(both)
    for frames, n in rows:
        assert e2e.parse_task_frame(frames[0]) is None, \
            "without --threads/several PIDs the root frame is a Python frame: %r" % frames[0]
        score.add(e2e.to_py_frames(frames), n)
    assert score.total >= 100, "only %d samples for ~2 s of ~1 busy CPU\n%s" % (
        score.total, e2e.describe_run(r, out_path))
    assert score.match_fraction >= LAUNCH_MATCH_MIN, score.report()
    for phase in expected[ks.MAIN]:
        assert score.phases["main/" + phase] >= 5, \
            "main thread phase %s missing: %s" % (phase, score.report())
    assert score.phases["worker/worker"] >= 5, "worker missing: " + score.report()
    assert not e2e.unknown_frames(rows), e2e.unknown_frames(rows).most_common(10)


# --- 3: several processes ------------------------------------------------------------

def _record_two(pywalk, interp, start_target, out_path, threads, seconds):
    targets = [start_target(interp), start_target(interp)]
    info = dict((t.pid, (t, t.comm(), dict((tid, t.comm(tid)) for tid in t.tids())))
                for t in targets)
    args = ["record", "-d", seconds, "-F", HZ, "-o", out_path]
    for t in targets:
        args += ["-p", t.pid]
    if threads:
        args.append("--threads")
    r = e2e.run_pywalk(args, timeout=seconds + 60)
    assert r.returncode == 0, e2e.describe_run(r, out_path)
    e2e.check_summary(r.stderr)
    rows = e2e.parse_folded(out_path)
    e2e.check_folded_total(r.stderr, rows, e2e.describe_run(r, out_path))
    return targets, info, rows, r


def test_two_pids_with_threads(pywalk, interp, start_target, out_path):
    targets, info, rows, r = _record_two(pywalk, interp, start_target, out_path, True, 2)
    expected = ks.expected_stacks(interp.version, targets[0].script_path)
    per_pid = collections.defaultdict(lambda: e2e.ThreadScore({}))
    scores = {}
    for frames, n in rows:
        proc = e2e.parse_task_frame(frames[0])
        assert proc and proc[1] in info, "first frame %r is not 'COMM (PID)' of %s" % (
            frames[0], sorted(info))
        pid = proc[1]
        assert proc[0] == info[pid][1], "PID %d: comm %r, /proc says %r" % (
            pid, proc[0], info[pid][1])
        task = e2e.parse_task_frame(frames[1]) if len(frames) > 1 else None
        assert task and task[1] in info[pid][2], \
            "second frame %r is not 'COMM (TID)' of a thread of PID %d (%s)" % (
                frames[1:2], pid, sorted(info[pid][2]))
        want = e2e.ks_thread_names(pid, info[pid][2])[task[1]]
        assert task[0] == want, "TID %d: named %r, threading says %r" % (task[1], task[0], want)
        key = (pid, task[1])
        if key not in scores:
            is_main = task[1] == pid
            scores[key] = e2e.ThreadScore(expected[ks.MAIN if is_main else ks.WORKER])
        scores[key].add(e2e.to_py_frames(frames[2:]), n)
    for pid in info:
        threads = sorted(tid for p, tid in scores if p == pid)
        assert threads == sorted(info[pid][2]), \
            "PID %d: sampled threads %s, has %s\n%s" % (pid, threads, sorted(info[pid][2]),
                                                        e2e.describe_run(r, out_path))
    for (pid, tid), s in scores.items():
        assert s.match_fraction >= MATCH_MIN, "PID %d TID %d: %s" % (pid, tid, s.report())


@pytest.mark.core_only
def test_two_pids_without_threads(pywalk, interp, start_target, out_path):
    targets, info, rows, r = _record_two(pywalk, interp, start_target, out_path, False, 1)
    expected = ks.expected_stacks(interp.version, targets[0].script_path)
    both = dict(expected[ks.MAIN])
    both.update(expected[ks.WORKER])
    scores = {}
    for frames, n in rows:
        proc = e2e.parse_task_frame(frames[0])
        assert proc and proc[1] in info, "first frame %r is not 'COMM (PID)' of %s" % (
            frames[0], sorted(info))
        assert e2e.parse_py_frame(frames[1]) if len(frames) > 1 else False, \
            "second frame %r should be the Python root frame (no --threads)" % frames[1:2]
        scores.setdefault(proc[1], e2e.ThreadScore(both)).add(
            e2e.to_py_frames(frames[1:]), n)
    assert sorted(scores) == sorted(info), "processes sampled %s, recorded %s" % (
        sorted(scores), sorted(info))
    for pid, s in scores.items():
        assert s.match_fraction >= MATCH_MIN, "PID %d: %s" % (pid, s.report())


# --- 4: errors -----------------------------------------------------------------------

def assert_clean_error(r, out_path, mention=None, code=None):
    """Non-zero exit, one 'pywalk: ' line on stderr (a usage error may add one "Try
    'pywalk ... --help'." line), nothing on stdout, and no output file."""
    text = "exit %d\nstdout: %r\nstderr: %r" % (r.returncode, r.stdout, r.stderr)
    assert r.returncode != 0, text
    if code is not None:
        assert r.returncode == code, text
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert lines and lines[0].startswith("pywalk: "), text
    extra = lines[1:]
    assert not extra or (code == 2 and len(extra) == 1 and extra[0].startswith("Try '")
                         and "--help" in extra[0]), text
    if mention is not None:
        assert str(mention) in lines[0], "message should name %r: %s" % (mention, text)
    assert r.stdout == "", text
    assert not os.path.exists(out_path), "output %s was created: %s" % (out_path, text)


def test_error_pid_that_does_not_exist(pywalk, out_path):
    pid = e2e.missing_pid()
    r = e2e.run_pywalk(["record", "-p", pid, "-d", 1, "-o", out_path], timeout=30)
    assert_clean_error(r, out_path, mention=pid)


def test_error_pid_that_is_not_python(pywalk, out_path):
    sleeper = subprocess.Popen(["sleep", "100"])
    try:
        r = e2e.run_pywalk(["record", "-p", sleeper.pid, "-d", 1, "-o", out_path], timeout=30)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert_clean_error(r, out_path, mention=sleeper.pid)


@pytest.mark.parametrize("args", [
    ["--no-such-flag"],
    ["-F", "abc"],
    ["-d", "-3"],
], ids=["unknown-flag", "bad-frequency", "negative-duration"])
def test_error_bad_usage_exits_2(pywalk, out_path, args):
    r = e2e.run_pywalk(["record", "-p", os.getpid(), "-o", out_path] + args, timeout=30)
    assert_clean_error(r, out_path, code=2)


@pytest.mark.core_only
def test_error_unwritable_output(pywalk, interp, start_target, tmp_path):
    t = start_target(interp)
    out = "/nonexistent/dir/x"
    assert not os.path.exists("/nonexistent")
    r = e2e.run_pywalk(["record", "-p", t.pid, "-d", 1, "-o", out], timeout=30)
    assert_clean_error(r, out, mention=out)
    assert not os.path.exists("/nonexistent"), "pywalk created /nonexistent"
