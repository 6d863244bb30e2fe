# SPDX-License-Identifier: MIT
"""Loopback stand-ins for the back ends `pywalk agent` sends to, for its e2e tests.

Neither Grafana Pyroscope nor Parca can be installed on the test machines, so each
Receiver implements one back end's documented request shape and checks every request
against it, strictly, the way the real server would refuse a malformed one (400 with the
reason, and the reason kept in `problems`):

* pyroscope: `POST PREFIX/ingest?name=APP{k=v,...}&from=UNIX_S&until=UNIX_S&sampleRate=HZ
  &spyName=NAME&format=pprof`, a multipart/form-data body whose part named `profile`
  holds the gzipped pprof; optional `X-Scope-OrgID` (tenant) and `Authorization`.
* parca: grpc-gateway's mapping of ProfileStoreService/WriteRaw, `POST
  PREFIX/profiles/writeraw` with JSON `{"series": [{"labels": {"labels": [{"name": ...,
  "value": ...}, ...]}, "samples": [{"rawProfile": BASE64}]}], "normalized": BOOL}`;
  `__name__` is required among the labels.

Every request is stored (headers, body, what was parsed out of it, what was answered).
The pprof payloads are decoded by `go tool pprof -raw` (decode_pprof), the same decoder
the back ends' own tooling uses, not by a parser of ours.

Faults are scripted: a plan of actions consumed one per request (answer a status, answer
late, close the connection without answering, answer 401 echoing the credentials), and
the listener can be down (the port stays reserved: connections are refused), come up,
go down again, or accept connections that are never served (a black hole).
"""
import base64
import binascii
import collections
import datetime
import email.parser
import email.policy
import gzip
import http.server
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

# Prometheus label names (Parca's and Pyroscope's labels follow them)
LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# Pyroscope's application name: the part of `name` before the labels
APP_NAME_RE = re.compile(r"^[a-zA-Z0-9_.\-/:]+$")
PYROSCOPE_PARAMS = {"name", "from", "until", "sampleRate", "spyName", "format", "units",
                    "aggregationType"}
PYROSCOPE_REQUIRED = ("name", "from", "until", "sampleRate", "spyName", "format")


class Action:
    """What the receiver does with one request."""

    def __init__(self, kind, status=200, delay_s=0.0, body=b""):
        self.kind, self.status, self.delay_s, self.body = kind, status, delay_s, body

    def __repr__(self):
        return "Action(%s, %d, %.1f s)" % (self.kind, self.status, self.delay_s)


def ok(delay_s=0.0):
    return Action("answer", 200, delay_s)


def status(code, body=b"scripted failure\n"):
    return Action("answer", code, 0.0, body)


def close():
    """Read the request, then close the connection without a byte of answer."""
    return Action("close")


def echo_auth(code=401):
    """Answer `code` with the request's credentials in the body (a careless proxy)."""
    return Action("echo_auth", code)


class Request:
    """One request as received, and what the receiver made of it."""

    def __init__(self, kind, method, target, headers, body):
        self.kind = kind
        self.time = time.monotonic()
        self.method = method
        self.target = target
        self.path, _, self.raw_query = target.partition("?")
        self.headers = headers          # email.message.Message (case-insensitive get)
        self.body = body
        self.problems = []              # how it deviates from the documented shape
        self.query = {}                 # pyroscope: parameter -> value
        self.app = None                 # pyroscope: APP of name=APP{...}
        self.labels = None              # {name: value}
        self.pprof = []                 # gzipped pprof payloads (parca: one per sample)
        self.normalized = None          # parca
        self.action = None
        self.answered = None            # status code sent, None if closed unanswered

    @property
    def accepted(self):
        return self.answered is not None and 200 <= self.answered < 300

    def header(self, name):
        return self.headers.get(name)

    def __repr__(self):
        return "<%s %s %s -> %s %s>" % (self.kind, self.method, self.target[:80],
                                        self.answered, self.problems)


