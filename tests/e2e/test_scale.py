# SPDX-License-Identifier: MIT
"""Scale: 4,096 live CPython processes at once, every one tracked, and what each costs.

tests/targets/many_procs.py on the core interpreter forks 4,095 children (no exec: copy-on-
write keeps each at about a MiB of its own) and is the 4,096th itself; each process sleeps,
and every PERIOD_S spends BURST_MS of CPU in a function named scale_<its PID>.

* The agent, started before them with its defaults for the maps (--max-processes unset:
  sized at start, when few processes run), at -F 999 with 10 s windows into an export
  directory, -v: each of the 4,096 PIDs becomes a target (its -v line); none is skipped
  (none for a full map); no record is lost (process events, code records, samples); every
  one of the PIDs has samples in the exported windows, each file's samples under its own
  pid label and its own scale_<PID> and no other's; once they are killed each one's target
  ends (every exit reached the agent); the exit summary adds up, the windows' samples plus
  the stacks not counted are the shipped ones, and at least 4,096 processes were sampled.
  Printed and bounded: the agent's RSS once all are tracked minus before, per process;
  its CPU time per process per second while they live (and per process started, while
  they were forked); its open descriptors, which must not grow with the processes.
* `record --all` started while they run (its maps sized from the processes running): its
  scan of /proc finds all of them before it says it samples, none is skipped, the summary
  counts >= 4,096 processes, and each PID's stacks under its root frame name its own
  scale_<PID>, no other's.

Both are marked long (make test-long). SCALE_PROCESSES sets another count (a smaller one to
try the test quickly). The machine must hold them: pid_max, threads-max and memory are
checked first and the test is skipped, with the figures, where they cannot; every process
is killed with its process group at the end, whatever happens (and each ends by itself when
its parent goes, or after LIFETIME_S).
"""
import collections
import contextlib
import gzip
import os
import re
import signal
import subprocess
import time

import pytest

import pywalk_e2e as e2e
from test_agent_ops import agents, export_dir, metric, wait_for  # noqa: F401 (agents: a fixture)

N = int(os.environ.get("SCALE_PROCESSES", "4096"))
HZ = 999                  # a 2 ms burst holds about two sampling periods of its CPU
BURST_MS = 2
PERIOD_S = 20             # N * 2 ms / 20 s: 0.4 of a CPU for the whole fleet
LIFETIME_S = 900          # each process ends by itself after this, whatever happens
INTERVAL = "10s"
RECORD_S = 2 * PERIOD_S + 5  # record --all: two bursts of each process at least
MIB = 1 << 20
KIB = 1 << 10
MEM_PER_PROCESS = 2 * MIB  # measured: ~1 MiB each (private pages, page tables, kernel)
# Bounds of what the agent may cost: about twice what was measured (12-15 KiB and ~20 us a
# second per process at 4,096), plus what does not depend on the processes: the ring
# buffer, mapped twice, adds to RSS as it fills (8 MiB), and the samples of the machine's
# other Python processes cost CPU (2 CPUs at -F 999: at most ~2,000 samples a second)
RSS_PER_PROCESS_MAX = 32 * KIB
RING_RSS = 16 * MIB
CPU_PER_PROCESS_MAX = 100e-6   # of a CPU: 0.4 of one for 4,096 processes
CPU_FLOOR = 0.25
SCRIPT = os.path.join(e2e.TARGETS_DIR, "many_procs.py")
NAME_RE = re.compile(r"^scale_(\d+)$")
# pywalk -v: a process becomes a target, a target ends
BEGAN_RE = re.compile(r"^pywalk: debug: PID (\d+) \(.*\): Python ", re.M)
ENDED_RE = re.compile(r"^pywalk: debug: PID (\d+): target \d+ ended \(exit\)", re.M)
FILE_RE = re.compile(r"^\d{8}T\d{6}\.\d{3}Z-.+-(\d+)-\d+\.pb\.gz$")


# --- the machine's room -------------------------------------------------------------

def tasks_now():
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                n += len(os.listdir("/proc/%s/task" % d))
            except OSError:
                pass
    return n


