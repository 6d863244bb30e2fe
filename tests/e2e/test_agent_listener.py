# SPDX-License-Identifier: MIT
"""End-to-end tests of who may read `pywalk agent --metrics` and what it takes to starve
it, against a real agent and real clients (tests/targets/known_shape.py on the core
interpreter):

* a loopback listener answers only requests whose Host names it (403: DNS rebinding);
* --metrics-token-file: no or a wrong bearer token is 401, the right one reads, also for
  another uid; a badly protected token file, or a non-loopback address without a token,
  is refused at start with one line saying why;
* unix:PATH: the socket is root's, 0600 (0660 with --metrics-group), another uid's
  connect fails with EACCES, a symlink or a file at PATH is not replaced, a stale socket
  is, the socket goes at exit;
* a slowloris (from one address and from 40) and a flood of 1,000 connections (from 40
  addresses, 127.0.0.2-41) do not stop /metrics for a scraper on 127.0.0.1; four `seconds=300` pulls whose clients went away give their
  slots back at once; a pull that outgrows --pull-size ends with 503 and is counted;
* --metrics-tls-cert/--metrics-tls-key: HTTPS (a self-signed certificate from openssl),
  plain HTTP gets no answer; a key others can read is refused.
"""
import contextlib
import errno
import grp
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from test_agent_ops import Agent, agents, free_port, http_get, metric, parse_metrics  # noqa: F401

NOBODY = 65534
ATTACKER = "127.0.0.2"  # loopback too, but another client address than the scraper's
SCRAPE_DEADLINE_S = 5


def refused(ag_metrics, reason):
    return metric(ag_metrics, "pywalk_listener_refused_total", reason=reason)


def raw_request(sock, path, host="localhost", headers=()):
    req = "GET %s HTTP/1.0\r\nHost: %s\r\n%s\r\n" % (
        path, host, "".join("%s: %s\r\n" % h for h in headers))
    sock.sendall(req.encode())


def read_status(sock, timeout=30):
    """The status code of the answer on `sock` (HTTP/1.0: read to its end)."""
    sock.settimeout(timeout)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    assert data.startswith(b"HTTP/1."), "not an HTTP answer: %r" % data[:200]
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[-1]


def tcp_get(port, path, host=None, headers=(), timeout=30):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        raw_request(s, path, host or "127.0.0.1:%d" % port, headers)
        return read_status(s, timeout)


def unix_get(path, url, headers=(), timeout=30):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(path)
        raw_request(s, url, "localhost", headers)
        return read_status(s, timeout)


def as_nobody(code, group=None):
    """Run Python `code` as uid nobody (and group `group`, else nogroup); its stdout."""
    gid = grp.getgrnam(group).gr_gid if group else NOBODY
    r = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % gid,
                        "--clear-groups", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("%s: not within %d s" % (what, timeout))


def start_listening(pywalk, args, tmp, ready):
    """An agent with its own --metrics arguments, once `ready()` answers."""
    ag = Agent(pywalk, args, tmp, metrics=False)

    def up():
        assert ag.proc.poll() is None, "agent exited %s:\n%s" % (ag.proc.returncode,
                                                                ag.stderr())
        try:
            return ready()
        except OSError:
            return False
    wait_for(up, 30, "agent listening")
    return ag


def refused_start(pywalk, args, tmp):
    ag = Agent(pywalk, args, tmp, metrics=False)
    try:
        rc = ag.proc.wait(30)
    except subprocess.TimeoutExpired:
        ag.kill()
        raise AssertionError("agent started with %s:\n%s" % (args, ag.stderr()))
    return rc, ag.stderr()


def token_file(tmp, token="s3cret-Token.42", mode=0o600):
    p = tmp / "metrics.token"
    p.write_text(token + "\n")
    os.chmod(p, mode)
    return p


@pytest.fixture
def run_dir():
    """A directory in /run that others may enter (so only the socket's own mode decides),
    root's, removed at teardown."""
    d = tempfile.mkdtemp(prefix="pywalk-test-", dir="/run")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# --- who may read -------------------------------------------------------------------


