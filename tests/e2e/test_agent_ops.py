# SPDX-License-Identifier: MIT
"""End-to-end tests of `pywalk agent` as an operator runs it, against
tests/targets/known_shape.py on the core interpreter (Debian's python3.11).

* metrics: a real Prometheus (Debian's package, started here on loopback) scrapes
  --metrics every second; its values rise and match the agent's own counts; promtool
  accepts the exposition without a warning; names follow Prometheus's conventions.
* pulls: `go tool pprof` reads /debug/pprof/profile?seconds=N[&pid=P] (the known-shape
  stacks, one process of two with pid=P); bad seconds are 400, a fifth pull at once 503;
  SIGTERM ends a pull in progress promptly; a pull is a tap, the windows still add up.
* export dir: a file per window and process, sorting by time, decoded by go tool pprof
  with the stacks and labels; --keep and --keep-size prune only pywalk's own files; a
  directory other users can write, or another user's, is refused; a symlink planted at a
  file's final name is never followed; a full disk (a small tmpfs at ENOSPC) drops and
  counts windows, leaves nothing partial, and writing resumes when space returns.
* faults: the agent SIGSTOPped for 30 s resumes; its windows stay ordered, none overlap,
  and the one open at the stop holds the 30 s. The ring buffer full for seconds (20 kHz
  through --ring-size 64K): losses counted in the metrics and the summary, every frame
  real, then (the target capped with SCHED_DEADLINE) no more loss and windows again. An
  exec storm (tests/targets/exec_storm.py, Python each time): the images attached, RSS and
  descriptors flat, every sample under its own image's service, windows throughout. The
  host's clock stepped an hour back and forward (a helper that always puts it back):
  windows in order, never overlapping, each about its interval, the step logged.
* config: every long option in a file, an unknown key named with file and line, the
  command line wins; SIGHUP exports the current window and takes the new settings, an
  invalid new config keeps the old one; SIGTERM/SIGINT export the last window, exit 0.
* soak: --all with code and process churn, RSS and open descriptors flat after warm-up
  (SOAK_SECONDS, 120 by default, in `make test-long`; `make soak` runs it longer).
* the systemd unit passes systemd-analyze verify.

Tools: prometheus and promtool (prometheus), go (golang-go), systemd-analyze; installed by
scripts/install-deps.sh. A missing one fails under CI and skips elsewhere.
"""
import ast
import calendar
import collections
import contextlib
import ctypes
import errno
import glob
import gzip
import json
import os
import pathlib
import platform
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest

import pywalk_e2e as e2e
from pywalk_e2e import ks

MATCH_MIN = 0.90          # share of a thread's samples that must be an expected stack
NAME_RE = re.compile(r"^(\d{8}T\d{6}\.\d{3}Z)-(.+)-(\d+)-(\d+)\.pb\.gz$")
SOAK_SECONDS = int(os.environ.get("SOAK_SECONDS", "120"))
NOBODY = 65534
MIB = 1 << 20


