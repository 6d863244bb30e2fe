# SPDX-License-Identifier: MIT
"""End-to-end tests of `pywalk record`'s output formats: folded, html, speedscope, pprof.

Each format is checked by its real consumer where one exists: the HTML flame graph and
the speedscope app in headless Chromium (driven by playwright-core, tests/e2e/node/),
pprof files by `go tool pprof`. A target whose names are hostile to every syntax
(tests/targets/hostile_names.py) must leave every format valid, with the names shown as
text. Self-contained: its fixtures are its own (conftest.py's are another test suite's).

Needs root and kernel BTF for recording (skipped without them). Tools: go (golang-go),
chromium and node/npm; the Debian ones are installed here when missing (as root); npm
packages go to build/e2e-node from the committed tests/e2e/node/package-lock.json. A
missing tool fails the run under CI (`make test` installs them) and skips it elsewhere.
Screenshots and measurements are kept in tests/e2e/artifacts/ (gitignored).
"""
import contextlib
import functools
import gzip
import hashlib
import http.server
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

import pywalk_e2e as e2e

E2E_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(E2E_DIR))
TARGETS_DIR = os.path.join(REPO, "tests", "targets")
ARTIFACTS = os.path.join(E2E_DIR, "artifacts")
NODE_SRC = os.path.join(E2E_DIR, "node")
NODE_DIR = os.path.join(REPO, "build", "e2e-node")  # build/ is gitignored
PY311 = "/usr/bin/python3.11"  # co_qualname can be replaced from 3.11 on
FREQ_HZ = 499
PERIOD_NS = 10 ** 9 // FREQ_HZ
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"

sys.path.insert(0, TARGETS_DIR)
import hostile_names as hn  # noqa: E402  (the expected names)