def meminfo(key):
    with open("/proc/meminfo") as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M).group(1)) * KIB


def check_room(n):
    """Skip, with the figures, where the machine cannot hold n more processes with room."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    with open("/proc/sys/kernel/threads-max") as f:
        threads_max = int(f.read())
    running = tasks_now()
    need = n + 1024  # and room for what the rest of the machine starts meanwhile
    if pid_max - running < need:
        pytest.skip("pid_max %d leaves room for %d more tasks, %d needed (sysctl "
                    "kernel.pid_max)" % (pid_max, pid_max - running, need))
    if threads_max - running < need:
        pytest.skip("threads-max %d leaves room for %d more tasks, %d needed" % (
            threads_max, threads_max - running, need))
    avail = meminfo("MemAvailable")
    if avail < n * MEM_PER_PROCESS + 2 * 1024 * MIB:
        pytest.skip("%d processes need about %d MiB, %d MiB available" % (
            n, n * MEM_PER_PROCESS // MIB, avail // MIB))


# --- the fleet ----------------------------------------------------------------------

def group_members(pgid):
    """PIDs of the processes (zombies too) in process group pgid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            out.append(int(d))
    return out


class Fleet:
    """n processes of many_procs.py in a process group of their own."""

    def __init__(self, interp, n):
        self.n = n
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [interp.exe, SCRIPT, str(n), str(BURST_MS), str(PERIOD_S), str(LIFETIME_S)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True)
        self.pids = [self.proc.pid]
        self.pidset = set()

    def wait_ready(self, timeout=300):
        """Until all n exist (the parent printed each child's PID, then "ready")."""
        deadline = time.monotonic() + timeout
        for line in self.proc.stdout:
            if line.startswith(b"ready"):
                break
            self.pids.append(int(line))
            assert time.monotonic() < deadline, "%d of %d forked in %d s" % (
                len(self.pids), self.n, timeout)
        self.forked_s = time.monotonic() - self.t0
        assert len(self.pids) == self.n, "many_procs.py forked %d of %d (exit %s)" % (
            len(self.pids), self.n, self.proc.poll())
        self.pidset = set(self.pids)
        return self

    def alive(self):
        """How many of them are still running (not zombies)."""
        n = 0
        for pid in self.pids:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        n += 1
            except OSError:
                pass
        return n

    def kill(self):
        """SIGKILL the group; wait (bounded) until none of it is left, zombies included."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc.stdout.close()
        deadline = time.monotonic() + 60
        while group_members(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = group_members(self.proc.pid)
        assert not left, "%d processes of the fleet left after SIGKILL" % len(left)


@pytest.fixture
def fleets():
    """fleets(interp, n) -> Fleet; each one killed, its group and all, at teardown."""
    started = []

    def start(interp, n):
        check_room(n)
        f = Fleet(interp, n)
        started.append(f)  # killed at teardown even if it never got ready
        return f.wait_ready()

    yield start
    for f in started:
        f.kill()


# --- pprof, as the export dir holds it ----------------------------------------------

def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        if c < 0x80:
            return v, i
        shift += 7


def _fields(b):
    """(field number, value) of a protobuf message: ints for varints, bytes otherwise."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        wt = key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield key >> 3, v


def _packed(v):
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def read_pprof(path):
    """[(count, leaf-first function names, {label: value})] of a gzipped pprof."""
    samples, locs, funcs, strs = [], {}, {}, []
    for f, v in _fields(gzip.decompress(open(path, "rb").read())):
        if f == 2:
            ids, vals, labels = [], [], {}
            for sf, sv in _fields(v):
                if sf == 1:
                    ids += _packed(sv)
                elif sf == 2:
                    vals += _packed(sv)
                elif sf == 3:
                    lab = dict(_fields(sv))
                    labels[lab.get(1, 0)] = (lab.get(2), lab.get(3))
            samples.append((vals[0], ids, labels))
        elif f == 4:
            loc = dict((lf, lv) for lf, lv in _fields(v) if lf != 4)
            lines = [dict(_fields(lv)) for lf, lv in _fields(v) if lf == 4]
            locs[loc.get(1)] = [ln.get(1) for ln in lines]
        elif f == 5:
            fn = dict(_fields(v))
            funcs[fn.get(1)] = fn.get(2, 0)
        elif f == 6:
            strs.append(v.decode("utf-8"))
    out = []
    for count, ids, labels in samples:
        names = [strs[funcs[fid]] for lid in ids for fid in locs[lid]]
        out.append((count, names, dict(
            (strs[k], strs[s] if s is not None else n) for k, (s, n) in labels.items())))
    return out


