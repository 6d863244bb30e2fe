# SPDX-License-Identifier: MIT
"""End-to-end tests of `pywalk top` and of record's progress line, on a real terminal:
each runs in a private tmux server with a fixed pane size, keys go in with send-keys and
the screen comes back with capture-pane. Also: top refuses a stdout that is not a
terminal, --help, and the man page (renders, lints clean, names every option).

Targets: tests/targets/top_target.py (hot_spin is the leaf of nearly every sample),
top_other.py (the same with other_spin, so two processes have rows of their own) and
top_hostile.py (a busy function whose name carries terminal escapes, and with --comm a
process name that does too), on Debian's /usr/bin/python3.11. Tests that sample take conftest's `pywalk` fixture (root, BTF, a
built binary); tmux is installed with apt-get when missing, else those tests skip.
"""
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

import pywalk_e2e as e2e

E2E_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(E2E_DIR))
TARGETS_DIR = os.path.join(REPO, "tests", "targets")
PYTHON = "/usr/bin/python3.11"
MAN_PAGE = os.path.join(REPO, "doc", "pywalk.1")

# A table row: OWN% TOTAL% OWN TOTAL FUNCTION FILE:LINE (FUNCTION never has two spaces here)
ROW_RE = re.compile(r"^\s*(\d+\.\d)\s+(\d+\.\d)\s+(\d+[kMGTP]?)\s+(\d+[kMGTP]?)"
                    r"\s{2}(.+?)\s+(\S+:\d+)\s*$")
# A row with the PROCESS column: ... PROCESS FUNCTION FILE:LINE, the label "comm (PID)" (a
# comm may hold single spaces) followed by at least two spaces
PROC_ROW_RE = re.compile(r"^\s*(\d+\.\d)\s+(\d+\.\d)\s+(\d+[kMGTP]?)\s+(\d+[kMGTP]?)"
                         r"\s{2}(.*? \((\d+)[^()]*\))\s{2,}(.+?)\s+(\S+:\d+)\s*$")
RATE_RE = re.compile(r"(\d+\.\d) samples/s")
PROGRESS_RE = re.compile(r"^pywalk: recording \d+\.\d s, \d+ shipped, \d+ rejected, \d+ lost")
NOT_A_TTY = "pywalk top needs a terminal; use pywalk record"


