# SPDX-License-Identifier: MIT
"""End-to-end tests of `pywalk agent --otlp URL`, the OTLP profiles sink.

One agent run (-p PID of tests/targets/known_shape.py on the core interpreter, 199 Hz, a
window every 2 s, a bearer token) sends to a receiver on 127.0.0.1 (an ephemeral port) that
implements the documented OTLP/HTTP request shape: POST /v1development/profiles, a binary
ExportProfilesServiceRequest with Content-Type application/x-protobuf, the
OTLP-Profiles-Development-Version header. It stands in for an OpenTelemetry Collector with
--feature-gates=+service.profilesSupport, which cannot be installed here. Each body is
decoded by `protoc --decode` against the schema subset in tests/e2e/proto (the field
numbers of opentelemetry-proto v1.11.0); a field protoc does not know fails the tests.

Covered: the requests' path, headers and credentials; the resource (service.name,
process.pid, process.executable.name, host.name, process.runtime.*), the scope, the
profile's sample type, period, start and length; windows that follow each other without a
gap or an overlap; the dictionary's zero entries, in-range indexes and distinct entries;
the window SIGTERM cuts short delivered by the shutdown flush; sample values that add up,
across windows, to the samples the agent's own summary counted (so no sample is sent twice
or lost); and the known-shape stacks (function names, files,
lines, start lines) with each thread's id and name. A second run answers 503 once, then
200, then 400: the 503 is retried with the same bytes after a backoff, a 400 is not, and
/metrics counts them.
"""
import ast
import codecs
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import urllib.request
import threading
import time

import pytest

import pywalk_e2e as e2e
from pywalk_e2e import ks

HZ = 199
INTERVAL_S = 2
WINDOWS = 3               # full windows to wait for before stopping the agent
MATCH_MIN = 0.95          # share of a thread's samples that must be an expected stack
PATH = "/v1development/profiles"
HOST = "otlp-e2e"         # --host, so host.name is known
TOKEN = "e2e-token-123"
PROTO_DIR = os.path.join(e2e.E2E_DIR, "proto")
PROTO_FILE = "otlp_profiles_service_subset.proto"
REQUEST_TYPE = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"


# --- the receiver ----------------------------------------------------------------------

class Receiver(http.server.ThreadingHTTPServer):
    """OTLP/HTTP profiles, as the protocol documents it: the path, the content type, a
    binary protobuf answer. Stores each request; answers anything else with an error and
    notes it, so a test can tell a wrong request from a missing one."""

    daemon_threads = True

    def __init__(self, status_for=lambda n: 200):
        super().__init__(("127.0.0.1", 0), ReceiverHandler)
        self.status_for = status_for  # the answer to the n-th well-formed request (from 0)
        self.requests = []        # (monotonic time, {header: value}, body)
        self.refused = []         # (method, path, why)
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def wait_for(self, n, timeout, proc):
        """Wait for n requests while proc (the agent) runs; how many came."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.requests) < n and time.monotonic() < deadline and \
                    proc.poll() is None:
                self.cond.wait(min(0.5, max(0.0, deadline - time.monotonic())))
            return len(self.requests)

    def stop(self):
        self.shutdown()
        self.server_close()


class ReceiverHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the protocol asks clients to use

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body=b"", ctype="application/x-protobuf"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def refuse(self, status, why):
        self.server.refused.append((self.command, self.path, why))
        self.answer(status, why.encode(), "text/plain")

    def do_GET(self):
        self.refuse(405, "only POST")

    def do_POST(self):
        length = self.headers.get("Content-Length")
        if length is None:
            return self.refuse(411, "no Content-Length")
        body = self.rfile.read(int(length))
        if self.path != PATH:
            return self.refuse(404, "not the profiles path")
        if self.headers.get("Content-Type") != "application/x-protobuf":
            return self.refuse(415, "content type %r" % self.headers.get("Content-Type"))
        headers = dict((k.lower(), v) for k, v in self.headers.items())
        with self.server.cond:
            status = self.server.status_for(len(self.server.requests))
            self.server.requests.append((time.monotonic(), headers, body))
            self.server.cond.notify_all()
        if status == 200:
            # an empty ExportProfilesServiceResponse: full success
            return self.answer(200)
        # a google.rpc.Status { code 3 (INVALID_ARGUMENT), message }, as failures carry
        msg = b"unsupported profiles development version"
        self.answer(status, b"\x08\x03\x12" + bytes([len(msg)]) + msg)


# --- protoc's text format --------------------------------------------------------------

FIELD_RE = re.compile(r"^(\w+): (.*)$")
OPEN_RE = re.compile(r"^(\w+) \{$")


def scalar(text):
    if text.startswith('"'):
        assert text.endswith('"'), text
        return codecs.escape_decode(text[1:-1].encode("latin-1"))[0]
    return int(text)


def parse_text(text):
    """protoc --decode output -> {field: [value or {...}]}; fails on unknown fields (protoc
    prints a field it has no name for as its number)."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s == "}":
            stack.pop()
            continue
        m = OPEN_RE.match(s) or FIELD_RE.match(s)
        assert m, "unexpected protoc output line %r" % line
        name = m.group(1)
        assert not name.isdigit(), "field %s is not in the schema subset: %r" % (name, line)
        if OPEN_RE.match(s):
            child = {}
            stack[-1].setdefault(name, []).append(child)
            stack.append(child)
        else:
            stack[-1].setdefault(name, []).append(scalar(m.group(2)))
    assert len(stack) == 1, "unbalanced protoc output"
    return root


