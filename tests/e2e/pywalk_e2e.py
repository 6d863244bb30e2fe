# SPDX-License-Identifier: MIT
"""Helpers for the end-to-end tests: run pywalk, parse its folded output and its
accounting summary, run target workloads, and score stacks against the ground truth.
No pytest fixtures here (those are in conftest.py), so the helpers are plain functions.
"""
import collections
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

E2E_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(E2E_DIR))
TARGETS_DIR = os.path.join(REPO, "tests", "targets")
if TARGETS_DIR not in sys.path:
    sys.path.insert(0, TARGETS_DIR)

import interpreters  # noqa: E402  (needs the path above)
import known_shape_expected as ks  # noqa: E402
import pytest  # noqa: E402

# Every bucket of the accounting summary (CLI contract); their sum is the event count.
# pywalk prints the buckets that counted something (all with -v); parse_summary gives the
# others as 0.
SUMMARY_LABELS = (
    "shipped",
    "not a target process",
    "not python",
    "no thread state",
    "empty stack",
    "rejected: torn chain",
    "rejected: cycle",
    "rejected: depth bound",
    "rejected: read fault",
    "rejected: bad frame",
    "rejected: no bytecode copy",
    "rejected: no kernel stack",
    "rejected: task unreadable",
    "rejected: other loop",
    "rejected: task cycle",
    "rejected: await bound",
    "rejected: task changed",
    "lost (ring buffer full)",
    "lost (interrupted a walk)",
)
SUMMARY_HEAD_RE = re.compile(r"^pywalk: (\d+) perf events?, accounted as:\s*$")
# "  LABEL   COUNT", then for some buckets what they mean: "   (other processes ...)"
SUMMARY_ROW_RE = re.compile(r"^\s+(.+?)\s+(\d+)(?:   \(.*\))?$")
PY_FRAME_RE = re.compile(r"^(?P<name>.*) \((?P<path>.*):(?P<line>\d+)\)$")
# "comm (PID)", or for a process in a container "comm (PID, ns NSPID, container ID12)"
TASK_FRAME_RE = re.compile(r"^(?P<comm>.*) \((?P<id>\d+)(?:, ns (?P<nspid>\d+))?"
                           r"(?:, container (?P<container>[0-9a-f]{12}))?\)$")
UNKNOWN_NAMES = {"", "?", "??", "<unknown>", "[unknown]", "unknown"}
# --async: a task's mark, "[task NAME]" or "[task NAME] (+N awaiting)"
TASK_MARK_RE = re.compile(r"^\[task (?P<name>.*)\](?: \(\+(?P<others>\d+) awaiting\))?$")

READY_TIMEOUT_S = 20.0


def pywalk_path():
    return os.environ.get("PYWALK") or os.path.join(REPO, "build", "pywalk")


def run_pywalk(args, timeout=60, **kw):
    """Run pywalk with args; returns CompletedProcess with text stdout/stderr. kw are
    subprocess options on top (a umask or CPU affinity set in the child, another stderr).
    A run that outlives timeout is killed and reported as a test failure by the caller
    (subprocess.TimeoutExpired propagates)."""
    opts = dict(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                universal_newlines=True, timeout=timeout)
    opts.update(kw)
    return subprocess.run([pywalk_path()] + [str(a) for a in args], **opts)


# --- waiting for conditions and judging shares ----------------------------------------