def unmet(why):
    """A tool is missing: fail under CI, where `make test` installs it; skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def apt_install(package):
    """Install a Debian package as root; True when it worked."""
    if os.geteuid() != 0:
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    for attempt in range(2):
        if subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=900).returncode == 0:
            return True
        if attempt == 0:  # package lists may be missing or stale
            subprocess.run(["apt-get", "update", "-q"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    return False


def ensure_tool(path_or_name, package):
    found = shutil.which(path_or_name)
    if not found:
        apt_install(package)
        found = shutil.which(path_or_name)
    if not found:
        unmet("%s not found and could not be installed (apt-get install %s)" % (
            path_or_name, package))
    return found


# --- fixtures ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def pywalk_bin():
    if os.geteuid() != 0:
        pytest.skip("recording needs root (BPF, perf events); run the e2e tests as root")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("kernel has no BTF (/sys/kernel/btf/vmlinux)")
    path = os.environ.get("PYWALK") or os.path.join(REPO, "build", "pywalk")
    if not os.access(path, os.X_OK):
        pytest.fail("pywalk binary %s not found: run `make` first (or set PYWALK)" % path)
    if not os.access(PY311, os.X_OK):
        pytest.fail("%s is missing (apt-get install python3.11)" % PY311)
    return path


@pytest.fixture(scope="session")
def go_bin():
    return ensure_tool("go", "golang-go")


@pytest.fixture(scope="session")
def chromium_bin():
    return ensure_tool("/usr/bin/chromium", "chromium")


@pytest.fixture(scope="session")
def node_tools(chromium_bin):
    """build/e2e-node with playwright-core and speedscope from the committed lockfile;
    `npm ci` runs only when the lockfile changed since the last install."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        unmet("node and npm are needed for the browser tests")
    os.makedirs(NODE_DIR, exist_ok=True)
    for name in ("package.json", "package-lock.json", "browser_check.js"):
        shutil.copyfile(os.path.join(NODE_SRC, name), os.path.join(NODE_DIR, name))
    with open(os.path.join(NODE_SRC, "package-lock.json"), "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    stamp = os.path.join(NODE_DIR, "node_modules", ".pywalk-lock-sha256")
    have = open(stamp).read().strip() if os.path.exists(stamp) else ""
    if have != want:
        # no install scripts and no browser download: Debian's chromium is the browser
        env = dict(os.environ, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                           cwd=NODE_DIR, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            unmet("npm ci in %s failed:\n%s" % (NODE_DIR, r.stderr[-2000:]))
        with open(stamp, "w") as f:
            f.write(want + "\n")
    return NODE_DIR


def browser(node_dir, *args):
    """Run browser_check.js; its JSON report."""
    env = dict(os.environ, CHROMIUM="/usr/bin/chromium")
    r = subprocess.run(["node", os.path.join(node_dir, "browser_check.js")] + list(args),
                       cwd=node_dir, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, "browser_check.js %s failed:\n%s" % (args[0], r.stderr[-3000:])
    # split on "\n" only: str.splitlines() would also split inside names at U+2028
    return json.loads(r.stdout.strip().split("\n")[-1])


def artifact(name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    return os.path.join(ARTIFACTS, name)


@contextlib.contextmanager
def target(*args):
    """Run hostile_names.py under python3.11; yields its PID once it printed READY."""
    p = subprocess.Popen([PY311, os.path.join(TARGETS_DIR, "hostile_names.py")] + list(args),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        buf, deadline = b"", time.monotonic() + 20
        while b"READY\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or p.poll() is not None:
                raise AssertionError("target printed no READY (exit %s): %s" % (
                    p.poll(), p.stderr.read().decode(errors="replace") if p.poll() else ""))
            if select.select([p.stdout], [], [], left)[0]:
                buf += os.read(p.stdout.fileno(), 4096)
        yield p.pid
    finally:
        p.kill()
        p.wait()


def record(pywalk, pid, out, *extra, duration="3"):
    r = subprocess.run([pywalk, "record", "-p", str(pid), "-d", duration, "-F", str(FREQ_HZ),
                        "-o", out] + list(extra), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "pywalk record -o %s exited %d:\n%s" % (out, r.returncode,
                                                                     r.stderr)
    assert os.path.getsize(out) > 0, "%s is empty" % out
    return r


@pytest.fixture(scope="module")
def hostile(pywalk_bin, tmp_path_factory):
    """One hostile target recorded once per format (chosen by the file's extension, with
    --threads so thread names show), plus `-f speedscope` overriding a .txt name."""
    d = tmp_path_factory.mktemp("formats")
    out = {"dir": str(d)}
    with target() as pid:
        out["pid"] = pid
        for fmt, name in (("folded", "out.folded"), ("html", "out.html"),
                          ("speedscope", "out.speedscope.json"), ("pprof", "out.pb.gz")):
            out[fmt] = str(d / name)
            record(pywalk_bin, pid, out[fmt], "--threads")
        out["flag"] = str(d / "flag.txt")
        record(pywalk_bin, pid, out["flag"], "-f", "speedscope", duration="1")
    return out


def expected_leaves(**how):
    """(name, file) of every hostile leaf as pywalk reports it (hn.shown's options)."""
    return [(hn.shown(n, **how), hn.shown(f, **how)) for n, f, _ in hn.LEAVES]


# the leaves holding code points no output may show raw (hn.NEVER_RAW)
NEVER_RAW_LEAVES = [(n, f) for n, f, _ in hn.LEAVES if any(c in n + f for c in hn.NEVER_RAW)]


def raw_never_raw(text):
    """The NEVER_RAW code points that occur raw in text."""
    return sorted(set(c for c in hn.NEVER_RAW if c in text))


THREAD_NAME = hn.THREAD_NAME.decode()


# --- folded --------------------------------------------------------------------------

FOLDED_ESC_RE = re.compile(r"\\(\\|n|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def folded_unescape(text):
    """Undo the documented escapes: \\x3b, \\\\, \\n, \\xNN (below 80: this target's
    names are UTF-8), \\uXXXX, \\UXXXXXXXX."""
    def one(m):
        e = m.group(1)
        return "\\" if e == "\\" else "\n" if e == "n" else chr(int(e[1:], 16))
    return FOLDED_ESC_RE.sub(one, text)


def split_frame(frame):
    """(name, file, line) of an unescaped 'name (file:line)'."""
    assert frame.endswith(")"), frame[:200]
    name, _, where = frame[:-1].rpartition(" (")
    path, _, line = where.rpartition(":")
    return name, path, line


def test_format_chosen_by_extension_and_flag(hostile):
    with open(hostile["folded"], "rb") as f:
        assert re.match(rb"^[^\n]+ \d+\n", f.read(1 << 16))
    with open(hostile["html"], "rb") as f:
        assert f.read(15) == b"<!DOCTYPE html>"
    with open(hostile["speedscope"]) as f:
        assert json.load(f)["$schema"] == SPEEDSCOPE_SCHEMA
    with open(hostile["pprof"], "rb") as f:
        assert f.read(2) == b"\x1f\x8b", "pprof output is not gzip"
    with open(hostile["flag"]) as f:  # -f beats the .txt extension
        assert json.load(f)["$schema"] == SPEEDSCOPE_SCHEMA


def test_folded_hostile_one_line_per_stack_and_names_round_trip(hostile):
    with open(hostile["folded"], encoding="utf-8") as f:
        text = f.read()
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    stacks, leaves = set(), set()
    for line in lines:
        m = re.match(r"^(.+) (\d+)$", line)
        assert m, "not 'stack COUNT': %r" % line[:300]
        assert m.group(1) not in stacks, "stack written twice: %r" % line[:300]
        stacks.add(m.group(1))
        frames = [folded_unescape(fr) for fr in m.group(1).split(";")]
        # --threads: the root is the hostile thread name, back in one piece
        assert frames[0] == "%s (%d)" % (THREAD_NAME, hostile["pid"]), frames[0]
        if len(frames) >= 4 and frames[-2].startswith(hn.CALLER[0]):
            assert split_frame(frames[-2])[:2] == hn.CALLER
            leaves.add(split_frame(frames[-1])[:2])
    missing = [n[:60] for n in expected_leaves() if n not in leaves]
    assert not missing, "hostile leaves missing from the folded output: %r" % missing


def test_folded_never_shows_unsafe_code_points_raw(hostile):
    """C1, bidi and zero-width characters are \\uXXXX and a NUL \\x00: the file printed to
    a terminal cannot send CSI or reorder text, and a NUL does not cut a name."""
    with open(hostile["folded"], "rb") as f:
        data = f.read()
    text = data.decode("utf-8")  # valid UTF-8 throughout
    assert not raw_never_raw(text), "raw in the folded file: %r" % raw_never_raw(text)
    for esc in ("\\u009b", "\\u202e", "\\u2066", "\\u2069", "\\u200b", "\\ufeff"):
        assert esc in text, "%s missing from the folded file" % esc
    assert "nul\\x00after (/srv/nul\\x00after.py:" in text


# --- speedscope ----------------------------------------------------------------------

def check_speedscope_document(doc):
    """The parts of speedscope's file-format schema that pywalk uses."""
    assert doc["$schema"] == SPEEDSCOPE_SCHEMA
    assert doc["exporter"].startswith("pywalk ")
    frames = doc["shared"]["frames"]
    for fr in frames:
        assert isinstance(fr["name"], str) and isinstance(fr.get("file", ""), str)
        assert isinstance(fr.get("line", 1), int)
    assert doc["profiles"], "no profiles"
    assert 0 <= doc["activeProfileIndex"] < len(doc["profiles"])
    for prof in doc["profiles"]:
        assert prof["type"] == "sampled" and isinstance(prof["name"], str)
        assert prof["unit"] == "nanoseconds"
        assert len(prof["samples"]) == len(prof["weights"])
        assert all(0 <= i < len(frames) for s in prof["samples"] for i in s)
        assert all(w > 0 and w % PERIOD_NS == 0 for w in prof["weights"])
        assert prof["startValue"] == 0 and prof["endValue"] == sum(prof["weights"])


def test_speedscope_hostile_is_json_with_the_original_names(hostile):
    with open(hostile["speedscope"], encoding="utf-8") as f:
        doc = json.load(f)
    check_speedscope_document(doc)
    frames = set((fr["name"], fr["file"]) for fr in doc["shared"]["frames"])
    missing = [n[:60] for n in expected_leaves() if n not in frames]
    assert not missing, "hostile names missing or changed: %r" % missing
    assert hn.CALLER in frames
    # the names come back whole (NUL included) from \\uXXXX escapes, never raw characters
    with open(hostile["speedscope"], encoding="utf-8") as f:
        text = f.read()
    assert not raw_never_raw(text), "raw in the speedscope file: %r" % raw_never_raw(text)
    for esc in ("\\u009b", "\\u202e", "\\u2066", "\\u200b", "\\ufeff", "nul\\u0000after"):
        assert esc in text, "%s missing from the speedscope file" % esc
    assert doc["name"] == "%s (%d)" % (THREAD_NAME, hostile["pid"])
    assert [p["name"] for p in doc["profiles"]] == ["%s (%d)" % (THREAD_NAME, hostile["pid"])]


@contextlib.contextmanager
def http_server(directory):
    handler = functools.partial(QuietHandler, directory=directory)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield "http://127.0.0.1:%d" % srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_speedscope_hostile_loads_in_the_speedscope_app(hostile, node_tools):
    """The real app (npm speedscope, served on localhost) imports the file through
    #profileURL=, shows the document, and its sandwich view lists the hostile names."""
    site = os.path.join(hostile["dir"], "speedscope-site")
    shutil.copytree(os.path.join(node_tools, "node_modules", "speedscope", "dist", "release"),
                    site, dirs_exist_ok=True)
    shutil.copyfile(hostile["speedscope"], os.path.join(site, "profile.speedscope.json"))
    with http_server(site) as base:
        url = "%s/index.html#profileURL=%s" % (
            base, urllib.parse.quote(base + "/profile.speedscope.json", safe=""))
        res = browser(node_tools, "speedscope", url, artifact("speedscope-hostile.png"))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    assert res["title"] == "%s (%d) - speedscope" % (THREAD_NAME, hostile["pid"]), res["title"]
    for name in ("heavy;semi;colon", "</script><script>window.__pwned=1</script>",
                 "<b>&amp;bold</b>", "quote\"apos'back\\slash", hn.LEAVES[5][0]):
        assert name in res["sandwichText"], "%r not in speedscope's sandwich view" % name


# --- pprof ---------------------------------------------------------------------------

def go_pprof(go, *args):
    r = subprocess.run([go, "tool", "pprof"] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, "go tool pprof %s failed:\n%s" % (" ".join(args), r.stderr)
    # decoded by hand: text mode would turn a "\r" inside a name into "\n"
    return r.stdout.decode("utf-8", "replace")


def test_pprof_hostile_names_shown_by_go_tool_pprof(hostile, go_bin):
    raw = go_pprof(go_bin, "-raw", hostile["pprof"])
    assert "PeriodType: cpu nanoseconds" in raw
    assert "Period: %d\n" % PERIOD_NS in raw
    assert "samples/count cpu/nanoseconds[dflt]" in raw
    # protobuf has no escapes: the names as they are, U+0000 as U+FFFD
    for name, path in expected_leaves(pprof=True) + [hn.CALLER]:
        assert " %s %s:" % (name, path) in raw, "%r not shown by pprof -raw" % name[:60]
    assert "thread_name:[%s]" % THREAD_NAME in raw
    assert "pid:[%d] tid:[%d]" % (hostile["pid"], hostile["pid"]) in raw


def pprof_top(go, path):
    """({function: flat samples}, total) from `pprof -top` counted in samples."""
    out = go_pprof(go, "-top", "-nodecount=1000", "-sample_index=samples", path)
    total = int(re.search(r"of (\d+) total", out).group(1))
    flat = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.+)$", line)
        if m:
            flat[m.group(2)] = int(m.group(1))
    return flat, total


def record_cpu_seconds(pywalk_bin, pid, out, cpu_s, timeout=120):
    """`pywalk record -F 999 -p PID -o OUT` until the target used cpu_s seconds of CPU
    while sampled (a loaded machine gives it less CPU a second: the recording is longer,
    its sample count the same); returns the seconds from "sampling at" to the SIGINT."""
    p = subprocess.Popen([pywalk_bin, "record", "-v", "-p", str(pid), "-F", "999", "-o", out],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    try:
        _, head = e2e.read_until(p.stderr.fileno(), rb"sampling at", 30,
                                 lambda b: "pywalk did not start sampling: %r" % b)
        t0, cpu0 = time.monotonic(), e2e.task_cpu_seconds(pid)
        e2e.wait_for(lambda: e2e.task_cpu_seconds(pid) >= cpu0 + cpu_s, timeout,
                     lambda: "the target used %.2f s of CPU" % (
                         e2e.task_cpu_seconds(pid) - cpu0))
        wall = time.monotonic() - t0
        p.send_signal(signal.SIGINT)
        _, tail = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, (head + tail).decode(errors="replace")
    return wall


def test_pprof_agrees_with_folded(pywalk_bin, go_bin, tmp_path):
    """Two back-to-back recordings of a deterministic workload (leaf CPU time in the ratio
    8:2:...:2), one as pprof and one as folded: the same top function and each function's
    share within 5 binomial sigmas of the two sample counts (about 5 points at the ~4,000
    samples each gets); pprof's -raw and -top agree on the total, and every sample's cpu
    value is its count times the period. Each recording lasts until the target used 4 s of
    CPU, so that a loaded machine does not thin the samples."""
    pb, folded = str(tmp_path / "plain.pb.gz"), str(tmp_path / "plain.folded")
    with target("--plain") as pid:
        wall = record_cpu_seconds(pywalk_bin, pid, pb, 4.0)
        record_cpu_seconds(pywalk_bin, pid, folded, 4.0)
    period = 10 ** 9 // 999
    raw = go_pprof(go_bin, "-raw", pb)
    assert "Period: %d\n" % period in raw
    duration = float(re.search(r"^Duration: ([\d.]+)", raw, re.M).group(1))
    assert wall - 0.5 <= duration <= wall + 4, \
        "pprof duration %.2f s for a recording of %.2f s" % (duration, wall)
    raw_total = 0
    for m in re.finditer(r"^\s+(\d+)\s+(\d+): ", raw, re.M):
        assert int(m.group(2)) == int(m.group(1)) * period, m.group(0)
        raw_total += int(m.group(1))

    flat, top_total = pprof_top(go_bin, pb)
    assert raw_total == top_total
    leaf_counts, folded_total = {}, 0
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            leaf = split_frame(stack.split(";")[-1])[0]
            leaf_counts[leaf] = leaf_counts.get(leaf, 0) + int(count)
            folded_total += int(count)
    assert folded_total > 300 and top_total > 300, "too few samples: %d pprof, %d folded" % (
        top_total, folded_total)
    top = max(flat, key=flat.get)
    assert top == max(leaf_counts, key=leaf_counts.get) == "leaf_0", (flat, leaf_counts)
    for name in set(flat) | set(leaf_counts):
        a = flat.get(name, 0) / top_total
        b = leaf_counts.get(name, 0) / folded_total
        pooled = (flat.get(name, 0) + leaf_counts.get(name, 0)) / (top_total + folded_total)
        tolerance = e2e.binomial_difference_tolerance(top_total, folded_total, pooled)
        assert abs(a - b) <= tolerance, "%s: %.1f%% in pprof, %.1f%% in folded (+- %.1f)" % (
            name, 100 * a, 100 * b, 100 * tolerance)


# --- html ----------------------------------------------------------------------------

def html_data(path):
    """The JSON profile embedded in a flame-graph page."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    start = page.index('<script type="application/json" id="pywalk-data">')
    start = page.index(">", start) + 1
    return json.loads(page[start:page.index("</script>", start)]), page


def test_html_hostile_page_is_safe_and_searchable(hostile, node_tools):
    data, page = html_data(hostile["html"])
    assert page.count("<script") == 2, "a name added a script element"
    strings = set(data["strings"])
    missing = [n[:60] for pair in expected_leaves() for n in pair if n not in strings]
    assert not missing, "names changed in the page's data: %r" % missing
    assert "%s (%d)" % (THREAD_NAME, hostile["pid"]) in strings  # the --threads root
    assert not raw_never_raw(page), "raw in the page: %r" % raw_never_raw(page)

    probes = {"frames": [n for n, _ in NEVER_RAW_LEAVES],
              # by the form shown, by a plain part, and by a name as it is
              "searches": ["rlo\\u202eevil", "\\U202E", "evil_txt", "nul\\x00after",
                           "zero\u200bwidth"]}
    res = browser(node_tools, "flame", hostile["html"], artifact("flame-hostile.png"),
                  "window.__pwned", "caller;", json.dumps(probes))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    assert res["pwned"] == "undefined", "a name's script ran"
    assert res["requests"] == ["file://" + os.path.abspath(hostile["html"])], res["requests"]
    assert res["total"] == data["total"] > 0
    # titled a flame graph, it opens as one (root at the bottom); the toggle makes an icicle
    assert (res["orientation"], res["invertText"]) == ("flame", "Icicle (root at top)"), res
    assert res["rootY"] > res["childY"], res
    assert (res["orientationAfter"], res["invertTextAfter"]) == ("icicle", "Flame (root at bottom)")
    assert res["rootYAfter"] < res["childYAfter"], res
    # the root shows the total sample count
    assert res["rootTooltip"].startswith("all\n%s samples (100.00%% of all)" % (
        "{:,}".format(data["total"]))), res["rootTooltip"]
    # a click zooms into the hostile caller
    assert res["zoomed"].startswith(hn.CALLER[0] + " (" + hn.CALLER[1] + ":"), res["zoomed"]
    assert res["crumbs"].startswith("Zoomed to: " + hn.CALLER[0]), res["crumbs"]
    # the search finds the hostile name (case-insensitive substring)
    assert res["matched"] > 0 and res["matchText"].startswith("Matched: "), res

    # what the page shows of a name (breadcrumbs, tooltip, footer, canvas labels) has the
    # unsafe code points as \\uXXXX text and a NUL as \\x00, never raw
    for (name, path), got in zip(NEVER_RAW_LEAVES, res["frames"]):
        want = "%s (%s:" % (hn.shown(name, as_text=True), hn.shown(path, as_text=True))
        assert got.get("label", "").startswith(name), "%r not found on the page" % name
        assert got["crumbs"].startswith("Zoomed to: " + want), got["crumbs"]
        assert got["tooltip"].startswith(want), got["tooltip"]
        assert any(t == hn.shown(name, as_text=True) for t in got["drawn"]), got["drawn"]
        for what in ("crumbs", "tooltip", "details"):
            assert not raw_never_raw(got[what]), (what, got[what])
        for t in got["drawn"]:
            assert not raw_never_raw(t), "drawn raw on the canvas: %r" % t
    assert not raw_never_raw(res["heading"] + res["title"])
    for s in res["searches"]:
        assert s["matched"] > 0, "search %r found nothing" % s["query"]
        assert s["matched"] < res["total"], "search %r matched everything" % s["query"]


def test_html_100k_stacks_loads_fast(node_tools):
    """A 100,000-stack profile, built and written through the writer by the unit test
    (test_out_html), loads, zooms and searches in Chromium; the timings are kept in
    tests/e2e/artifacts/flame-100k.json."""
    unit = os.path.join(REPO, "build", "tests", "test_out_html")
    r = subprocess.run(["make", "-s", "-C", REPO, "build/tests/test_out_html"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, "building test_out_html failed:\n" + r.stderr
    page = artifact("flame-100k.html")
    r = subprocess.run([unit], env=dict(os.environ, PYWALK_FLAME_100K=page),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    res = browser(node_tools, "flame", page, artifact("flame-100k.png"), "layer3.handler_7",
                  "layer0.handler_4")
    with open(artifact("flame-100k.json"), "w") as f:
        json.dump({k: res.get(k) for k in ("loadMs", "renderedAtMs", "zoomMs", "nodes",
                                           "total", "matchText")}, f, indent=1)
    print("100k-stack flame graph: loaded in %d ms (first render %.0f ms after navigation "
          "start), zoom %d ms, %d nodes" % (res["loadMs"], res["renderedAtMs"],
                                             res["zoomMs"], res["nodes"]))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    assert res["zoomed"].startswith("layer0.handler_4 ")
    assert 0 < res["matched"] < res["total"]
    assert res["loadMs"] < 10000, "the 100k-stack page took %d ms to load" % res["loadMs"]