def many(msg, name):
    return msg.get(name, [])


def one(msg, name, default=None):
    vals = msg.get(name, [])
    assert len(vals) <= 1, "%s repeated: %r" % (name, vals)
    return vals[0] if vals else default


def text_of(b):
    return b.decode("utf-8")


def any_value(v):
    """An AnyValue as a Python str or int (exactly one of the two set)."""
    keys = [k for k in v if v[k]]
    assert len(keys) == 1, "AnyValue %r" % v
    if keys[0] == "string_value":
        return text_of(one(v, "string_value"))
    assert keys[0] == "int_value", "AnyValue %r" % v
    return one(v, "int_value")


def decode(body):
    r = subprocess.run(["protoc", "--decode=" + REQUEST_TYPE, "-I", PROTO_DIR, PROTO_FILE],
                       input=body, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=PROTO_DIR, timeout=60)
    assert r.returncode == 0, "protoc --decode failed: %s" % r.stderr.decode(errors="replace")
    return r.stdout.decode("latin-1"), parse_text(r.stdout.decode("latin-1"))


class Request:
    """One decoded ExportProfilesServiceRequest, its dictionary resolved."""

    def __init__(self, headers, body):
        self.headers = headers
        self.text, msg = decode(body)
        rps = many(msg, "resource_profiles")
        assert len(rps) == 1, "%d ResourceProfiles" % len(rps)
        self.resource = dict()
        for kv in many(one(rps[0], "resource", {}), "attributes"):
            key = text_of(one(kv, "key"))
            assert key not in self.resource, "resource attribute %s twice" % key
            self.resource[key] = any_value(one(kv, "value", {}))
        sps = many(rps[0], "scope_profiles")
        assert len(sps) == 1, "%d ScopeProfiles" % len(sps)
        self.scope = one(sps[0], "scope", {})
        profiles = many(sps[0], "profiles")
        assert len(profiles) == 1, "%d Profiles" % len(profiles)
        self.profile = profiles[0]
        self.dict = one(msg, "dictionary")
        assert self.dict is not None, "no dictionary"
        self.strings = [text_of(s) for s in many(self.dict, "string_table")]
        self.start = one(self.profile, "time_unix_nano", 0)
        self.duration = one(self.profile, "duration_nano", 0)
        self.period = one(self.profile, "period", 0)

    def s(self, i):
        assert 0 <= i < len(self.strings), "string index %d of %d" % (i, len(self.strings))
        return self.strings[i]

    def table(self, name, i):
        t = many(self.dict, name)
        assert 0 <= i < len(t), "%s index %d of %d" % (name, i, len(t))
        return t[i]

    def value_type(self, name):
        vt = one(self.profile, name)
        assert vt is not None, "no %s" % name
        return "%s/%s" % (self.s(one(vt, "type_strindex", 0)), self.s(one(vt, "unit_strindex", 0)))

    def function(self, i):
        assert i > 0, "a line without a function"
        fn = self.table("function_table", i)
        return (self.s(one(fn, "name_strindex", 0)), self.s(one(fn, "filename_strindex", 0)),
                self.s(one(fn, "system_name_strindex", 0)), one(fn, "start_line", 0))

    def attributes(self, msg):
        """{key: value} of a message's attribute_indices."""
        attrs = {}
        for ai in many(msg, "attribute_indices"):
            assert ai > 0, "attribute index 0"
            kvu = self.table("attribute_table", ai)
            key = self.s(one(kvu, "key_strindex", 0))
            assert key not in attrs, "attribute %s twice" % key
            attrs[key] = any_value(one(kvu, "value", {}))
        return attrs

    def mapping(self, i):
        """Mapping i as {path, start, limit, offset, build_id (None: not given)}."""
        assert i > 0, "mapping index 0"
        m = self.table("mapping_table", i)
        return {"path": self.s(one(m, "filename_strindex", 0)),
                "start": one(m, "memory_start", 0), "limit": one(m, "memory_limit", 0),
                "offset": one(m, "file_offset", 0),
                "build_id": self.attributes(m).get("process.executable.build_id.gnu")}

    def samples(self):
        """[(frames root first, {attr: value}, value, identity)]: a Python frame as
        (qualname, file, line, start line), machine code (native, kernel) as (name,
        Mapping, address, frame type)."""
        out = []
        for smp in many(self.profile, "samples"):
            si = one(smp, "stack_index", 0)
            assert si > 0, "a sample without a stack"
            frames = []
            for li in many(self.table("stack_table", si), "location_indices"):
                assert li > 0, "location index 0 in a stack"
                loc = self.table("location_table", li)
                lines = many(loc, "lines")
                assert len(lines) == 1, "a frame is one line: %r" % lines
                name, path, sysname, start = self.function(one(lines[0], "function_index", 0))
                ftype = self.attributes(loc).get("profile.frame.type")
                if one(loc, "mapping_index", 0):
                    # machine code: its symbol is its system name, its address is in its
                    # Mapping
                    assert ftype in ("native", "kernel") and sysname == name, (ftype, sysname)
                    m = self.mapping(one(loc, "mapping_index"))
                    addr = one(loc, "address", 0)
                    assert m["start"] <= addr < m["limit"] or ftype == "kernel", (addr, m)
                    frames.append((name, m, addr, ftype))
                    continue
                assert ftype == "cpython", "Python frame %s of type %r" % (name, ftype)
                assert sysname == "%s:%s" % (path, name), sysname
                frames.append((name, path, one(lines[0], "line", 0), start))
            frames.reverse()  # the wire is leaf first
            attrs = self.attributes(smp)
            values = many(smp, "values")
            assert len(values) == 1, "values %r" % values
            ident = (si, tuple(sorted(many(smp, "attribute_indices"))))
            out.append((frames, attrs, values[0], ident))
        return out