def unmet(why):
    """A tool is missing: fail under CI, where `make test` installs it; skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def tool(name):
    path = shutil.which(name)
    if not path:
        unmet("%s is needed (scripts/install-deps.sh installs it)" % name)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=30):
    """(status, body bytes) of a GET; HTTP errors are answers too."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def parse_metrics(text):
    """{(name, ((label, value), ...)): value} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        assert m, "not a sample line: %r" % line
        labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def metric(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


class Agent:
    """A running `pywalk agent` (its own process group), its stderr in a file."""

    def __init__(self, pywalk, args, tmp, metrics=True):
        self.port = free_port() if metrics else None
        self.args = [pywalk, "agent"] + [str(a) for a in args]
        if metrics:
            self.args += ["--metrics", "127.0.0.1:%d" % self.port]
        self._err = tempfile.TemporaryFile("w+", dir=str(tmp))
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self._err,
                                     start_new_session=True)
        self.rc = None
        if metrics:
            self.wait_listening()
        else:
            self.wait_sampling()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def wait_listening(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "agent exited %s:\n%s" % (
                self.proc.returncode, self.stderr())
            try:
                if http_get(self.url + "/metrics", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("agent not listening after %d s:\n%s" % (timeout, self.stderr()))

    def wait_sampling(self, timeout=30):
        """Until the agent says it samples: its first window starts then, not at launch
        (loading the programs takes a second or more on a loaded machine)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return  # a test of a refused start reads the exit itself
            if "agent: sampling " in self.stderr():
                return
            time.sleep(0.05)
        raise AssertionError("agent not sampling after %d s:\n%s" % (timeout, self.stderr()))

    def metrics_text(self):
        status, body = http_get(self.url + "/metrics")
        assert status == 200, (status, body)
        return body.decode("utf-8")

    def metrics(self):
        return parse_metrics(self.metrics_text())

    def stderr(self):
        self._err.flush()
        self._err.seek(0)
        return self._err.read()

    def send(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Signal and wait; returns (exit code, seconds it took)."""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("agent did not exit %d s after %s:\n%s" % (
                timeout, signal.Signals(sig).name, self.stderr()))
        return self.rc, time.monotonic() - t0

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def summary(self):
        """(shipped, not counted) from the exit summary (checked to add up)."""
        err = self.stderr()
        _, buckets = e2e.check_summary(err)
        not_counted = sum(int(m.group(1)) for m in map(e2e.NOT_COUNTED_RE.match,
                                                        err.splitlines()) if m)
        return buckets["shipped"], not_counted


@pytest.fixture
def agents():
    """agents(pywalk, args, tmp, ...) -> Agent; every one killed at teardown."""
    started = []

    def start(*a, **kw):
        ag = Agent(*a, **kw)
        started.append(ag)
        return ag

    yield start
    for ag in started:
        ag.kill()


@pytest.fixture(scope="module")
def go_env(tmp_path_factory):
    """Environment for `go tool pprof` (its HOME and caches in a temp dir)."""
    go = tool("go")
    home = str(tmp_path_factory.mktemp("gohome"))
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"),
               GOPATH=os.path.join(home, "go"), GOFLAGS="", PPROF_TMPDIR=home)
    return go, env


def pprof_raw(go_env, source, timeout=120):
    """`go tool pprof -raw` of a file or URL, or of a list of files (merged: each sample
    keeps its labels)."""
    go, env = go_env
    sources = [source] if isinstance(source, str) else list(source)
    r = subprocess.run([go, "tool", "pprof", "-raw"] + sources, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout, env=env)
    assert r.returncode == 0, "go tool pprof -raw %s failed:\n%s" % (source, r.stderr)
    return r.stdout.decode("utf-8", "replace")


# a qualname has no space, a file may ("<frozen importlib._bootstrap>"), a pseudo-frame
# ("[off-cpu: sleeping]") is bracketed
LOC_RE = re.compile(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\[[^\]]*\]|\S+) (.*):(\d+) s=\d+")


class Raw:
    """A profile as `go tool pprof -raw` prints it: samples with their labels and
    stacks (root first, as (qualname, path, line))."""

    def __init__(self, text):
        self.text = text
        m = re.search(r"^Time: (.*)$", text, re.M)
        self.time = m.group(1) if m else None
        m = re.search(r"^Duration: ([\d.:hms]+)", text, re.M)
        self.duration = m.group(1) if m else None
        locs, samples, section = {}, [], None
        for line in text.splitlines():
            if line.startswith("Samples:"):
                section = "samples"
                continue
            if line.startswith("Locations"):
                section = "locations"
                continue
            if line.startswith("Mappings"):
                section = None
            if section == "samples":
                s = re.match(r"^\s+(\d+)\s+(\d+): ([\d ]+)$", line)
                if s:
                    samples.append([int(s.group(1)), [int(x) for x in s.group(3).split()],
                                    {}])
                elif samples and ":[" in line:
                    samples[-1][2].update(re.findall(r"(\w+):\[([^\]]*)\]", line))
            elif section == "locations":
                m = LOC_RE.match(line)
                if m:
                    locs[int(m.group(1))] = (m.group(2), m.group(3), int(m.group(4)))
        self.samples = [(n, tuple(locs[i] for i in reversed(ids)), labels)
                        for n, ids, labels in samples]

    def total(self, **labels):
        return sum(n for n, _, l in self.samples
                   if all(l.get(k) == str(v) for k, v in labels.items()))

    def pids(self):
        return set(int(l["pid"]) for _, _, l in self.samples)


def check_known_shape(raw, target, what):
    """Each thread of `target` in raw matches its expected stacks."""
    expected = ks.expected_stacks(target.interp.version, target.script_path)
    scores = {}
    for n, stack, labels in raw.samples:
        if int(labels["pid"]) != target.pid:
            continue
        tid = int(labels["thread_id"])
        if tid not in scores:
            mine, other = (ks.MAIN, ks.WORKER) if tid == target.pid else (ks.WORKER, ks.MAIN)
            scores[tid] = e2e.ThreadScore(expected[mine], [expected[other]])
        scores[tid].add(stack, n)
    assert set(scores) == set(target.tids()), "%s: threads %s, target has %s" % (
        what, sorted(scores), target.tids())
    for tid, s in scores.items():
        assert s.match_fraction >= MATCH_MIN and s.foreign == 0, \
            "%s, thread %d: %s" % (what, tid, s.report())
    return scores


def exported(d):
    """{name: path} of pywalk's files in export dir d."""
    return dict((n, os.path.join(d, n)) for n in os.listdir(d) if NAME_RE.match(n))


@pytest.fixture
def request_cleanup():
    """Callables run after the test, whatever its outcome."""
    todo = []
    yield todo
    for fn in reversed(todo):
        fn()


def export_dir(tmp_path, name="export"):
    d = tmp_path / name
    d.mkdir(mode=0o755)
    os.chmod(str(d), 0o755)
    return str(d)


def wait_for(cond, timeout, what):
    """cond()'s first true value, polled; `what` may be a callable, to show the state at
    the end."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out after %.0f s waiting for %s" % (
        timeout, what() if callable(what) else what))


# --- metrics and a real Prometheus --------------------------------------------------

@pytest.mark.core_only
def test_promtool_accepts_the_exposition_and_names_follow_conventions(
        pywalk, interp, start_target, agents, tmp_path):
    promtool = tool("promtool")
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "1s", "--export-dir",
                         export_dir(tmp_path)], tmp_path)
    wait_for(lambda: metric(ag.metrics(), "pywalk_windows_total") >= 2, 15, "two windows")
    text = ag.metrics_text()
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), \
        "promtool check metrics:\n%s%s\n--- exposition ---\n%s" % (r.stdout, r.stderr, text)
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    helps = re.findall(r"^# HELP (\S+) ", text, re.M)
    assert len(helps) == len(set(helps)) == len(types), "a family announced twice:\n" + text
    for name, kind in types.items():
        if kind == "counter":
            assert name.endswith("_total"), "counter %s does not end in _total" % name
        base = name[:-len("_total")] if name.endswith("_total") else name
        for unit in ("seconds", "bytes"):
            if unit in base.split("_"):
                assert base.endswith("_" + unit), "%s: the unit %s is not last" % (name, unit)
    # label values are snake_case words a query can name
    for (_, labels), _ in parse_metrics(text).items():
        for k, v in labels:
            if k in ("outcome", "reason", "result", "kind"):
                assert re.match(r"^[a-z][a-z0-9_]*[a-z0-9]$", v), "label %s=%r" % (k, v)
    samples = parse_metrics(text)
    runs = metric(samples, "pywalk_sampler_runs_total")
    outcomes = sum(v for (n, _), v in samples.items() if n == "pywalk_samples_total")
    assert outcomes == runs, "outcomes add up to %d, not to %d runs" % (outcomes, runs)


@pytest.mark.core_only
def test_metrics_page_is_fresh_at_every_scrape(pywalk, interp, start_target, agents,
                                               tmp_path):
    """The page is rendered on a 250 ms grid: scrapes 0.6 s apart of an agent sampling a
    busy target each see the sampler's run count higher than the scrape before. A page due
    "a second after the last one" (what the agent once did) repeated itself here for about
    every other pair."""
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "10s"], tmp_path)
    ag.wait_sampling()
    wait_for(lambda: metric(ag.metrics(), "pywalk_sampler_runs_total") > 0, 15,
             "a first sample on the metrics page")
    seen = []
    for _ in range(12):
        if seen:
            # the gap between scrapes is what is measured, not a wait for a condition
            time.sleep(max(0.0, seen[-1][0] + 0.6 - time.monotonic()))
        seen.append((time.monotonic(), metric(ag.metrics(), "pywalk_sampler_runs_total")))
    stale = [(round(b[0] - a[0], 3), a[1]) for a, b in zip(seen, seen[1:]) if b[1] <= a[1]]
    print("runs at each scrape: %s" % [n for _, n in seen])
    assert not stale, "scrapes (gap s, runs) that read the page before again: %s\n%s" % (
        stale, ag.stderr())


@pytest.mark.core_only
def test_prometheus_scrapes_the_agent(pywalk, interp, start_target, agents, tmp_path):
    prometheus = tool("prometheus")
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "2s"], tmp_path)
    prom_port = free_port()
    conf = tmp_path / "prometheus.yml"
    conf.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: pywalk\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % ag.port)
    prom_log = open(str(tmp_path / "prometheus.log"), "w+")
    prom = subprocess.Popen([prometheus, "--config.file=%s" % conf,
                             "--storage.tsdb.path=%s" % (tmp_path / "tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % prom_port],
                            stdin=subprocess.DEVNULL, stdout=prom_log, stderr=prom_log,
                            start_new_session=True)
    api = "http://127.0.0.1:%d/api/v1/" % prom_port

    def query(q):
        status, body = http_get(api + "query?query=" + urllib.request.quote(q))
        assert status == 200, body
        res = json.loads(body)["data"]["result"]
        return dict((r["metric"].get("outcome", ""), float(r["value"][1])) for r in res)

    def prom_log_text():
        prom_log.flush()
        prom_log.seek(0)
        return prom_log.read()[-3000:]

    try:
        wait_for(lambda: _ready(prom_port), 60, "prometheus ready\n" + prom_log_text())
        seen = [-1.0]

        def rose():
            got = query('pywalk_samples_total{outcome="shipped"}').get("shipped")
            return got if got is not None and got > seen[-1] else None

        for _ in range(5):  # five scrapes, each above the one before
            seen.append(wait_for(rose, 30, lambda: "pywalk_samples_total{outcome=shipped} "
                                 "rising past %s\n%s" % (seen[-1], prom_log_text())))
        seen = seen[1:]
        up = query('up{job="pywalk"}')
        assert list(up.values()) == [1.0], up
        # stop the workload: the counts stand still, and Prometheus's last scrape is the
        # agent's own figure
        os.killpg(t.proc.pid, signal.SIGSTOP)
        at_rest = []

        def settled():
            own = metric(ag.metrics(), "pywalk_samples_total", outcome="shipped")
            scraped = query('pywalk_samples_total{outcome="shipped"}').get("shipped")
            now = time.monotonic()
            if not at_rest or at_rest[-1][:2] != (own, scraped):
                at_rest.append((own, scraped, now))
            # unchanged for 2.5 s (ten of the agent's 250 ms metrics pages), and scraped
            return own == scraped and now - at_rest[-1][2] >= 2.5 and (own, scraped)

        own, scraped = wait_for(settled, 30, lambda: "the stopped workload's count scraped: %s"
                                 % at_rest[-3:])
        outcomes = sum(query("pywalk_samples_total").values())
        runs = list(query("pywalk_sampler_runs_total").values())[0]
        rc, _ = ag.stop()
        assert rc == 0, ag.stderr()
        shipped, _ = ag.summary()
        print("prometheus saw shipped %s; at rest %d scraped, %d served, %d in the summary; "
              "outcomes %d = runs %d" % (seen, scraped, own, shipped, outcomes, runs))
        assert scraped == own == shipped, (scraped, own, shipped)
        assert outcomes == runs, (outcomes, runs)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(t.proc.pid, signal.SIGCONT)
        prom.terminate()
        try:
            prom.wait(20)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        prom_log.close()


def _ready(port):
    try:
        return http_get("http://127.0.0.1:%d/-/ready" % port, timeout=2)[0] == 200
    except OSError:
        return False


# --- the pull endpoint --------------------------------------------------------------

@pytest.mark.core_only
def test_pull_with_go_tool_pprof(pywalk, interp, start_target, agents, tmp_path, go_env):
    a, b = start_target(interp), start_target(interp)
    ag = agents(pywalk, ["-p", "%d,%d" % (a.pid, b.pid), "--interval", "2s"], tmp_path)
    t0 = time.monotonic()
    raw = Raw(pprof_raw(go_env, ag.url + "/debug/pprof/profile?seconds=3"))
    took = time.monotonic() - t0
    assert 3 <= took < 15, "a 3 s pull took %.1f s" % took
    assert raw.pids() == {a.pid, b.pid}, raw.pids()
    for t in (a, b):
        check_known_shape(raw, t, "pull, PID %d" % t.pid)
    one = Raw(pprof_raw(go_env, ag.url + "/debug/pprof/profile?seconds=2&pid=%d" % b.pid))
    assert one.pids() == {b.pid}, "pid=%d pulled %s" % (b.pid, one.pids())
    check_known_shape(one, b, "pull of pid %d" % b.pid)
    print("pull: %d samples (%d + %d) in 3 s; pid=%d: %d in 2 s" % (
        raw.total(), raw.total(pid=a.pid), raw.total(pid=b.pid), b.pid, one.total()))


@pytest.mark.core_only
def test_pull_rejects_bad_arguments_and_a_fifth_pull(pywalk, interp, start_target, agents,
                                                      tmp_path):
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid], tmp_path)
    for q in ("seconds=0", "seconds=301", "seconds=abc", "seconds=-1", "seconds=",
              "seconds=3&pid=abc", "seconds=3&pid=0"):
        status, body = http_get(ag.url + "/debug/pprof/profile?" + q)
        assert status == 400, "?%s: %d %r" % (q, status, body)
    assert http_get(ag.url + "/nothing")[0] == 404
    results = []

    def pull():
        t0 = time.monotonic()
        status, body = http_get(ag.url + "/debug/pprof/profile?seconds=3")
        results.append((status, time.monotonic() - t0, len(body)))

    threads = [threading.Thread(target=pull) for _ in range(5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    statuses = sorted(s for s, _, _ in results)
    print("5 pulls at once: %s" % results)
    assert statuses == [200, 200, 200, 200, 503], results
    busy = [r for r in results if r[0] == 503][0]
    assert busy[1] < 2, "the fifth pull waited %.1f s for its 503" % busy[1]
    # the taps are given back: four more fit
    results.clear()
    threads = [threading.Thread(target=pull) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert sorted(s for s, _, _ in results) == [200] * 4, results


@pytest.mark.core_only
def test_sigterm_ends_a_pull_in_progress(pywalk, interp, start_target, agents, tmp_path):
    t = start_target(interp)
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "60s", "--export-dir", d], tmp_path)
    results = []

    def pull():
        try:
            results.append(http_get(ag.url + "/debug/pprof/profile?seconds=60")[0])
        except OSError as e:
            results.append(repr(e))

    th = threading.Thread(target=pull)
    th.start()
    wait_for(lambda: metric(ag.metrics(), "pywalk_pulls_in_progress") == 1, 15,
             "the pull in progress")
    rc, took = ag.stop(signal.SIGTERM)
    th.join(10)
    print("SIGTERM during a 60 s pull: exit %d after %.2f s, the pull got %s" % (
        rc, took, results))
    assert rc == 0, ag.stderr()
    assert took < 5, "agent took %.1f s to exit" % took
    assert not th.is_alive() and results, "the pull is still waiting"
    assert results[0] != 200, results
    assert len(exported(d)) == 1, "the last window was not exported: %s" % os.listdir(d)


@pytest.mark.core_only
def test_pull_is_a_tap_the_windows_still_add_up(pywalk, interp, start_target, agents,
                                                 tmp_path, go_env):
    t = start_target(interp)
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "2s", "--export-dir", d], tmp_path)
    def shipped_now():
        return metric(ag.metrics(), "pywalk_samples_total", outcome="shipped")

    # samples before the pull and after it: the windows must hold more than the pull
    wait_for(shipped_now, 30, "samples shipped before the pull")
    pulled = Raw(pprof_raw(go_env, ag.url + "/debug/pprof/profile?seconds=4"))
    after_pull = shipped_now()
    wait_for(lambda: shipped_now() > after_pull, 30, "samples shipped after the pull")
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    shipped, not_counted = ag.summary()
    files = exported(d)
    windows = sum(Raw(pprof_raw(go_env, p)).total() for p in files.values())
    print("pull %d samples; %d windows hold %d, shipped %d, not counted %d" % (
        pulled.total(), len(files), windows, shipped, not_counted))
    assert windows + not_counted == shipped, (windows, not_counted, shipped)
    assert 0 < pulled.total() < windows, (pulled.total(), windows)


# --- the export dir -----------------------------------------------------------------

def test_export_dir_labels_a_free_threaded_process(pywalk, ft_interp, start_target, agents,
                                                  tmp_path, go_env):
    """3.14.7t's profiles say so: python_version 3.14.7t and free_threaded=true."""
    t = start_target(ft_interp)
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", str(t.pid), "-F", "199", "--interval", "1s", "--export-dir", d],
                tmp_path, metrics=False)
    deadline = time.monotonic() + 30
    while len(exported(d)) < 2:
        assert time.monotonic() < deadline, "no 2 windows exported in 30 s:\n" + ag.stderr()
        time.sleep(0.2)
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    n = 0
    for name, path in sorted(exported(d).items()):
        for _, _, labels in Raw(pprof_raw(go_env, path)).samples:
            assert labels["python_version"] == "3.14.7t", (name, labels)
            assert labels["free_threaded"] == "true", (name, labels)
            n += 1
    assert n > 0, "no samples in %s" % sorted(exported(d))