@pytest.mark.core_only
def test_loopback_listener_refuses_another_host_header(pywalk, interp, start_target, agents,
                                                       tmp_path):
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid], tmp_path)
    for host in ("evil.example", "evil.example:%d" % ag.port, "127.0.0.1.evil.example",
                 "localhost:1%d" % ag.port):
        status, body = tcp_get(ag.port, "/metrics", host=host)
        assert status == 403, "Host %s: %d %r" % (host, status, body)
    status, _ = tcp_get(ag.port, "/debug/pprof/profile?seconds=1", host="evil.example")
    assert status == 403, "a pull with Host evil.example: %d" % status
    for host in ("localhost:%d" % ag.port, "127.0.0.1:%d" % ag.port, "[::1]:%d" % ag.port,
                 "localhost", "LOCALHOST:%d" % ag.port):
        status, body = tcp_get(ag.port, "/metrics", host=host)
        assert status == 200, "Host %s: %d %r" % (host, status, body)
    wait_for(lambda: refused(ag.metrics(), "host") == 5, 10, "5 refusals counted")
    # a reload's new listener goes on counting: a counter never goes back
    ag.send(signal.SIGHUP)
    wait_for(lambda: ag.stderr().count("SIGHUP: exporting") == 1, 10, "the reload")
    ag.wait_listening()
    tcp_get(ag.port, "/metrics", host="evil.example")
    wait_for(lambda: refused(ag.metrics(), "host") == 6, 10, "6 refusals across a reload")


@pytest.mark.core_only
def test_token_is_needed_by_every_request_and_every_uid(pywalk, interp, start_target,
                                                        tmp_path):
    t = start_target(interp)
    token = "s3cret-Token.42"
    tok = token_file(tmp_path, token)
    port = free_port()
    auth = [("Authorization", "Bearer " + token)]
    ag = start_listening(pywalk, ["-p", t.pid, "--metrics", "127.0.0.1:%d" % port,
                                  "--metrics-token-file", tok], tmp_path,
                         lambda: tcp_get(port, "/metrics", headers=auth)[0] == 200)
    try:
        for path in ("/metrics", "/debug/pprof/profile?seconds=1", "/"):
            for headers in ((), [("Authorization", "Bearer wrong")],
                            [("Authorization", "Bearer " + token[:-1])],
                            [("Authorization", "Bearer " + token + "x")],
                            [("Authorization", "Basic " + token)]):
                status, _ = tcp_get(port, path, headers=headers)
                assert status == 401, "%s with %s: %d" % (path, headers, status)
        status, body = tcp_get(port, "/debug/pprof/profile?seconds=1", headers=auth)
        assert status == 200 and body[:2] == b"\x1f\x8b", (status, body[:100])
        code = ("import socket\n"
                "def get(h):\n"
                "    s = socket.create_connection(('127.0.0.1', %d))\n"
                "    s.sendall(b'GET /metrics HTTP/1.0\\r\\nHost: localhost\\r\\n' + h +"
                " b'\\r\\n')\n"
                "    return s.makefile('rb').readline().split()[1].decode()\n"
                "print(get(b''), get(b'Authorization: Bearer %s\\r\\n'))\n" % (port, token))
        assert as_nobody(code) == "401 200", "uid nobody without, then with the token"
        m = parse_metrics(tcp_get(port, "/metrics", headers=auth)[1].decode())
        assert refused(m, "token") >= 15, m
        assert token not in ag.stderr(), "the token is in the agent's log"
    finally:
        ag.kill()


@pytest.mark.core_only
def test_token_file_others_can_read_or_non_loopback_without_token_is_refused(pywalk,
                                                                            tmp_path):
    tok = token_file(tmp_path, mode=0o640)
    rc, err = refused_start(pywalk, ["--metrics", "127.0.0.1:%d" % free_port(),
                                     "--metrics-token-file", tok], tmp_path)
    assert rc != 0 and "%s must be a regular file owned by root" % tok in err, err
    assert "s3cret" not in err, err
    # on a port that is taken: the refusal is the configuration's, made before any bind
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        rc, err = refused_start(pywalk, ["--metrics", "0.0.0.0:%d" % taken.getsockname()[1]],
                                tmp_path)
    assert rc != 0 and "not a loopback address" in err and "--metrics-token-file" in err, err
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    os.chmod(empty, 0o600)
    rc, err = refused_start(pywalk, ["--metrics", "127.0.0.1:%d" % free_port(),
                                     "--metrics-token-file", empty], tmp_path)
    assert rc != 0 and "first line must be the token" in err, err