# --- the run ---------------------------------------------------------------------------

def def_lines(path):
    """{qualname: line of its def} of a script's functions and methods; the module's
    code starts at line 1."""
    out = {"<module>": 1}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[prefix + child.name] = child.lineno
                visit(child, prefix + child.name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    with open(path, encoding="utf-8") as f:
        visit(ast.parse(f.read(), path), "")
    return out


class AgentRun:
    def __init__(self, interp, tmp):
        if not shutil.which("protoc"):
            pytest.fail("protoc not found: apt-get install protobuf-compiler "
                        "(scripts/install-deps.sh installs it)")
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        self.receiver = Receiver()
        self.target = e2e.Target(interp, "known_shape.py", ())
        self.stderr = ""
        try:
            self.target.wait_ready()
            self.pid = self.target.pid
            self.tids = self.target.tids()
            self.comms = dict((t, self.target.comm(t)) for t in self.tids)
            self.script = self.target.script_path
            argv = [e2e.pywalk_path(), "agent", "-p", str(self.pid), "--interval",
                    "%ds" % INTERVAL_S, "-F", str(HZ), "--otlp", self.receiver.url,
                    "--token-file", token, "--host", HOST, "--flush-timeout", "10s"]
            self.wall0 = time.time_ns()
            agent = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, universal_newlines=True)
            try:
                self.receiver.wait_for(WINDOWS, WINDOWS * INTERVAL_S + 40, agent)
                # half a window more: SIGTERM cuts one short, which the flush must deliver
                time.sleep(INTERVAL_S / 2)
                with self.receiver.cond:
                    got = len(self.receiver.requests)
                agent.send_signal(signal.SIGTERM)
                _, self.stderr = agent.communicate(timeout=60)
            finally:
                if agent.poll() is None:
                    agent.kill()
                    agent.communicate()
            self.wall1 = time.time_ns()
            self.returncode = agent.returncode
            self.windows_before_stop = got
        finally:
            self.target.stop()
            self.receiver.stop()
        self.raw = list(self.receiver.requests)
        self.refused = list(self.receiver.refused)
        self.expected = ks.expected_stacks(interp.version, self.script)
        self.defs = def_lines(self.script if os.path.exists(self.script) else ks.SCRIPT)
        self._requests = None

    def describe(self):
        return "agent exit %s, %d requests (%d before SIGTERM), refused %s\n--- stderr ---\n%s" % (
            self.returncode, len(self.raw), self.windows_before_stop, self.refused,
            self.stderr)

    def requests(self):
        """The decoded requests in time order; the run itself must have gone right."""
        assert self.returncode == 0, self.describe()
        assert not self.refused, self.describe()
        assert len(self.raw) >= WINDOWS, self.describe()
        if self._requests is None:
            self._requests = sorted((Request(h, b) for _, h, b in self.raw),
                                    key=lambda r: r.start)
        return self._requests