def _parse_pyroscope(req, prefix):
    p = req.problems
    if req.method != "POST":
        p.append("method %s, not POST" % req.method)
    if req.path != prefix + "/ingest":
        p.append("path %r, not %r" % (req.path, prefix + "/ingest"))
    try:
        pairs = urllib.parse.parse_qsl(req.raw_query, keep_blank_values=True,
                                       strict_parsing=True, errors="strict")
    except (ValueError, UnicodeDecodeError) as e:
        p.append("query does not parse: %s" % e)
        pairs = []
    for k, v in pairs:
        if k in req.query:
            p.append("query parameter %s given twice" % k)
        if k not in PYROSCOPE_PARAMS:
            p.append("unknown query parameter %s" % k)
        req.query[k] = v
    for k in PYROSCOPE_REQUIRED:
        if k not in req.query:
            p.append("query parameter %s missing" % k)
    for k in ("from", "until", "sampleRate"):
        if k in req.query and not re.match(r"^[0-9]+$", req.query[k]):
            p.append("%s=%r is not a number" % (k, req.query[k]))
    if req.query.get("format", "pprof") != "pprof":
        p.append("format=%r, not pprof" % req.query.get("format"))
    name = req.query.get("name", "")
    m = re.match(r"^([^{}]*)\{([^{}]*)\}$", name)
    if not m:
        p.append("name %r is not APP{labels}" % name)
    else:
        req.app = m.group(1)
        if not APP_NAME_RE.match(req.app):
            p.append("application name %r" % req.app)
        req.labels = {}
        for pair in m.group(2).split(",") if m.group(2) else []:
            k, eq, v = pair.partition("=")
            if not eq or not LABEL_NAME_RE.match(k) or "=" in v or not v:
                p.append("label %r is not name=value" % pair)
                continue
            if k in req.labels:
                p.append("label %s given twice" % k)
            req.labels[k] = v
    ctype = req.header("Content-Type") or ""
    if not ctype.startswith("multipart/form-data"):
        p.append("Content-Type %r, not multipart/form-data" % ctype)
        return
    # the body as a MIME message: the same parser multipart servers rely on
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + req.body)
    if not msg.is_multipart() or msg.defects:
        p.append("multipart body does not parse (%s)" % msg.defects)
        return
    parts = {}
    for part in msg.iter_parts():
        disp = part.get("Content-Disposition", "")
        if part.get_content_disposition() != "form-data" or not part.get_param(
                "name", header="Content-Disposition"):
            p.append("a part without form-data name: %r" % disp)
            continue
        name = part.get_param("name", header="Content-Disposition")
        if name in parts:
            p.append("part %s given twice" % name)
        parts[name] = part.get_payload(decode=True)
    if set(parts) - {"profile", "prev_profile", "sample_type_config"}:
        p.append("unexpected parts %s" % sorted(set(parts) - {"profile"}))
    if "profile" not in parts:
        p.append("no part named profile (parts: %s)" % sorted(parts))
        return
    req.pprof.append(parts["profile"])