@pytest.mark.core_only
def test_export_dir_files_per_window_and_process(pywalk, interp, start_target, agents,
                                                  tmp_path, go_env):
    a, b = start_target(interp), start_target(interp)
    d = export_dir(tmp_path)
    # 199 Hz: the last window, cut short by the stop, must hold samples of both processes
    # (at the agent's default 19 Hz half a second may hold none of one of them)
    ag = agents(pywalk, ["-p", "%d,%d" % (a.pid, b.pid), "-F", "199", "--interval", "2s",
                         "--export-dir", d, "--host", "agent-test-host"], tmp_path,
                metrics=False)

    def windows_of_each():
        names = [NAME_RE.match(n) for n in exported(d)]
        return min(sum(int(m.group(3)) == p for m in names) for p in (a.pid, b.pid))
    wait_for(lambda: windows_of_each() >= 3, 30, "three 2 s windows of each process")
    time.sleep(1)  # half of the fourth (an offset from the third, not a wait)
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    shipped, not_counted = ag.summary()
    files = exported(d)
    assert sorted(files) == sorted(os.listdir(d)), "foreign names: %s" % os.listdir(d)
    per_pid = {}
    raws = []
    for name in sorted(files):
        m = NAME_RE.match(name)
        assert m.group(2) == "known_shape", name
        per_pid.setdefault(int(m.group(3)), []).append(name)
        st = os.lstat(files[name])
        # root's, readable by the directory's group at most (the umask may take more)
        assert st.st_mode & 0o137 == 0 and st.st_uid == 0, (name, oct(st.st_mode))
        raw = Raw(pprof_raw(go_env, files[name]))
        raws.append((name, raw))
        assert raw.pids() == {int(m.group(3))}, (name, raw.pids())
        for _, _, labels in raw.samples:
            assert labels["service_name"] == "known_shape"
            assert labels["host"] == "agent-test-host"
            assert labels["python_version"].startswith("3.11."), labels
            assert labels["thread_id"] and labels["thread_name"], labels
    assert sorted(per_pid) == sorted([a.pid, b.pid]), per_pid
    for pid, names in per_pid.items():
        assert 4 <= len(names) <= 5, "PID %d: %d files in 3.5 windows of 2 s: %s" % (
            pid, len(names), names)
    # names sort by the window's start, which is the profile's time
    times = [raw.time for _, raw in raws]
    assert times == sorted(times), times
    for t in (a, b):
        merged = Raw("")
        merged.samples = [s for _, raw in raws for s in raw.samples]
        check_known_shape(merged, t, "export dir, PID %d" % t.pid)
    windows = sum(raw.total() for _, raw in raws)
    print("%d files (%s), %d samples in them, shipped %d, not counted %d" % (
        len(files), dict((p, len(n)) for p, n in per_pid.items()), windows, shipped,
        not_counted))
    assert windows + not_counted == shipped, (windows, not_counted, shipped)


SINK_SUMMARY_RE = re.compile(r"^pywalk: (\S+): (\d+) profiles exported, (\d+) rejected, "
                             r"(\d+) dropped; (\d+) attempts failed$", re.M)


@pytest.mark.core_only
def test_export_disk_full_drops_counts_and_resumes(pywalk, interp, start_target, agents,
                                                   tmp_path, go_env, request_cleanup):
    """The export dir's file system fills up (a small tmpfs, filled to ENOSPC by the test):
    the agent logs it, retries with backoff, drops and counts the oldest windows once its
    16 KiB queue is full, leaves no partial or temporary file, keeps sampling, and writes
    again once space returns. Every file it left is a whole profile, and the exit summary's
    exported count is the number of files."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(mnt)],
                   check=True)
    request_cleanup.append(lambda: subprocess.run(["umount", "-l", str(mnt)]))
    d = export_dir(mnt)
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid, "-F", "199", "--interval", "1s", "--export-dir", d,
                         "--queue-size", "16K"], tmp_path)
    wait_for(lambda: len(exported(d)) >= 2, 30, "two windows exported")

    # fill the file system: tmpfs hands out whole pages, so when a 4 KiB write fails no
    # file can grow by a byte
    fd = os.open(str(mnt / "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    full_at = len(exported(d))

    def export_counts():
        m = ag.metrics()
        return dict((r, metric(m, "pywalk_export_profiles_total", sink="export-dir", result=r))
                    for r in ("exported", "rejected", "dropped"))
    wait_for(lambda: export_counts()["dropped"] >= 1, 90,
             lambda: "a window dropped: %s\n%s" % (export_counts(), ag.stderr()))
    assert ag.proc.poll() is None, ag.stderr()
    assert "No space left on device" in ag.stderr(), ag.stderr()
    # nothing was written while full (a file in flight when the disk filled may land)
    assert len(exported(d)) <= full_at + 1, sorted(os.listdir(d))
    dropped_while_full = export_counts()["dropped"]

    os.unlink(str(mnt / "filler"))
    resumed = wait_for(lambda: len(exported(d)) >= full_at + 3 and len(exported(d)), 120,
                       lambda: "files again after space returned: %d, %d before\n%s" % (
                           len(exported(d)), full_at, ag.stderr()))
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    err = ag.stderr()
    sums = dict((m.group(1), [int(v) for v in m.groups()[1:]])
                for m in SINK_SUMMARY_RE.finditer(err))
    assert "export-dir" in sums, err
    exported_n, rejected, dropped, failed = sums["export-dir"]
    files = exported(d)
    # no temporary file left behind, nothing that is not a whole profile of the target
    assert sorted(os.listdir(d)) == sorted(files), sorted(os.listdir(d))
    assert exported_n == len(files), (sums, sorted(files))
    assert rejected == 0 and dropped >= dropped_while_full >= 1 and failed >= 1, sums
    in_files = 0
    for name in sorted(files):
        raw = Raw(pprof_raw(go_env, files[name]))
        assert raw.pids() <= {t.pid}, (name, raw.pids())
        in_files += raw.total()
    shipped, not_counted = ag.summary()
    print("disk full: %d files before, %d after space returned; %d exported, %d dropped, "
          "%d attempts failed; %d samples in files of %d shipped" % (
              full_at, resumed, exported_n, dropped, failed, in_files, shipped))
    # dropped windows took their samples with them: the files hold fewer than shipped
    assert 0 < in_files + not_counted < shipped, (in_files, not_counted, shipped)


@pytest.mark.core_only
def test_agent_stopped_30_s_resumes_and_its_windows_stay_ordered(pywalk, interp, start_target,
                                                                 agents, tmp_path, go_env):
    """SIGSTOP the agent for 30 s while its target runs on, then SIGCONT: the agent goes on
    exporting, what the kernel could not hand it meanwhile is counted (the summary adds up,
    windows + not counted == shipped), and its windows stay in order without overlapping."""
    t = start_target(interp)
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", t.pid, "-F", "199", "--interval", "1s", "--export-dir", d],
                tmp_path, metrics=False)
    wait_for(lambda: len(exported(d)) >= 2, 30, "two windows exported")
    os.kill(ag.proc.pid, signal.SIGSTOP)
    try:
        stopped_at = len(exported(d))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the fault lasts 30 s: a duration, not a wait
            time.sleep(deadline - time.monotonic())
        assert len(exported(d)) == stopped_at, "files written while stopped"
    finally:
        os.kill(ag.proc.pid, signal.SIGCONT)
    wait_for(lambda: len(exported(d)) >= stopped_at + 3, 60,
             lambda: "three windows after SIGCONT\n" + ag.stderr())
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    shipped, not_counted = ag.summary()
    files = exported(d)
    spans, in_files = [], 0
    for name in sorted(files):
        in_files += Raw(pprof_raw(go_env, files[name])).total()
        spans.append(window_span(files[name]) + (name,))
    for (s0, d0, n0), (s1, _, n1) in zip(spans, spans[1:]):
        assert s0 + d0 <= s1, "windows overlap: %s (%.3f s) and %s" % (n0, d0 / 1e9, n1)
    longest = max(dur for _, dur, _ in spans) / 1e9
    print("stopped 30 s: %d files (%d before the stop), longest window %.1f s; %d samples "
          "in files, %d not counted, %d shipped" % (len(files), stopped_at, longest,
                                                     in_files, not_counted, shipped))
    # the window open at the stop closes at the resume and holds what was sampled meanwhile
    assert 29.0 <= longest <= 40.0, spans
    assert in_files + not_counted == shipped, (in_files, not_counted, shipped)


def window_span(path):
    """(time_nanos, duration_nanos) of a gzipped pprof file: Profile fields 9 and 10, read
    by protoc --decode_raw (go tool pprof -raw prints the duration without its unit)."""
    with gzip.open(path, "rb") as f:
        body = f.read()
    r = subprocess.run([tool("protoc"), "--decode_raw"], input=body, capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    top = dict(re.findall(r"^(9|10): (\d+)$", r.stdout.decode(), re.M))
    return int(top["9"]), int(top["10"])


# --- faults: the ring buffer full, an exec storm, the clock stepped -----------------

# code objects of their own that an expression makes, by the name CPython gives them (3.12+
# runs list, set and dict comprehensions inline, in the enclosing code)
EXPRESSION_SCOPES = {ast.Lambda: "<lambda>", ast.GeneratorExp: "<genexpr>",
                     ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>",
                     ast.DictComp: "<dictcomp>"}


def source_scopes(path):
    """[(first line, last line, qualname, expression)] of every function, class, lambda and
    comprehension of a script."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name, expression = child.name, False
            elif type(child) in EXPRESSION_SCOPES:
                name, expression = EXPRESSION_SCOPES[type(child)], True
            else:
                visit(child, prefix)
                continue
            qual = prefix + name
            out.append((child.lineno, child.end_lineno, qual, expression))
            visit(child, qual + ("." if isinstance(child, ast.ClassDef) else ".<locals>."))
    visit(tree, "")
    return out


