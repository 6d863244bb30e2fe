# SPDX-License-Identifier: MIT
"""End-to-end tests of `pywalk record --all`: every Python process on the host, found by the
scan of /proc at start or by its exec, each under its own root frame 'comm (PID)'.

* Discovery: one 8 s `record --all --threads` at 499 Hz while known_shape.py runs on every
  interpreter present, each process from a copy of the script of its own (so a stack shown
  under the wrong process shows another file), started before pywalk (the scan), while it
  starts, and after it samples (the exec); the core interpreter both before and after, and
  one interpreter (Debian unstable if present, else the core one) as PID 1 of its own pid
  and mount namespace with its own /proc (chrooted when from the chroot). Per process: its
  stacks are under 'comm (PID)' then 'comm (TID)' of its own threads, with no unknown
  frame; each thread has >= 95 % of its samples exactly on its known-shape stacks (the
  main thread's start-up before main(), sampled in processes started under pywalk and in
  none of the script's functions, is left out and must stay under 0.25 CPU s, ~4x what it
  takes); no frame of another process's script; shipped >= 80 %
  of what its measured CPU time gives at 499 Hz. The summary adds up, the folded counts +
  the not-counted stacks (<= 1 %) are `shipped`, and at least as many processes are
  reported sampled as were started.
* Churn: 200 processes of short_lived.py, each busy 50-500 ms (log-uniform) in a function
  and file named after it, four at a time, on every interpreter present in turn, under one
  open-ended `record --all -F 999`; every 20th then execs the core interpreter under
  another name (a second lifetime of its PID, another comm) running a function of its
  own. Each function is under the root frame 'comm (PID)' of its own lifetime and nowhere
  else; >= 90 % of the samples the measured busy CPU time gives at 999 Hz are on the busy
  functions; the not-counted stacks stay <= 1 % of shipped; the summary counts >= 200
  processes sampled.
* Exec chains: 48 short_lived.py processes started through `sh -c 'exec ...'`, `env`, or a
  Python that execs at once (on every interpreter in turn), under `record --all -v`: per
  PID, one target at a time (the targets pywalk -v logs as begun and ended), each ended
  by the end; each function has stacks under its PID, all under its own interpreter's
  comm (never the Python wrapper's).
* Start-up of a shared libpython (the dynamic loader maps it after the exec, in steps): 20
  processes of each such interpreter (120 of a 3.13+ one, whose version is read from its
  memory), 20 ms of CPU each in a function of their own, under `record --all -F 999`:
  every one has >= half of the samples its busy CPU time gives.
* Fork children: fork_children.py on every interpreter forks 6 children that run Python
  without exec (0.2 s of CPU each in a function of their own) under `record --all
  -F 999`: each child's function only under its own PID, with >= half of the ~200
  samples its CPU time gives; the summary counts them as inherited.
* A process that lives ~30 ms of CPU, busy from its first line (20 ms of its own CPU time,
  so load does not shorten it): under --all (one per interpreter, one after the other)
  and in launch mode (per interpreter), at least one stack of its function with its exact
  name, file and line under its caller, and no unknown frame.
CPU expectations are measured (/proc stat, the targets' own thread_time), never assumed,
so a loaded machine lowers the bar instead of failing the test.
"""
import collections
import math
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import pywalk_e2e as e2e
import interpreters  # noqa: E402  (tests/targets, put on sys.path by pywalk_e2e)
from pywalk_e2e import ks

HZ = 499
DURATION_S = 8
MATCH_MIN = 0.95
STARTUP_MAX_S = 0.25      # CPU s of main-thread samples before main(), when started later
SHIPPED_FLOOR = 0.8
AFTER_DELAY_S = 1.0       # the "after" processes start this long after sampling begins
STARTUP_TIMEOUT_S = 30

CHURN_N = 200
CHURN_PARALLEL = 4
CHURN_HZ = 999
CHURN_LIFE_S = (0.05, 0.5)
CHURN_BUSY_FLOOR = 0.9    # of the samples the busy CPU time gives
CHURN_EXEC_EVERY = 20     # these exec another interpreter when done: two lifetimes, one PID
CHURN_EXEC_COMM = "churn-exec"
CHURN_PREFIX = "all_churn_"  # of function and file names (other tests may run churn_*)

SHORT_HZ = 999
SHARED_MIN = 0.5          # of the samples a short process's busy CPU time gives
SHORT_BUSY_S = 0.02       # of CPU, after ~10-40 ms of interpreter start-up: a ~30 ms life

SAMPLED_RE = re.compile(r"^pywalk: (\d+) process(?:es)? sampled \((\d+) fork child(?:ren)? "
                        r"inherited (?:its|their) parent's interpreter\)(?:; skipped: (.*))?$")