def _parse_parca(req, prefix):
    p = req.problems
    if req.method != "POST":
        p.append("method %s, not POST" % req.method)
    if req.path != prefix + "/profiles/writeraw":
        p.append("path %r, not %r" % (req.path, prefix + "/profiles/writeraw"))
    if req.raw_query:
        p.append("query %r on writeraw" % req.raw_query)
    ctype = (req.header("Content-Type") or "").split(";")[0].strip()
    if ctype != "application/json":
        p.append("Content-Type %r, not application/json" % req.header("Content-Type"))
    try:
        doc = json.loads(req.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        p.append("body is not JSON: %s" % e)
        return
    if not isinstance(doc, dict) or set(doc) - {"series", "normalized", "tenant"}:
        p.append("unexpected top-level JSON %r" % (list(doc) if isinstance(doc, dict)
                                                    else type(doc)))
        return
    req.normalized = doc.get("normalized")
    if not isinstance(req.normalized, bool):
        p.append("normalized is %r, not a boolean" % (req.normalized,))
    series = doc.get("series")
    if not isinstance(series, list) or len(series) != 1:
        p.append("series is not a list of one (%r)" % type(series))
        return
    s = series[0]
    if not isinstance(s, dict) or set(s) != {"labels", "samples"}:
        p.append("series entry has keys %r" % (list(s) if isinstance(s, dict) else s))
        return
    ls = s["labels"]
    if not isinstance(ls, dict) or list(ls) != ["labels"] or not isinstance(ls["labels"],
                                                                             list):
        p.append("labels is not {\"labels\": [...]}: %r" % (ls,))
        return
    req.labels = {}
    for l in ls["labels"]:
        if not isinstance(l, dict) or set(l) != {"name", "value"} or \
                not all(isinstance(x, str) for x in l.values()):
            p.append("label %r is not {name, value}" % (l,))
            continue
        if not LABEL_NAME_RE.match(l["name"]):
            p.append("label name %r is not a valid label name" % l["name"])
        if l["name"] in req.labels:
            p.append("label %s given twice" % l["name"])
        req.labels[l["name"]] = l["value"]
    if "__name__" not in req.labels:
        p.append("no __name__ label (Parca requires one)")
    samples = s["samples"]
    if not isinstance(samples, list) or not samples:
        p.append("samples is not a non-empty list")
        return
    for smp in samples:
        if not isinstance(smp, dict) or list(smp) != ["rawProfile"] or \
                not isinstance(smp["rawProfile"], str):
            p.append("sample %r is not {rawProfile: BASE64}" % (str(smp)[:80],))
            continue
        try:
            req.pprof.append(base64.b64decode(smp["rawProfile"], validate=True))
        except (binascii.Error, ValueError) as e:
            p.append("rawProfile is not base64: %s" % e)


class Receiver:
    """A back end on 127.0.0.1 (ephemeral port, kept for the receiver's life)."""

    def __init__(self, kind, prefix=""):
        assert kind in ("pyroscope", "parca")
        self.kind = kind
        self.prefix = prefix
        self.requests = []
        self.plan = collections.deque()
        self.default = ok()
        self.lock = threading.Lock()
        self.server = None
        self.state = "reserved"
        self.conns = set()
        self.blackholed = []
        # a bound socket that does not listen keeps the port ours and refuses connections
        self.reserved = self._bound_socket(0)
        self.port = self.reserved.getsockname()[1]

    @property
    def url(self):
        return "http://127.0.0.1:%d%s" % (self.port, self.prefix)

    def _bound_socket(self, port):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return s

    # --- lifecycle -------------------------------------------------------------------

    def up(self):
        """Listen and serve (from the reserved socket)."""
        assert self.server is None
        rcv = self

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def server_bind(self):
                pass  # the socket is bound already

            def process_request(self, request, client_address):
                with rcv.lock:
                    rcv.conns.add(request)
                super().process_request(request, client_address)

            def shutdown_request(self, request):
                with rcv.lock:
                    rcv.conns.discard(request)
                super().shutdown_request(request)

        srv = Server(("127.0.0.1", self.port), _Handler, bind_and_activate=False)
        srv.socket.close()
        srv.socket = self.reserved
        self.reserved = None
        srv.server_address = srv.socket.getsockname()
        srv.server_activate()
        srv.receiver = self
        self.server = srv
        self.thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.state = "up"
        return self

    def down(self):
        """Stop listening and cut every open connection; the port stays reserved."""
        if self.server:
            self.server.shutdown()
            self.server.socket.close()
            self.thread.join(5)
            self.server = None
        with self.lock:
            conns, self.conns = list(self.conns), set()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._drop_blackhole()
        if self.reserved is None:
            self.reserved = self._bound_socket(self.port)
        self.state = "down"

    def blackhole(self):
        """Listen, and never accept: connections complete in the kernel, nobody answers."""
        assert self.server is None and self.reserved is not None
        self.reserved.listen(64)
        self.blackholed.append(self.reserved)
        self.reserved = None
        self.state = "blackhole"

    def _drop_blackhole(self):
        for s in self.blackholed:
            s.close()
        self.blackholed = []

    def close(self):
        self.down()
        if self.reserved:
            self.reserved.close()
            self.reserved = None

    # --- behaviour -------------------------------------------------------------------

    def script(self, *actions):
        """Actions for the next requests, in order; then the default."""
        with self.lock:
            self.plan.extend(actions)

    def set_default(self, action):
        with self.lock:
            self.default = action

    def _next_action(self):
        with self.lock:
            return self.plan.popleft() if self.plan else self.default

    def _parse(self, req):
        if self.kind == "pyroscope":
            _parse_pyroscope(req, self.prefix)
        else:
            _parse_parca(req, self.prefix)
        for data in req.pprof:
            if data[:2] != b"\x1f\x8b":
                req.problems.append("profile is not gzipped")
                continue
            try:
                gzip.decompress(data)
            except (OSError, EOFError) as e:
                req.problems.append("profile does not gunzip: %s" % e)

    # --- what arrived ----------------------------------------------------------------

    def snapshot(self):
        with self.lock:
            return list(self.requests)

    def accepted(self):
        """Requests answered 2xx, in arrival order."""
        return [r for r in self.snapshot() if r.accepted]

    def wait_for(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.snapshot()):
                return
            time.sleep(0.05)
        raise AssertionError("%s: %s not seen within %.0f s; requests: %s" % (
            self.kind, what, timeout, self.snapshot()))

    def wait_accepted(self, n, timeout):
        self.wait_for(lambda rs: sum(r.accepted for r in rs) >= n, timeout,
                      "%d accepted requests" % n)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the back ends serve it

    def log_message(self, fmt, *args):
        pass

    def _read_body(self):
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self):
        rcv = self.server.receiver
        req = Request(rcv.kind, self.command, self.path, self.headers, self._read_body())
        rcv._parse(req)
        act = rcv._next_action()
        req.action = act
        with rcv.lock:
            rcv.requests.append(req)
        if act.kind == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if act.delay_s:
            time.sleep(act.delay_s)
        code, body = act.status, act.body
        if act.kind == "echo_auth":
            body = ("unauthorized: %s %s\n" % (self.headers.get("Authorization"),
                                                self.headers.get("X-Scope-OrgID"))).encode()
        elif req.problems:
            code, body = 400, ("; ".join(req.problems) + "\n").encode()
        elif code == 200:
            body = b"{}" if rcv.kind == "parca" else b""
        req.answered = code
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if rcv.kind == "parca"
                         else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET = do_PUT = _serve