def misnamed(frame, scopes):
    """Why a (qualname, path, line) frame of a script whose scopes are given is not one the
    script has (its line outside the code it is named after), or None."""
    qual, _, line = frame
    if line == 0 and qual in [s[2] for s in scopes] + ["<module>"]:
        return None  # an instruction with no line (CPython has some)
    inner = sorted(s for s in scopes if s[0] <= line <= s[1])
    want = [s[2] for s in inner] or ["<module>"]
    # the innermost code; a def line is also the enclosing code's, which runs the def
    # statement, and so is every line of an expression's code (which the enclosing code
    # makes and calls, or runs inline)
    keep = 1
    while keep <= len(inner) and (inner[-keep][0] == line or inner[-keep][3]):
        keep += 1
    want = (["<module>"] + want)[-keep:]
    return None if qual in want else "line %d is in %s" % (line, " or ".join(want))


# SCHED_DEADLINE through sched_setattr(2), which Python has no binding for: a thread that
# gets `runtime` of CPU every `period` and no more, whatever else the machine runs
SCHED_DEADLINE = 6
SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}


def cap_cpu(tid, runtime_ns, period_ns):
    nr = SYS_SCHED_SETATTR.get(platform.machine())
    if nr is None:
        unmet("sched_setattr's number on %s is not known here" % platform.machine())
    attr = ctypes.create_string_buffer(struct.pack(
        "=IIQiIQQQ", 48, SCHED_DEADLINE, 0, 0, 0, runtime_ns, period_ns, period_ns))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(nr, tid, attr, 0) != 0:
        err = ctypes.get_errno()
        unmet("SCHED_DEADLINE for thread %d: %s" % (tid, os.strerror(err)))


@pytest.mark.core_only
def test_ring_buffer_full_for_seconds_counts_losses_and_recovers(
        pywalk, interp, start_target, agents, tmp_path, go_env):
    """The ring buffer full for seconds: known_shape.py's two busy threads sampled at
    20 kHz through a 64 KiB ring (--ring-size), which holds about a tenth of what they
    ship between two of the agent's reads. The kernel drops records: the losses are
    counted (pywalk_samples_total{outcome="lost"}, the summary's "lost (ring buffer full)"),
    the summary still adds up, and nothing is misattributed: every window decodes with go
    tool pprof, every frame in it is one the script has (its line inside the function it is
    named after, or threading's), each thread's samples are its own known stacks. Then the
    overload ends (each thread capped at 0.2 ms of CPU every 100 ms with SCHED_DEADLINE, a
    fiftieth of what it shipped, which the ring holds for seconds of the agent's lateness):
    no loss from then on, and windows come again with samples of both threads, as
    real."""
    t = start_target(interp)
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", t.pid, "-F", 20000, "--ring-size", "64K", "--interval", "1s",
                         "--export-dir", d], tmp_path)

    def reading():
        m = ag.metrics()
        return dict(windows=metric(m, "pywalk_windows_total"),
                    lost=metric(m, "pywalk_samples_total", outcome="lost"),
                    shipped=metric(m, "pywalk_samples_total", outcome="shipped"),
                    code_lost=metric(m, "pywalk_records_total", kind="code", result="lost"),
                    runs=metric(m, "pywalk_sampler_runs_total"),
                    outcomes=sum(v for (n, _), v in m.items() if n == "pywalk_samples_total"))

    def after(r0, windows):
        """The first reading `windows` windows after r0 (polled)."""
        return wait_for(lambda: (lambda r: r if r["windows"] >= r0["windows"] + windows
                                 else None)(reading()), 30,
                        lambda: "%d windows after %s: %s\n%s" % (windows, r0, reading(),
                                                                 ag.stderr()))

    start = wait_for(lambda: (lambda r: r if r["lost"] > 0 else None)(reading()), 30,
                     lambda: "records lost: %s\n%s" % (reading(), ag.stderr()))
    overload = [start]
    for _ in range(4):  # four windows, a second each, of the ring buffer full
        overload.append(after(overload[-1], 1))
    capped_ns = time.time_ns()
    for tid in t.tids():
        cap_cpu(tid, 200000, 100000000)
    # what was in flight when the cap came may still be lost in the window it came in
    settled = after(reading(), 2)
    calm = after(settled, 3)
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()

    err = ag.stderr()
    _, buckets = e2e.check_summary(err)
    shipped, not_counted = ag.summary()
    lost_rates = [round(b["lost"] - a["lost"]) for a, b in zip(overload, overload[1:])]
    files = exported(d)
    spans, raws = {}, {}
    for name in sorted(files):
        raws[name] = Raw(pprof_raw(go_env, files[name]))
        spans[name] = window_span(files[name])
    before = [n for n in raws if spans[n][0] + spans[n][1] <= capped_ns]
    after_calm = [n for n in raws if spans[n][0] >= capped_ns]
    print("ring buffer full: lost %s a window over %d windows (%d in all, %d code records); "
          "shipped %d of %d runs by then; capped, then %d windows: lost %d -> %d, shipped "
          "%d -> %d; summary: shipped %d, lost %d, not counted %d; %d files (%d of the "
          "overload, %d after it) with %s samples" % (
              lost_rates, len(lost_rates), overload[-1]["lost"], overload[-1]["code_lost"],
              overload[-1]["shipped"], overload[-1]["runs"], calm["windows"] -
              settled["windows"], settled["lost"], calm["lost"], settled["shipped"],
              calm["shipped"], shipped, buckets["lost (ring buffer full)"], not_counted,
              len(files), len(before), len(after_calm),
              [raws[n].total() for n in sorted(raws)]))
    # losses counted, in the metrics and the summary, and every run in one bucket
    assert overload[-1]["lost"] > overload[0]["lost"] > 0, overload
    for r in (start, settled, calm):
        assert r["outcomes"] == r["runs"], r
    assert buckets["lost (ring buffer full)"] >= calm["lost"], (buckets, calm)
    # the overload ended: nothing lost since, and samples come again
    assert calm["lost"] == settled["lost"], (settled, calm)
    assert calm["shipped"] > settled["shipped"], (settled, calm)
    # nothing misattributed: the target's own threads, each in frames of its own that the
    # script has; while CPU-bound, ≥90% of each thread's samples its exact known stacks
    scopes = source_scopes(t.script_path)
    expected = ks.expected_stacks(interp.version, t.script_path)
    own = dict((who, set(fr.qualname for st in expected[who].values() for fr in st))
               for who in (ks.MAIN, ks.WORKER))
    bad = []
    for name, raw in sorted(raws.items()):
        assert raw.pids() <= {t.pid}, (name, raw.pids())
        for n, stack, labels in raw.samples:
            who = ks.MAIN if int(labels["thread_id"]) == t.pid else ks.WORKER
            for fr in stack:
                if fr[0] not in own[who]:
                    why = "not a function of the %s thread" % who
                elif fr[1] == t.script_path:
                    why = misnamed(fr, scopes)
                elif os.path.basename(fr[1]) == "threading.py" and who == ks.WORKER:
                    why = None
                else:
                    why = "a file the target does not run"
                if why:
                    bad.append((name, labels["thread_id"], n, fr, why))
    assert not bad, "frames the target does not have: %s" % bad[:10]
    assert len(before) >= 3, "windows of the overload: %s of %s" % (before, sorted(spans))
    merged = Raw("")
    merged.samples = [s for n in before for s in raws[n].samples]
    check_known_shape(merged, t, "the overload's windows")
    # after it each thread gets a fiftieth of a CPU, much of it waiting for the GIL the
    # other holds while capped, at lines of its own stack that a busy thread rarely shows
    assert len(after_calm) >= 3, "windows after the overload: %s of %s" % (
        after_calm, sorted(spans))
    tids = set(int(l["thread_id"]) for n in after_calm for _, _, l in raws[n].samples)
    assert tids == set(t.tids()), (tids, t.tids())
    assert all(raws[n].total() > 0 for n in after_calm), \
        [(n, raws[n].total()) for n in after_calm]
    assert sum(r.total() for r in raws.values()) + not_counted == shipped, (
        sum(r.total() for r in raws.values()), not_counted, shipped)


STORM_SECONDS = 16
STORM_IMAGES = {"exec_storm_a": "exec_storm_a.py", "exec_storm_b": "exec_storm_b.py",
                "exec_storm": "exec_storm.py"}


def proc_rss_fds(pid):
    with open("/proc/%d/status" % pid) as f:
        kb = int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))
    return kb * 1024, len(os.listdir("/proc/%d/fd" % pid))