@pytest.mark.core_only
def test_unix_socket_is_roots_and_another_uid_cannot_connect(pywalk, interp, start_target,
                                                             tmp_path, run_dir):
    t = start_target(interp)
    sock = os.path.join(run_dir, "agent.sock")
    ag = start_listening(pywalk, ["-p", t.pid, "--metrics", "unix:" + sock], tmp_path,
                         lambda: unix_get(sock, "/metrics")[0] == 200)
    try:
        st = os.lstat(sock)
        assert stat.S_ISSOCK(st.st_mode) and st.st_uid == 0 and st.st_gid == 0, st
        assert stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
        code = ("import socket, errno\n"
                "s = socket.socket(socket.AF_UNIX)\n"
                "try:\n"
                "    s.connect(%r)\n"
                "    print('connected')\n"
                "except OSError as e:\n"
                "    print(errno.errorcode[e.errno])\n" % sock)
        assert as_nobody(code) == "EACCES"
        status, body = unix_get(sock, "/debug/pprof/profile?seconds=1")
        assert status == 200 and body[:2] == b"\x1f\x8b", (status, body[:100])
    finally:
        rc, _ = ag.stop()
    assert rc == 0, ag.stderr()
    assert not os.path.lexists(sock), "the socket is left after exit"
    # --metrics-group: 0660 and that group's members connect; a stale socket is replaced
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(sock)
    stale.close()
    ag = start_listening(pywalk, ["-p", t.pid, "--metrics", "unix:" + sock,
                                  "--metrics-group", "nogroup"], tmp_path,
                         lambda: unix_get(sock, "/metrics")[0] == 200)
    try:
        st = os.lstat(sock)
        assert stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)
        assert st.st_gid == grp.getgrnam("nogroup").gr_gid, st
        code = ("import socket\n"
                "s = socket.socket(socket.AF_UNIX)\n"
                "s.connect(%r)\n"
                "s.sendall(b'GET /metrics HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n')\n"
                "print(s.makefile('rb').readline().split()[1].decode())\n" % sock)
        assert as_nobody(code, group="nogroup") == "200"
    finally:
        ag.stop()


@pytest.mark.core_only
def test_unix_socket_path_that_is_not_a_socket_is_not_replaced(pywalk, tmp_path, run_dir):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    sock = os.path.join(run_dir, "agent.sock")
    os.symlink(victim, sock)
    rc, err = refused_start(pywalk, ["--metrics", "unix:" + sock], tmp_path)
    assert rc != 0 and "exists and is not a socket" in err, err
    assert os.path.islink(sock) and victim.read_text() == "keep me\n"
    os.unlink(sock)
    with open(sock, "w") as f:
        f.write("a file\n")
    rc, err = refused_start(pywalk, ["--metrics", "unix:" + sock], tmp_path)
    assert rc != 0 and "exists and is not a socket" in err, err
    os.unlink(sock)
    os.chmod(run_dir, 0o777)
    rc, err = refused_start(pywalk, ["--metrics", "unix:" + sock], tmp_path)
    assert rc != 0 and "no one else can write" in err, err
    assert not os.path.lexists(sock)


# --- starving the listener ------------------------------------------------------------