# --- pprof, as go tool pprof reads it ---------------------------------------------------

class Pprof:
    """A profile as `go tool pprof -raw` prints it."""

    def __init__(self):
        self.period_type = None   # "cpu nanoseconds"
        self.period = None
        self.time_s = None        # TimeNanos as Unix seconds (float)
        self.duration_text = None  # as printed: cut to 4 characters (not a number)
        self.sample_types = []    # ["samples/count", "cpu/nanoseconds[dflt]"]
        self.samples = []         # (values, [location ids, leaf first], {key: str}, {key: num})
        self.locations = {}       # id -> (function, file, line)
        self.comments = []

    def stacks(self):
        """[(count, ((function, file, line), ... root first), str labels, num labels)]"""
        out = []
        for values, locs, sl, nl in self.samples:
            out.append((values[0], tuple(self.locations[i] for i in reversed(locs)), sl, nl))
        return out

    @property
    def total(self):
        return sum(v[0] for v, _, _, _ in self.samples)


_TIME_RE = re.compile(r"^Time: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d+))? ([+-]\d{4})")
# a pseudo-frame ("[off-cpu: sleeping]") has a space in its name and no file; a frozen
# module's file is "<frozen site>"
_LOC_RE = re.compile(r"^\s+(\d+): 0x[0-9a-f]+(?: M=\d+)? (\[[^\]]*\]|\S+) (.*?):(\d+)"
                     r"(?: s=\d+\(.*\))?$")
_LABEL_RE = re.compile(r"(\w+):\[([^\]]*)\]")


def parse_pprof_raw(text):
    p = Pprof()
    section = None
    last_sample = None
    for line in text.splitlines():
        if line.startswith("Comment: "):
            p.comments.append(line[9:])
        elif line.startswith("PeriodType: "):
            p.period_type = line[12:]
        elif line.startswith("Period: "):
            p.period = int(line[8:])
        elif line.startswith("Time: "):
            m = _TIME_RE.match(line)
            assert m, line
            t = datetime.datetime.strptime(m.group(1) + m.group(3), "%Y-%m-%d %H:%M:%S%z")
            p.time_s = t.timestamp() + (float("0." + m.group(2)) if m.group(2) else 0.0)
        elif line.startswith("Duration: "):
            # pprof prints "%.4v" of a Go duration: cut to 4 characters, unit and all
            p.duration_text = line[10:]
        elif line in ("Samples:", "Locations", "Mappings"):
            section = line
        elif section == "Samples:" and not p.sample_types and line.strip():
            p.sample_types = line.split()
        elif section == "Samples:" and line.strip():
            m = re.match(r"^\s+(\d+(?:\s+\d+)*): ((?:\d+ ?)*)$", line)
            if m:
                nums = [int(x) for x in m.group(1).split()]
                locs = [int(x) for x in m.group(2).split()]
                last_sample = (nums, locs, {}, {})
                p.samples.append(last_sample)
                continue
            labels = dict(_LABEL_RE.findall(line))
            assert labels and last_sample, "pprof -raw: unexpected sample line %r" % line
            for k, v in labels.items():
                if re.match(r"^-?\d+$", v):
                    last_sample[3][k] = int(v)
                else:
                    last_sample[2][k] = v
        elif section == "Locations" and line.strip():
            m = _LOC_RE.match(line)
            assert m, "pprof -raw: location line %r" % line
            p.locations[int(m.group(1))] = (m.group(2), m.group(3), int(m.group(4)))
    return p


class PprofDecoder:
    """`go tool pprof -raw` over payloads, with go's caches in a directory of its own."""

    def __init__(self, go, workdir):
        self.go = go
        self.workdir = workdir
        self.env = dict(os.environ, HOME=workdir, GOCACHE=os.path.join(workdir, "gocache"),
                        PPROF_TMPDIR=workdir, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
        self.cache = {}

    def decode(self, data):
        if data in self.cache:
            return self.cache[data]
        with tempfile.NamedTemporaryFile(dir=self.workdir, suffix=".pb.gz",
                                         delete=False) as f:
            f.write(data)
        try:
            r = subprocess.run([self.go, "tool", "pprof", "-raw", f.name],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                               env=self.env)
        finally:
            os.unlink(f.name)
        assert r.returncode == 0, "go tool pprof -raw failed: %s" % r.stderr.decode(
            "utf-8", "replace")
        prof = parse_pprof_raw(r.stdout.decode("utf-8", "replace"))
        self.cache[data] = prof
        return prof