@pytest.mark.core_only
def test_exec_storm_agent_keeps_up_bounded_and_attributes_each_image(
        pywalk, interp, start_target, agents, tmp_path, go_env):
    """A storm of execs, Python each time (tests/targets/exec_storm.py): two chains per CPU,
    each a process that execs the next of exec_storm_a.py and exec_storm_b.py as fast as
    the interpreter starts, for 16 s, under `agent -p LAUNCHER --subprocesses` at 999 Hz
    with a 1 s window. The agent keeps up (the lifetimes it sampled against the execs
    made; a sample of an image it had not attached yet is counted as not a target), its
    RSS and descriptors read every half second stay flat once warm (a line fitted over
    the second half: no growth per lifetime), the summary adds up and the windows add up
    to the samples shipped, windows keep coming throughout, and no sample is attributed
    to the wrong lifetime: each image names its service after its own script, so a sample
    whose frames are another image's file, or not where that file has them, shows.

    A Python start costs ~8 ms of CPU here, so two CPUs make a few hundred execs a second
    at most (not the 1,000 of a faster machine); the figures printed say what this one
    did."""
    chains = 2 * len(os.sched_getaffinity(0))
    t = start_target(interp, chains, STORM_SECONDS, script="exec_storm.py")
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", t.pid, "--subprocesses", "-F", 999, "--interval", "1s",
                         "--export-dir", d], tmp_path)

    def reading():
        m = ag.metrics()
        rss, fds = proc_rss_fds(ag.proc.pid)
        return (time.monotonic(), rss, fds, metric(m, "pywalk_windows_total"),
                metric(m, "pywalk_processes_sampled_total"))

    readings = [reading()]
    os.kill(t.pid, signal.SIGUSR1)
    fd, buf = t.proc.stdout.fileno(), b""
    t0 = time.monotonic()
    while b"DONE\n" not in buf:
        assert time.monotonic() < t0 + STORM_SECONDS + 60, \
            "the storm did not end: %r\n%s" % (buf, t.stderr())
        assert ag.proc.poll() is None, ag.stderr()
        # a reading every half second: the measurement's pace, not a wait for a condition
        if select.select([fd], [], [], max(0.0, readings[-1][0] + 0.5 - time.monotonic()))[0]:
            chunk = os.read(fd, 4096)
            assert chunk, "the launcher's output ended: %r\n%s" % (buf, t.stderr())
            buf += chunk
        if time.monotonic() >= readings[-1][0] + 0.5:
            readings.append(reading())
    storm_end = time.monotonic()
    out = buf.decode()
    chain_pids = set(int(p) for p in
                     re.search(r"^STORM ([\d ]+)$", out, re.M).group(1).split())
    execs = int(re.search(r"^EXECS (\d+)$", out, re.M).group(1))
    m = ag.metrics()
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()

    err = ag.stderr()
    events, buckets = e2e.check_summary(err)
    shipped, not_counted = ag.summary()
    sampled, inherited, skipped = e2e.parse_processes(err)
    lifetimes = metric(m, "pywalk_processes_sampled_total")
    # RSS and descriptors: warm after the first few seconds, flat over the second half
    storm = [r for r in readings if r[0] >= t0]
    half = [(r[0] - t0, r[1]) for r in storm if r[0] - t0 >= (storm_end - t0) / 2]
    fhalf = [(r[0] - t0, r[2]) for r in storm if r[0] - t0 >= (storm_end - t0) / 2]
    slope = fit_slope(half)
    span = half[-1][0] - half[0][0]
    allowed = 1 * MIB + 3 * slope_stderr(half, slope) * span
    half_lifetimes = storm[-1][4] - [r for r in storm if r[0] - t0 >= half[0][0]][0][4]
    windows = [r[3] for r in storm]
    files = exported(d)
    # the launcher, its fork children (each a chain's start), then one lifetime per image
    images = sampled - inherited - 1
    proc_lost = metric(m, "pywalk_records_total", kind="process", result="lost")
    line = ("exec storm: %d chains, %d execs in %.1f s (%.0f/s); %d lifetimes sampled "
            "(%d fork children, %d images of the %d), skipped: %s, process events lost %d; "
            "RSS %.1f MiB at the start, %.1f at half, %.1f at the end, second half "
            "%+.1f KiB/s (x %.1f s = %+.2f MiB, allowed %.2f; %d lifetimes: %+.2f KiB "
            "each); fds %d at the start, %d..%d over the storm; windows %d..%d, %d files; "
            "%d perf events: %s" % (
                chains, execs, STORM_SECONDS, execs / STORM_SECONDS, sampled, inherited,
                images, execs, skipped, proc_lost, readings[0][1] / MIB, half[0][1] / MIB,
                half[-1][1] / MIB, slope / 1024, span, slope * span / MIB, allowed / MIB,
                half_lifetimes, slope * span / 1024 / max(half_lifetimes, 1),
                readings[0][2], min(r[2] for r in storm), max(r[2] for r in storm),
                windows[0], windows[-1], len(files), events,
                dict((k, v) for k, v in buckets.items() if v)))
    print(line)
    assert execs >= 5 * STORM_SECONDS, "no storm: " + line
    # it kept up: most images were attached while they ran (one that was not is counted:
    # its samples as not a target, its exec record, if lost, as a process event lost)
    assert sampled >= lifetimes and images >= 0.5 * execs, "fell behind: " + line
    assert slope * span <= allowed, "RSS grows: " + line
    assert max(f for _, f in fhalf) - min(f for _, f in fhalf) <= 4, "fds vary: " + line
    assert max(r[2] for r in storm) <= readings[0][2] + 4, "fds grow: " + line
    # windows throughout: every two seconds at least one more
    for a in storm:
        later = [r for r in storm if r[0] >= a[0] + 2.0]
        if later:
            assert later[0][3] > a[3], "no window for 2 s: %s" % [
                (round(r[0] - t0, 1), r[3]) for r in storm]
    # every sample attributed to its own image, and the windows add up
    raws = []
    names = sorted(files.values())
    for i in range(0, len(names), 200):  # go tool pprof merges the files it is given
        raws.append(Raw(pprof_raw(go_env, names[i:i + 200])))
    scopes = dict((svc, source_scopes(interp.script_path(script)))
                  for svc, script in STORM_IMAGES.items())
    bad, work = [], collections.Counter()
    for raw in raws:
        for n, stack, labels in raw.samples:
            svc = labels["service_name"]
            if svc not in STORM_IMAGES or int(labels["pid"]) not in chain_pids | {t.pid}:
                bad.append((n, labels, stack, "not one of the storm's processes"))
                continue
            mine = interp.script_path(STORM_IMAGES[svc])
            for fr in stack:
                if fr[1] == mine:
                    why = misnamed(fr, scopes[svc])
                elif fr[1] in [interp.script_path(s) for s in STORM_IMAGES.values()]:
                    why = "another image's file"
                elif fr[1].startswith("<frozen ") or fr[1].startswith("/usr/lib/python3"):
                    why = None  # the interpreter's start: importlib, encodings
                else:
                    why = "a file the storm does not run"
                if why:
                    bad.append((n, svc, fr, why))
            if stack and stack[-1][0].endswith("_work"):
                work[svc, stack[-1][0]] += n
    print("samples in each image's own work: %s" % dict(work))
    assert not bad, "samples attributed to the wrong image: %s" % bad[:10]
    assert work["exec_storm_a", "storm_a_work"] > 0 and \
        work["exec_storm_b", "storm_b_work"] > 0, dict(work)
    in_files = sum(r.total() for r in raws)
    assert in_files + not_counted == shipped, (in_files, not_counted, shipped)


# The helper that steps CLOCK_REALTIME: it puts the clock back where it would have been (the
# time passed measured on CLOCK_MONOTONIC, which a step does not move) when told to, when
# the test's process dies (its stdin closes), when signalled, or after its time is up,
# whichever comes first, so a test that fails or is killed never leaves the machine's
# clock wrong.
CLOCK_STEPPER = r"""
import select, signal, sys, time
RT, MONO = time.CLOCK_REALTIME, time.CLOCK_MONOTONIC
step_ns, longest = int(sys.argv[1]), float(sys.argv[2])
for sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, lambda *a: sys.exit(1))
m0 = time.clock_gettime_ns(MONO)
r0 = time.clock_gettime_ns(RT)
m0 = (m0 + time.clock_gettime_ns(MONO)) // 2
def true_now():
    return r0 + time.clock_gettime_ns(MONO) - m0
try:
    time.clock_settime_ns(RT, true_now() + step_ns)
    print("STEPPED", flush=True)
    select.select([sys.stdin], [], [], longest)
finally:
    time.clock_settime_ns(RT, true_now())
    print("RESTORED %d" % (time.clock_gettime_ns(RT) - true_now()), flush=True)
"""


@contextlib.contextmanager
def realtime_stepped(seconds, longest=20):
    """The machine's CLOCK_REALTIME stepped by `seconds` (negative: back) for the body, at
    most `longest` seconds, then put back. There is no namespace for this clock (a time
    namespace moves only CLOCK_MONOTONIC and CLOCK_BOOTTIME): the step is the host's, so it
    is kept short."""
    helper = subprocess.Popen([shutil.which("python3") or "/usr/bin/python3", "-c",
                               CLOCK_STEPPER, str(int(seconds * 1e9)), str(longest)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              start_new_session=True)
    try:
        line = helper.stdout.readline()
        assert line == b"STEPPED\n", "the clock stepper said %r (exit %s)" % (
            line, helper.poll())
        yield
    finally:
        helper.stdin.close()
        out = helper.stdout.read()
        helper.wait(timeout=30)
        helper.stdout.close()
    assert out.startswith(b"RESTORED "), "the clock stepper said %r (exit %s)" % (
        out, helper.returncode)


@pytest.mark.core_only
@pytest.mark.parametrize("step", [-3600, 3600], ids=["back-then-forward", "forward-then-back"])
def test_clock_stepped_windows_stay_ordered(pywalk, interp, start_target, agents, tmp_path,
                                            go_env, step):
    """CLOCK_REALTIME stepped an hour back (or forward) while the agent runs, then put back
    where it would have been: the exported windows stay in the order they were closed,
    their names sort so, none overlaps the one before, each lasts about its interval (not
    0 s across a step back, not an hour across a step forward), they add up to the samples
    shipped, and the log says what the clock did.

    The windows are stamped on the agent's own time line: the wall clock read once, then
    the time elapsed (CLOCK_BOOTTIME, which no step moves). A clock ahead of the line (a
    step forward) is followed where the next window starts, leaving a gap the size of the
    step; a clock behind it (a step back) is not, as that would start a window before ones
    already exported: the line goes on, ahead of the clock, until the clock catches up. So
    back then forward: the windows meet end to start throughout and the last ends at the
    clock; forward then back: one gap of an hour, and the last ends an hour ahead of the
    clock. Before the time line, each window's ends were read from the wall clock: the
    window open at a step back lasted 0 s and the next one started an hour before it."""
    t = start_target(interp)
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", t.pid, "-F", "199", "--interval", "1s", "--export-dir", d],
                tmp_path, metrics=False)
    wait_for(lambda: len(exported(d)) >= 2, 30, "two windows exported")
    with realtime_stepped(step):
        stepped_at = len(exported(d))
        wait_for(lambda: len(exported(d)) >= stepped_at + 2, 30,
                 lambda: "two windows closed with the clock stepped\n" + ag.stderr())
        while_stepped = len(exported(d)) - stepped_at
    restored_at = len(exported(d))
    wait_for(lambda: len(exported(d)) >= restored_at + 2, 30,
             lambda: "two windows after the clock came back\n" + ag.stderr())
    rc, _ = ag.stop()
    stopped_wall_ns = time.time_ns()
    assert rc == 0, ag.stderr()
    shipped, not_counted = ag.summary()
    files = exported(d)
    by_seq = sorted(files, key=lambda n: int(NAME_RE.match(n).group(4)))
    assert [int(NAME_RE.match(n).group(4)) for n in by_seq] == list(range(len(by_seq))), \
        "files missing: %s" % by_seq
    assert sorted(files) == by_seq, "names do not sort in the order the windows closed:\n" \
        + "\n".join(by_seq)
    spans, in_files = [], 0
    for name in by_seq:
        in_files += Raw(pprof_raw(go_env, files[name])).total()
        spans.append(window_span(files[name]) + (name,))
    shown = "\n".join("%s: start %+.3f s, %.3f s" % (n, (s - spans[0][0]) / 1e9, du / 1e9)
                      for s, du, n in spans)
    gaps = [s1 - (s0 + d0) for (s0, d0, _), (s1, _, _) in zip(spans, spans[1:])]
    last_end = spans[-1][0] + spans[-1][1]
    print("clock stepped %+d s and back: %d windows (%d before the step, %d while "
          "stepped), gaps %s s, the last ends %+.3f s from the clock; %d samples in files, "
          "%d not counted, %d shipped\n%s" % (
              step, len(spans), stepped_at, while_stepped, [round(g / 1e9, 3) for g in gaps],
              (last_end - stopped_wall_ns) / 1e9, in_files, not_counted, shipped, shown))
    assert min(gaps) >= 0, "windows overlap:\n" + shown
    for s, du, n in spans:
        assert 0 < du < 10e9, "%s lasts %.3f s:\n%s" % (n, du / 1e9, shown)
    ahead = max(step, 0) * 1e9  # where the line is left against the clock
    if step < 0:
        assert max(gaps) == 0, "windows do not meet end to start:\n" + shown
    else:
        # one gap, the step's size give or take how long the stepper took
        assert sorted(gaps)[-2] == 0 and abs(max(gaps) - step * 1e9) < 5e9, \
            "not one gap of %d s:\n%s" % (step, shown)
    assert abs(last_end - stopped_wall_ns - ahead) < 5e9, \
        "the last window ends %.3f s from the clock at the stop:\n%s" % (
            (last_end - stopped_wall_ns) / 1e9, shown)
    assert in_files + not_counted == shipped, (in_files, not_counted, shipped)
    # the log says what the clock did
    err = ag.stderr()
    behind = re.search(r"warning: the clock is 3[56]\d\d\.\d+ s behind the windows' time "
                       r"line \(stepped back\?\)", err)
    forward = re.search(r"warning: the clock is 3[56]\d\d\.\d+ s ahead of the windows' "
                        r"time line \(stepped forward\?\)", err)
    assert behind and bool(forward) == (step > 0), err
    assert ("the clock is back on the windows' time line" in err) == (step < 0), err