@pytest.fixture(scope="module")
def run(pywalk, interp, tmp_path_factory):
    return AgentRun(interp, str(tmp_path_factory.mktemp("otlp")))


# --- tests -----------------------------------------------------------------------------

@pytest.mark.core_only
def test_otlp_requests_have_the_documented_shape(run):
    for req in run.requests():
        h = req.headers
        assert h.get("content-type") == "application/x-protobuf"
        # v1.11.0's schema is profiles development version 1, sent explicitly
        assert h.get("otlp-profiles-development-version") == "1", h
        assert h.get("authorization") == "Bearer " + TOKEN, h
        assert "content-encoding" not in h, h


@pytest.mark.core_only
def test_otlp_resource_scope_and_profile(run):
    ids = set()
    for req in run.requests():
        res = req.resource
        assert res.get("service.name") == "known_shape", res
        assert res.get("process.pid") == run.pid, res
        assert res.get("process.executable.name") == run.comms[run.pid], res
        assert res.get("host.name") == HOST, res
        assert res.get("process.runtime.name") == "cpython", res
        assert str(res.get("process.runtime.version", "")).startswith("3.11."), res
        assert "container.id" not in res and "process.vpid" not in res, res
        assert text_of(one(req.scope, "name")) == "pywalk", req.scope
        assert req.value_type("sample_type") == "cpu/nanoseconds"
        assert req.value_type("period_type") == "cpu/nanoseconds"
        assert req.period == 1000000000 // HZ
        pid_ = one(req.profile, "profile_id")
        assert pid_ is not None and len(pid_) == 16 and any(pid_), pid_
        ids.add(pid_)
    assert len(ids) == len(run.requests()), "profile ids repeat"