def wait_for(condition, timeout, describe):
    """condition()'s first true value, polled until timeout seconds have passed; on timeout
    an AssertionError with describe() (a callable, so it shows the state at the end)."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("not within %.1f s: %s" % (timeout, describe()))
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def read_until(fd, pattern, timeout, describe, buf=b""):
    """Bytes read from fd (a pipe) until the regex pattern (bytes) matches them; returns
    (match, bytes read so far). EOF or the timeout fail with describe(bytes read)."""
    deadline = time.monotonic() + timeout
    while True:
        m = re.search(pattern, buf)
        if m:
            return m, buf
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("not within %.1f s: %s" % (timeout, describe(buf)))
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError("end of output: %s" % describe(buf))
            buf += chunk


def task_cpu_seconds(pid, tid=None):
    """utime + stime of a process (or one of its threads) so far."""
    path = "/proc/%d/stat" % pid if tid is None else "/proc/%d/task/%d/stat" % (pid, tid)
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def task_state(pid, tid):
    """(state letter, wait channel) of one thread now, from /proc."""
    base = "/proc/%d/task/%d/" % (pid, tid)
    with open(base + "stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    with open(base + "wchan") as f:
        return state, f.read().strip()


class StolenTime:
    """The share of this machine's busy CPU time its hypervisor took (the steal column of
    /proc/stat) between start() and share(). A guest's clock runs on while the host has its
    virtual CPU, so a cpu-clock sampler counts stolen time that time.process_time (which
    leaves steal out) does not; a test comparing the two allows this much besides its own
    tolerance. 0 on bare metal."""

    def __init__(self):
        self.before = self._read()

    @staticmethod
    def _read():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
        user, nice, system, _idle, _iowait, irq, softirq, steal = fields
        return user + nice + system + irq + softirq + steal, steal

    def share(self):
        busy, steal = (a - b for a, b in zip(self._read(), self.before))
        return steal / busy if busy > 0 else 0.0


def binomial_tolerance(n, p, sigmas=5.0):
    """How far a share measured from n independent samples may be from its true value p
    by chance alone: sigmas standard deviations of a binomial share, sqrt(p(1-p)/n).
    At 5 sigma a test fails by chance about once in 3.5 million runs."""
    assert n > 0, "no samples to judge a share by"
    return sigmas * (p * (1.0 - p) / n) ** 0.5


def binomial_difference_tolerance(n1, n2, p, sigmas=5.0):
    """How far two shares of one true value p, measured from n1 and n2 samples, may differ
    by chance alone: sigmas standard deviations of their difference."""
    assert n1 > 0 and n2 > 0, "no samples to judge a share by"
    return sigmas * (p * (1.0 - p) * (1.0 / n1 + 1.0 / n2)) ** 0.5


# --- folded output -------------------------------------------------------------------

def parse_folded(path):
    """[(frames, count)] from a collapsed-stack file; frames are strings, root first."""
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip():
                continue
            stack, sep, count = line.rpartition(" ")
            assert sep and count.isdigit() and stack, \
                "%s:%d: not 'frame;...;frame COUNT': %r" % (path, lineno, line)
            rows.append((stack.split(";"), int(count)))
    return rows


def parse_py_frame(text):
    """(qualname, path, line) of a Python frame string, or None."""
    m = PY_FRAME_RE.match(text)
    return (m.group("name"), m.group("path"), int(m.group("line"))) if m else None


def parse_task_frame(text):
    """(comm, id) of a 'COMM (PID)' / 'COMM (TID)' frame, or None."""
    if PY_FRAME_RE.match(text):
        return None
    m = TASK_FRAME_RE.match(text)
    return (m.group("comm"), int(m.group("id"))) if m else None


def unknown_frames(rows):
    """Counter of Python frame strings that look unknown or do not parse."""
    bad = collections.Counter()
    for frames, n in rows:
        for fr in frames:
            if parse_task_frame(fr) or TASK_MARK_RE.match(fr):
                continue
            py = parse_py_frame(fr)
            # Line 0 is allowed: CPython has instructions with no line (startup code);
            # frames of the workload are checked for their exact lines elsewhere.
            if py is None or py[0].strip() in UNKNOWN_NAMES or \
                    py[1].strip() in UNKNOWN_NAMES:
                bad[fr] += n
    return bad


# --- accounting summary --------------------------------------------------------------

def parse_summary(stderr):
    """(event count N, {label: count}) from pywalk's stderr, every bucket of SUMMARY_LABELS
    there (0 when not printed); raises AssertionError if the summary block is missing or
    holds a bucket that is not one of them."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        m = SUMMARY_HEAD_RE.match(line)
        if not m:
            continue
        buckets = {}
        for row in lines[i + 1:]:
            r = SUMMARY_ROW_RE.match(row)
            if not r:
                break
            label = r.group(1).strip()
            assert label not in buckets, "bucket %r printed twice:\n%s" % (label, stderr)
            assert label in SUMMARY_LABELS, "unknown bucket %r:\n%s" % (label, stderr)
            buckets[label] = int(r.group(2))
        for label in SUMMARY_LABELS:
            buckets.setdefault(label, 0)
        return int(m.group(1)), buckets
    raise AssertionError("no 'pywalk: N perf events, accounted as:' summary on stderr:\n"
                         + stderr)