def old_name(when, pid=1, seq=0):
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(when)) + ".000Z-old-%d-%d.pb.gz" % (
        pid, seq)


@pytest.mark.core_only
def test_keep_removes_only_old_files_of_its_own(pywalk, interp, start_target, agents,
                                                 tmp_path):
    t = start_target(interp)
    d = export_dir(tmp_path)
    victim = tmp_path / "victim.pb.gz"
    victim.write_bytes(b"not pywalk's")
    hour_ago = time.time() - 3600
    planted = {
        "foreign": os.path.join(d, "notes.txt"),
        "foreign-like": os.path.join(d, "20000101T000000.000Z-x.pb.gz.bak"),
        "symlink": os.path.join(d, old_name(hour_ago, 2)),
    }
    old_ours = os.path.join(d, old_name(hour_ago, 1))
    for path in (planted["foreign"], planted["foreign-like"], old_ours):
        with open(path, "w") as f:
            f.write("x")
        os.utime(path, (hour_ago, hour_ago))
    os.symlink(str(victim), planted["symlink"])
    os.utime(planted["symlink"], (hour_ago, hour_ago), follow_symlinks=False)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "1s", "--export-dir", d, "--keep", "3s"],
                tmp_path, metrics=False)
    ages = []
    for _ in range(8):
        time.sleep(1)
        now = time.time()
        ages.append(max([now - os.lstat(p).st_mtime for p in exported(d).values()
                         if not os.path.islink(p) and p != old_ours] or [0]))
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    print("oldest file by second: %s" % ["%.1f" % a for a in ages])
    assert not os.path.exists(old_ours), "an old file of pywalk's was kept"
    for what, path in planted.items():
        assert os.path.lexists(path), "%s %s was removed" % (what, path)
    assert os.path.islink(planted["symlink"])
    assert victim.read_bytes() == b"not pywalk's"
    # a file is pruned once it is older than 3 s, at the next write (a window later)
    assert max(ages[3:]) < 3 + 1 + 1.5, ages
    ours = [n for n in exported(d) if not os.path.islink(os.path.join(d, n))]
    assert 2 <= len(ours) <= 6, ours


@pytest.mark.core_only
def test_keep_size_keeps_the_total_under_the_bound(pywalk, interp, start_target, agents,
                                                   tmp_path):
    t = start_target(interp)
    d = export_dir(tmp_path)
    hour_ago = time.time() - 3600
    old = [os.path.join(d, old_name(hour_ago + i, 1, i)) for i in range(3)]
    for path in old:
        with open(path, "wb") as f:
            f.write(b"\0" * (400 * 1024))
    ag = agents(pywalk, ["-p", t.pid, "--interval", "1s", "--export-dir", d, "--keep-size",
                         "1M"], tmp_path, metrics=False)
    totals = []
    for _ in range(4):
        time.sleep(1)
        totals.append(sum(os.lstat(p).st_size for p in exported(d).values()))
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    print("total bytes by second, bound %d: %s" % (MIB, totals))
    assert not os.path.exists(old[0]), "the oldest file was kept past --keep-size"
    assert os.path.exists(old[1]) and os.path.exists(old[2]), "more removed than needed"
    assert all(total <= MIB for total in totals[1:]), totals
    assert sum(1 for p in exported(d) if "known_shape" in p) >= 3


@pytest.mark.core_only
@pytest.mark.parametrize("how", ["mode-777", "mode-770", "owner-nobody"])
def test_export_dir_others_can_write_is_refused(pywalk, tmp_path, how):
    d = export_dir(tmp_path)
    if how == "mode-777":
        os.chmod(d, 0o777)
    elif how == "mode-770":
        os.chmod(d, 0o770)
    else:
        os.chown(d, NOBODY, NOBODY)
    r = e2e.run_pywalk(["agent", "--all", "--export-dir", d], timeout=60)
    assert r.returncode == 1, "exit %d\n%s" % (r.returncode, r.stderr)
    assert d in r.stderr and "writable by other users or not ours" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert os.listdir(d) == []


@pytest.mark.core_only
@pytest.mark.parametrize("how", ["parent-777", "parent-770", "parent-nobody",
                                 "grandparent-777"])
def test_export_dir_under_a_directory_others_can_write_is_refused(pywalk, tmp_path, how):
    # whoever can write a directory above the export dir can swap the export dir
    parent = tmp_path / "parent"
    parent.mkdir()
    os.chmod(str(parent), 0o755)
    d = export_dir(parent)
    shown = str(parent)
    if how == "parent-777":
        os.chmod(str(parent), 0o777)
    elif how == "parent-770":
        os.chmod(str(parent), 0o770)
    elif how == "parent-nobody":
        os.chown(str(parent), NOBODY, NOBODY)
    else:
        os.chmod(str(tmp_path), 0o777)
        shown = str(tmp_path)
    try:
        r = e2e.run_pywalk(["agent", "--all", "--export-dir", d], timeout=30)
    finally:
        os.chmod(str(tmp_path), 0o700)
    assert r.returncode == 1, "exit %d\n%s" % (r.returncode, r.stderr)
    assert "%s is writable by other users or not ours" % shown in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert os.listdir(d) == []


@pytest.mark.core_only
def test_export_dir_under_a_sticky_directory_is_taken(pywalk, interp, start_target, agents,
                                                      tmp_path):
    # /tmp's kind: others may write it, but cannot move what is ours
    t = start_target(interp)
    parent = tmp_path / "sticky"
    parent.mkdir()
    os.chmod(str(parent), 0o1777)
    d = export_dir(parent)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "1s", "--export-dir", d], tmp_path,
                metrics=False)
    wait_for(lambda: exported(d), 10, "the first window's file")
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()