@pytest.mark.core_only
def test_otlp_windows_follow_each_other(run):
    reqs = run.requests()
    assert run.wall0 <= reqs[0].start, "the first window starts before the agent did"
    for a, b in zip(reqs, reqs[1:]):
        assert a.start + a.duration == b.start, \
            "window at %d + %d ns is followed by one at %d: a gap or an overlap" % (
                a.start, a.duration, b.start)
    for r in reqs[:-1]:
        assert abs(r.duration - INTERVAL_S * 1e9) < 0.5e9, "window of %d ns" % r.duration
    # the last window ends at SIGTERM, and reached the receiver during the shutdown flush
    assert len(reqs) > run.windows_before_stop, run.describe()
    assert reqs[-1].duration < INTERVAL_S * 1e9 - 0.25e9, "last window %d ns" % (
        reqs[-1].duration)
    assert reqs[-1].start + reqs[-1].duration <= run.wall1


@pytest.mark.core_only
def test_otlp_dictionary_is_well_formed(run):
    for req in run.requests():
        d = req.dict
        for name in ("mapping_table", "location_table", "function_table", "attribute_table",
                     "stack_table"):
            t = many(d, name)
            assert t and t[0] == {}, "%s[0] is not the zero value: %r" % (name, t[:1])
        assert req.strings and req.strings[0] == ""
        assert len(set(req.strings)) == len(req.strings), "duplicate strings"
        links = many(d, "link_table")
        assert len(links) == 1 and one(links[0], "trace_id") == bytes(16) and \
            one(links[0], "span_id") == bytes(8), links
        assert len(many(d, "mapping_table")) == 1  # Python frames have no mapping
        for name in ("location_table", "function_table", "stack_table", "attribute_table"):
            t = [repr(sorted(e.items())) for e in many(d, name)[1:]]
            assert len(set(t)) == len(t), "duplicate %s entries" % name
        # decoding every sample checks every index is in range
        idents = [ident for _, _, _, ident in req.samples()]
        assert len(set(idents)) == len(idents), "two samples with one identity"


@pytest.mark.core_only
def test_otlp_samples_add_up_to_what_the_agent_counted(run):
    reqs = run.requests()
    total = 0
    for req in reqs:
        for _, _, value, _ in req.samples():
            assert value > 0 and value % req.period == 0, \
                "value %d is not a whole number of %d ns periods" % (value, req.period)
            total += value // req.period
    _, buckets = e2e.check_summary(run.stderr)
    not_counted = 0
    for line in run.stderr.splitlines():
        m = e2e.NOT_COUNTED_RE.match(line)
        if m:
            not_counted += int(m.group(1))
    assert total + not_counted == buckets["shipped"], \
        "%d samples in %d requests + %d not counted != %d shipped\n%s" % (
            total, len(reqs), not_counted, buckets["shipped"], run.describe())
    assert total > 0


@pytest.mark.core_only
def test_otlp_stacks_are_the_known_shape(run):
    scores = {}
    main_exp, worker_exp = run.expected[ks.MAIN], run.expected[ks.WORKER]
    for req in run.requests():
        for frames, attrs, value, _ in req.samples():
            tid, name = attrs.get("thread.id"), attrs.get("thread.name")
            assert tid in run.tids, "thread.id %r is not a thread of %d (%s)" % (
                tid, run.pid, run.tids)
            want = e2e.ks_thread_names(run.pid, run.tids).get(tid)
            assert name == want, "thread %d named %r, threading says %r" % (tid, name, want)
            for qual, path, line, start in frames:
                if path == run.script:
                    want = run.defs.get(qual)
                    assert want == start, "%s starts at line %s, its def is at %s" % (
                        qual, start, want)
            if tid not in scores:
                scores[tid] = (e2e.ThreadScore(main_exp, [worker_exp]) if tid == run.pid
                               else e2e.ThreadScore(worker_exp, [main_exp]))
            scores[tid].add([(q, p, l) for q, p, l, _ in frames], value // req.period)
    assert set(scores) == set(run.tids), "sampled threads %s, workload threads %s" % (
        sorted(scores), run.tids)
    for tid, s in scores.items():
        assert s.match_fraction >= MATCH_MIN, "thread %d: %s" % (tid, s.report())
        assert s.foreign == 0, "thread %d shows the other thread's stacks: %s" % (
            tid, s.report())
        missing = [p for p in s.expected if not s.phases[p]]
        assert not missing, "thread %d: no samples of %s: %s" % (tid, missing, s.report())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(text, name, **labels):
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line)
        if m and m.group(1) == name and ",".join(sorted(m.group(2).split(","))) == want:
            return float(m.group(3))
    return None