def check_summary(stderr):
    """Assert the accounting invariant; returns (N, buckets)."""
    total, buckets = parse_summary(stderr)
    missing = [l for l in SUMMARY_LABELS if l not in buckets]
    assert not missing, "summary lacks buckets %s:\n%s" % (missing, stderr)
    assert sum(buckets.values()) == total, \
        "buckets add up to %d, not to the %d perf events:\n%s" % (
            sum(buckets.values()), total, stderr)
    return total, buckets


NOT_COUNTED_RE = re.compile(r"^pywalk: of the shipped stacks, (\d+) (?:was|were) not counted")
NOT_COUNTED_MAX = 0.01  # of shipped


def check_folded_total(stderr, rows, describe=""):
    """Folded counts + the stacks pywalk reports it could not write ("of the shipped
    stacks, K were not counted: ..." on stderr) == shipped, and K is at most 1 %."""
    _, buckets = parse_summary(stderr)
    not_counted = 0
    for line in stderr.splitlines():
        m = NOT_COUNTED_RE.match(line)
        if m:
            not_counted += int(m.group(1))
    folded = sum(n for _, n in rows)
    shipped = buckets["shipped"]
    assert folded + not_counted == shipped, \
        "folded output holds %d samples + %d reported not counted != %d shipped\n%s" % (
            folded, not_counted, shipped, describe)
    assert not_counted <= NOT_COUNTED_MAX * shipped, \
        "%d of %d shipped stacks were not counted (> %.0f%%)\n%s" % (
            not_counted, shipped, 100 * NOT_COUNTED_MAX, describe)
    return folded


PROCESSES_RE = re.compile(r"^pywalk: (\d+) process(?:es)? sampled \((\d+) fork child(?:ren)? "
                          r"inherited (?:its|their) parent's interpreter\)(?:; skipped: (.*))?$")


def parse_processes(stderr):
    """(processes sampled, fork children inherited, skipped text or None) from the summary's
    "pywalk: M processes sampled (F fork children ...)[; skipped: ...]" line, or None when
    pywalk printed no such line (one process, no --subprocesses/--all, nothing skipped)."""
    found = [m for m in map(PROCESSES_RE.match, stderr.splitlines()) if m]
    assert len(found) <= 1, "'processes sampled' printed %d times:\n%s" % (len(found), stderr)
    if not found:
        return None
    m = found[0]
    return int(m.group(1)), int(m.group(2)), m.group(3)


def rows_by_process(rows):
    """{pid: Counter(tuple of parsed Python frames)} and {pid: comm} from folded rows whose
    root frame is 'COMM (PID)'; rows without one are under pid None (one process sampled)."""
    stacks = collections.defaultdict(collections.Counter)
    comms = {}
    for frames, n in rows:
        task = parse_task_frame(frames[0])
        pid = None
        if task:
            comm, pid = task
            assert comms.setdefault(pid, comm) == comm, \
                "PID %d shown as %r and %r" % (pid, comms[pid], comm)
            frames = frames[1:]
        stacks[pid][tuple(to_py_frames(frames))] += n
    return stacks, comms


def describe_run(result, out_path=None, limit=15):
    """Text for failure messages: stderr and the top of the output."""
    text = "pywalk exit %s\n--- stderr ---\n%s" % (result.returncode, result.stderr)
    if out_path and os.path.exists(out_path):
        rows = sorted(parse_folded(out_path), key=lambda r: -r[1])[:limit]
        text += "\n--- top stacks ---\n" + "\n".join(
            "%6d %s" % (n, ";".join(fr)) for fr, n in rows)
    return text


# --- processes -----------------------------------------------------------------------

class Target:
    """A running workload started by the tests (its own process group).

    argv and script_path replace the interpreter's own command line and the script's path
    as the process sees it (a copy of the script, a namespace wrapper). With pidns the
    command starts the interpreter as a child of its own (unshare --pid --fork): pid is that
    child's host PID once wait_ready returns."""

    def __init__(self, interp, script="known_shape.py", args=(), argv=None, script_path=None,
                 pidns=False):
        self.interp = interp
        self.script_path = script_path or interp.script_path(script)
        self.argv = list(argv) if argv else interp.argv(script, *args)
        self.pidns = pidns
        self._err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self._err,
                                     start_new_session=True)
        self.pid = self.proc.pid

    def wait_ready(self, timeout=READY_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"READY\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError("%s: no READY within %.0f s (exit %s)\n%s" % (
                    " ".join(self.argv), timeout, self.proc.poll(), self.stderr()))
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    continue
                buf += chunk
        self.ready_output = buf.decode("utf-8", "replace")  # what it printed up to READY
        if self.pidns:
            kids = child_pids(self.proc.pid)
            assert len(kids) == 1, "%s: %s should have one child, the interpreter: %s" % (
                " ".join(self.argv), self.proc.pid, kids)
            self.pid = kids[0]
        return self

    def stderr(self):
        self._err.flush()
        self._err.seek(0)
        return self._err.read()

    def tids(self):
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % self.pid))

    def comm(self, tid=None):
        path = "/proc/%d/task/%d/comm" % (self.pid, tid or self.pid)
        with open(path) as f:
            return f.read().rstrip("\n")

    def cpu_seconds(self):
        """utime + stime of the whole process so far."""
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.proc.stdout.close()
        self._err.close()