def as_nobody(fn):
    """Run fn() in a child process as uid/gid 65534."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fn()
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child as nobody failed"


@pytest.mark.core_only
def test_symlink_at_a_files_final_name_is_not_followed(pywalk, interp, start_target, agents,
                                                       tmp_path, request_cleanup):
    """The directory is checked at start; if it later becomes writable by others, a link
    another user plants at the name of a coming file is still not followed (outfile.c)."""
    t = start_target(interp)
    # pytest's own directories are root's alone: another user must reach this one
    base = tempfile.mkdtemp(prefix="pywalk-agent-links-", dir="/tmp")
    request_cleanup.append(lambda: shutil.rmtree(base, ignore_errors=True))
    os.chmod(base, 0o755)
    d = export_dir(pathlib.Path(base))
    ag = agents(pywalk, ["-p", t.pid, "--interval", "2s", "--export-dir", d], tmp_path)
    first = wait_for(lambda: sorted(exported(d)), 10, "the first window's file")[0]
    os.chmod(d, 0o777)
    m = NAME_RE.match(first)
    start = time.mktime(time.strptime(m.group(1)[:15], "%Y%m%dT%H%M%S")) - time.timezone
    start += int(m.group(1)[16:19]) / 1000
    # the next windows start 2 and 4 s after the first one, give or take a poll
    names = []
    for seq, offset in ((1, 2.0), (2, 4.0)):
        for ms in range(-150, 450):
            when = start + offset + ms / 1000
            names.append(time.strftime("%Y%m%dT%H%M%S", time.gmtime(when)) +
                         ".%03dZ-known_shape-%d-%d.pb.gz" % (int(round(when * 1000)) % 1000,
                                                            t.pid, seq))
    victim = os.path.join(base, "victim")

    def plant():
        for n in names:
            with contextlib.suppress(FileExistsError):
                os.symlink(victim, os.path.join(d, n))

    as_nobody(plant)
    time.sleep(5)
    rejected = metric(ag.metrics(), "pywalk_export_profiles_total", sink="export-dir",
                      result="rejected")
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    assert not os.path.lexists(victim), "the planted link was followed"
    links = [n for n in os.listdir(d) if os.path.islink(os.path.join(d, n))]
    assert len(links) == len(names), "a planted link was replaced"
    real = [n for n in exported(d) if not os.path.islink(os.path.join(d, n))]
    print("%d links planted; %d windows refused, %d files written" % (
        len(names), rejected, len(real)))
    assert rejected >= 1, "no window met a planted link (timing): %s" % real
    assert "symbolic link" in ag.stderr() or "link" in ag.stderr(), ag.stderr()


@pytest.mark.core_only
def test_export_dir_swapped_later_is_not_written(pywalk, interp, start_target, agents,
                                                 tmp_path, request_cleanup):
    """The directory is checked and held at start; if its parent later becomes writable by
    others and another user swaps in a directory of theirs, no file goes there: they keep
    going to the directory that was checked."""
    t = start_target(interp)
    base = tempfile.mkdtemp(prefix="pywalk-agent-swap-", dir="/tmp")
    request_cleanup.append(lambda: shutil.rmtree(base, ignore_errors=True))
    os.chmod(base, 0o755)
    d = export_dir(pathlib.Path(base))
    moved = d + ".moved"
    ag = agents(pywalk, ["-p", t.pid, "--interval", "1s", "--export-dir", d], tmp_path)
    wait_for(lambda: exported(d), 10, "the first window's file")
    os.chmod(base, 0o777)

    def swap():
        os.rename(d, moved)
        os.mkdir(d, 0o777)
        os.chmod(d, 0o777)

    as_nobody(swap)
    before = len(exported(moved))
    wait_for(lambda: len(exported(moved)) >= before + 2, 15,
             "two more windows' files in the directory that was checked")
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    assert os.stat(d).st_uid == NOBODY
    assert os.listdir(d) == [], "written into the swapped-in directory: %s" % os.listdir(d)


# --- config file and signals --------------------------------------------------------

def long_options(pywalk, command):
    r = e2e.run_pywalk([command, "--help"])
    assert r.returncode == 0, r.stderr
    return sorted(set(re.findall(r"^\s+(?:-\w, )?--([a-z][a-z0-9-]+)", r.stdout, re.M)))


VALUES = {"pid": "1", "frequency": "49", "rate": "49", "event": "cpu-clock",
          "max-depth": "100", "max-processes": "64", "symbol-cache": "8M", "ring-size": "1M",
          "interval": "5s", "export-dir": "/nonexistent/dir", "keep": "1h",
          "keep-size": "10M", "pyroscope": "http://127.0.0.1:1", "tenant": "t1",
          "parca": "http://127.0.0.1:1", "otlp": "http://127.0.0.1:1",
          "basic-auth-file": "/nonexistent/auth", "token-file": "/nonexistent/token",
          "metrics": "127.0.0.1:1", "host": "h", "queue-size": "8M",
          "flush-timeout": "2s", "service": "gunicorn*=web", "mode": "wall",
          "min-block": "1ms", "native-stack": "32K", "native-cache": "64M",
          "metrics-group": "nogroup", "metrics-token-file": "/nonexistent/metrics.token",
          "pull-size": "16M", "metrics-tls-cert": "/nonexistent/cert.pem",
          "metrics-tls-key": "/nonexistent/key.pem"}
FLAGS = {"all", "subprocesses", "metrics-public", "verbose", "kernel", "native", "async"}


def test_config_file_takes_every_long_option(pywalk, tmp_path):
    """Every long option of `agent --help` is a setting: with --help after the file the
    agent parses the whole file, then prints its help (exit 0)."""
    opts = [o for o in long_options(pywalk, "agent") if o not in ("help", "config")]
    missing = [o for o in opts if o not in VALUES and o not in FLAGS]
    assert not missing, "no test value for %s" % missing
    conf = tmp_path / "agent.conf"
    lines = ["# every option", ""]
    for o in opts:
        lines.append(o if o in FLAGS else "%s = %s   # a comment" % (o, VALUES[o]))
    conf.write_text("\n".join(lines) + "\n")
    r = e2e.run_pywalk(["agent", "--config", conf, "--help"])
    assert r.returncode == 0 and "Usage: pywalk agent" in r.stdout, r.stderr
    for bad, why in (("no-such-option = 1", "unknown setting 'no-such-option'"),
                     ("help", "unknown setting 'help'"),
                     ("config = other.conf", "unknown setting 'config'"),
                     ("all = yes", "'all' takes no value"),
                     ("interval", "'interval' needs a value"),
                     ("interval = 0s", "invalid --interval")):
        conf.write_text("metrics = 127.0.0.1:1\n# line 2\n\n%s\n" % bad)
        r = e2e.run_pywalk(["agent", "--config", conf])
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
        assert why in r.stderr, (bad, r.stderr)
        if "invalid" not in why:
            assert "%s:4:" % conf in r.stderr, (bad, r.stderr)
    r = e2e.run_pywalk(["agent", "--config", tmp_path / "absent.conf"])
    assert r.returncode == 2 and "absent.conf" in r.stderr, r.stderr


@pytest.mark.core_only
def test_command_line_wins_over_the_config_file(pywalk, interp, start_target, agents,
                                                 tmp_path, go_env):
    t = start_target(interp)
    d = export_dir(tmp_path)
    conf = tmp_path / "agent.conf"
    conf.write_text("pid = %d\nexport-dir = %s\ninterval = 10s\nhost = from-file\n" % (
        t.pid, d))
    ag = agents(pywalk, ["--config", conf, "--interval", "1s", "--host", "from-cmdline"],
                tmp_path, metrics=False)
    # 3 windows take 3 s at 1 s, 30 s at 10 s: 9 s allows a slow start on a loaded machine
    wait_for(lambda: len(exported(d)) >= 3, 9,
             "--interval 1s to win over 10s: %s" % sorted(exported(d)))
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    files = exported(d)
    assert len(files) >= 3, "--interval 1s did not win over 10s: %s" % sorted(files)
    raw = Raw(pprof_raw(go_env, sorted(files.values())[0]))
    assert set(l["host"] for _, _, l in raw.samples) == {"from-cmdline"}


def window_stamps(d):
    """Seconds since the epoch each window file of `d` is named by, in order."""
    out = []
    for n in sorted(exported(d)):
        m = re.match(r"(\d{8}T\d{6})\.(\d{3})Z-", n)
        assert m, "not a window's name: %r" % n
        out.append(calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%S")) +
                   int(m.group(2)) / 1000)
    return out


def window_totals(go_env, d):
    return [(n, Raw(pprof_raw(go_env, p))) for n, p in sorted(exported(d).items())]


@pytest.mark.core_only
def test_sighup_reloads_and_loses_no_window(pywalk, interp, start_target, agents, tmp_path,
                                            go_env):
    t = start_target(interp)
    d1, d2 = export_dir(tmp_path, "one"), export_dir(tmp_path, "two")
    bad = export_dir(tmp_path, "bad")
    os.chmod(bad, 0o777)
    conf = tmp_path / "agent.conf"
    conf.write_text("pid = %d\nexport-dir = %s\ninterval = 3s\n" % (t.pid, d1))
    ag = agents(pywalk, ["--config", conf], tmp_path)
    wait_for(lambda: exported(d1), 30, "the first 3 s window in %s" % d1)
    time.sleep(1.5)  # half of the next window (an offset from the first, not a wait)
    assert len(exported(d1)) == 1, sorted(exported(d1))
    conf.write_text("pid = %d\nexport-dir = %s\ninterval = 1s\n" % (t.pid, d2))
    ag.send(signal.SIGHUP)
    wait_for(lambda: len(exported(d1)) == 2, 10, "the window of the SIGHUP in %s" % d1)
    in_d2 = wait_for(lambda: len(exported(d2)) >= 3 and len(exported(d2)), 30,
                     lambda: "three windows in %s: %s" % (d2, sorted(exported(d2))))
    # the new interval, from the windows' own times rather than from how many fit a wait
    stamps = window_stamps(d2)
    gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
    assert 0.5 <= gaps[len(gaps) // 2] <= 1.5, "--interval 1s after SIGHUP: gaps %s" % gaps
    # a config that does not parse, then one that cannot be applied: the old one stays
    conf.write_text("pid = %d\nexport-dir = %s\nintervall = 1s\n" % (t.pid, bad))
    ag.send(signal.SIGHUP)
    wait_for(lambda: ag.stderr().count("keeping the old one") == 1, 15, ag.stderr)
    conf.write_text("pid = %d\nexport-dir = %s\ninterval = 1s\n" % (t.pid, bad))
    ag.send(signal.SIGHUP)
    wait_for(lambda: ag.stderr().count("keeping the old one") == 2, 15, ag.stderr)
    wait_for(lambda: len(exported(d2)) >= in_d2 + 3, 30, "the old config exporting on")
    assert ag.proc.poll() is None, "an invalid config stopped the agent:\n" + ag.stderr()
    assert os.listdir(bad) == []
    # the listener is back after each reload, and its counter of windows went on through
    # them: it catches up with the files written (metrics are rendered every 250 ms)
    m = wait_for(lambda: (lambda m: metric(m, "pywalk_windows_total") >=
                          len(exported(d1)) + len(exported(d2)) and m)(ag.metrics()), 15,
                 lambda: "pywalk_windows_total >= the %d files written" % (
                     len(exported(d1)) + len(exported(d2))))
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    err = ag.stderr()
    assert "intervall" in err and "keeping the old one" in err, err
    assert err.count("keeping the old one") == 2, err
    shipped, not_counted = ag.summary()
    w1, w2 = window_totals(go_env, d1), window_totals(go_env, d2)
    total = sum(r.total() for _, r in w1 + w2)
    print("SIGHUP: %d + %d windows hold %d samples; shipped %d, not counted %d; "
          "windows_total %d" % (len(w1), len(w2), total, shipped, not_counted,
                                metric(m, "pywalk_windows_total")))
    assert total + not_counted == shipped, (total, not_counted, shipped)


@pytest.mark.core_only
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exports_the_last_window(pywalk, interp, start_target, agents, tmp_path,
                                        go_env, sig):
    t = start_target(interp)
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["-p", t.pid, "--interval", "1h", "--export-dir", d], tmp_path,
                metrics=False)
    time.sleep(3)
    assert exported(d) == {}
    rc, took = ag.stop(sig)
    assert rc == 0, ag.stderr()
    assert took < 5, took
    files = exported(d)
    assert len(files) == 1, files
    raw = Raw(pprof_raw(go_env, list(files.values())[0]))
    shipped, not_counted = ag.summary()
    assert raw.total() + not_counted == shipped > 0, (raw.total(), not_counted, shipped)
    check_known_shape(raw, t, "last window")


# --- soak ---------------------------------------------------------------------------

def fit_slope(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


@pytest.mark.long
@pytest.mark.core_only
def test_agent_soak_rss_and_fds_flat(pywalk, interp, start_target, agents, tmp_path):
    """--all at 99 Hz with a 2 s window, code and process churn (10 children and 10
    forks a second), the export dir pruned to 20 s: RSS and open descriptors read every
    second, a line fitted over the second half."""
    seconds = SOAK_SECONDS
    start_target(interp, "--names", "bounded", "--children", 10, "--forks", 10,
                 script="code_churn.py")
    d = export_dir(tmp_path)
    ag = agents(pywalk, ["--all", "-F", 99, "--interval", "2s", "--export-dir", d, "--keep",
                         "20s", "--symbol-cache", "2M"], tmp_path)
    t0 = time.monotonic()
    rss, fds, windows = [], [], []
    for tick in range(1, seconds + 1):
        time.sleep(max(0.0, tick - (time.monotonic() - t0)))
        assert ag.proc.poll() is None, ag.stderr()
        with open("/proc/%d/status" % ag.proc.pid) as f:
            kb = int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))
        now = time.monotonic() - t0
        rss.append((now, kb * 1024))
        fds.append((now, len(os.listdir("/proc/%d/fd" % ag.proc.pid))))
        if tick % 5 == 0:
            windows.append(metric(ag.metrics(), "pywalk_windows_total"))
    m = ag.metrics()
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    half = [p for p in rss if p[0] >= seconds / 2]
    fhalf = [p for p in fds if p[0] >= seconds / 2]
    slope, fslope = fit_slope(half), fit_slope(fhalf)
    lifetimes = metric(m, "pywalk_processes_sampled_total")
    line = ("agent soak %d s: RSS %.1f MiB at 1 s, %.1f at %d s, %.1f at the end; second "
            "half %.1f KiB/s (x %d s = %.2f MiB); fds %d..%d, second half %.3f/s; windows "
            "%s; %d lifetimes, %d files kept" % (
                seconds, rss[0][1] / MIB, half[0][1] / MIB, seconds // 2, rss[-1][1] / MIB,
                slope / 1024, seconds, slope * seconds / MIB, min(f for _, f in fhalf),
                max(f for _, f in fhalf), fslope, windows, lifetimes, len(exported(d))))
    print(line)
    if os.environ.get("SOAK_REPORT"):
        with open(os.environ["SOAK_REPORT"], "a") as f:
            f.write(line + "\n")
    assert all(b > a for a, b in zip(windows, windows[1:])), "windows stopped: %s" % windows
    assert lifetimes >= seconds * 5, "too little churn: %d lifetimes" % lifetimes
    assert slope * seconds <= 2 * MIB, "RSS grows after the warm-up: " + line
    assert max(f for _, f in fhalf) - min(f for _, f in fhalf) <= 4, "fds vary: " + line
    assert fslope * seconds < 2, "fds grow: " + line


def slope_stderr(points, slope):
    """Standard error of a least-squares slope: how much of it the readings' scatter makes."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    resid = sum((y - my - slope * (x - mx)) ** 2 for x, y in points)
    return (resid / (n - 2) / sum((x - mx) ** 2 for x, _ in points)) ** 0.5