def scrape_once(port):
    """/metrics within SCRAPE_DEADLINE_S: a connection refused or cut while a burst of new
    connections is being turned away is tried again within the deadline. The number of
    attempts it took."""
    t0 = time.monotonic()
    attempts, why = 0, None
    while time.monotonic() - t0 < SCRAPE_DEADLINE_S:
        attempts += 1
        try:
            status, _ = tcp_get(port, "/metrics", timeout=SCRAPE_DEADLINE_S)
            assert status == 200, status
            return attempts
        except (OSError, AssertionError) as e:
            why = e
            time.sleep(0.05)
    raise AssertionError("/metrics on port %d did not answer within %d s (%d attempts, "
                         "last: %r)" % (port, SCRAPE_DEADLINE_S, attempts, why))


def scrape_while(ag, attack, seconds):
    """Run `attack(stop)` in a thread; meanwhile /metrics from 127.0.0.1 must answer
    within SCRAPE_DEADLINE_S every time. Returns (scrapes, attempts they took)."""
    stop = threading.Event()
    th = threading.Thread(target=attack, args=(stop,), daemon=True)
    th.start()
    scrapes = attempts = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            attempts += scrape_once(ag.port)
            scrapes += 1
            time.sleep(0.2)
    finally:
        stop.set()
        th.join(60)
    return scrapes, attempts


def attacker_socket(addr=ATTACKER):
    s = socket.socket()
    s.bind((addr, 0))
    return s


@pytest.mark.core_only
@pytest.mark.parametrize("sources", [1, 40])
def test_slowloris_does_not_stop_metrics(pywalk, interp, start_target, agents, tmp_path,
                                         sources):
    """From one client address, and from 40 (past what a per-address limit holds off)."""
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid], tmp_path)
    addrs = ["127.0.0.%d" % (2 + i) for i in range(sources)]
    opened, held_to_the_end = [0], []

    def slowloris(stop):
        """Keep up to 400 connections sending a header a byte at a time; reopen the
        ones the agent closes, at most 400 each half second (20,000 in all)."""
        conns = []
        while not stop.is_set() and opened[0] < 20000:
            while len(conns) < 400 and opened[0] < 20000:
                s = attacker_socket(addrs[opened[0] % len(addrs)])
                s.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    s.connect(("127.0.0.1", ag.port))
                conns.append(s)
                opened[0] += 1
            alive = []
            for s in conns:
                try:
                    s.send(b"GET /metrics HTTP/1.1\r\nX-a: b"[:1 + len(alive) % 8])
                    alive.append(s)
                except OSError:
                    s.close()
            conns = alive
            stop.wait(0.5)
        held_to_the_end.append(stop.is_set())
        for s in conns:
            s.close()

    n, attempts = scrape_while(ag, slowloris, 15)
    cut = refused(ag.metrics(), "cut_waiting")
    print("slowloris from %d addresses: %d connections opened, %d cut, %d scrapes "
          "answered in %d attempts" % (sources, opened[0], cut, n, attempts))
    assert held_to_the_end == [True], "the attack stopped before the scrapes did"


@pytest.mark.core_only
def test_a_thousand_connections_do_not_stop_metrics(pywalk, interp, start_target, agents,
                                                    tmp_path):
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid], tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    held = []

    def flood(stop):
        for i in range(1000):
            if stop.is_set():
                break
            s = attacker_socket("127.0.0.%d" % (2 + i % 40))
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError, OSError):
                s.connect(("127.0.0.1", ag.port))
            held.append(s)
        stop.wait(30)
        for s in held:
            s.close()

    try:
        n, attempts = scrape_while(ag, flood, 12)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print("1,000 connections from 40 addresses held: %d cut, %d scrapes answered in %d "
          "attempts" % (refused(ag.metrics(), "cut_waiting"), n, attempts))
    assert len(held) == 1000