def proc_stat_fields(pid):
    """Fields of /proc/PID/stat after the comm: [0] is the state, [1] the parent PID."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def child_pids(pid):
    """PIDs whose parent is pid (now)."""
    kids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if int(proc_stat_fields(int(name))[1]) == pid:
                    kids.append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    return sorted(kids)


def nspids(pid):
    """The NSpid line of /proc/PID/status: the PID in each pid namespace, outermost first."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    return [pid]


def pidns_argv(interp, script_path, args=(), mount=False):
    """Command line running interp on script_path (its path as the process sees it) as PID 1
    of a pid namespace of its own (unshare --pid --fork), as in a container. mount: also a
    mount namespace of its own with its own /proc; a chroot interpreter is run chrooted
    either way. Use with Target(..., pidns=True)."""
    py = [interp.exe, script_path] + [str(a) for a in args]
    ns = ["unshare", "--pid", "--fork"]
    if not mount:
        return ns + (["chroot", interp.root] if interp.root else []) + py
    ns += ["--mount", "--propagation", "private"]
    if interp.root:
        return ns + ["sh", "-c", 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"',
                     interp.root] + py
    return ns + ["sh", "-c", 'mount -t proc proc /proc && exec "$@"', "sh"] + py


def build_ext(interp, source, name, tmp_path_factory, cflags="-O2"):
    """Build the C extension `name` from tests/targets' `source` for `interp` with its own
    headers: inside its chroot with the chroot's gcc, else with the host gcc and the
    interpreter's pythonX.Y-config. Returns (directory as the target process sees it,
    the same directory on the host); skips when the interpreter has no headers."""
    config = "python%s-config" % interp.version
    base = os.path.basename(source)
    build = ("cd %%s && gcc -shared -fPIC %s -Wall -Werror $(%%s --includes) "
             "-o %s$(%%s --extension-suffix) %s" % (cflags, name, base))
    if interp.root:
        rel = "%s/%s-%s" % (interpreters.CHROOT_TARGET_DIR.lstrip("/"), name, interp.version)
        host_dir = os.path.join(interp.root, rel)
        os.makedirs(host_dir, exist_ok=True)
        shutil.copy2(source, os.path.join(host_dir, base))
        cmd = ["chroot", interp.root, "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "sh", "-c",
               build % ("/" + rel, config, config)]
        target_dir = "/" + rel
    else:
        config = os.path.join(os.path.dirname(interp.exe), config)
        if not os.path.exists(config):
            pytest.skip("%s: no %s to build the extension" % (interp.id, config))
        host_dir = str(tmp_path_factory.mktemp("%s-%s" % (name, interp.id)))
        shutil.copy2(source, os.path.join(host_dir, base))
        cmd = ["sh", "-c", build % (host_dir, config, config)]
        target_dir = host_dir
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if r.returncode != 0 and interp.root and b"not found" in r.stdout:
        pytest.skip("%s: no compiler or headers in the chroot: %s" % (
            interp.id, r.stdout.decode(errors="replace")[-300:]))
    assert r.returncode == 0, "building %s for %s failed:\n%s" % (
        name, interp.id, r.stdout.decode(errors="replace"))
    return target_dir, host_dir


RESULT_PREFIX = "PWRESULT "  # tests/targets/tree_common.py


def parse_results(text):
    """The PWRESULT records (dicts) the process-tree targets wrote, in output order."""
    return [json.loads(line[len(RESULT_PREFIX):]) for line in text.splitlines()
            if line.startswith(RESULT_PREFIX)]


MARKER_RE = re.compile(r"#\s*@(leaf|call):(\w+)")