# (target arguments, agent arguments, whom): a new function name and file for nearly every
# sample, under --all; short processes whose native stacks are in the _bz2 extension and
# libbz2, loaded at addresses of their own (a mapping is interned by its addresses), under
# -p TARGET --subprocesses: --native unwinding of every Python process of a busy test
# machine falls behind its samples, which is not what this measures
NAME_CHURN = [
    pytest.param(["--names", "unique", "--files", "unique"], ["-F", 999], "all", id="names"),
    pytest.param(["--names", "none", "--children", 10, "--child-work", "bz2", "--child-ms", 100],
                 ["-F", 99, "--native", "--native-cache", "32M"], "tree",
                 id="native-processes"),
]


@pytest.mark.long
@pytest.mark.core_only
@pytest.mark.parametrize("target_args,agent_args,whom", NAME_CHURN)
def test_agent_soak_names_churn_rss_flat(pywalk, interp, start_target, agents, tmp_path,
                                         target_args, agent_args, whom):
    """The agent's names are freed with the windows that used them: under a target that
    names nearly every sampled function anew (or under --native, processes whose
    libraries load at new addresses), RSS read every second must stop growing once the
    names reach their share of a 2 MiB symbol cache (collected at each 2 s window's end).
    A line is fitted over the second half; it may rise by allocator noise (1 MiB over the
    run) plus three standard errors of the fitted slope (what the readings' own scatter
    makes of it). Before names were collected this grew by MiBs a minute."""
    seconds = SOAK_SECONDS
    target = start_target(interp, *target_args, script="code_churn.py")
    d = export_dir(tmp_path)
    who = ["--all"] if whom == "all" else ["-p", target.pid, "--subprocesses"]
    ag = agents(pywalk, who + ["--interval", "2s", "--export-dir", d, "--keep", "20s",
                               "--symbol-cache", "1M"] + agent_args, tmp_path)
    t0 = time.monotonic()
    rss = []
    for tick in range(1, seconds + 1):
        time.sleep(max(0.0, tick - (time.monotonic() - t0)))
        assert ag.proc.poll() is None, ag.stderr()
        with open("/proc/%d/status" % ag.proc.pid) as f:
            kb = int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))
        rss.append((time.monotonic() - t0, kb * 1024))
    m = ag.metrics()
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    half = [p for p in rss if p[0] >= seconds / 2]
    slope = fit_slope(half)
    allowed = 1 * MIB + 3 * slope_stderr(half, slope) * seconds
    names = dict((k[0], v) for k, v in m.items() if k[0].startswith("pywalk_names"))
    line = ("agent names soak (%s) %d s: RSS %.1f MiB at 1 s, %.1f at %d s, %.1f at the "
            "end; second half %.1f KiB/s = %.1f MiB/hour (x %d s = %.2f MiB, allowed %.2f); "
            "windows %d, %d lifetimes, names %s" % (
                " ".join(map(str, agent_args)), seconds, rss[0][1] / MIB, half[0][1] / MIB,
                seconds // 2, rss[-1][1] / MIB, slope / 1024, slope * 3600 / MIB, seconds,
                slope * seconds / MIB, allowed / MIB, metric(m, "pywalk_windows_total"),
                metric(m, "pywalk_processes_sampled_total"), names))
    print(line)
    if os.environ.get("SOAK_REPORT"):
        with open(os.environ["SOAK_REPORT"], "a") as f:
            f.write(line + "\n  RSS MiB by second: " +
                    " ".join("%.0f:%.1f" % (t, b / MIB) for t, b in rss) + "\n")
    windows = metric(m, "pywalk_windows_total")
    assert slope * seconds <= allowed, "RSS grows after the warm-up: " + line
    # it kept up (a window every 2 s, give or take the load), the workload churned what it
    # says, and the names were collected, not just small
    assert windows >= seconds / 4, "windows fell behind: " + line
    if whom == "tree":
        assert metric(m, "pywalk_processes_sampled_total") >= seconds * 2, line
    assert names.get("pywalk_names_collected_total", 0) > 0, line


# --- the systemd unit ---------------------------------------------------------------

def test_systemd_unit_verifies(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        pytest.skip("systemd-analyze is not installed (package systemd): the unit is not "
                    "verified here")
    unit = os.path.join(e2e.REPO, "doc", "pywalk-agent.service")
    # verify resolves ExecStart: point it at this tree's binary through a copy
    text = open(unit).read()
    exe = re.search(r"^ExecStart=(\S+)", text, re.M).group(1)
    assert exe == "/usr/local/bin/pywalk", exe
    copy = tmp_path / "pywalk-agent.service"
    copy.write_text(text.replace(exe, e2e.pywalk_path()))
    r = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True,
                       timeout=60)
    out = "\n".join(l for l in (r.stdout + r.stderr).splitlines()
                    if "pywalk-agent" in l or "pywalk" in l)
    assert r.returncode == 0 and not out, r.stdout + r.stderr
    for cap in ("CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"):
        assert cap in text
    for setting in ("NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=read-only",
                    "PrivateTmp=yes", "ReadWritePaths=/var/lib/pywalk", "Restart=on-failure",
                    "ExecStart=/usr/local/bin/pywalk agent --config /etc/pywalk/agent.conf"):
        assert setting in text, setting


# --- service names ------------------------------------------------------------------

@pytest.mark.core_only
def test_service_rules_and_the_environment(pywalk, interp, start_target, agents, tmp_path,
                                           go_env, request_cleanup):
    """A process is filed under what its environment asks for (PYROSCOPE_SERVICE_NAME, then
    OTEL_SERVICE_NAME), over any --service rule; else under the first rule that matches its
    script or comm; else under its script's name."""
    plain = start_target(interp)
    asked = []
    for var, name in (("PYROSCOPE_SERVICE_NAME", "billing"), ("OTEL_SERVICE_NAME", "ledger")):
        t = e2e.Target(interp, argv=["env", "%s=%s" % (var, name)] +
                       interp.argv("known_shape.py"))
        request_cleanup.append(t.stop)
        asked.append((t.wait_ready(), name))
    d = export_dir(tmp_path)
    pids = [plain.pid] + [t.pid for t, _ in asked]
    ag = agents(pywalk, ["-p", ",".join(map(str, pids)), "--interval", "2s",
                         "--export-dir", d, "--service", "nomatch*=wrong",
                         "--service", "known_*=web", "--service", "known_shape=second"],
                tmp_path, metrics=False)
    wait_for(lambda: {int(NAME_RE.match(n).group(3)) for n in exported(d)} >= set(pids), 30,
             lambda: "a window of each of %s in %s: %s" % (pids, d, sorted(exported(d))))
    rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    want = {plain.pid: "web"}
    want.update((t.pid, name) for t, name in asked)
    got = {}
    for name, path in exported(d).items():
        m = NAME_RE.match(name)
        pid = int(m.group(3))
        got.setdefault(pid, set()).add(m.group(2))
        for _, _, labels in Raw(pprof_raw(go_env, path)).samples:
            assert labels["service_name"] == want[pid], (name, labels)
    assert got == {p: {n} for p, n in want.items()}, got
    for bad in ("web", "=web", "x=", "x=a b", "x=" + "a" * 129):
        r = e2e.run_pywalk(["agent", "--service", bad, "--export-dir", d])
        assert r.returncode == 2 and "invalid --service" in r.stderr, (bad, r.stderr)


def test_log_levels_reach_the_journal(pywalk, tmp_path):
    """Under systemd (JOURNAL_STREAM names stderr's device and inode) each message carries
    the journal's priority prefix; anywhere else it does not."""
    log = tmp_path / "stderr"
    for journal in (True, False):
        log.write_text("")
        env = dict(os.environ)
        env.pop("JOURNAL_STREAM", None)
        with open(log, "a") as f:
            if journal:
                st = os.fstat(f.fileno())
                env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
            r = subprocess.run([pywalk, "agent", "--export-dir", str(tmp_path / "none"),
                                "--pyroscope", "ftp://x"], stderr=f, env=env, timeout=60)
        lines = log.read_text().splitlines()
        assert r.returncode != 0 and lines, lines
        if journal:
            assert all(re.match(r"^<[3467]>pywalk: ", l) for l in lines), lines
            assert lines[0].startswith("<3>"), lines
        else:
            assert all(l.startswith("pywalk: ") for l in lines), lines


def test_exit_summary_lines_each_carry_a_journal_priority(pywalk, tmp_path):
    """The summary is several lines (buckets, details): under systemd every one of them
    carries a priority, so the journal does not file the rows under the unit's default."""
    log = tmp_path / "stderr"
    env = dict(os.environ)
    with open(log, "w") as f:
        st = os.fstat(f.fileno())
        env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
        r = subprocess.run([pywalk, "record", "-d", "1", "-o", str(tmp_path / "p.folded"),
                            "--", "/usr/bin/python3", "-c", "while True: pass"],
                           stderr=f, env=env, timeout=60)
    lines = log.read_text().splitlines()
    assert r.returncode == 0, lines
    assert any("perf events, accounted as:" in l for l in lines), lines
    assert any(re.match(r"^<6>  shipped +\d+", l) for l in lines), lines
    assert all(re.match(r"^<[3467]>(pywalk: |  )", l) for l in lines), lines
