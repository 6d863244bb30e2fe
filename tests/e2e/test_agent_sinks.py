# SPDX-License-Identifier: MIT
"""End-to-end tests of `pywalk agent`'s HTTP sinks (--pyroscope, --parca) against
loopback receivers, with tests/targets/known_shape.py on Debian's python3.11.

Grafana Pyroscope and Parca cannot be installed here, so tests/e2e/receivers.py
implements each one's documented request shape (Pyroscope's `POST /ingest?name=APP{k=v}
&from&until&sampleRate&spyName&format=pprof` with a multipart `profile` part; Parca's
grpc-gateway `POST /profiles/writeraw` JSON with base64 `rawProfile` and a required
`__name__`), refuses any deviation with 400, and stores every body; every profile is
decoded by `go tool pprof -raw`. The receivers run on 127.0.0.1, on ephemeral ports,
started by the tests.

Covered, with their thresholds:
1. Delivery (2 s windows, -F 199, ~4 windows then SIGTERM): per window and sink, the
   known-shape stacks (exact qualnames, files, lines) for >= 95 % of each thread's samples
   in every window of >= 100 samples and over the run; the process labels
   (service_name=known_shape, pid, host, python_version; __name__=process_cpu for Parca),
   thread_id/thread_name on every sample; `from` of each window == `until` of the one
   before; sampleRate == -F; both sinks get the same bytes; the samples of all windows add
   up, for each sink, to shipped minus not counted in the agent's exit summary.
2. X-Scope-OrgID from --tenant, Basic from --basic-auth-file, Bearer from --token-file;
   no secret in pywalk's stderr (with -v) or in /metrics, even when the back end echoes it.
3. Faults, timed against the sinks' backoff (1 s doubling to 60 s, +-20 % jitter): down
   at start, down mid-run, 500s, 429s (retried), 400 (rejected, not retried), a back end
   slower than the interval (windows queue; with a small --queue-size the oldest go,
   counted as dropped), connections closed unanswered (retried). Throughout, sampling goes
   on (pywalk_samples_total{outcome="shipped"} rises at every scrape), the agent's memory
   stays within 32 MiB of where it started, and the export counters say what happened;
   whatever is delivered arrives once, in window order.
4. Shutdown with a back end that is down or never answers: exit 0 within --flush-timeout
   + 3 s, and what was not delivered is reported as dropped.
5. Usage errors: a URL that is not http(s), has no host, credentials, a query or a
   fragment (every HTTP sink, OTLP's too), a missing credentials file, a tenant Pyroscope
   would refuse: exit 1 or 2, one line naming the problem, never the credentials.
"""
import base64
import collections
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

import pywalk_e2e as e2e
import receivers as rc
from pywalk_e2e import ks

pytestmark = pytest.mark.core_only

HZ = 199
MATCH_MIN = 0.95           # of a thread's samples on an expected stack (as test_record.py)
WINDOW_SCORED_MIN = 100    # windows with fewer samples are scored only as part of the run
RSS_GROWTH_MAX = 32 << 20  # the agent's memory over a fault scenario
EXIT_SLACK_S = 3.0         # past --flush-timeout: the last window, BPF teardown
METRIC_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
SINK_LINE_RE = re.compile(r"^pywalk: (pyroscope|parca): (\d+) profiles exported, (\d+) "
                          r"rejected, (\d+) dropped; (\d+) attempts failed$")