def source_markers(script):
    """{"leaf:NAME" / "call:NAME": line} of tests/targets/<script>."""
    out = {}
    with open(os.path.join(TARGETS_DIR, script), encoding="utf-8") as f:
        for lineno, text in enumerate(f, 1):
            for kind, name in MARKER_RE.findall(text):
                key = "%s:%s" % (kind, name)
                assert key not in out, "%s:%d: duplicate marker %s" % (script, lineno, key)
                out[key] = lineno
    return out


END_MARKER_RE = re.compile(r"#\s*@(\w+)\s*$")


def ks_thread_names(pid, tids):
    """{tid: name} of known_shape.py's threads as outputs name them: threading's names
    (Thread.name, read from the target), not their OS names (/proc's comm)."""
    return dict((tid, "MainThread" if tid == pid else "ks-worker") for tid in tids)


def markers(script):
    """{name: line} of the '# @name' comments that end lines of tests/targets/<script>."""
    found = {}
    with open(os.path.join(TARGETS_DIR, script), encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            m = END_MARKER_RE.search(line)
            if m:
                assert m.group(1) not in found, "%s:%d: duplicate marker" % (script, lineno)
                found[m.group(1)] = lineno
    return found


def missing_pid():
    """A PID with no process (checked just now)."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read()) - 1
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


# --- scoring against the ground truth ------------------------------------------------

class ThreadScore:
    """Samples of one thread classified against that thread's expected stacks."""

    def __init__(self, expected_for_thread, other_threads_expected=()):
        self.expected = expected_for_thread
        self.others = list(other_threads_expected)
        self.total = 0
        self.phases = collections.Counter()
        self.unmatched = collections.Counter()
        self.foreign = 0          # samples that are another thread's expected stack
        self.stacks = collections.Counter()

    def add(self, py_frames, n):
        self.total += n
        self.stacks[tuple(py_frames)] += n
        phase = ks.classify(py_frames, self.expected)
        if phase:
            self.phases[phase] += n
            return
        self.unmatched[tuple(py_frames)] += n
        if any(ks.classify(py_frames, o) for o in self.others):
            self.foreign += n

    @property
    def matched(self):
        return sum(self.phases.values())

    @property
    def match_fraction(self):
        return self.matched / self.total if self.total else 0.0

    def split(self):
        m = self.matched
        return {p: (self.phases[p] / m if m else 0.0) for p in self.expected}

    def report(self, limit=6):
        lines = ["samples %d, matched %d (%.2f%%), phases %s, foreign %d" % (
            self.total, self.matched, 100 * self.match_fraction, dict(self.phases),
            self.foreign)]
        for stack, n in self.unmatched.most_common(limit):
            lines.append("  unmatched x%d: %s" % (n, ks.format_stack(stack)))
        return "\n".join(lines)


def to_py_frames(frames):
    """Parsed Python frames of a folded stack; raises AssertionError on a frame that is
    not a Python frame."""
    out = []
    for fr in frames:
        py = parse_py_frame(fr)
        assert py is not None, "not a Python frame %r in %s" % (fr, ";".join(frames))
        out.append(py)
    return out


def go_pprof(tmp_path, *args):
    """stdout of `go tool pprof ARGS` (its caches under tmp_path). go missing fails under
    CI (make test installs golang-go) and skips elsewhere, saying why."""
    go = shutil.which("go")
    if not go:
        if os.environ.get("CI"):
            pytest.fail("go is not installed (golang-go)")
        pytest.skip("go is not installed (golang-go)")
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"),
               PPROF_TMPDIR=str(tmp_path), GOTOOLCHAIN="local")
    r = subprocess.run([go, "tool", "pprof"] + [str(a) for a in args], capture_output=True,
                       stdin=subprocess.DEVNULL, env=env, timeout=120)
    assert r.returncode == 0, "go tool pprof %s failed:\n%s" % (
        " ".join(str(a) for a in args), r.stderr.decode("utf-8", "replace"))
    return r.stdout.decode("utf-8", "replace")


def is_read_path(kern):
    """Kernel frame names (root first) that are a read system call's path: the entry,
    do_syscall_64, then the read's own code (read_zero is /dev/zero's), in that order."""
    names = list(kern)
    try:
        entry = next(i for i, n in enumerate(names) if n.startswith("entry_SYSCALL_64"))
        sysc = names.index("do_syscall_64", entry)
    except (StopIteration, ValueError):
        return False
    return any(n in ("ksys_read", "vfs_read", "__x64_sys_read", "read_zero")
               for n in names[sysc + 1:])