@pytest.mark.core_only
def test_pulls_whose_clients_went_away_give_their_slots_back(pywalk, interp, start_target,
                                                             agents, tmp_path):
    t = start_target(interp)
    ag = agents(pywalk, ["-p", t.pid], tmp_path)
    pulls = []
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", ag.port))
        raw_request(s, "/debug/pprof/profile?seconds=300", "127.0.0.1:%d" % ag.port)
        pulls.append(s)
    # a fifth sent before the four reach the agent would take a tap from one of them
    wait_for(lambda: metric(ag.metrics(), "pywalk_pulls_in_progress") == 4,
             15, "the four pulls in progress")
    # the four hold every tap: a fifth is turned away
    got = http_get(ag.url + "/debug/pprof/profile?seconds=1")
    assert got == (503, b"too many profiles at once\n"), got
    for s in pulls:
        s.close()
    t0 = time.monotonic()
    got = wait_for(lambda: http_get(ag.url + "/debug/pprof/profile?seconds=1"), 15,
                   "a pull after the four clients went away")
    while got[0] == 503 and time.monotonic() - t0 < 15:
        time.sleep(0.2)
        got = http_get(ag.url + "/debug/pprof/profile?seconds=1")
    took = time.monotonic() - t0
    print("a pull after four abandoned ones: %d after %.1f s" % (got[0], took))
    assert got[0] == 200, "the abandoned pulls still hold the taps after %.1f s" % took
    assert http_get(ag.url + "/metrics", timeout=SCRAPE_DEADLINE_S)[0] == 200
    wait_for(lambda: refused(ag.metrics(), "client_gone") == 4, 10,
             "four pulls counted as client_gone")


@pytest.mark.core_only
def test_pull_over_its_memory_budget_ends_with_503(pywalk, interp, start_target, agents,
                                                   tmp_path):
    # every sample a function not seen before: the pull's profile only grows
    t = start_target(interp, "--names", "unique", "--children", "0", "--forks", "0",
                     script="code_churn.py")
    ag = agents(pywalk, ["-p", t.pid, "--frequency", "199", "--pull-size", "16K"], tmp_path)
    t0 = time.monotonic()
    status, body = http_get(ag.url + "/debug/pprof/profile?seconds=60", timeout=90)
    took = time.monotonic() - t0
    print("a 60 s pull with a 16K budget: %d after %.1f s: %r" % (status, took, body))
    assert status == 503 and b"--pull-size" in body, (status, body)
    assert took < 45, "the pull ran %.1f s past its budget" % took
    wait_for(lambda: refused(ag.metrics(), "memory_budget") == 1, 10,
             "the pull counted as memory_budget")


# --- TLS ------------------------------------------------------------------------------


def self_signed(tmp):
    """A certificate for 127.0.0.1 and localhost, and its key (0600)."""
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key),
                        "-out", str(cert)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    os.chmod(key, 0o600)
    return cert, key


@pytest.mark.core_only
def test_tls_serves_https_only(pywalk, interp, start_target, tmp_path):
    import ssl
    import urllib.request
    t = start_target(interp)
    cert, key = self_signed(tmp_path)
    port = free_port()
    ctx = ssl.create_default_context(cafile=str(cert))

    def https_get(path):
        with urllib.request.urlopen("https://127.0.0.1:%d%s" % (port, path), context=ctx,
                                    timeout=30) as r:
            return r.status, r.read()
    ag = start_listening(pywalk, ["-p", t.pid, "--metrics", "127.0.0.1:%d" % port,
                                  "--metrics-tls-cert", cert, "--metrics-tls-key", key],
                         tmp_path, lambda: https_get("/metrics")[0] == 200)
    try:
        status, body = https_get("/debug/pprof/profile?seconds=1")
        assert status == 200 and body[:2] == b"\x1f\x8b", (status, body[:100])
        with pytest.raises((OSError, AssertionError)):
            tcp_get(port, "/metrics", timeout=10)  # plain HTTP gets no HTTP answer
    finally:
        ag.kill()
    os.chmod(key, 0o644)
    rc, err = refused_start(pywalk, ["--metrics", "127.0.0.1:%d" % free_port(),
                                     "--metrics-tls-cert", cert, "--metrics-tls-key", key],
                            tmp_path)
    assert rc != 0 and "--metrics-tls-key %s must be a regular file owned by root" % key \
        in err, err
    assert "PRIVATE KEY" not in err, err
    rc, err = refused_start(pywalk, ["--metrics", "127.0.0.1:%d" % free_port(),
                                     "--metrics-tls-cert", cert], tmp_path)
    assert rc != 0 and "go together" in err, err