def apt_install(package):
    """Install a Debian package if we may; True when it is there afterwards."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for args in (["apt-get", "install", "-y", "-q", "--no-install-recommends", package],
                 ["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]):
        ok = subprocess.run(args, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode == 0
        if ok and args[1] == "install":
            return True
    return False


@pytest.fixture(scope="module")
def tmux_bin():
    if not shutil.which("tmux") and not apt_install("tmux"):
        pytest.skip("tmux is missing and could not be installed (apt-get install tmux)")
    return shutil.which("tmux")


class Pane:
    """A shell in a private tmux server (its own socket, no config) of a fixed size."""

    def __init__(self, tmux, cols, rows):
        self.tmux = tmux
        self.sock = "pywalk-test-%s" % uuid.uuid4().hex[:12]
        self.tmpdir = tempfile.mkdtemp(prefix="pywalk-top-")
        # a plain shell in a known locale; TERM is tmux's own (tmux-256color or screen)
        self._tmux("new-session", "-d", "-s", "t", "-x", str(cols), "-y", str(rows),
                   "env LANG=C.UTF-8 PS1='$ ' sh")
        self.socket_path = self.fmt("#{socket_path}")

    def _tmux(self, *args):
        return subprocess.run([self.tmux, "-L", self.sock, "-f", "/dev/null"] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=True).stdout

    def run(self, command):
        self._tmux("send-keys", "-t", "t", "-l", command)
        self._tmux("send-keys", "-t", "t", "Enter")

    def keys(self, *keys):
        self._tmux("send-keys", "-t", "t", *keys)

    def screen(self):
        return self._tmux("capture-pane", "-p", "-t", "t")

    def fmt(self, fmt):
        return self._tmux("display-message", "-p", "-t", "t", fmt).strip()

    def wait_for(self, what, pred, timeout):
        """Poll the screen until pred(screen) is true; returns the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if pred(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError("no %s within %.1f s; screen:\n%s" % (what, timeout, screen))
            time.sleep(0.1)

    def run_and_status(self, command):
        """Run command; returns a function that waits for its exit status."""
        status = os.path.join(self.tmpdir, "status-%s" % uuid.uuid4().hex[:8])
        self.run("%s; echo \"exit=$?\" > %s" % (command, status))

        def wait(timeout=10):
            deadline = time.monotonic() + timeout
            while not os.path.exists(status) or not open(status).read().endswith("\n"):
                if time.monotonic() > deadline:
                    raise AssertionError("%r did not exit within %s s; screen:\n%s" % (
                        command, timeout, self.screen()))
                time.sleep(0.1)
            with open(status) as f:
                return int(f.read().strip().split("=")[1])
        return wait

    def close(self):
        subprocess.run([self.tmux, "-L", self.sock, "kill-server"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        # tmux 3.3 leaves the socket file behind
        if self.socket_path.endswith(self.sock) and os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        shutil.rmtree(self.tmpdir, ignore_errors=True)


@pytest.fixture
def pane(tmux_bin, request):
    cols, rows = getattr(request, "param", (120, 40))
    p = Pane(tmux_bin, cols, rows)
    yield p
    p.close()


class Target:
    """A workload from tests/targets, started and waited for READY."""

    def __init__(self, script, *args):
        if not os.access(PYTHON, os.X_OK):
            pytest.fail("core interpreter %s is missing (apt-get install python3.11)" % PYTHON)
        self.proc = subprocess.Popen([PYTHON, os.path.join(TARGETS_DIR, script)] + list(args),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     start_new_session=True)
        self.pid = self.proc.pid
        buf, deadline = b"", time.monotonic() + 20
        while b"READY\n" not in buf:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise AssertionError("%s: no READY (exit %s)" % (script, self.proc.poll()))
            if select.select([self.proc.stdout], [], [], 0.2)[0]:
                buf += os.read(self.proc.stdout.fileno(), 4096)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture
def hot_target():
    t = Target("top_target.py")
    yield t
    t.stop()


def table(screen):
    """Rows of the table on screen as dicts, top first."""
    rows = []
    for line in screen.splitlines():
        m = ROW_RE.match(line)
        if m:
            rows.append({"own_pct": float(m.group(1)), "total_pct": float(m.group(2)),
                         "func": m.group(5), "where": m.group(6)})
    return rows


def proc_table(screen):
    """Rows of a per-process table on screen as dicts, top first."""
    rows = []
    for line in screen.splitlines():
        m = PROC_ROW_RE.match(line)
        if m:
            rows.append({"own_pct": float(m.group(1)), "label": m.group(5),
                         "pid": int(m.group(6)), "func": m.group(7), "where": m.group(8)})
    return rows


def rate(screen):
    m = RATE_RE.search(screen)
    return float(m.group(1)) if m else None


def stty_state(pane):
    """The pane's terminal modes as `stty -g` prints them."""
    out = os.path.join(pane.tmpdir, "stty-%s" % uuid.uuid4().hex[:8])
    assert pane.run_and_status("stty -g > %s" % out)() == 0
    with open(out) as f:
        return f.read().strip()


# --- no terminal, help, man page ---------------------------------------------------------

def test_top_refuses_stdout_that_is_not_a_terminal():
    # before any privilege check, so this holds for every user
    r = subprocess.run([e2e.pywalk_path(), "top", "-p", str(os.getpid())],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    assert r.returncode == 1, r
    assert NOT_A_TTY in r.stderr, r.stderr
    assert r.stdout == ""


def test_top_help_has_options_keys_examples_and_exit_status():
    r = subprocess.run([e2e.pywalk_path(), "top", "--help"], stdout=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    assert r.returncode == 0
    for needle in ("Usage: pywalk top", "--interval", "--cumulative", "Keys:", "Examples:",
                   "    pywalk top -p 4242", "Exit status:"):
        assert needle in r.stdout, needle
    again = subprocess.run([e2e.pywalk_path(), "help", "top"], stdout=subprocess.PIPE,
                           universal_newlines=True, timeout=30)
    assert again.returncode == 0 and again.stdout == r.stdout


def render_man():
    """The man page as text, with man(1) if there, else groff; None if neither is."""
    env = dict(os.environ, MANWIDTH="200", MANPAGER="cat", PAGER="cat", LANG="C.UTF-8")
    if shutil.which("man"):
        r = subprocess.run(["man", "-l", MAN_PAGE], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=60)
    elif shutil.which("groff"):
        r = subprocess.run(["groff", "-man", "-Tutf8", "-rLL=200n", MAN_PAGE],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env, timeout=60)
    else:
        return None
    assert r.returncode == 0, r.stderr
    # drop overstrike bold/underline, and read typographic hyphens and minus as '-'
    text = re.sub(r".\x08", "", r.stdout)
    return text.translate({0x2010: "-", 0x2011: "-", 0x2212: "-"})


def long_options(help_text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", help_text))


def test_man_page_renders_and_covers_every_option():
    if not shutil.which("man") and not shutil.which("groff") and not apt_install("groff-base"):
        pytest.skip("neither man nor groff is installed (apt-get install man-db)")
    text = render_man()
    for section in ("NAME", "SYNOPSIS", "RECORD OPTIONS", "TOP OPTIONS", "TRACE OPTIONS",
                    "ACCOUNTING", "EXIT STATUS", "EXAMPLES"):
        assert re.search(r"^%s\s*$" % section, text, re.M), section
    for label in ("shipped", "not a target process", "no thread state", "empty stack",
                  "rejected: torn chain", "rejected: depth bound", "lost (ring buffer full)"):
        assert label in text, label
    for command in ("record", "top", "trace"):
        help_text = subprocess.run([e2e.pywalk_path(), command, "--help"],
                                   stdout=subprocess.PIPE, universal_newlines=True,
                                   timeout=30).stdout
        missing = sorted(o for o in long_options(help_text) if o not in text)
        assert not missing, "%s options missing from the man page: %s" % (command, missing)
    if shutil.which("groff"):
        lint = subprocess.run(["groff", "-man", "-ww", "-z", MAN_PAGE], stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)
        assert lint.returncode == 0 and not lint.stderr.strip(), lint.stderr


# --- the live view -------------------------------------------------------------------------

def test_top_shows_hot_function_sorts_by_name_and_quits_cleanly(pywalk, pane, hot_target):
    before = stty_state(pane)
    wait = pane.run_and_status("%s top -p %d" % (pywalk, hot_target.pid))
    # the clock starts when the view is up: loading the BPF program (the verifier) can take
    # seconds on a busy machine, and that is not top's to speed up
    pane.wait_for("the view", lambda s: "FUNCTION" in s, timeout=20.0)

    def hot_on_top(screen):
        rows = table(screen)
        return rows and rows[0]["func"] == "hot_spin" and rows[0]["own_pct"] > 80
    screen = pane.wait_for("hot_spin on top with own% > 80", hot_on_top, timeout=3.0)
    assert (rate(screen) or 0) > 0, screen
    assert pane.fmt("#{alternate_on}") == "1", "top should draw on the alternate screen"
    where = table(screen)[0]["where"]
    assert where.endswith("top_target.py:14"), where  # the def line of hot_spin

    pane.keys("n")
    screen = pane.wait_for("the table sorted by name",
                           lambda s: "*FUNCTION" in s and len(table(s)) >= 3, timeout=3.0)
    names = [r["func"] for r in table(screen)]
    assert names == sorted(names), screen
    assert names[:3] == ["<module>", "hot_spin", "main"], screen

    pane.keys("q")
    assert wait(timeout=5) == 0
    assert pane.fmt("#{alternate_on}") == "0", "the alternate screen was not left"
    assert pane.fmt("#{cursor_flag}") == "1", "the cursor was left hidden"
    assert stty_state(pane) == before, "terminal modes were not restored"


def test_top_kernel_shows_kernel_functions(pywalk, pane):
    """--kernel: a thread reading /dev/zero in a loop spends its time in the kernel, so
    a kernel function marked [kernel] leads the table by own%."""
    t = Target("kernel_target.py", "read")
    try:
        wait = pane.run_and_status("%s top --kernel -p %d" % (pywalk, t.pid))
        pane.wait_for("the view", lambda s: "FUNCTION" in s, timeout=20.0)

        def kernel_on_top(screen):
            rows = table(screen)
            return rows and rows[0]["func"].endswith(" [kernel]") and \
                rows[0]["where"].startswith("[kernel]:")
        screen = pane.wait_for("a [kernel] function on top", kernel_on_top, timeout=5.0)
        names = [r["func"] for r in table(screen)]
        assert "zero_reader" in names, screen
        pane.keys("q")
        assert wait(timeout=5) == 0
    finally:
        t.stop()


def test_top_ctrl_c_exits_0_and_restores_the_terminal(pywalk, pane, hot_target):
    before = stty_state(pane)
    wait = pane.run_and_status("%s top -p %d" % (pywalk, hot_target.pid))
    pane.wait_for("the view", lambda s: "FUNCTION" in s, timeout=20.0)
    pane.keys("C-c")
    assert wait(timeout=5) == 0
    assert pane.fmt("#{alternate_on}") == "0"
    assert stty_state(pane) == before


@pytest.mark.parametrize("pane", [(200, 30)], indirect=True)
def test_top_hostile_name_is_shown_escaped(pywalk, pane):
    target = Target("top_hostile.py")
    try:
        title = pane.fmt("#{pane_title}")
        wait = pane.run_and_status("%s top -p %d" % (pywalk, target.pid))
        screen = pane.wait_for("the hostile function's row",
                               lambda s: "spin" in s and "top_hostile.py" in s, timeout=20.0)
        row = next(l for l in screen.splitlines() if "spin" in l)
        # every control character is there as text, in order, on one line
        assert "\\x1b[2J\\x1b]2;PWNED\\x07spin\\nEVIL\\u009b31m\\u202eevil" in row, row
        # nothing reached the terminal: no new title, no line broken off, header intact
        assert pane.fmt("#{pane_title}") == title
        assert not any(l.startswith("EVIL") for l in screen.splitlines()), screen
        assert screen.splitlines()[0].startswith("pywalk top - PID %d" % target.pid), screen
        pane.keys("q")
        assert wait(timeout=5) == 0
    finally:
        target.stop()


def test_top_keeps_last_view_after_target_exits(pywalk, pane):
    # long enough to outlast pywalk's start-up (seconds of BPF verification when busy)
    target = Target("top_target.py", "6")
    try:
        wait = pane.run_and_status("%s top -p %d" % (pywalk, target.pid))
        screen = pane.wait_for("the exit notice", lambda s: "exited" in s, timeout=20.0)
        assert "whole-run totals" in screen, screen
        rows = table(screen)
        assert rows and rows[0]["func"] == "hot_spin", screen
        time.sleep(1.5)
        assert table(pane.screen()) == rows, "the last view should stay as it was"
        pane.keys("q")
        assert wait(timeout=5) == 0
    finally:
        target.stop()


def test_top_narrow_and_resized_terminal(pywalk, pane, hot_target):
    wait = pane.run_and_status("%s top -p %d" % (pywalk, hot_target.pid))
    pane.wait_for("the view", lambda s: "hot_spin" in s, timeout=20.0)
    pane._tmux("resize-window", "-t", "t", "-x", "40", "-y", "12")
    screen = pane.wait_for("a 40-column view", lambda s: "hot_spin" in s and
                           "FILE:LINE" not in s, timeout=3.0)
    assert all(len(l) <= 40 for l in screen.splitlines()), screen
    pane._tmux("resize-window", "-t", "t", "-x", "15", "-y", "4")
    pane.wait_for("the too-small notice", lambda s: "terminal too" in s, timeout=3.0)
    pane._tmux("resize-window", "-t", "t", "-x", "120", "-y", "40")
    pane.wait_for("the full view again", lambda s: "FILE:LINE" in s, timeout=3.0)
    pane.keys("q")
    assert wait(timeout=5) == 0


# --- several processes --------------------------------------------------------------------

@pytest.mark.parametrize("pane", [(160, 40)], indirect=True)
def test_top_two_pids_rows_per_process_and_sort_by_process(pywalk, pane):
    a, b = Target("top_target.py"), Target("top_other.py")
    try:
        wait = pane.run_and_status("%s top -p %d,%d" % (pywalk, a.pid, b.pid))

        def both(screen):
            funcs = {(r["pid"], r["func"]) for r in proc_table(screen)}
            return ((a.pid, "hot_spin") in funcs and (b.pid, "other_spin") in funcs and
                    (a.pid, "main") in funcs and (b.pid, "main") in funcs)
        screen = pane.wait_for("rows of both processes", both, timeout=20.0)
        assert screen.splitlines()[0].startswith(
            "pywalk top - PIDs %d (python3.11), %d (python3.11)" % (a.pid, b.pid)), screen
        assert re.search(r"\bPROCESS\s+FUNCTION\s+FILE:LINE", screen), screen
        rows = proc_table(screen)
        for r in rows:
            # "comm (PID)", and each function under the process that runs it
            assert r["label"] == "python3.11 (%d)" % r["pid"], r
            assert r["pid"] in (a.pid, b.pid), r
            assert r["func"] != ("other_spin" if r["pid"] == a.pid else "hot_spin"), r
        # the same function in two processes is two rows
        mains = [r for r in rows if r["func"] == "main"]
        assert sorted(r["pid"] for r in mains) == sorted((a.pid, b.pid)), screen

        pane.keys("P")
        screen = pane.wait_for("the table sorted by process",
                               lambda s: "*PROCESS" in s and "sort: process" in s and
                               len({r["pid"] for r in proc_table(s)}) == 2, timeout=3.0)
        rows = proc_table(screen)
        pids = [r["pid"] for r in rows]
        # each process's rows together, lower PID first (same comm), busiest row first
        assert pids == sorted(pids), screen
        for pid, leaf in ((a.pid, "hot_spin"), (b.pid, "other_spin")):
            mine = [r for r in rows if r["pid"] == pid]
            assert mine[0]["func"] == leaf, screen
            assert [r["own_pct"] for r in mine] == sorted((r["own_pct"] for r in mine),
                                                          reverse=True), screen
        pane.keys("r")
        screen = pane.wait_for("the reversed order", lambda s: "reversed" in s and
                               len({r["pid"] for r in proc_table(s)}) == 2, timeout=3.0)
        pids = [r["pid"] for r in proc_table(screen)]
        assert pids == sorted(pids, reverse=True), screen
        pane.keys("q")
        assert wait(timeout=5) == 0
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("pane", [(200, 30)], indirect=True)
def test_top_hostile_comm_is_shown_escaped_in_the_process_column(pywalk, pane):
    plain, hostile = Target("top_target.py"), Target("top_hostile.py", "--comm")
    try:
        title = pane.fmt("#{pane_title}")
        wait = pane.run_and_status("%s top -p %d,%d" % (pywalk, plain.pid, hostile.pid))
        label = "\\x1b]2;PW\\x07\\x1b[2J\\u009bEV (%d)" % hostile.pid
        screen = pane.wait_for("the hostile process's row",
                               lambda s: label in s and "top_hostile.py" in s, timeout=20.0)
        row = next(l for l in screen.splitlines() if label in l and "top_hostile.py" in l)
        assert "\\x1b[2J\\x1b]2;PWNED\\x07spin\\nEVIL" in row, row
        # nothing reached the terminal: no new title, the screen was not cleared
        assert pane.fmt("#{pane_title}") == title
        assert screen.splitlines()[0].startswith("pywalk top - PIDs %d (python3.11), %d ("
                                                 % (plain.pid, hostile.pid)), screen
        assert any(r["func"] == "hot_spin" and r["pid"] == plain.pid
                   for r in proc_table(screen)), screen
        pane.keys("q")
        assert wait(timeout=5) == 0
    finally:
        plain.stop()
        hostile.stop()


@pytest.mark.parametrize("pane", [(160, 60)], indirect=True)
def test_top_probe_counts_a_syscall_by_function(pywalk, pane):
    # trace's probes in the live view: spin_getpid makes nearly every getpid of the target
    t = Target("trace_target.py", "loop")
    try:
        wait = pane.run_and_status("%s top -p %d --probe tracepoint:syscalls:sys_enter_getpid"
                                   % (pywalk, t.pid))
        pane.wait_for("the view", lambda s: "FUNCTION" in s, timeout=20.0)

        def spin_on_top(screen):
            rows = table(screen)
            return rows and rows[0]["func"] == "spin_getpid" and rows[0]["own_pct"] > 95
        screen = pane.wait_for("spin_getpid on top with own% > 95", spin_on_top, timeout=5.0)
        assert (rate(screen) or 0) > 1000, screen
        pane.keys("q")
        assert wait(timeout=5) == 0
    finally:
        t.stop()


def test_top_all_shows_a_process_started_after_it(pywalk, pane):
    wait = pane.run_and_status("%s top --all" % pywalk)
    pane.wait_for("the view", lambda s: "FUNCTION" in s and "PROCESS" in s, timeout=20.0)
    screen = pane.screen()
    assert screen.splitlines()[0].startswith("pywalk top - all Python processes"), screen
    late = Target("top_other.py")
    try:
        # found when it execs, sampled from then on: its row within a few intervals
        def late_row(screen):
            return any(r["pid"] == late.pid and r["func"] == "other_spin" and
                       r["label"] == "python3.11 (%d)" % late.pid for r in proc_table(screen))
        pane.wait_for("the late process's row", late_row, timeout=10.0)
        pane.keys("q")
        assert wait(timeout=5) == 0
    finally:
        late.stop()


# --- record's progress line ----------------------------------------------------------------

def test_record_progress_line_shows_then_disappears(pywalk, pane, hot_target):
    out = os.path.join(pane.tmpdir, "out.folded")
    wait = pane.run_and_status("%s record -p %d -d 4 -o %s" % (pywalk, hot_target.pid, out))
    pane.wait_for("the progress line",
                  lambda s: any(PROGRESS_RE.match(l) for l in s.splitlines()), timeout=10.0)
    assert wait(timeout=15) == 0
    screen = pane.screen()
    assert "recording" not in screen, "the progress line was not cleared:\n" + screen
    # the summary starts on a clean line, not after leftover progress text
    assert any(re.match(r"^pywalk: \d+ perf events, accounted as:$", l)
               for l in screen.splitlines()), screen
    assert os.path.getsize(out) > 0


def test_record_quiet_has_no_progress_line(pywalk, pane, hot_target):
    out = os.path.join(pane.tmpdir, "out.folded")
    wait = pane.run_and_status("%s record -q -p %d -d 2 -o %s" % (pywalk,
                                                                   hot_target.pid, out))
    deadline = time.monotonic() + 1.8
    while time.monotonic() < deadline:
        assert "recording" not in pane.screen()
        time.sleep(0.1)
    assert wait(timeout=15) == 0


def test_record_progress_line_not_written_to_a_pipe(pywalk, hot_target):
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([pywalk, "record", "-p", str(hot_target.pid), "-d", "1.5",
                            "-o", os.path.join(d, "out.folded")], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "recording" not in r.stderr, r.stderr


TIME_ROW_RE = re.compile(r"^\s*(\d+\.\d)\s+(\d+\.\d)\s+([\d.]+(?:us|ms|s|m))\s+"
                         r"([\d.]+(?:us|ms|s|m))\s{2}(.+?)\s+(\S+:\d+)\s*$")


def test_top_off_cpu_shows_where_threads_wait_in_time(pywalk, pane):
    """top --mode off-cpu: rows are functions by the time their threads waited, shown as
    times, and the header gives the seconds counted per second."""
    t = Target("offcpu_target.py")
    try:
        pane.run_and_status("%s top -p %d --mode off-cpu -i 1s" % (pywalk, t.pid))
        pane.wait_for("the view", lambda s: "FUNCTION" in s, timeout=20.0)

        def waits_shown(screen):
            rows = [TIME_ROW_RE.match(l) for l in screen.splitlines()]
            funcs = set(m.group(5) for m in rows if m)
            return {"nap", "waiter", "stuck", "reader", "selector"} <= funcs
        screen = pane.wait_for("the waiting functions, with times", waits_shown, timeout=6.0)
        m = re.search(r"([\d.]+) s counted/s", screen)
        # seven threads wait, the main one 70% of the time: about 6.7 s a second
        assert m and 5.0 <= float(m.group(1)) <= 7.5, screen
        assert re.search(r"view: last interval, [\d.]+ s counted", screen), screen
        pane.keys("q")
    finally:
        t.stop()