SHORT_LIVED = os.path.join(e2e.TARGETS_DIR, "short_lived.py")


def short_lived_call_line():
    with open(SHORT_LIVED) as f:
        return next(n for n, line in enumerate(f, 1) if line.rstrip().endswith("# @call"))


def parse_sampled(stderr):
    """(processes sampled, fork children inherited, skipped text) from the summary."""
    for line in stderr.splitlines():
        m = SAMPLED_RE.match(line)
        if m:
            return int(m.group(1)), int(m.group(2)), m.group(3) or ""
    raise AssertionError("no 'pywalk: N processes sampled' line:\n" + stderr)


class Recorder:
    """An open-ended or -d `pywalk record --all` in the background, with -v so that the
    start of sampling shows on stderr (its "sampling at" line)."""

    def __init__(self, out_path, args):
        self.out_path = out_path
        self._err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([e2e.pywalk_path(), "record", "--all", "-v", "-o",
                                      out_path] + [str(a) for a in args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err)
        self.stderr = ""

    def _read_err(self):
        self._err.seek(0)
        return self._err.read()

    def wait_sampling(self, timeout=STARTUP_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while "sampling at" not in self._read_err():
            assert self.proc.poll() is None, "pywalk exited %s before sampling:\n%s" % (
                self.proc.returncode, self._read_err())
            assert time.monotonic() < deadline, "pywalk did not start sampling in %d s" % (
                timeout)
            time.sleep(0.01)

    def wait_ended(self, pids, timeout=STARTUP_TIMEOUT_S):
        """Wait until pywalk -v logged, for each of pids (processes that have exited), a
        target that began and the end of its last one: their exits reached pywalk."""
        def open_targets():
            last, ended = {}, set()
            for line in self._read_err().splitlines():
                m = BEGAN_RE.match(line)
                if m and int(m.group(1)) in pids:
                    last[int(m.group(1))] = int(m.group(2))
                m = ENDED_RE.match(line)
                if m and int(m.group(1)) in pids:
                    ended.add((int(m.group(1)), int(m.group(2))))
            return dict((pid, last.get(pid)) for pid in pids
                        if (pid, last.get(pid)) not in ended)
        e2e.wait_for(lambda: not open_targets(), timeout,
                     lambda: "PIDs whose last target did not end (None: none began): %s" % (
                         sorted(open_targets().items())[:10]))

    def finish(self, interrupt=False, timeout=120):
        if interrupt:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self.stderr = self._read_err()
        self._err.close()
        self.returncode = self.proc.returncode
        self.rows = e2e.parse_folded(self.out_path) if os.path.exists(self.out_path) else None
        return self

    def describe(self):
        lines = [l for l in self.stderr.splitlines()
                 if not l.startswith("pywalk: debug: PID")]  # one per process seen
        text = "pywalk exit %s\n--- stderr (without per-PID lines) ---\n%s" % (
            self.returncode, "\n".join(lines))
        if self.rows:
            top = sorted(self.rows, key=lambda r: -r[1])[:10]
            text += "\n--- top stacks ---\n" + "\n".join(
                "%6d %s" % (n, ";".join(fr)[:300]) for fr, n in top)
        return text

    def check(self):
        assert self.returncode == 0, self.describe()
        assert self.rows is not None, "no output file\n" + self.describe()
        e2e.check_summary(self.stderr)
        e2e.check_folded_total(self.stderr, self.rows, self.describe())
        return self.rows


def rows_by_pid(rows):
    """{PID of the root frame: [(comm, frames after the root, count)]}."""
    out = collections.defaultdict(list)
    for frames, n in rows:
        task = e2e.parse_task_frame(frames[0])
        assert task, "first frame %r is not 'COMM (PID)' under --all" % frames[0]
        out[task[1]].append((task[0], frames[1:], n))
    return out


# --- discovery: a mix of interpreters, before, while and after pywalk starts ------------

class ScriptCopies:
    """Copies of a target script, one file per process: on the host, or in a chroot's
    the checkout's directory in the chroot (removed at the end: several test runs share it)."""

    def __init__(self, host_dir):
        self.host_dir = host_dir
        self.chroot_dirs = {}

    def copy(self, interp, script, name):
        """(path as the process sees it, host path) of a fresh copy named name."""
        src = os.path.join(e2e.TARGETS_DIR, script)
        if not interp.root:
            dst = os.path.join(self.host_dir, name)
            shutil.copy2(src, dst)
            return dst, dst
        if interp.root not in self.chroot_dirs:
            base = os.path.join(interp.root, interpreters.CHROOT_TARGET_DIR.lstrip("/"))
            self.chroot_dirs[interp.root] = tempfile.mkdtemp(prefix="all-", dir=base)
        host = os.path.join(self.chroot_dirs[interp.root], name)
        shutil.copy2(src, host)
        return "/" + os.path.relpath(host, interp.root), host

    def remove(self):
        for d in self.chroot_dirs.values():
            shutil.rmtree(d, ignore_errors=True)


class Workload:
    """One known_shape.py process of the --all run."""

    def __init__(self, interp, when, pidns, copies, n):
        self.interp, self.when, self.pidns = interp, when, pidns
        self.name = "%s-%s%s" % (interp.id, when, "-pidns" if pidns else "")
        seen, self.host_path = copies.copy(interp, "known_shape.py",
                                           "ks_%d_%s.py" % (n, re.sub(r"\W", "_", self.name)))
        argv = (e2e.pidns_argv(interp, seen, mount=True) if pidns else
                interp.wrap([interp.exe, seen]))
        self.target = e2e.Target(interp, argv=argv, script_path=seen, pidns=pidns)
        self.cpu0 = 0.0

    def ready(self):
        t = self.target.wait_ready()
        self.pid = t.pid
        self.tids = t.tids()
        self.comm = t.comm()
        self.comms = dict((tid, t.comm(tid)) for tid in self.tids)
        if self.pidns:
            ns = e2e.nspids(self.pid)
            assert len(ns) >= 2 and ns[-1] == 1, "%s: NSpid %s, not PID 1 of its own " \
                "namespace" % (self.name, ns)
        self.expected = ks.expected_stacks(self.interp.version, t.script_path, self.host_path)

    def __repr__(self):
        return "<%s PID %s>" % (self.name, getattr(self, "pid", "?"))


class AllRecording:
    def __init__(self, interps, tmp_dir):
        core = interps[0]
        others = interps[1:]
        ns_interp = ([i for i in others if i.kind == "unstable"] or [core])[-1]
        plan = [(core, "before", False), (core, "after", False)]
        plan += [(it, ("before", "during", "after")[k % 3], False)
                 for k, it in enumerate(others)]
        plan.append((ns_interp, "after", True))
        self.copies = ScriptCopies(tmp_dir)
        self.workloads = []
        out = os.path.join(tmp_dir, "all.folded")
        try:
            def start(when):
                for n, (it, w, pidns) in enumerate(plan):
                    if w == when:
                        self.workloads.append(Workload(it, w, pidns, self.copies, n))

            start("before")
            for w in self.workloads:
                w.ready()
            self.rec = Recorder(out, ["-d", DURATION_S, "-F", HZ, "--threads"])
            start("during")
            self.rec.wait_sampling()
            t_sampling = time.monotonic()
            for w in self.workloads:
                w.cpu0 = w.target.cpu_seconds()  # a "during" one may not be Python yet
            time.sleep(AFTER_DELAY_S)
            start("after")
            for w in self.workloads:
                if w.when != "before":
                    w.ready()
            self.rec.finish(timeout=DURATION_S + 60)
            self.wall = time.monotonic() - t_sampling
            for w in self.workloads:
                w.cpu1 = w.target.cpu_seconds()
                w.alive = w.target.proc.poll() is None
        finally:
            for w in self.workloads:
                w.target.stop()
            self.copies.remove()
        self.by_pid = rows_by_pid(self.rec.rows or [])

    def describe(self):
        procs = "\n".join("  %s: PID %s, tids %s, CPU %.2f s in the recording" % (
            w.name, w.pid, w.tids, w.cpu1 - w.cpu0) for w in self.workloads)
        return "%s\n--- workloads ---\n%s" % (self.rec.describe(), procs)


@pytest.fixture(scope="module")
def all_recording(pywalk, all_interpreters, tmp_path_factory):
    return AllRecording(all_interpreters, str(tmp_path_factory.mktemp("all")))


def test_all_accounts_for_every_event(all_recording):
    r = all_recording
    rows = r.rec.check()
    sampled, inherited, skipped = parse_sampled(r.rec.stderr)
    _, buckets = e2e.parse_summary(r.rec.stderr)
    print("--all: %d workloads, %d processes sampled (%d inherited), skipped %r; shipped "
          "%d, not counted %d" % (len(r.workloads), sampled, inherited, skipped,
                                  buckets["shipped"], buckets["shipped"] - sum(
                                      n for _, n in rows)))
    assert sampled >= len(r.workloads), "%d processes sampled, %d workloads ran\n%s" % (
        sampled, len(r.workloads), r.describe())
    for w in r.workloads:
        assert w.alive, "%s died during the recording:\n%s" % (w.name, w.target.stderr())


def test_all_finds_every_workload_under_its_own_root(all_recording):
    r = all_recording
    r.rec.check()
    missing = [w.name for w in r.workloads if w.pid not in r.by_pid]
    assert not missing, "no stacks of %s under their PIDs\n%s" % (missing, r.describe())
    for w in r.workloads:
        for comm, frames, n in r.by_pid[w.pid]:
            assert comm == w.comm, "%s: root frame comm %r, /proc says %r" % (
                w.name, comm, w.comm)
            task = e2e.parse_task_frame(frames[0]) if frames else None
            assert task and task[1] in w.tids, \
                "%s: second frame %r is not 'COMM (TID)' of its threads %s" % (
                    w.name, frames[:1], w.tids)
            want = e2e.ks_thread_names(w.pid, w.tids)[task[1]]
            assert task[0] == want, "%s TID %d: named %r, threading says %r" % (
                w.name, task[1], task[0], want)
        bad = e2e.unknown_frames([(frames, n) for _, frames, n in r.by_pid[w.pid]])
        assert not bad, "%s: unknown frames %s" % (w.name, bad.most_common(5))


def test_all_stacks_match_the_known_shape(all_recording):
    r = all_recording
    r.rec.check()
    for w in r.workloads:
        main_exp, worker_exp = w.expected[ks.MAIN], w.expected[ks.WORKER]
        main_call = ("<module>", w.target.script_path, ks.Shape().markers["call:main"][1])
        scores, startup = {}, collections.Counter()
        for comm, frames, n in r.by_pid.get(w.pid, []):
            tid = e2e.parse_task_frame(frames[0])[1]
            py = e2e.to_py_frames(frames[1:])
            if tid == w.pid and w.when != "before" and py[:1] != [main_call] and all(
                    f[0] == "<module>" for f in py if f[1] == w.target.script_path):
                # the interpreter starting (site, the script's imports), before the
                # workload's main(): sampled only in processes started under pywalk, and
                # never in one of the script's functions
                startup[tuple(py)] += n
                continue
            if tid not in scores:
                scores[tid] = (e2e.ThreadScore(main_exp, [worker_exp]) if tid == w.pid else
                               e2e.ThreadScore(worker_exp, [main_exp]))
            scores[tid].add(py, n)
        assert sorted(scores) == sorted(w.tids), "%s: sampled threads %s, has %s\n%s" % (
            w.name, sorted(scores), w.tids, r.describe())
        for tid, s in scores.items():
            assert s.match_fraction >= MATCH_MIN and s.foreign == 0, \
                "%s TID %d: %s\n%s" % (w.name, tid, s.report(), r.describe())
        main = scores[w.pid]
        assert sum(startup.values()) <= STARTUP_MAX_S * HZ, \
            "%s: %d start-up samples (> %.2f CPU s) beside %d of the workload: %s" % (
                w.name, sum(startup.values()), STARTUP_MAX_S, main.total,
                startup.most_common(3))
        print("%s: main %.1f%% of %d (+%d start-up), worker %s" % (
            w.name, 100 * main.match_fraction, main.total, sum(startup.values()),
            ", ".join("%.1f%% of %d" % (100 * s.match_fraction, s.total)
                      for tid, s in scores.items() if tid != w.pid)))


def test_all_never_shows_a_stack_under_another_process(all_recording):
    r = all_recording
    r.rec.check()
    owner = dict((w.target.script_path, w) for w in r.workloads)
    assert len(owner) == len(r.workloads)
    for pid, rows in r.by_pid.items():
        for comm, frames, n in rows:
            for fr in frames:
                py = e2e.parse_py_frame(fr)
                if py and py[1] in owner:
                    assert owner[py[1]].pid == pid, \
                        "frame %r of %s is under PID %d (%s)" % (
                            fr, owner[py[1]].name, pid, comm)


def test_all_ships_what_the_cpu_time_gives(all_recording):
    r = all_recording
    r.rec.check()
    for w in r.workloads:
        shipped = sum(n for _, _, n in r.by_pid.get(w.pid, []))
        want = (w.cpu1 - w.cpu0) * HZ
        assert w.cpu1 - w.cpu0 > 0.05, "%s got %.2f CPU s: did it run?" % (
            w.name, w.cpu1 - w.cpu0)
        assert shipped >= SHIPPED_FLOOR * want, \
            "%s: %d samples < %.0f%% of %.0f (%.2f CPU s x %d Hz)\n%s" % (
                w.name, shipped, 100 * SHIPPED_FLOOR, want, w.cpu1 - w.cpu0, HZ,
                r.describe())


# --- churn: 200 short processes ------------------------------------------------------

def _churn_lives(n):
    rnd = random.Random(4242)
    lo, hi = (math.log(x) for x in CHURN_LIFE_S)
    return [math.exp(rnd.uniform(lo, hi)) for _ in range(n)]


def _run_short(interp, name, seconds, then=(), cpu=False):
    args = (["--cpu"] if cpu else []) + [name, "%.3f" % seconds] + list(then)
    argv = interp.argv("short_lived.py", *args)
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True)


def _short_results(interp, proc, names):
    """[(busy CPU s, total CPU s)] of the lifetimes names of one process (its execs)."""
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, "%s %s exited %d: %s" % (interp.id, names, proc.returncode,
                                                           err)
    lines = [l.split() for l in out.splitlines()]
    assert [l[:2] for l in lines] == [[str(proc.pid), n] for n in names], \
        "%s: reported %r, PID %d" % (names, out, proc.pid)
    return [(float(l[2]), float(l[3])) for l in lines]


def _short_result(interp, proc, name):
    return _short_results(interp, proc, [name])[0]


class Lifetime:
    """One lifetime of a churn process: its function, PID, comm and busy CPU time."""

    def __init__(self, name, interp, comm):
        self.name, self.interp, self.comm = name, interp, comm
        self.pid, self.busy = None, 0.0


def test_all_churn_of_short_processes(pywalk, all_interpreters, tmp_path):
    lives = _churn_lives(CHURN_N)
    # every CHURN_EXEC_EVERY-th process execs the core interpreter under another name (a
    # link, so another comm) when its function returns: a second lifetime of its PID
    exec_link = str(tmp_path / CHURN_EXEC_COMM)
    os.symlink(all_interpreters[0].exe, exec_link)
    rec = Recorder(str(tmp_path / "churn.folded"), ["-F", CHURN_HZ])
    lifetimes = {}  # function name -> Lifetime
    try:
        rec.wait_sampling()
        t0 = time.monotonic()
        running = []

        def reap(item):
            interp, names, p = item
            for name, (busy, _) in zip(names, _short_results(interp, p, names)):
                lifetimes[name].pid, lifetimes[name].busy = p.pid, busy

        for i, life in enumerate(lives):
            while len(running) >= CHURN_PARALLEL:
                time.sleep(0.002)
                for item in [x for x in running if x[2].poll() is not None]:
                    running.remove(item)
                    reap(item)
            interp = all_interpreters[i % len(all_interpreters)]
            names, then = ["%s%d" % (CHURN_PREFIX, i)], ()
            lifetimes[names[0]] = Lifetime(names[0], interp, os.path.basename(interp.exe))
            if i % CHURN_EXEC_EVERY == 0 and not interp.root:
                names.append("%s%d_exec" % (CHURN_PREFIX, i))
                lifetimes[names[1]] = Lifetime(names[1], all_interpreters[0], CHURN_EXEC_COMM)
                then = (exec_link, SHORT_LIVED, names[1], "%.3f" % life)
            running.append((interp, names, _run_short(interp, names[0], life, then)))
        for item in running:
            reap(item)
        wall = time.monotonic() - t0
        # no wait for the last exits: sched_process_exit wrote them before the reaped
        # processes' parents were told, and pywalk's stop drains the ring buffer
    finally:
        rec.finish(interrupt=True)
    rows = rec.check()
    describe = rec.describe()
    by_pid = rows_by_pid(rows)
    pids = set(lt.pid for lt in lifetimes.values())
    assert len(pids) == CHURN_N, "PIDs were reused among the churn processes"
    busy = collections.Counter()
    for pid, prows in by_pid.items():
        for comm, frames, n in prows:
            for fr in frames:
                py = e2e.parse_py_frame(fr)
                if not py or not (py[0].startswith(CHURN_PREFIX) or
                                  py[1].startswith(CHURN_PREFIX)):
                    continue
                # the function, or the module body that defines it (it lives a moment)
                lt = lifetimes.get(py[0] if py[0] != "<module>" else py[1][:-len(".py")])
                # line 2 is the busy loop, line 1 the def (the function's entry, RESUME)
                assert lt and (comm, pid) == (lt.comm, lt.pid) and py[1] == \
                    lt.name + ".py" and py[2] in (1, 2) and fr is frames[-1], \
                    "frame %r is under %s (%d), not under its own process %s (%s)\n%s" % (
                        fr, comm, pid, lt and lt.comm, lt and lt.pid, ";".join(frames))
                if py[0] == lt.name:
                    busy[lt.name] += n
    for name, lt in lifetimes.items():
        assert lt.pid in by_pid, "%s (%s, PID %d, busy %.3f CPU s) has no stacks\n%s" % (
            name, lt.interp.id, lt.pid, lt.busy, describe)
        comms = set(c for c, _, _ in by_pid[lt.pid])
        want = set(x.comm for x in lifetimes.values() if x.pid == lt.pid)
        assert comms == want, "%s PID %d: root comms %s, its lifetimes are %s" % (
            name, lt.pid, comms, want)
        assert busy[name], "%s (%s, PID %d, busy %.3f CPU s): no sample of its function" % (
            name, lt.interp.id, lt.pid, lt.busy)
    want = sum(lt.busy for lt in lifetimes.values()) * CHURN_HZ
    got = sum(busy.values())
    sampled, inherited, skipped = parse_sampled(rec.stderr)
    _, buckets = e2e.parse_summary(rec.stderr)
    print("churn: %d processes (%d lifetimes) in %.1f s on %s; busy samples %d of %.0f "
          "(%.2f%%); sampled %d (%d inherited), skipped %r; shipped %d, not counted %d" % (
              len(pids), len(lifetimes), wall,
              sorted(set(lt.interp.id for lt in lifetimes.values())), got, want,
              100 * got / want, sampled, inherited, skipped, buckets["shipped"],
              buckets["shipped"] - sum(n for _, n in rows)))
    assert got >= CHURN_BUSY_FLOOR * want, \
        "busy functions got %d samples < %.0f%% of the %.0f their CPU time gives\n%s" % (
            got, 100 * CHURN_BUSY_FLOOR, want, describe)
    assert sampled >= CHURN_N, "%d processes sampled < %d started\n%s" % (
        sampled, CHURN_N, describe)


# --- exec chains: one lifetime at a time per PID -----------------------------------

# pywalk -v logs each target it starts and ends (engine.c op_began/op_ended): the only view
# of discovery's own bookkeeping, which must hold one target per PID at a time.
BEGAN_RE = re.compile(r"^pywalk: debug: PID (\d+) \(.*\): Python \S+, _PyRuntime at .*, "
                      r"target (\d+)")
ENDED_RE = re.compile(r"^pywalk: debug: PID (\d+): target (\d+) ended \((\w+)\)$")
WRAPPERS = {
    "sh": ["sh", "-c", 'exec "$@"', "sh"],
    "env": ["env"],
    # Python that replaces itself with Python at once: inspected, then gone to a new image
    "python": [interpreters.CORE_EXE, "-c", "import os, sys; os.execvp(sys.argv[1], sys.argv[1:])"],
}
WRAPPED_N = 48
WRAPPED_S = 0.06


def test_all_exec_chains_are_one_lifetime_at_a_time(pywalk, all_interpreters, tmp_path):
    rec = Recorder(str(tmp_path / "wrapped.folded"), ["-F", CHURN_HZ])
    runs = {}  # name -> (PID, interp, wrapper)
    try:
        rec.wait_sampling()
        running = []
        for i in range(WRAPPED_N):
            interp = all_interpreters[i % len(all_interpreters)]
            kind = sorted(WRAPPERS)[i // len(all_interpreters) % len(WRAPPERS)]
            name = "all_wrapped_%d" % i
            argv = WRAPPERS[kind] + interp.argv("short_lived.py", name, WRAPPED_S)
            running.append((name, interp, kind, subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, universal_newlines=True)))
            while len(running) >= CHURN_PARALLEL or (i == WRAPPED_N - 1 and running):
                name, interp, kind, p = running.pop(0)
                _short_result(interp, p, name)
                runs[name] = (p.pid, interp, kind)
        rec.wait_ended(set(pid for pid, _, _ in runs.values()))
    finally:
        rec.finish(interrupt=True)
    rows = rec.check()
    by_pid = rows_by_pid(rows)
    mine = dict((pid, (name, interp, kind)) for name, (pid, interp, kind) in runs.items())
    open_ = {}  # PID -> target id begun and not ended
    problems = []
    for line in rec.stderr.splitlines():
        m = BEGAN_RE.match(line)
        if m and int(m.group(1)) in mine:
            pid, target = int(m.group(1)), int(m.group(2))
            if pid in open_:
                problems.append("PID %d (%s): target %d began while target %d was on" % (
                    pid, mine[pid], target, open_[pid]))
            open_[pid] = target
        m = ENDED_RE.match(line)
        if m and int(m.group(1)) in mine:
            pid, target = int(m.group(1)), int(m.group(2))
            if open_.get(pid) == target:
                del open_[pid]
    problems += ["PID %d (%s): target %d never ended" % (pid, mine[pid], target)
                 for pid, target in open_.items()]
    assert not problems, "\n".join(problems[:10]) + "\n" + rec.describe()
    for pid, (name, interp, kind) in mine.items():
        leaf = (name, name + ".py", 2)
        comms = set(comm for comm, frames, _ in by_pid.get(pid, [])
                    if frames and e2e.parse_py_frame(frames[-1]) == leaf)
        assert comms, "%s (%s via %s, PID %d): no stack of its function\n%s" % (
            name, interp.id, kind, pid, rec.describe())
        # under the lifetime that ran it, never the wrapper's (a Python one has samples)
        assert comms == {os.path.basename(interp.exe)}, \
            "%s (%s via %s, PID %d): its stacks are under %s" % (
                name, interp.id, kind, pid, sorted(comms))


# --- start-up of an interpreter whose libpython the dynamic loader maps ---------------

SHARED_N = 20
SHARED_313_WEIGHT = 6     # 120 starts of a shared 3.13+: the bug this catches hit ~1.3 %


def _links_libpython(interp):
    probe = "import sys; print(any('libpython' in l for l in open('/proc/self/maps')))"
    r = subprocess.run(interp.wrap([interp.exe, "-c", probe]), stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True, timeout=30)
    return r.stdout.strip() == "True"


def test_all_attaches_shared_libpython_at_every_start(pywalk, all_interpreters, tmp_path):
    shared = [i for i in all_interpreters if _links_libpython(i)]
    if not shared:
        pytest.skip("no interpreter here loads a shared libpython")
    # 3.13+ read their version from memory (_Py_DebugOffsets): a misread there is final,
    # and the loader's window is short, so they get more starts
    plan = [i for i in shared for _ in range(
        SHARED_N * (SHARED_313_WEIGHT if ks._version_tuple(i.version) >= (3, 13) else 1))]
    rec = Recorder(str(tmp_path / "shared.folded"), ["-F", CHURN_HZ])
    runs = []  # (interp, name, PID, busy CPU s)
    try:
        rec.wait_sampling()
        running = []
        for i in range(len(plan)):
            interp = plan[i]
            name = "all_shared_%d" % i
            running.append((interp, name, _run_short(interp, name, SHORT_BUSY_S, cpu=True)))
            while len(running) >= CHURN_PARALLEL or (i == len(plan) - 1 and running):
                interp, name, p = running.pop(0)
                runs.append((interp, name, p.pid, _short_result(interp, p, name)[0]))
        rec.wait_ended(set(pid for _, _, pid, _ in runs))
    finally:
        rec.finish(interrupt=True)
    rows = rec.check()
    by_pid = rows_by_pid(rows)
    short = []
    for interp, name, pid, busy in runs:
        got = sum(n for _, frames, n in by_pid.get(pid, [])
                  if frames and e2e.parse_py_frame(frames[-1])[:2] == (name, name + ".py"))
        if got < SHARED_MIN * busy * CHURN_HZ:
            short.append("%s %s (PID %d): %d samples of %.0f" % (
                interp.id, name, pid, got, busy * CHURN_HZ))
    sampled, _, skipped = parse_sampled(rec.stderr)
    print("shared libpython: %d processes of %s, %d short of samples; skipped %r" % (
        len(runs), [i.id for i in shared], len(short), skipped))
    assert not short, "processes missed at start-up:\n%s\n%s" % (
        "\n".join(short[:10]), rec.describe())


# --- fork children that run Python without exec -------------------------------------

FORK_COUNT = 6
FORK_BUSY_S = 0.2


def test_all_samples_fork_children_under_their_own_pid(pywalk, all_interpreters, tmp_path):
    rec = Recorder(str(tmp_path / "fork.folded"), ["-F", CHURN_HZ])
    runs = []
    try:
        rec.wait_sampling()
        for interp in all_interpreters:
            p = subprocess.run(interp.argv("fork_children.py", FORK_COUNT, FORK_BUSY_S),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
            lines = [l.split() for l in p.stdout.splitlines()]
            assert p.returncode == 0 and all(len(l) == 2 for l in lines), \
                "%s: exit %d, stdout %r, stderr %r" % (interp.id, p.returncode, p.stdout,
                                                      p.stderr)
            kids = dict((int(pid), int(i)) for pid, i in lines)
            assert sorted(kids.values()) == list(range(FORK_COUNT)), p.stdout
            runs.append((interp, kids))
    finally:
        rec.finish(interrupt=True)
    rows = rec.check()
    by_pid = rows_by_pid(rows)
    owner = dict((pid, (interp, i)) for interp, kids in runs for pid, i in kids.items())
    samples = collections.Counter()
    for pid, prows in by_pid.items():
        for comm, frames, n in prows:
            for fr in frames:
                py = e2e.parse_py_frame(fr)
                m = py and re.match(r"^forked_child_(\d+)$", py[0])
                if not m or py[1] != py[0] + ".py":
                    continue
                assert pid in owner and owner[pid][1] == int(m.group(1)), \
                    "frame %r is under PID %d, not under its own child's PID\n%s" % (
                        fr, pid, ";".join(frames))
                samples[pid] += n
    _, inherited, _ = parse_sampled(rec.stderr)
    for pid, (interp, i) in sorted(owner.items()):
        # FORK_BUSY_S of CPU at 999 Hz: ~200 samples; half is the bar
        assert samples[pid] >= 0.5 * FORK_BUSY_S * CHURN_HZ, \
            "%s child %d (PID %d): %d samples of its function\n%s" % (
                interp.id, i, pid, samples[pid], rec.describe())
    assert inherited >= len(owner), "%d fork children inherited, %d forked\n%s" % (
        inherited, len(owner), rec.describe())
    print("fork children: %d on %d interpreters, %d-%d samples each (%.0f expected)" % (
        len(owner), len(runs), min(samples.values()), max(samples.values()),
        FORK_BUSY_S * CHURN_HZ))


# --- a process that lives ~30 ms -----------------------------------------------------

def _check_short(rows, by_pid, pid, name, cpu, describe):
    leaf = (name, name + ".py", 2)
    caller = ("<module>", None, short_lived_call_line())
    mine = by_pid.get(pid, [])
    hits = sum(n for _, frames, n in mine
               if frames and e2e.parse_py_frame(frames[-1]) == leaf)
    assert hits >= 1, "%s (PID %d, busy %.3f CPU s): no stack of its function\n%s" % (
        name, pid, cpu, describe)
    for _, frames, n in mine:
        if frames and e2e.parse_py_frame(frames[-1]) == leaf:
            got = e2e.parse_py_frame(frames[-2]) if len(frames) > 1 else None
            assert got and got[0] == caller[0] and got[2] == caller[2] and \
                got[1].endswith("short_lived.py"), "%s: caller frame %r" % (name, frames)
    bad = e2e.unknown_frames([(frames, n) for _, frames, n in mine])
    assert not bad, "%s: unknown frames %s" % (name, bad.most_common(5))
    return hits


def test_all_profiles_a_30ms_process(pywalk, all_interpreters, tmp_path):
    rec = Recorder(str(tmp_path / "short.folded"), ["-F", SHORT_HZ])
    runs = []
    try:
        rec.wait_sampling()
        for k, interp in enumerate(all_interpreters):
            name = "short_all_%d" % k
            p = _run_short(interp, name, SHORT_BUSY_S, cpu=True)
            busy, total = _short_result(interp, p, name)
            runs.append((interp, p.pid, name, busy, total))
        rec.wait_ended(set(pid for _, pid, _, _, _ in runs))
    finally:
        rec.finish(interrupt=True)
    rows = rec.check()
    by_pid = rows_by_pid(rows)
    for interp, pid, name, busy, total in runs:
        hits = _check_short(rows, by_pid, pid, name, busy, rec.describe())
        print("%s: %.1f CPU ms in all, %.1f busy, %d samples of its function" % (
            interp.id, 1000 * total, 1000 * busy, hits))


def test_launch_profiles_a_30ms_process(pywalk, interp, tmp_path):
    out = str(tmp_path / "launch.folded")
    name = "short_launch"
    argv = interp.argv("short_lived.py", "--cpu", name, SHORT_BUSY_S)
    r = e2e.run_pywalk(["record", "-F", SHORT_HZ, "-o", out, "--"] + argv, timeout=60)
    describe = e2e.describe_run(r, out)
    assert r.returncode == 0, describe
    e2e.check_summary(r.stderr)
    rows = e2e.parse_folded(out)
    e2e.check_folded_total(r.stderr, rows, describe)
    pid_s, got_name, busy, total = r.stdout.split()
    assert got_name == name, r.stdout
    # one process: no root frame; key the rows by its PID for the shared check
    by_pid = {int(pid_s): [("", frames, n) for frames, n in rows]}
    hits = _check_short(rows, by_pid, int(pid_s), name, float(busy), describe)
    print("%s: %.1f CPU ms in all, %.1f busy, %d samples of its function" % (
        interp.id, 1000 * float(total), 1000 * float(busy), hits))