class Windows:
    """What the export dir's files say, read as they come: samples per pid label, which
    scale_<PID> functions each pid's samples name, and anything misattributed."""

    def __init__(self, d, pids):
        self.d = d
        self.pids = pids
        self.read = set()
        self.samples = 0
        self.by_pid = collections.Counter()     # every sample, by its pid label
        self.own = collections.Counter()        # samples in the pid's own scale_<PID>
        self.wrong = []                         # (file, what was wrong)

    def update(self):
        for name in sorted(os.listdir(self.d)):
            m = FILE_RE.match(name)
            if not m or name in self.read:
                continue
            self.read.add(name)
            file_pid = int(m.group(1))
            for count, names, labels in read_pprof(os.path.join(self.d, name)):
                pid = int(labels.get("pid", -1))
                self.samples += count
                self.by_pid[pid] += count
                if pid != file_pid:
                    self.wrong.append((name, "a sample of pid %d" % pid))
                for fn in names:
                    fm = NAME_RE.match(fn)
                    if fm and int(fm.group(1)) != pid:
                        self.wrong.append((name, "pid %d's sample in %s" % (pid, fn)))
                    elif fm:
                        self.own[pid] += count
        return self

    def unseen(self):
        return sorted(p for p in self.pids if not self.own[p])


# --- the agent ------------------------------------------------------------------------

def agent_usage(pid):
    """(CPU seconds, RSS bytes, open descriptors) of the agent now."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1)) * KIB
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return cpu, rss, len(os.listdir("/proc/%d/fd" % pid))


def counts(m):
    """What the test reads of the agent's metrics."""
    skipped = dict((dict(k[1])["reason"], v) for k, v in m.items()
                   if k[0] == "pywalk_processes_skipped_total")
    return {
        "tracked": metric(m, "pywalk_processes_tracked"),
        "sampled": metric(m, "pywalk_processes_sampled_total"),
        "skipped": skipped,
        "map_full": metric(m, "pywalk_records_total", kind="process", result="map_full"),
        "proc_lost": metric(m, "pywalk_records_total", kind="process", result="lost"),
        "code_lost": metric(m, "pywalk_records_total", kind="code", result="lost"),
        "shipped": metric(m, "pywalk_samples_total", outcome="shipped"),
        "lost": metric(m, "pywalk_samples_total", outcome="lost"),
        "not_counted": sum(v for k, v in m.items()
                           if k[0] == "pywalk_stacks_not_counted_total"),
    }