# --- the agent ----------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Agent:
    """A running `pywalk agent` with /metrics on a loopback port."""

    def __init__(self, pywalk, args, metrics=True):
        self.port = free_port() if metrics else None
        self.argv = [pywalk, "agent"] + [str(a) for a in args]
        if metrics:
            self.argv += ["--metrics", "127.0.0.1:%d" % self.port]
        self._err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self._err)
        self.started = time.monotonic()
        self.scrapes = []
        self.exit_s = None

    def stderr(self):
        self._err.flush()
        self._err.seek(0)
        return self._err.read()

    def describe(self):
        return "%s\nexit %s\n--- stderr ---\n%s" % (" ".join(self.argv), self.proc.poll(),
                                                    self.stderr())

    def metrics_text(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port,
                                    timeout=5) as r:
            return r.read().decode()

    def metrics(self):
        """{(name, ((label, value), ...)): value} of one scrape (kept in self.scrapes)."""
        out = {}
        for line in self.metrics_text().splitlines():
            if not line or line.startswith("#"):
                continue
            m = METRIC_RE.match(line)
            assert m, "not a Prometheus sample line: %r" % line
            labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
            out[(m.group(1), labels)] = float(m.group(3))
        self.scrapes.append((time.monotonic(), out))
        return out

    def wait_metrics(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, "agent exited\n" + self.describe()
            try:
                m = self.metrics()
                if pred(m):
                    return m
            except OSError:
                m = None  # the listener comes up after the engine
            if time.monotonic() > deadline:
                raise AssertionError("%s not reached within %.0f s; last metrics %s\n%s" % (
                    what, timeout, m and sink_counts(m), self.describe()))
            time.sleep(0.25)

    def stop(self, timeout=60):
        """SIGTERM; the exit status (time to exit in self.exit_s)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("agent did not exit within %d s of SIGTERM\n%s" % (
                timeout, self.describe()))
        self.exit_s = time.monotonic() - t0
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def metric(m, name, **labels):
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


def shipped(m):
    return metric(m, "pywalk_samples_total", outcome="shipped")


def sink_counts(m, sinks=("pyroscope", "parca")):
    out = {}
    for s in sinks:
        out[s] = dict((r, int(metric(m, "pywalk_export_profiles_total", sink=s, result=r)))
                      for r in ("exported", "rejected", "dropped"))
        out[s]["failed"] = int(metric(m, "pywalk_export_failed_attempts_total", sink=s))
        out[s]["queue"] = int(metric(m, "pywalk_export_queue_bytes", sink=s))
    return out


def exit_accounting(stderr):
    """(shipped, not counted) from the summary, and {sink: (exported, rejected, dropped,
    failed attempts)} from the lines each sink prints when it stops."""
    _, buckets = e2e.check_summary(stderr)
    not_counted = sum(int(m.group(1)) for m in map(e2e.NOT_COUNTED_RE.match,
                                                   stderr.splitlines()) if m)
    sinks = {}
    for line in stderr.splitlines():
        m = SINK_LINE_RE.match(line)
        if m:
            assert m.group(1) not in sinks, "sink %s reported twice:\n%s" % (m.group(1),
                                                                             stderr)
            sinks[m.group(1)] = tuple(int(x) for x in m.groups()[1:])
    return buckets["shipped"], not_counted, sinks


# --- fixtures -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    go = e2e_tool("go")
    return rc.PprofDecoder(go, str(tmp_path_factory.mktemp("go-home")))


def e2e_tool(name):
    import shutil
    found = shutil.which(name)
    if not found:
        if os.environ.get("CI"):
            pytest.fail("%s not found (apt-get install golang-go)" % name)
        pytest.skip("%s not found (apt-get install golang-go)" % name)
    return found


@pytest.fixture(scope="module")
def target(pywalk, interp):
    """One known_shape.py for the module's agents (each attaches to it anew)."""
    t = e2e.Target(interp, "known_shape.py", ())
    try:
        t.wait_ready()
        t.tids_at_start = t.tids()
        t.comms = dict((tid, t.comm(tid)) for tid in t.tids_at_start)
        yield t
    finally:
        t.stop()


@pytest.fixture
def receivers():
    """receivers(kind, up=True) -> a Receiver; all closed at teardown."""
    made = []

    def make(kind, up=True, prefix=""):
        r = rc.Receiver(kind, prefix)
        made.append(r)
        return r.up() if up else r

    yield make
    for r in made:
        r.close()


@pytest.fixture
def agents(pywalk):
    made = []

    def start(*args, metrics=True):
        a = Agent(pywalk, args, metrics)
        made.append(a)
        return a

    yield start
    for a in made:
        a.kill()


# --- what arrived -------------------------------------------------------------------

Window = collections.namedtuple("Window", "req pprof prof t_from t_until labels")


def windows_of(receiver, decoder):
    """The accepted requests as windows, in arrival order; every request well formed."""
    bad = [r for r in receiver.snapshot() if r.problems]
    assert not bad, "%s: malformed requests: %s" % (receiver.kind, [r.problems for r in bad])
    out = []
    for r in receiver.accepted():
        assert len(r.pprof) == 1, "%s: %d profiles in one request" % (r.kind, len(r.pprof))
        prof = decoder.decode(r.pprof[0])
        if r.kind == "pyroscope":
            t_from, t_until = int(r.query["from"]), int(r.query["until"])
        else:
            t_from = t_until = None
        out.append(Window(r, r.pprof[0], prof, t_from, t_until, r.labels))
    return out


def check_delivered_once_in_order(wins, what):
    """No window twice, windows in the order they were closed (their pprof start time)."""
    seen = collections.Counter(w.pprof for w in wins)
    dup = [n for n in seen.values() if n > 1]
    assert not dup, "%s: a window delivered more than once (%s)" % (what, dup)
    times = [w.prof.time_s for w in wins]
    assert times == sorted(times) and len(set(times)) == len(times), \
        "%s: windows out of order: %s" % (what, times)


def check_contiguous(wins, what):
    """Pyroscope's from/until: each window starts where the one before ended."""
    for a, b in zip(wins, wins[1:]):
        assert b.t_from == a.t_until, \
            "%s: window from=%d..until=%d follows from=%d..until=%d (gap or overlap)" % (
                what, b.t_from, b.t_until, a.t_from, a.t_until)
    for w in wins:
        assert w.t_from <= w.t_until, "%s: from %d > until %d" % (what, w.t_from, w.t_until)
        assert w.t_from == int(w.prof.time_s), \
            "%s: from=%d, the profile's start is %.3f" % (what, w.t_from, w.prof.time_s)


def total_samples(wins):
    return sum(w.prof.total for w in wins)


def check_rising(agent, what):
    """pywalk_samples_total{shipped} rose between every two scrapes a second apart."""
    pts = []
    for t, m in agent.scrapes:
        if not pts or t - pts[-1][0] >= 1.0:
            pts.append((t, shipped(m)))
    assert len(pts) >= 3, "%s: only %d scrapes" % (what, len(pts))
    for (t0, a), (t1, b) in zip(pts, pts[1:]):
        assert b > a, "%s: shipped did not rise from %d to %d over %.1f s" % (what, a, b,
                                                                             t1 - t0)


def check_rss(agent, what):
    rss = [metric(m, "process_resident_memory_bytes") for _, m in agent.scrapes]
    rss = [r for r in rss if r]
    assert rss, what
    assert max(rss) - rss[0] <= RSS_GROWTH_MAX, "%s: RSS grew from %d to %d" % (
        what, rss[0], max(rss))


# --- 1: delivery --------------------------------------------------------------------

def score_window(prof, expected, pid):
    """{tid: ThreadScore} of one window: the main thread (tid == pid) against the main
    thread's stacks, the others against the worker's."""
    scores = {}
    for count, stack, _, nl in prof.stacks():
        tid = nl.get("thread_id")
        if tid not in scores:
            scores[tid] = (e2e.ThreadScore(expected[ks.MAIN], [expected[ks.WORKER]])
                           if tid == pid else
                           e2e.ThreadScore(expected[ks.WORKER], [expected[ks.MAIN]]))
        scores[tid].add(stack, count)
    return scores


def sanitized(s):
    return re.sub(r"[^A-Za-z0-9._:/-]", "_", s)


def test_delivery_to_both_back_ends(pywalk, interp, target, receivers, agents, decoder):
    pyro, parca = receivers("pyroscope"), receivers("parca", prefix="/parca")
    a = agents("-p", target.pid, "--interval", "2s", "-F", HZ, "--pyroscope", pyro.url,
               "--parca", parca.url)
    a.wait_metrics(lambda m: min(c["exported"] for c in sink_counts(m).values()) >= 4, 40,
                   "4 windows delivered to each sink")
    assert a.stop() == 0, a.describe()
    err = a.stderr()
    shipped_n, not_counted, sinks = exit_accounting(err)
    expected = ks.expected_stacks(interp.version, target.script_path)
    host = sanitized(socket.gethostname())
    want_labels = {"service_name": "known_shape", "pid": str(target.pid), "host": host,
                   "python_version": interp.full_version}
    if interp.free_threaded:  # 3.14.7t: no GIL, so a query can tell those profiles apart
        want_labels["free_threaded"] = "true"
    per_sink = {}
    for rcv in (pyro, parca):
        wins = windows_of(rcv, decoder)
        what = rcv.kind
        assert len(wins) >= 5, "%s: %d windows (4 and the last one)\n%s" % (
            what, len(wins), a.describe())
        check_delivered_once_in_order(wins, what)
        run = {}
        for i, w in enumerate(wins):
            ctx = "%s window %d" % (what, i)
            labels = dict(w.labels)
            if rcv.kind == "parca":
                assert labels.pop("__name__") == "process_cpu", ctx
                assert w.req.normalized is True, ctx
            else:
                assert w.req.app == "known_shape.cpu", "%s: name %r" % (ctx, w.req.app)
                assert w.req.query["sampleRate"] == str(HZ), ctx
                assert w.req.query["spyName"] == "pywalk", ctx
                assert w.req.query["format"] == "pprof", ctx
            assert labels == want_labels, "%s: labels %s" % (ctx, labels)
            p = w.prof
            assert p.period_type == "cpu nanoseconds" and p.period == 10 ** 9 // HZ, ctx
            assert p.sample_types == ["samples/count", "cpu/nanoseconds[dflt]"], ctx
            for count, stack, sl, nl in p.stacks():
                tid = nl.get("thread_id")
                assert tid in target.comms, "%s: thread_id %s is not one of %s" % (
                    ctx, tid, sorted(target.comms))
                assert sl.get("thread_name") == e2e.ks_thread_names(target.pid, [tid])[tid], \
                    "%s: %s" % (ctx, sl)
                assert sl.get("os_thread_name") == target.comms[tid], "%s: %s" % (ctx, sl)
                assert nl.get("pid") == target.pid, "%s: %s" % (ctx, nl)
                for k in ("service_name", "host", "python_version"):
                    assert sl.get(k) == want_labels[k], "%s: sample label %s=%r" % (
                        ctx, k, sl.get(k))
            for tid, s in score_window(p, expected, target.pid).items():
                agg = run.setdefault(tid, e2e.ThreadScore(s.expected, s.others))
                for stack, n in s.stacks.items():
                    agg.add(stack, n)
                if p.total >= WINDOW_SCORED_MIN:
                    assert s.match_fraction >= MATCH_MIN, "%s, thread %s: %s" % (
                        ctx, tid, s.report())
                assert s.foreign == 0, "%s, thread %s: %s" % (ctx, tid, s.report())
        assert sorted(run) == sorted(target.comms), "%s: threads %s, target has %s" % (
            what, sorted(run), sorted(target.comms))
        for tid, s in run.items():
            assert s.match_fraction >= MATCH_MIN, "%s, thread %s over the run: %s" % (
                what, tid, s.report())
        n = total_samples(wins)
        assert n + not_counted == shipped_n, \
            "%s: the windows hold %d samples, %d were not counted, the agent shipped %d" % (
                what, n, not_counted, shipped_n)
        per_sink[rcv.kind] = wins
    check_contiguous(per_sink["pyroscope"], "pyroscope")
    assert [w.pprof for w in per_sink["pyroscope"]] == [w.pprof for w in per_sink["parca"]], \
        "the two sinks were sent different windows"
    for kind, wins in per_sink.items():
        assert sinks.get(kind) == (len(wins), 0, 0, 0), "%s: exit line %s, %d delivered" % (
            kind, sinks.get(kind), len(wins))


# --- 2: tenant and credentials ------------------------------------------------------

def secrets_absent(a, secrets, text):
    for s in secrets:
        assert s not in text, "a secret (%r...) appears:\n%s" % (s[:3], text)


@pytest.mark.parametrize("kind", ["basic", "bearer"])
def test_tenant_and_credentials(pywalk, target, receivers, agents, tmp_path, kind):
    pyro, parca = receivers("pyroscope"), receivers("parca")
    # a tenant with every special character Pyroscope allows in one
    tenant = "team-a_1.(prod)*'!"
    if kind == "basic":
        user, password = "pywalk-agent", "s3cr:et;pa ss@word"
        cred = tmp_path / "basic"
        cred.write_text("%s:%s\n" % (user, password))
        want = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        secrets = [password, want.split()[1]]
        args = ["--basic-auth-file", cred]
    else:
        token = "tok.EN-0123456789abcdefghij"
        cred = tmp_path / "token"
        cred.write_text(token + "\r\n")
        want = "Bearer " + token
        secrets = [token]
        args = ["--token-file", cred]
    os.chmod(cred, 0o600)
    # the first answer of each echoes the credentials back (a careless proxy): the
    # agent logs the answer, and must not log the secret with it
    pyro.script(rc.echo_auth(401))
    parca.script(rc.echo_auth(403))
    a = agents("-v", "-p", target.pid, "--interval", "1s", "-F", HZ, "--tenant", tenant,
               "--pyroscope", pyro.url, "--parca", parca.url, *args)
    m = a.wait_metrics(lambda m: min(c["exported"] for c in sink_counts(m).values()) >= 2,
                       30, "2 windows delivered to each sink")
    metrics_text = a.metrics_text()
    assert a.stop() == 0, a.describe()
    for rcv in (pyro, parca):
        reqs = rcv.snapshot()
        assert reqs and not any(r.problems for r in reqs), reqs
        for r in reqs:
            assert r.header("Authorization") == want, "%s: Authorization %r, want %r" % (
                rcv.kind, r.header("Authorization"), want)
            assert len(r.headers.get_all("Authorization")) == 1, rcv.kind
        tenants = set(r.header("X-Scope-OrgID") for r in reqs)
        assert tenants == ({tenant} if rcv.kind == "pyroscope" else {None}), \
            "%s: X-Scope-OrgID %s" % (rcv.kind, tenants)
        assert reqs[0].answered in (401, 403)
    assert sink_counts(m)["pyroscope"]["rejected"] == 1, sink_counts(m)
    secrets_absent(a, secrets, a.stderr())
    secrets_absent(a, secrets, metrics_text)
    assert "HTTP 401" in a.stderr(), "the rejection is not logged:\n" + a.stderr()


# --- 3: faults ----------------------------------------------------------------------

def fault_agent(agents, target, pyro, parca, *extra):
    return agents("-p", target.pid, "--interval", "1s", "-F", HZ, "--pyroscope", pyro.url,
                  "--parca", parca.url, *extra)


def finish(a, rcvs, decoder, what, rejected=None):
    """Stop the agent; each sink's windows checked (once, in order), its exit line
    returned with them: {kind: (windows, (exported, rejected, dropped, failed))}."""
    check_rising(a, what)
    check_rss(a, what)
    assert a.stop() == 0, a.describe()
    shipped_n, not_counted, lines = exit_accounting(a.stderr())
    out = {}
    for rcv in rcvs:
        wins = windows_of(rcv, decoder)
        check_delivered_once_in_order(wins, "%s (%s)" % (rcv.kind, what))
        assert rcv.kind in lines, "no exit line for %s\n%s" % (rcv.kind, a.describe())
        assert lines[rcv.kind][0] == len(wins), "%s: exit line %s, %d windows arrived" % (
            rcv.kind, lines[rcv.kind], len(wins))
        out[rcv.kind] = (wins, lines[rcv.kind])
    return shipped_n, not_counted, out


def all_windows(shipped_n, not_counted, wins, what):
    """Every window of the run arrived: contiguous (Pyroscope) and adding up."""
    n = total_samples(wins)
    assert n + not_counted == shipped_n, "%s: %d samples arrived, %d not counted, %d shipped" % (
        what, n, not_counted, shipped_n)


def test_down_at_start_then_up(target, receivers, agents, decoder):
    """Both back ends refuse connections for ~5 s (attempts at about 1, 2, 4 s after the
    first window), then come up: the windows queued meanwhile arrive at the next attempt
    (about 8 s), in order, once each."""
    pyro, parca = receivers("pyroscope", up=False), receivers("parca", up=False)
    a = fault_agent(agents, target, pyro, parca)
    a.wait_metrics(lambda m: min(c["failed"] for c in sink_counts(m).values()) >= 3, 20,
                   "3 failed attempts per sink")
    m = a.metrics()
    queued = metric(m, "pywalk_window_profiles_total")
    assert all(c["exported"] == 0 and c["queue"] > 0 for c in sink_counts(m).values()), \
        sink_counts(m)
    pyro.up()
    parca.up()
    a.wait_metrics(lambda m: min(c["exported"] for c in sink_counts(m).values()) >= queued,
                   20, "the %d queued windows delivered" % queued)
    a.wait_metrics(lambda m: True, 1, "")
    shipped_n, not_counted, out = finish(a, (pyro, parca), decoder, "down at start")
    for kind, (wins, line) in out.items():
        all_windows(shipped_n, not_counted, wins, kind)
        assert line[1:3] == (0, 0) and line[3] >= 3, "%s: %s" % (kind, line)
    check_contiguous(out["pyroscope"][0], "pyroscope")
    # the first delivery carried every window queued before it, oldest first
    first = out["pyroscope"][0][:int(queued)]
    assert all(w.req.time - first[0].req.time < 2 for w in first), \
        [round(w.req.time - first[0].req.time, 2) for w in first]


def test_down_mid_run_then_back(target, receivers, agents, decoder):
    pyro, parca = receivers("pyroscope"), receivers("parca")
    a = fault_agent(agents, target, pyro, parca)
    a.wait_metrics(lambda m: min(c["exported"] for c in sink_counts(m).values()) >= 2, 20,
                   "2 windows delivered")
    pyro.down()
    parca.down()
    m = a.wait_metrics(lambda m: min(c["failed"] for c in sink_counts(m).values()) >= 2, 20,
                       "2 failed attempts per sink")
    made = metric(m, "pywalk_window_profiles_total")
    pyro.up()
    parca.up()
    a.wait_metrics(lambda m: min(c["exported"] for c in sink_counts(m).values()) >= made,
                   20, "the windows made while down delivered")
    a.wait_metrics(lambda m: True, 1, "")
    shipped_n, not_counted, out = finish(a, (pyro, parca), decoder, "down mid-run")
    for kind, (wins, line) in out.items():
        all_windows(shipped_n, not_counted, wins, kind)
        assert line[1:3] == (0, 0) and line[3] >= 2, "%s: %s" % (kind, line)
    check_contiguous(out["pyroscope"][0], "pyroscope")


@pytest.mark.parametrize("code", [500, 503, 429, 408])
def test_retryable_status_is_retried(target, receivers, agents, decoder, code):
    """Two answers `code` (the first window's delivery and its retry 1 s later), then 200:
    the same window again at the third attempt (about 3 s after the first), then the
    rest; the other sink is unaffected."""
    pyro, parca = receivers("pyroscope"), receivers("parca")
    bad, good = (pyro, parca) if code != 429 else (parca, pyro)
    bad.script(rc.status(code), rc.status(code))
    a = fault_agent(agents, target, pyro, parca)
    a.wait_metrics(lambda m: sink_counts(m)[bad.kind]["exported"] >= 3, 25,
                   "3 windows delivered after the failures")
    a.wait_metrics(lambda m: True, 1, "")
    shipped_n, not_counted, out = finish(a, (pyro, parca), decoder, "HTTP %d" % code)
    reqs = bad.snapshot()
    assert [r.answered for r in reqs[:3]] == [code, code, 200], reqs[:3]
    assert reqs[0].pprof == reqs[1].pprof == reqs[2].pprof, "the retry is another window"
    assert 0.7 <= reqs[1].time - reqs[0].time <= 1.5, "first retry after %.2f s" % (
        reqs[1].time - reqs[0].time)
    assert 1.5 <= reqs[2].time - reqs[1].time <= 2.6, "second retry after %.2f s" % (
        reqs[2].time - reqs[1].time)
    for kind, (wins, line) in out.items():
        all_windows(shipped_n, not_counted, wins, kind)
        want_failed = 2 if kind == bad.kind else 0
        assert line[1:] == (0, 0, want_failed), "%s: %s" % (kind, line)


def test_bad_request_is_rejected_not_retried(target, receivers, agents, decoder):
    pyro, parca = receivers("pyroscope"), receivers("parca")
    pyro.script(rc.status(400, b"invalid profile\n"))
    a = fault_agent(agents, target, pyro, parca)
    m = a.wait_metrics(lambda m: sink_counts(m)["pyroscope"]["exported"] >= 3, 20,
                       "3 windows after the rejected one")
    assert sink_counts(m)["pyroscope"]["rejected"] == 1, sink_counts(m)
    a.wait_metrics(lambda m: True, 1, "")
    shipped_n, not_counted, out = finish(a, (pyro, parca), decoder, "HTTP 400")
    reqs = pyro.snapshot()
    assert reqs[0].answered == 400 and all(r.answered == 200 for r in reqs[1:]), reqs
    assert all(r.pprof != reqs[0].pprof for r in reqs[1:]), "the rejected window was resent"
    wins, line = out["pyroscope"]
    assert line[1:] == (1, 0, 0), line
    rejected = decoder.decode(reqs[0].pprof[0])
    assert int(reqs[0].query["until"]) == wins[0].t_from, "the next window is not the next"
    all_windows(shipped_n, not_counted + rejected.total, wins, "pyroscope")
    all_windows(shipped_n, not_counted, out["parca"][0], "parca")
    assert "HTTP 400: invalid profile" in a.stderr(), a.describe()


def test_connection_closed_unanswered_is_retried(target, receivers, agents, decoder):
    pyro, parca = receivers("pyroscope"), receivers("parca")
    pyro.script(rc.close(), rc.close())
    parca.script(rc.ok(), rc.close())  # on a connection that was used before
    a = fault_agent(agents, target, pyro, parca)
    a.wait_metrics(lambda m: min(c["exported"] for c in sink_counts(m).values()) >= 4, 25,
                   "4 windows delivered to each")
    a.wait_metrics(lambda m: True, 1, "")
    shipped_n, not_counted, out = finish(a, (pyro, parca), decoder, "closed unanswered")
    for kind, (wins, line) in out.items():
        all_windows(shipped_n, not_counted, wins, kind)
        rcv = pyro if kind == "pyroscope" else parca
        closes = sum(r.action.kind == "close" for r in rcv.snapshot())
        assert closes == (2 if kind == "pyroscope" else 1), rcv.snapshot()
        # curl itself resends a request once when a reused connection died under it
        # (parca's close), so that one may never count as a failed attempt; a close on a
        # fresh connection (pyroscope's first) always does
        least = 1 if kind == "pyroscope" else 0
        assert least <= line[3] <= closes and line[1:3] == (0, 0), "%s: %s" % (kind, line)
    check_contiguous(out["pyroscope"][0], "pyroscope")


@pytest.mark.parametrize("queue", ["default", "small"])
def test_slow_back_end(target, receivers, agents, decoder, queue):
    """Pyroscope answers 3 s late with 1 s windows for ~10 s, then promptly. With the
    default queue every window queues and arrives, in order; with --queue-size 16K (about
    three windows) the oldest are dropped and counted, and the newest arrive. Parca,
    prompt, gets every window: it is the reference for what the agent made."""
    pyro, parca = receivers("pyroscope"), receivers("parca")
    pyro.set_default(rc.ok(delay_s=3.0))
    extra = ["--queue-size", "16K"] if queue == "small" else []
    a = fault_agent(agents, target, pyro, parca, *extra)
    t0 = time.monotonic()

    def slow_long_enough(m):
        # ~10 s slow; the small queue until it dropped one (windows are smaller when the
        # machine is loaded and the target gets less CPU, so more of them fit)
        if queue == "small":
            assert sink_counts(m)["pyroscope"]["queue"] <= 16 << 10, sink_counts(m)
        return time.monotonic() - t0 >= 10 and (
            queue == "default" or sink_counts(m)["pyroscope"]["dropped"] > 0)
    a.wait_metrics(slow_long_enough, 60, "10 s of a slow back end (small queue: a drop)")
    m = a.metrics()
    made_before_switch = metric(m, "pywalk_window_profiles_total")
    pyro.set_default(rc.ok())
    a.wait_metrics(lambda m: sink_counts(m)["pyroscope"]["queue"] == 0 and
                   metric(m, "pywalk_window_profiles_total") >= made_before_switch + 2, 20,
                   "the queue drained")
    c = sink_counts(a.metrics())["pyroscope"]
    if queue == "small":
        assert c["dropped"] > 0, c
    else:
        assert c["dropped"] == 0, c
    shipped_n, not_counted, out = finish(a, (pyro, parca), decoder, "slow, %s queue" % queue)
    ref = out["parca"][0]
    all_windows(shipped_n, not_counted, ref, "parca")
    wins, line = out["pyroscope"]
    got = set(w.pprof for w in wins)
    missing = [i for i, w in enumerate(ref) if w.pprof not in got]
    assert len(missing) == line[2], "%d windows missing, %d reported dropped" % (
        len(missing), line[2])
    assert line[1] == 0 and line[0] + line[2] == len(ref), line
    if queue == "default":
        assert not missing
        return
    # the oldest went: the windows closed just before the switch were all delivered
    assert missing, "nothing was dropped"
    assert max(missing) < len(ref) - 3, "the newest windows were dropped: %s of %d" % (
        missing, len(ref))


# --- 4: shutdown --------------------------------------------------------------------

@pytest.mark.parametrize("state", ["down", "blackhole"])
def test_shutdown_with_back_end_unavailable(target, receivers, agents, state):
    """SIGTERM while both back ends refuse connections (down) or accept them and never
    answer (blackhole): exit 0 within --flush-timeout 3s + slack, every window reported
    dropped."""
    pyro, parca = receivers("pyroscope", up=False), receivers("parca", up=False)
    if state == "blackhole":
        pyro.blackhole()
        parca.blackhole()
    a = fault_agent(agents, target, pyro, parca, "--flush-timeout", "3s")
    m = a.wait_metrics(lambda m: metric(m, "pywalk_window_profiles_total") >= 3, 20,
                       "3 windows")
    assert a.stop() == 0, a.describe()
    assert a.exit_s <= 3 + EXIT_SLACK_S, "exit took %.1f s with --flush-timeout 3s\n%s" % (
        a.exit_s, a.describe())
    _, _, lines = exit_accounting(a.stderr())
    made = metric(m, "pywalk_window_profiles_total")
    for kind in ("pyroscope", "parca"):
        assert kind in lines, a.describe()
        exported, rejected, dropped, failed = lines[kind]
        assert exported == rejected == 0 and dropped >= made + 1, "%s: %s, %d windows" % (
            kind, lines[kind], made)
    assert not [r for r in pyro.snapshot() + parca.snapshot() if r.accepted]


# --- 5: usage errors ----------------------------------------------------------------

def one_line_error(r, mention):
    text = "exit %d\nstderr: %r" % (r.returncode, r.stderr)
    assert r.returncode in (1, 2), text
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert lines and lines[0].startswith("pywalk: "), text
    assert mention in lines[0], "%r not named: %s" % (mention, text)
    extra = lines[1:]
    assert not extra or (r.returncode == 2 and len(extra) == 1 and
                         extra[0].startswith("Try '")), text


@pytest.mark.parametrize("args,mention", [
    (["--pyroscope", "ftp://127.0.0.1:4040"], "ftp://127.0.0.1:4040"),
    (["--parca", "127.0.0.1:7070"], "127.0.0.1:7070"),
    (["--pyroscope", "http://"], "http://"),
    (["--parca", "http://127.0.0.1:7070/?x=1"], "http://127.0.0.1:7070/?x=1"),
    (["--pyroscope", "http://127.0.0.1:1", "--basic-auth-file", "/nonexistent/auth"],
     "/nonexistent/auth"),
    (["--parca", "http://127.0.0.1:1", "--token-file", "/nonexistent/token"],
     "/nonexistent/token"),
    (["--pyroscope", "http://127.0.0.1:1", "--tenant", "a/b"], "a/b"),
    # every HTTP sink makes the same URL check, OTLP's too
    (["--parca", "http://user:s3cret@127.0.0.1:7070"], "must not hold credentials"),
    (["--otlp", "http://user:s3cret@127.0.0.1:4318"], "must not hold credentials"),
    (["--otlp", "http://127.0.0.1:4318/?x=1"], "http://127.0.0.1:4318/?x=1"),
    (["--otlp", "http://127.0.0.1:4318/#frag"], "http://127.0.0.1:4318/#frag"),
    (["--otlp", "http://"], "http://"),
    (["--otlp", "ftp://127.0.0.1:4318"], "ftp://127.0.0.1:4318"),
], ids=["ftp", "no-scheme", "no-host", "query", "basic-auth-file", "token-file", "tenant",
        "credentials", "otlp-credentials", "otlp-query", "otlp-fragment", "otlp-no-host",
        "otlp-ftp"])
def test_usage_errors(pywalk, target, args, mention):
    r = e2e.run_pywalk(["agent", "-p", target.pid] + args, timeout=20)
    one_line_error(r, mention)
    # a refused URL's credentials are not repeated
    assert "s3cret" not in r.stderr + r.stdout, r.stderr
