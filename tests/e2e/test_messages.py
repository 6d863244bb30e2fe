# SPDX-License-Identifier: MIT
"""What `pywalk record` tells a user, verbatim: an unknown format or extension, the line per
file written, a launched command's failure and its exit status, -d stopping a command, and
the accounting summary (only the buckets that counted something, a warning naming the bucket
that took every sample). The manual's example summary (doc/usage.md) is what pywalk prints."""
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

import pywalk_e2e as e2e
# the browser driver and its fixtures (npm tools, chromium)
from test_formats import artifact, browser, chromium_bin, node_tools  # noqa: F401

FORMATS = "folded, html, svg, speedscope, timeline, pprof"
TRY = "Try 'pywalk record --help'.\n"


def run(args, timeout=60):
    return subprocess.run([e2e.pywalk_path()] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def test_unknown_format_lists_the_formats(tmp_path):
    r = run(["record", "-f", "bogus", "-o", tmp_path / "out.folded", "--", "true"])
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "pywalk: unknown format 'bogus' (formats: %s)\n" % FORMATS + TRY


def test_unknown_extension_lists_the_formats_and_writes_nothing(tmp_path):
    out = tmp_path / "x.unknown"
    r = run(["record", "-o", out, "--", "true"])
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("pywalk: no format has the extension of '%s' (formats: %s; or give -f)\n"
                        % (out, FORMATS) + TRY)
    assert os.listdir(tmp_path) == []


# --- --function ----------------------------------------------------------------------

PUBLISHER = os.path.join(e2e.TARGETS_DIR, "publisher.py")


def record_publisher(tmp_path, name, *extra):
    out = str(tmp_path / name)
    r = run(["record", "-F", 499, "-o", out] + list(extra) + ["--", sys.executable, PUBLISHER, 2])
    assert r.returncode == 0, r.stderr
    return out, r


def lines_of(rows):
    """{function of publisher.py: the lines it is shown at}."""
    lines = {}
    for frames, _ in rows:
        for fr in frames:
            py = e2e.parse_py_frame(fr)
            if py and py[1] == PUBLISHER:
                lines.setdefault(py[0], set()).add(py[2])
    return lines


def test_function_merges_the_lines_of_a_function(tmp_path):
    """By line, main is a frame per line it calls from (three sibling boxes, each with its
    own Publisher.publish above it); with --function each function is one frame at its
    def line, in folded and SVG alike."""
    if os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("recording needs root and kernel BTF")
    by_line, _ = record_publisher(tmp_path, "line.folded")
    lines = lines_of(e2e.parse_folded(by_line))
    assert {32, 33, 34} <= lines["main"] and {24, 25} <= lines["Publisher.publish"], lines

    folded, r = record_publisher(tmp_path, "func.folded", "--function")
    rows = e2e.parse_folded(folded)
    assert lines_of(rows) == {"<module>": {1}, "main": {28}, "Publisher.publish": {23},
                              "deliver": {16}}, lines_of(rows)
    e2e.check_folded_total(r.stderr, rows)

    svg, _ = record_publisher(tmp_path, "func.svg", "--function")
    with open(svg, encoding="utf-8") as f:
        text = f.read()
    assert text.count("<title>main (%s:28)\n" % PUBLISHER) == 1
    assert text.count("<title>Publisher.publish (%s:23)\n" % PUBLISHER) == 1


# --- the line per file written -------------------------------------------------------

def test_wrote_line_names_the_file_its_stacks_and_samples(tmp_path):
    if os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("recording needs root and kernel BTF")
    folded, r = record_publisher(tmp_path, "out.folded")
    rows = e2e.parse_folded(folded)
    want = "pywalk: wrote %s ({:,} stacks, {:,} samples)\n".format(
        len(rows), sum(n for _, n in rows)) % folded
    assert r.stderr.endswith(want), r.stderr
    assert sum(n for _, n in rows) > 0
    # one line per file, whatever the format; none with -q
    svg, r = record_publisher(tmp_path, "out.svg")
    assert re.search(r"\npywalk: wrote %s \(\d+ stacks, [\d,]+ samples\)\n$" % re.escape(svg),
                     r.stderr), r.stderr
    _, r = record_publisher(tmp_path, "quiet.folded", "-q")
    assert r.stderr == ""


# --- a launched command's end ----------------------------------------------------------

def need_root():
    if os.geteuid() != 0 or not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("recording needs root and kernel BTF")


def record_command(tmp_path, code, *extra):
    return run(["record", "-F", 199, "-o", tmp_path / "out.folded"] + list(extra)
               + ["--", sys.executable, "-c", code], timeout=60)


@pytest.mark.parametrize("code, status, line", [
    ("import sys; sum(range(10**6)); sys.exit(3)", 3, "pywalk: command exited with status 3\n"),
    ("import os; sum(range(10**6)); os.kill(os.getpid(), 9)", 137,
     "pywalk: command was killed by signal 9 (Killed)\n"),
    ("import os; os.kill(os.getpid(), 15)", 143,
     "pywalk: command was killed by signal 15 (Terminated)\n"),
])
def test_command_failure_is_said_and_passed_on(tmp_path, code, status, line):
    need_root()
    r = record_command(tmp_path, code)
    assert r.returncode == status, r.stderr
    assert r.stderr.endswith(line) and r.stderr.count(line) == 1, r.stderr
    assert os.path.exists(tmp_path / "out.folded")  # the profile is written either way
    # the line is not a summary: -q keeps it, alone
    r = record_command(tmp_path, code, "-q")
    assert (r.returncode, r.stderr) == (status, line)


def test_command_that_succeeds_exits_0_without_a_line(tmp_path):
    need_root()
    r = record_command(tmp_path, "sum(range(10**6))")
    assert r.returncode == 0, r.stderr
    assert "pywalk: command" not in r.stderr and "stopped" not in r.stderr, r.stderr


def test_duration_stops_the_command_and_says_so(tmp_path):
    need_root()
    r = record_command(tmp_path, "import time; time.sleep(60)", "-d", "1")
    assert r.returncode == 0, r.stderr
    line = "pywalk: stopped the command (SIGTERM): -d 1s is over\n"
    assert r.stderr.endswith(line) and r.stderr.count(line) == 1, r.stderr
    r = record_command(tmp_path, "import time; time.sleep(60)", "-d", "300ms")
    assert r.stderr.endswith("pywalk: stopped the command (SIGTERM): -d 300ms is over\n")


def test_help_documents_the_command_status_and_d():
    r = run(["record", "--help"])
    assert r.returncode == 0
    assert ("With -d, a COMMAND still running when the time is up is stopped (SIGTERM), and\n"
            "the end says so.\n") in r.stdout
    assert ("2 usage error. A COMMAND that exits non-zero or is killed by a signal is said so\n"
            "in one line, and its status is pywalk's: the same number, or 128+N for signal N\n"
            "(as a shell and time(1) give it; Ctrl-C reaches COMMAND too).") in r.stdout


# --- the summary -----------------------------------------------------------------------

README = os.path.join(e2e.REPO, "doc", "usage.md")  # the manual's summary examples
ROW_RE = re.compile(r"^  (.{26}) (.{10})(   \(.*\))?$")


def summary_rows(stderr):
    """[(label, count, hint text or '')] of the summary block, as printed."""
    lines = stderr.splitlines()
    start = next(i for i, l in enumerate(lines) if e2e.SUMMARY_HEAD_RE.match(l))
    rows = []
    for line in lines[start + 1:]:
        m = ROW_RE.match(line)
        if not m:
            break
        rows.append((m.group(1).rstrip(), int(m.group(2)), m.group(3) or ""))
    return rows


def readme_blocks():
    """The code blocks of doc/usage.md that hold a summary, and its warning example."""
    blocks, cur = [], None
    with open(README, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                if cur is not None:
                    blocks.append("".join(cur))
                cur = [] if cur is None else None
            elif cur is not None:
                cur.append(line)
    return ([b for b in blocks if e2e.SUMMARY_HEAD_RE.match(b.splitlines()[0])],
            [b for b in blocks if b.startswith("pywalk: warning: no Python stacks")])


def test_summary_lists_the_buckets_that_counted_all_with_v(tmp_path):
    need_root()
    _, r = record_publisher(tmp_path, "out.folded")
    total, _ = e2e.check_summary(r.stderr)
    rows = summary_rows(r.stderr)
    assert rows and all(n > 0 for _, n, _ in rows), r.stderr
    assert sum(n for _, n, _ in rows) == total
    _, r = record_publisher(tmp_path, "out.folded", "-v")
    assert [l for l, _, _ in summary_rows(r.stderr)] == list(e2e.SUMMARY_LABELS), r.stderr


def test_readme_summary_is_what_pywalk_prints(tmp_path):
    """Each of doc/usage.md's summary examples is laid out as pywalk prints it: the same
    header, rows in the same columns with the same hints, the -v one every bucket in order,
    the other only buckets above 0 that add up; the warning example as pywalk words it."""
    need_root()
    _, r = record_publisher(tmp_path, "out.folded", "-v")
    hints = {l: h for l, _, h in summary_rows(r.stderr)}
    blocks, warnings = readme_blocks()
    assert len(blocks) == 2 and len(warnings) == 1
    for block in blocks:
        lines = block.splitlines()
        total = int(e2e.SUMMARY_HEAD_RE.match(lines[0]).group(1))
        assert lines[0] == "pywalk: %d perf events, accounted as:" % total
        rows = summary_rows(block)
        for label, n, hint in rows:
            assert label in hints, label
            assert "  %-26s %10d%s" % (label, n, hints[label]) in lines, (label, block)
        assert sum(n for _, n, _ in rows) == total, block
        if len(rows) == len(e2e.SUMMARY_LABELS):
            assert [l for l, _, _ in rows] == list(e2e.SUMMARY_LABELS)
        else:
            assert all(n > 0 for _, n, _ in rows), block
            assert re.match(r"^pywalk: wrote \S+ \([\d,]+ stacks, [\d,]+ samples\)$",
                            lines[len(rows) + 1]), block
    # the warning, from a real run: only the count differs
    real = depth_bound_warning()
    n = re.search(r"all ([\d,]+) samples", real).group(1)
    assert re.sub(r"all [\d,]+ samples", "all %s samples" % n, warnings[0].rstrip("\n")) == real


DEEP = """
def f(n):
    return f(n - 1) if n else spin()
def spin():
    print("READY", flush=True)
    while True:
        sum(range(1000))
f(30)
"""


def depth_bound_warning():
    """The warning of a run whose every sample was deeper than --max-depth 5."""
    p = subprocess.Popen([sys.executable, "-c", DEEP], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    try:
        assert p.stdout.readline() == b"READY\n"
        r = run(["record", "-p", p.pid, "-d", 1, "-F", 199, "--max-depth", 5, "-o", "/dev/null"])
    finally:
        p.kill()
        p.wait()
    assert r.returncode == 0, r.stderr
    _, buckets = e2e.check_summary(r.stderr)
    depth = buckets["rejected: depth bound"]
    taken = sum(buckets.values()) - buckets["not a target process"]
    assert depth > 0 and depth == taken, r.stderr
    line = ("pywalk: warning: no Python stacks were captured: all {:,} samples were rejected: "
            "depth bound (stack deeper than --max-depth 5; raise --max-depth)\n").format(depth)
    assert r.stderr.endswith(line), r.stderr
    return line.rstrip("\n")


def test_nothing_shipped_names_the_bucket_and_the_fix():
    need_root()
    depth_bound_warning()


def publisher_page(tmp_path, node_tools, click, shot):
    """What browser_check.js saw of the HTML page of publisher.py, CLICK its frame probe."""
    need_root()
    page, _ = record_publisher(tmp_path, "out.html")
    res = browser(node_tools, "flame", page, artifact(shot), "publish", click)
    assert not res["pageErrors"] and not res["consoleErrors"], res
    return res


def test_html_page_toggles_by_line_and_by_function(tmp_path, node_tools):
    """The page opens by line; its toggle merges the frames of a function as --function
    does (main's three call lines become one box, shown without a line), and goes back."""
    main = "main (%s" % PUBLISHER
    res = publisher_page(tmp_path, node_tools, main, "flame-byfunc.png")
    b = res["byFunc"]
    assert b["on"] and b["text"] == "By line" and b["zoomed"] == "all", b
    assert b["clickBefore"] >= 3 and b["clickAfter"] == 1, b
    assert b["clickLabel"] == main + ")", b
    assert b["after"] < b["before"] == b["back"], b


def test_html_page_sandwich_of_a_function(tmp_path, node_tools):
    """Zoomed to a frame of Publisher.publish, Callers shows what calls the function (main,
    <module>) and Callees what it calls (deliver), each rooted at the function with all its
    samples; Call tree goes back."""
    publish = "Publisher.publish (%s" % PUBLISHER
    res = publisher_page(tmp_path, node_tools, publish, "flame-sandwich.png")
    sw = res["sandwich"]
    for which, has, lacks in (("callers", "main", "deliver"), ("callees", "deliver", "main")):
        v = sw[which]
        assert v["view"] == which and v["root"] == [publish + ")"], v
        assert v["crumbs"].startswith("%s of %s) \u2014 " % (which.capitalize(), publish)), v
        assert any(t.startswith(has) for t in v["drawn"]), (which, v["drawn"])
        assert not any(t.startswith(lacks) for t in v["drawn"]), (which, v["drawn"])
    # both hold every sample of the function, at least the zoomed frame's
    assert sw["callers"]["total"] == sw["callees"]["total"] >= sw["zoomedTotal"] > 0, sw
    assert sw["back"]["view"] == "tree" and sw["back"]["nodes"] == res["byFunc"]["before"]


# --- -p with a thread id ---------------------------------------------------------------

THREADED = """
import threading, time
def spin():
    while True:
        sum(range(1000))
threading.Thread(target=spin, daemon=True).start()
print("READY", flush=True)
time.sleep(60)
"""


def test_thread_id_names_its_process():
    need_root()
    p = subprocess.Popen([sys.executable, "-c", THREADED], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    try:
        assert p.stdout.readline() == b"READY\n"
        tid = next(int(t) for t in os.listdir("/proc/%d/task" % p.pid) if int(t) != p.pid)
        r = run(["record", "-p", tid, "-d", 1, "-o", "/dev/null"])
    finally:
        p.kill()
        p.wait()
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "pywalk: %d is a thread of process %d, not a process: give -p %d\n" % (
        tid, p.pid, p.pid)


def test_ctrl_c_reaches_the_command_and_its_end_is_passed_on(tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) ends the recording and reaches the
    command: one that dies of it gives 130, as in a shell; one that catches it and exits 0
    gives 0. The profile is written either way."""
    need_root()
    for code, status, line in (
            ("print('READY', flush=True)\nwhile True: pass", 130,
             "pywalk: command was killed by signal 2 (Interrupt)\n"),
            ("try:\n    print('READY', flush=True)\n    while True: pass\n"
             "except KeyboardInterrupt:\n    pass", 0, None)):
        out = tmp_path / "int.folded"
        # -v: pywalk says when it samples the command ("PID N (...): Python ...")
        p = subprocess.Popen([e2e.pywalk_path(), "record", "-v", "-F", "199", "-o", str(out),
                              "--", sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        try:
            e2e.read_until(p.stdout.fileno(), rb"READY\n", 30, lambda b: "no READY: %r" % b)
            m, head = e2e.read_until(p.stderr.fileno(), rb"pywalk: debug: PID (\d+) \(", 30,
                                     lambda b: "pywalk never sampled the command: %r" % b)
            # ~20 samples expected at 199 Hz once it used 0.1 s of CPU as a target: none by
            # chance is e^-20
            pid = int(m.group(1))
            cpu0 = e2e.task_cpu_seconds(pid)
            e2e.wait_for(lambda: e2e.task_cpu_seconds(pid) >= cpu0 + 0.1, 60,
                         lambda: "the command used %.2f s of CPU" % (
                             e2e.task_cpu_seconds(pid) - cpu0))
            os.killpg(p.pid, signal.SIGINT)
            _, tail = p.communicate(timeout=30)
            # what a user sees without -v
            err = "".join(l for l in (head + tail).decode("utf-8", "replace")
                          .splitlines(True) if not l.startswith("pywalk: debug: "))
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        assert p.returncode == status, err
        assert os.path.getsize(out) > 0, err
        if line:
            assert err.endswith(line) and err.count(line) == 1, err
        else:
            assert "pywalk: command" not in err and "stopped" not in err, err


def test_process_out_of_reach_from_a_user_namespace_says_why(tmp_path):
    """Root in a user namespace (a container's, here unshare's) holds CAP_SYS_PTRACE only
    there: the host's PID 1 is out of its reach, and the error says so and what helps."""
    need_root()
    unshare = shutil.which("unshare")
    if not unshare:
        pytest.skip("unshare (util-linux) not installed")
    r = subprocess.run([unshare, "--user", "--map-root-user", e2e.pywalk_path(), "record", "-p",
                        "1", "-d", "1", "-o", str(tmp_path / "out.folded")],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("pywalk: cannot read /proc/1/maps: Permission denied (pywalk runs in a "
                        "user namespace, e.g. a container's, and the process belongs to an "
                        "outer one: run pywalk where the process is, e.g. on the host)\n")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("hz, scope, line", [
    (20000, [], "pywalk: warning: -F 20000 costs about 24% of each CPU that runs the target "
                "(12 µs a sample: the interrupt and a 10-frame walk)\n"),
    (4999, ["--all"], "pywalk: warning: -F 4999 costs about 5% of every CPU (12 µs a sample: "
                      "the interrupt and a 10-frame walk)\n"),
])
def test_costly_rate_is_warned_once_with_its_cost(tmp_path, hz, scope, line):
    need_root()
    target = scope or ["--", sys.executable, "-c", "sum(range(10**5))"]
    r = run(["record", "-F", hz, "-d", "1", "-o", tmp_path / "out.folded"] + target)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(line) and r.stderr.count("warning: -F") == 1, r.stderr


def test_rate_below_the_cost_line_is_not_warned(tmp_path):
    need_root()
    r = run(["record", "-F", 4000, "-d", "1", "-o", tmp_path / "out.folded", "--",
             sys.executable, "-c", "sum(range(10**5))"])
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