@pytest.mark.long
@pytest.mark.core_only
def test_agent_tracks_4096_processes(pywalk, interp, agents, fleets, tmp_path):
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["--all", "-v", "-F", HZ, "--interval", INTERVAL, "--export-dir", d],
                tmp_path)
    ag.wait_sampling()
    time.sleep(2)  # its start-up's allocations done
    cpu0, rss0, fds0 = agent_usage(ag.proc.pid)
    c0 = counts(ag.metrics())

    fleet = fleets(interp, N)
    t_forked = time.monotonic()

    def not_yet(pattern):
        return fleet.pidset - set(int(p) for p in pattern.findall(ag.stderr()))

    # every one tracked: the agent made each of them a target (-v says so, PID by PID; its
    # gauge also counts the machine's other Python processes, which come and go)
    wait_for(lambda: not not_yet(BEGAN_RE), 120,
             lambda: "%d of %d processes not tracked, e.g. %s; metrics %s" % (
                 len(not_yet(BEGAN_RE)), N, sorted(not_yet(BEGAN_RE))[:10],
                 counts(ag.metrics())))
    t_tracked = time.monotonic()
    cpu1, rss1, fds1 = agent_usage(ag.proc.pid)
    c1 = counts(ag.metrics())

    # every PID's samples in the windows, under its own pid and function: a burst every
    # PERIOD_S, a window every 10 s, and the load of a shared machine
    win = Windows(d, fleet.pidset)
    wait_for(lambda: not win.update().unseen(), 8 * PERIOD_S,
             lambda: "%d of %d PIDs without a sample in their own function, e.g. %s; "
             "metrics %s" % (len(win.unseen()), N, win.unseen()[:10], counts(ag.metrics())))
    t_seen = time.monotonic()
    # a steady stretch of whole periods for the CPU time per process
    t2 = time.monotonic()
    cpu2, rss2, fds2 = agent_usage(ag.proc.pid)
    c2 = counts(ag.metrics())
    time.sleep(2 * PERIOD_S)
    t3 = time.monotonic()
    cpu3, rss3, fds3 = agent_usage(ag.proc.pid)
    c3 = counts(ag.metrics())
    alive = fleet.alive()
    assert alive == N, "%d of the %d processes died" % (N - alive, N)

    fleet.kill()
    # every exit reached the agent: each of their targets ended
    wait_for(lambda: not not_yet(ENDED_RE), 60,
             lambda: "%d of %d processes' exits not seen, e.g. %s; metrics %s" % (
                 len(not_yet(ENDED_RE)), N, sorted(not_yet(ENDED_RE))[:10],
                 counts(ag.metrics())))
    c4 = counts(ag.metrics())
    rc, _ = ag.stop(timeout=120)
    assert rc == 0, ag.stderr()
    err = ag.stderr()
    shipped, not_counted = ag.summary()  # checks that the summary adds up
    sampled = e2e.parse_processes(err)
    win.update()

    rss_tracked = (rss1 - rss0) / N
    rss_steady = (rss3 - rss0) / N
    steady_cpu = (cpu3 - cpu2) / (t3 - t2)
    line = ("agent over %d processes: forked in %.1f s, all tracked %.1f s later, all "
            "sampled in their own function %.0f s later\n"
            "  RSS %.1f MiB before, %.1f MiB once all tracked (+%.1f KiB a process), %.1f "
            "MiB after %d s of their samples and windows (+%.1f KiB a process)\n"
            "  CPU %.2f s while they started (%.0f us a process); %.3f of a CPU while they "
            "lived = %.1f us a process a second (-F %d, %.0f samples/s shipped, every "
            "Python process of the machine's)\n"
            "  fds %d, %d, %d; windows: %d samples in %d files + %d not counted = %d "
            "shipped; lost: %d samples, %d code records, %d process events; skipped %s; "
            "summary %s" % (
                N, fleet.forked_s, t_tracked - t_forked, t_seen - t_tracked,
                rss0 / MIB, rss1 / MIB, rss_tracked / KIB, rss3 / MIB, t3 - t_tracked,
                rss_steady / KIB, cpu1 - cpu0, (cpu1 - cpu0) / N * 1e6, steady_cpu,
                steady_cpu / N * 1e6, HZ, (c3["shipped"] - c2["shipped"]) / (t3 - t2),
                fds0, fds1, fds3, win.samples, len(win.read), not_counted, shipped,
                c4["lost"], c4["code_lost"], c4["proc_lost"],
                dict((k, v) for k, v in c4["skipped"].items() if v), sampled))
    print(line)
    detail = "%s\nmetrics before %s\nall tracked %s\nsteady %s\nafter the kill %s" % (
        line, c0, c1, c3, c4)

    assert not win.wrong, "misattributed samples: %s" % win.wrong[:10]
    assert not c4["skipped"].get("too_many_processes") and not c4["map_full"], \
        "processes skipped for a full map: " + detail
    assert sampled and sampled[0] >= N, "summary: %s processes sampled\n%s" % (sampled, err)
    assert not sampled[2] or "too many" not in sampled[2], err
    # the ring buffer holds ~20 s of what this machine ships (8 MiB): nothing is lost unless
    # the agent stops reading it for that long (a window of 4,096 processes took seconds)
    assert c4["proc_lost"] == 0 and c4["code_lost"] == 0 and c4["lost"] == 0, \
        "records lost: " + detail
    assert win.samples + not_counted == shipped, \
        "the windows hold %d samples + %d not counted != %d shipped: %s" % (
            win.samples, not_counted, shipped, detail)
    # what a tracked process costs: measured 12-15 KiB of RSS (its target, its code
    # objects and names, its share of a window) and ~20 us of CPU a second, most of it the
    # samples of whatever Python the machine runs
    assert max(rss1, rss3) - rss0 < N * RSS_PER_PROCESS_MAX + RING_RSS, \
        "RSS per process: " + detail
    assert steady_cpu < max(N * CPU_PER_PROCESS_MAX, CPU_FLOOR), \
        "CPU per process per second: " + detail
    assert fds3 - fds0 < 32, "descriptors grow with the processes: " + detail