@pytest.mark.core_only
def test_otlp_retries_a_503_and_drops_a_400(pywalk, interp, start_target, tmp_path):
    """A receiver that is unavailable once (503) gets the same bytes again after the backoff,
    the same profile_id with them, so a back end can tell a repeat; a receiver that refuses
    (400, what a version-aware receiver answers a development version it does not support)
    gets each window once, and the agent counts it rejected on /metrics."""
    target = start_target(interp)
    answers = {0: 503, 1: 200}
    rcv = Receiver(lambda n: answers.get(n, 400))
    port = free_port()
    argv = [pywalk, "agent", "-p", str(target.pid), "--interval", "%ds" % INTERVAL_S, "-F",
            str(HZ), "--otlp", rcv.url + "/", "--metrics", "127.0.0.1:%d" % port]
    agent = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True)
    text = ""
    try:
        rcv.wait_for(4, 4 * INTERVAL_S + 40, agent)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the metrics text is rebuilt once a second
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                        timeout=10) as r:
                text = r.read().decode()
            if (metric(text, "pywalk_export_profiles_total", sink="otlp",
                       result="rejected") or 0) >= 2:
                break
            time.sleep(0.2)
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=60)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
        rcv.stop()
    reqs = rcv.requests
    why = "agent exit %s, %d requests, refused %s\n%s\n%s" % (
        agent.returncode, len(reqs), rcv.refused, err, text)
    # nothing refused: the URL's trailing '/' was dropped before the path was added
    assert agent.returncode == 0 and not rcv.refused and len(reqs) >= 4, why
    bodies = [b for _, _, b in reqs]
    assert reqs[1][2] == bodies[0], "the retry after a 503 is not the same request"
    assert reqs[1][0] - reqs[0][0] >= 0.5, "retried without a backoff"
    assert len(set(bodies[1:])) == len(bodies) - 1, "a request refused with 400 was resent"
    assert metric(text, "pywalk_export_profiles_total", sink="otlp", result="exported") == 1, why
    assert metric(text, "pywalk_export_failed_attempts_total", sink="otlp") == 1, why
    assert metric(text, "pywalk_export_profiles_total", sink="otlp", result="rejected") >= 2, why


@pytest.mark.core_only
def test_otlp_receiver_that_never_answers_lets_the_agent_exit(pywalk, interp, start_target,
                                                               tmp_path):
    """SIGTERM while the OTLP receiver accepts connections and never answers (a listening
    socket nobody reads): the agent exits 0 within --flush-timeout 3s and some slack, the
    windows it could not deliver counted dropped. (Its request once had no cancel hook: it
    waited out the 30 s request timeout.)"""
    target = start_target(interp)
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)  # connections complete in the kernel's backlog; nothing is read
    port = free_port()
    argv = [pywalk, "agent", "-p", str(target.pid), "--interval", "1s", "-F", str(HZ),
            "--otlp", "http://127.0.0.1:%d" % hole.getsockname()[1], "--flush-timeout", "3s",
            "--metrics", "127.0.0.1:%d" % port]
    agent = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, universal_newlines=True)
    try:
        def windows():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                            timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                return 0
            return sum(float(v) for v in re.findall(
                r"^pywalk_window_profiles_total(?:\{[^}]*\})? (\S+)$", text, re.M))
        e2e.wait_for(lambda: windows() >= 3, 40, "3 windows made")
        t0 = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        _, err = agent.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
        hole.close()
    assert agent.returncode == 0, err
    assert took <= 3 + 3.0, "exit took %.1f s with --flush-timeout 3s\n%s" % (took, err)
    m = re.search(r"\botlp: (\d+) profiles exported, (\d+) rejected, (\d+) dropped", err)
    assert m and m.group(1) == "0" and int(m.group(3)) >= 3, err