# --- record --all ---------------------------------------------------------------------

@pytest.mark.long
@pytest.mark.core_only
def test_record_all_scans_4096_running_processes(pywalk, interp, fleets, tmp_path):
    fleet = fleets(interp, N)
    out = str(tmp_path / "out.folded")
    errf = open(str(tmp_path / "record.err"), "w+")
    t0 = time.monotonic()
    rec = subprocess.Popen([pywalk, "record", "--all", "-v", "-F", str(HZ), "-d",
                            "%ds" % RECORD_S, "-o", out], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=errf, start_new_session=True)
    try:
        def sampling():
            errf.seek(0)
            return "sampling at" in errf.read()
        wait_for(sampling, 120, "record --all to start sampling")
        t_sampling = time.monotonic()
        rec.wait(timeout=RECORD_S + 300)
    finally:
        if rec.poll() is None:
            os.killpg(rec.pid, signal.SIGKILL)
            rec.wait()
    errf.seek(0)
    err = errf.read()
    errf.close()
    alive = fleet.alive()
    assert rec.returncode == 0, err[-5000:]
    rows = e2e.parse_folded(out)
    e2e.check_summary(err)
    e2e.check_folded_total(err, rows)
    sampled = e2e.parse_processes(err)
    m = re.search(r"^pywalk: debug: sampling at \d+ Hz: (\d+) process", err, re.M)
    at_start = int(m.group(1)) if m else -1
    pids, wrong = collections.Counter(), []
    for frames, n in rows:
        task = e2e.parse_task_frame(frames[0])
        assert task, "root frame %r is not 'comm (PID)'" % frames[0]
        pid = task[1]
        for fr in frames[1:]:
            py = e2e.parse_py_frame(fr)
            fm = NAME_RE.match(py[0]) if py else None
            if fm and int(fm.group(1)) != pid:
                wrong.append((pid, fr))
            elif fm:
                pids[pid] += n
    ours = set(pids) & fleet.pidset
    line = ("record --all over %d running processes: sampling %.1f s after start, %d "
            "processes at start; %d of ours with samples of their own function; summary %s" % (
                N, t_sampling - t0, at_start, len(ours), sampled))
    print(line)
    assert alive == N, "%d of the %d processes died: %s" % (N - alive, N, line)
    assert not wrong, "misattributed: %s" % wrong[:10]
    assert at_start >= N, "the scan found %d processes: %s" % (at_start, line)
    assert sampled and sampled[0] >= N and not (sampled[2] and "too many" in sampled[2]), \
        line + "\n" + "\n".join(l for l in err.splitlines() if "debug: PID" not in l)
    # each process had two bursts in the recording, about two samples each
    missing = sorted(fleet.pidset - ours)
    assert len(ours) >= 0.99 * N, "only %d of %d processes sampled: %s; e.g. %s" % (
        len(ours), N, line, "\n".join(l for l in err.splitlines()
                                     if any("PID %d " % p in l for p in missing[:5])))
