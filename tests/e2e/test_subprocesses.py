# SPDX-License-Identifier: MIT
"""End-to-end tests of following process trees: `record --subprocesses` and launch mode.

The workloads (tests/targets/mp_target.py, exec_first.py + exec_second.py, gc_parent.py +
gc_child.py, app_target.py; shared code in tree_common.py) are trees of real processes.
Each process burns a measured amount of its own CPU time in a function of its own, then
writes its PID, its CPU time and the stack it saw itself in (its PWRESULT line). From one
recording per scenario the tests check what a user would:

* every process of the workload appears under its own root frame 'comm (PID)', with the PID
  it reported, and its busy function under no other PID;
* its busy loop got the samples its busy CPU time gives at HZ (less LOOP_SLACK and the
  share of the time the host stole), and nearly all of them (EXACT_SLACK) are on its exact
  stack: qualname, file and line of every frame;
* its share of the workload's samples is within SHARE_TOLERANCE of its share of the
  workload's measured CPU time;
* the summary buckets add up, folded counts + not counted == shipped, and the 'processes
  sampled' line counts at least the processes the workload started (fork children
  inherited, when there are fork children).

Scenarios: multiprocessing with fork, forkserver and spawn, launched and attached (-p)
before the parent starts its workers; a shell and make running Pythons; a Python that
os.execv's another program (launched and -p); three generations (Popen, then os.fork); a
launched Python without --subprocesses, whose children are not sampled; a tree that
starts while pywalk is not reading. Then the usage errors of --subprocesses and --all. Expectations come from measured CPU time, never from
wall time, so a loaded machine changes the counts, not the verdicts.
"""
import os
import shlex
import signal
import subprocess
import tempfile
import time

import pytest

import pywalk_e2e as e2e

HZ = 999
# A process's share of samples vs. its share of CPU, absolute, plus the share of the time
# the host stole: stolen time lands unevenly, and one process's share can move by it when
# the processes run one after the other.
SHARE_TOLERANCE = 0.05
# The busy loop is burn's call line and what it calls. Its samples are >= (1 - LOOP_SLACK -
# stolen share) x busy CPU seconds x HZ: the sampler's clock (cpu-clock, which counts a
# virtual CPU's stolen time, and whose timer is re-armed from when it fired, so its latency
# stretches each period: 3% fewer samples here) and process_time (which leaves steal out)
# both measure it. Of the loop's samples at least 1 - EXACT_SLACK are on the exact stack; the
# rest are burn's own line between calls and the work function's first and last line,
# measured at 0.4% on average and 2.4% at worst over 221 processes. That share does not
# depend on any clock. No bound is put on the exact share of all samples: startup and exit,
# outside the loop, are where stolen time lands unevenly (a cold CI machine took 10% more
# samples than process_time said, all of them outside the loop).
LOOP_SLACK = 0.2
EXACT_SLACK = 0.05
ATTACH_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 120
METHODS = ("fork", "forkserver", "spawn")
BURN_MARKERS = e2e.source_markers("tree_common.py")


# --- runs --------------------------------------------------------------------------------

class Run:
    """One recording: pywalk's result, the folded rows and what the processes reported."""

    def __init__(self, interp, result, out_path, target_stdout, what, stolen):
        self.interp = interp
        self.stolen = stolen  # share of the recording's busy CPU time the host stole
        self.result = result
        self.out_path = out_path
        self.what = what
        self.records = e2e.parse_results(target_stdout)
        self.target_stdout = target_stdout
        self.rows = e2e.parse_folded(out_path) if os.path.exists(out_path) else None

    def describe(self):
        return "%s\n%s\n--- workload stdout ---\n%s" % (
            self.what, e2e.describe_run(self.result, self.out_path, limit=25),
            self.target_stdout[-4000:])

    def check_common(self, processes, inherited=0):
        """Exit 0, the accounting invariants, and the 'processes sampled' line."""
        assert self.result.returncode == 0, self.describe()
        assert self.rows, "no profile\n" + self.describe()
        e2e.check_summary(self.result.stderr)
        e2e.check_folded_total(self.result.stderr, self.rows, self.describe())
        line = e2e.parse_processes(self.result.stderr)
        if line is None:
            # printed for more than one process lifetime, --subprocesses or a skip
            assert processes == 1 and "--subprocesses" not in self.result.args, \
                "no 'processes sampled' line\n" + self.describe()
            return
        sampled, got_inherited, skipped = line
        assert sampled >= processes, "%d processes sampled, the workload started %d\n%s" % (
            sampled, processes, self.describe())
        assert got_inherited >= inherited, \
            "%d fork children inherited, the workload forked %d\n%s" % (
                got_inherited, inherited, self.describe())
        assert skipped is None, "processes skipped: %s\n%s" % (skipped, self.describe())


def launch(interp, argv, out_path, subprocesses=True, extra=()):
    """`pywalk record [--subprocesses] extra -- argv`; the command's stdout is pywalk's."""
    args = ["record", "-F", str(HZ), "-o", out_path] + (
        ["--subprocesses"] if subprocesses else []) + list(extra)
    args += ["--"] + list(argv)
    stolen = e2e.StolenTime()
    r = e2e.run_pywalk(args, timeout=RUN_TIMEOUT_S)
    r.args = args
    return Run(interp, r, out_path, r.stdout, "launched: " + " ".join(args), stolen.share())


def attach(interp, start_target, script, args, out_path, extra=()):
    """Start `script --wait`, attach `record -p PID extra` to it, and only then let it go
    (SIGUSR1): everything the workload does happens while pywalk follows it. pywalk runs
    until the followed processes are gone."""
    t = start_target(interp, *(list(args) + ["--wait"]), script=script)
    stolen = e2e.StolenTime()
    argv = [e2e.pywalk_path(), "record", "-v", "-F", str(HZ), "-o", out_path, "-p",
            str(t.pid)] + [str(a) for a in extra]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        pw = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                              universal_newlines=True)
        try:
            deadline = time.monotonic() + ATTACH_TIMEOUT_S
            while True:
                err.seek(0)
                if "debug: sampling at" in err.read() or pw.poll() is not None:
                    break
                assert time.monotonic() < deadline, "pywalk did not start sampling"
                time.sleep(0.02)
            os.kill(t.pid, signal.SIGUSR1)
            pw.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if pw.poll() is None:
                pw.kill()
                pw.wait()
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(argv, pw.returncode, out.read(), err.read())
    t.proc.wait(timeout=RUN_TIMEOUT_S)
    stdout = t.proc.stdout.read().decode(errors="replace")
    return Run(interp, result, out_path, stdout, "attached: %s to %s" % (
        " ".join(argv), " ".join(t.argv)), stolen.share())


# --- expectations ------------------------------------------------------------------------

def expected_stack(rec):
    """The exact stack of a process's busy line, root first: the frames it reported below
    burn(), burn's call, and the busy line of its work function (lines from the markers)."""
    leaf_script = os.path.basename(rec["leaf_file"])
    leaf_line = e2e.source_markers(leaf_script)["leaf:" + rec["role"]]
    return tuple(tuple(fr) for fr in rec["callers"]) + (
        ("burn", rec["burn_file"], BURN_MARKERS["call:burn"]),
        (rec["role"], rec["leaf_file"], leaf_line))


def check_busy_loop(run, rec, counter):
    """The two bounds of LOOP_SLACK and EXACT_SLACK on a process's busy loop, whose samples
    are those of `counter` (its stacks) under burn's call. Returns (loop samples, exact
    samples, the loop's floor)."""
    want = expected_stack(rec)
    loop = sum(n for stack, n in counter.items() if stack[:len(want) - 1] == want[:-1])
    exact, floor = counter[want], (1.0 - LOOP_SLACK - run.stolen) * rec["busy"] * HZ
    what = "%s (PID %s): %.3f s of busy CPU at %d Hz, %.1f%% of the time stolen\n" \
        "expected: %s\ngot:\n%s\n%s" % (
            rec["role"], rec["pid"], rec["busy"], HZ, 100 * run.stolen,
            ";".join("%s (%s:%s)" % fr for fr in want), format_stacks(counter),
            run.describe())
    assert loop >= floor, "%d samples in the busy loop, expected >= %.0f: %s" % (
        loop, floor, what)
    assert exact >= (1.0 - EXACT_SLACK) * loop, \
        "%d of the busy loop's %d samples on the exact stack, expected >= %.0f%%: %s" % (
            exact, loop, 100 * (1.0 - EXACT_SLACK), what)
    return loop, exact, floor


def own_cpu(rec):
    """CPU seconds a process used while pywalk followed it (not before the test let it go:
    in attach mode it started earlier)."""
    return rec["cpu"] - rec["cpu_before_go"]


def comm_of(interp):
    return os.path.basename(interp.exe)[:15]


def format_stacks(counter, limit=8):
    return "\n".join("  %5d %s" % (n, ";".join("%s (%s:%s)" % fr for fr in stack))
                     for stack, n in counter.most_common(limit))


def check_processes(run, roles, by_pid=True):
    """The per-process checks of the module docstring, for the workload processes that
    reported `roles` (each exactly once); own CPU time is the reported one. by_pid=False:
    one process only, so no root frame. Returns the table rows for the report."""
    recs = dict((r["role"], r) for r in run.records)
    assert sorted(recs) == sorted(roles) and len(run.records) == len(roles), \
        "workload reported %s, expected %s\n%s" % (
            [r["role"] for r in run.records], sorted(roles), run.describe())
    for r in run.records:
        assert r["leaf_file"] == run.interp.script_path(os.path.basename(r["leaf_file"])), \
            "a script's path as the process sees it: %r" % r["leaf_file"]
    stacks, comms = e2e.rows_by_process(run.rows)
    if by_pid:
        assert None not in stacks, "rows without a 'comm (PID)' root frame although " \
            "several processes were sampled:\n%s" % format_stacks(stacks[None])
        pids = dict((r["pid"], r) for r in run.records)
        assert len(pids) == len(roles), "two roles share a PID: %s" % run.records
        for pid in pids:
            assert pid in stacks, "PID %d (%s) has no samples; sampled: %s\n%s" % (
                pid, pids[pid]["role"], sorted(stacks), run.describe())
            # a process's root is its comm; with --threads it is the thread's, and a
            # process's main thread is named by threading: MainThread
            want = "MainThread" if " --threads " in " %s " % run.what else comm_of(run.interp)
            assert comms[pid] == want, "PID %d shown as %r, runs %s" % (
                pid, comms[pid], run.interp.exe)
        key = dict((r["role"], r["pid"]) for r in run.records)
    else:
        assert list(stacks) == [None], "a root frame 'comm (PID)' with one process: %s" % (
            sorted(stacks),)
        key = dict((role, None) for role in roles)
    # a process's busy line under another PID would be a sample given to the wrong process
    leaves = dict(((r["role"], r["leaf_file"]), r["role"]) for r in run.records)
    for pid, counter in stacks.items():
        for stack, n in counter.items():
            role = leaves.get(stack[-1][:2]) if stack else None
            assert role is None or key[role] == pid, \
                "%d samples of %s's busy line under PID %s (it is PID %s)" % (
                    n, role, pid, key[role])
    total = sum(sum(stacks[key[role]].values()) for role in roles)
    cpu_total = sum(own_cpu(recs[role]) for role in roles)
    table = []
    for role in roles:
        rec, counter = recs[role], stacks[key[role]]
        n = sum(counter.values())
        loop, exact, floor = check_busy_loop(run, rec, counter)
        share, cpu_share = n / total, own_cpu(rec) / cpu_total
        table.append((role, rec["pid"], n, loop, exact, floor, 100 * share, 100 * cpu_share))
        assert abs(share - cpu_share) <= SHARE_TOLERANCE + run.stolen, \
            "%s: %.1f%% of the workload's samples, %.1f%% of its CPU time (%.3f of %.3f s, " \
            "%.1f%% of the time stolen)\n%s" % (
                role, 100 * share, 100 * cpu_share, own_cpu(rec), cpu_total,
                100 * run.stolen, run.describe())
    print_table(run, table)
    return table


def print_table(run, table):
    """One line per process (shown with pytest -rA): the figures of the report."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[-1].split(" ")[0]
    print("%s: %s [%s] (%.1f%% of the time stolen)" % (test, run.what, run.interp.id,
                                                        100 * run.stolen))
    for role, pid, n, loop, exact, floor, share, cpu_share in table:
        print("  %-16s PID %-7s samples %5d  busy loop %5d (floor %5.0f)  exact %5.1f%%  "
              "share %5.1f%%  cpu %5.1f%%  error %+.1f pts" % (
                  role, pid, n, loop, floor, 100.0 * exact / loop, share, cpu_share,
                  share - cpu_share))


# --- 1, 5, 6: multiprocessing ----------------------------------------------------------

MP_ROLES = ("parent_work", "child_work_0", "child_work_1")


def check_mp(run, method, inherited=None):
    """All of check_common and check_processes for mp_target.py's three processes; its
    workers are fork children with fork and forkserver, so inherited unless told."""
    if inherited is None:
        inherited = 2 if method in ("fork", "forkserver") else 0
    run.check_common(processes=3, inherited=inherited)
    check_processes(run, MP_ROLES)
    parent = [r for r in run.records if r["role"] == "parent_work"][0]
    assert parent["exitcodes"] == [0, 0], run.describe()
    assert sorted(parent["workers"]) == sorted(
        r["pid"] for r in run.records if r["role"] != "parent_work"), run.describe()


@pytest.mark.parametrize("method", METHODS)
def test_multiprocessing_launched_with_subprocesses(pywalk, interp, out_path, method):
    run = launch(interp, interp.argv("mp_target.py", method), out_path)
    check_mp(run, method)


@pytest.mark.core_only
@pytest.mark.parametrize("method", METHODS)
def test_multiprocessing_attached_before_workers_start(pywalk, interp, start_target,
                                                       out_path, method):
    """-p PARENT --subprocesses, attached before the parent starts its workers."""
    run = attach(interp, start_target, "mp_target.py", [method], out_path,
                 ["--subprocesses"])
    check_mp(run, method)


@pytest.mark.parametrize("method", METHODS)
def test_multiprocessing_launched_python_without_subprocesses(pywalk, interp, out_path,
                                                              method):
    """`record --threads -- python3 mp_target.py`: the command is Python itself, so pywalk
    samples it as it would `-p PID` (its own execs followed, nothing else): a user who
    names one program gets that program. Its workers, fork children included, are not
    sampled; --subprocesses (the tests above) asks for them. --threads shows whose samples
    these are: every root frame is 'comm (TID)' of the parent's one thread, TID == PID."""
    if method != "fork" and not interp.core:
        pytest.skip("start methods other than fork run on the core interpreter only (the "
                    "others share its decision, made at the parent's attach)")
    run = launch(interp, interp.argv("mp_target.py", method), out_path, subprocesses=False,
                 extra=["--threads"])
    # the 'processes sampled' line counts lifetimes: a look that straddles the exec of
    # chroot into Python is taken again, so it may say 2; the root frames say who it was
    run.check_common(processes=1)
    parent = [r for r in run.records if r["role"] == "parent_work"]
    assert len(parent) == 1 and len(run.records) == 3, run.describe()
    stacks, _ = e2e.rows_by_process(run.rows)
    assert sorted(stacks, key=str) == [parent[0]["pid"]], \
        "samples of threads %s, the parent is PID %d (workers %s)\n%s" % (
            sorted(stacks, key=str), parent[0]["pid"], parent[0]["workers"], run.describe())
    for frames in stacks[parent[0]["pid"]]:
        assert not any(fr[0] in ("child_work_0", "child_work_1", "child_entry")
                       for fr in frames), \
            "a worker's frames were sampled: %s\n%s" % (frames, run.describe())
    run.records = parent
    check_processes(run, ("parent_work",))


# --- 2: a shell or make that starts Pythons ----------------------------------------------

def test_shell_starting_python(pywalk, interp, out_path):
    """`record -- sh -c 'python3 app.py'`, no --subprocesses: the Python's exact stacks."""
    cmd = shlex.join(interp.argv("app_target.py", "a", 0.3))
    run = launch(interp, ["sh", "-c", cmd], out_path, subprocesses=False)
    run.check_common(processes=1)
    check_processes(run, ("app_work_a",), by_pid=False)


@pytest.mark.parametrize("runner,subprocesses", [
    ("sh", True), ("sh", False), ("make", True),
], ids=["sh-subprocesses", "sh", "make-subprocesses"])
def test_two_pythons_one_after_the_other(pywalk, interp, out_path, tmp_path, runner,
                                         subprocesses):
    """A shell script or a makefile running two Pythons in turn: both are sampled, each
    under its own PID. The command is not Python, so its descendants are followed even
    without --subprocesses."""
    if (runner, subprocesses) != ("sh", True) and not interp.core:
        pytest.skip("make, and sh without --subprocesses, run on the core interpreter only "
                    "(sh with --subprocesses on all)")
    first = shlex.join(interp.argv("app_target.py", "a", 0.3))
    second = shlex.join(interp.argv("app_target.py", "b", 0.5))
    if runner == "sh":
        script = tmp_path / "run.sh"
        script.write_text("%s\n%s\n" % (first, second))
        argv = ["sh", str(script)]
    else:
        script = tmp_path / "Makefile"
        script.write_text("all:\n\t%s\n\t%s\n" % (first, second))
        argv = ["make", "-s", "-f", str(script)]
    run = launch(interp, argv, out_path, subprocesses=subprocesses)
    run.check_common(processes=2)
    check_processes(run, ("app_work_a", "app_work_b"))


# --- 3: exec ----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["attach", "launch"])
def test_exec_into_another_program(pywalk, interp, start_target, out_path, mode):
    """A Python that os.execv's another Python program: both programs' functions appear,
    under the one PID, each on its exact stack, split as their busy CPU time is."""
    if mode == "attach":
        run = attach(interp, start_target, "exec_first.py", [], out_path)
    else:
        run = launch(interp, interp.argv("exec_first.py"), out_path, subprocesses=False)
    run.check_common(processes=1)
    recs = dict((r["role"], r) for r in run.records)
    assert sorted(recs) == ["first_work", "second_work"], run.describe()
    first, second = recs["first_work"], recs["second_work"]
    assert first["pid"] == second["pid"], "exec kept the PID: %s" % run.records
    stacks, comms = e2e.rows_by_process(run.rows)
    # two lifetimes of one PID: a root frame or none, but only that PID
    assert set(stacks) <= {None, first["pid"]} and len(stacks) == 1, \
        "samples under %s, the workload is PID %d\n%s" % (sorted(stacks, key=str),
                                                         first["pid"], run.describe())
    if first["pid"] in comms:
        assert comms[first["pid"]] == comm_of(interp), comms
    counter = next(iter(stacks.values()))
    loops = dict((r["role"], check_busy_loop(run, r, counter)) for r in (first, second))
    exact = dict((role, loops[role][1]) for role in loops)
    n = sum(counter.values())
    table = []
    for role, rec in recs.items():
        share = exact[role] / (exact["first_work"] + exact["second_work"])
        busy_share = rec["busy"] / (first["busy"] + second["busy"])
        table.append((role, rec["pid"], n) + loops[role] + (100 * share, 100 * busy_share))
        assert abs(share - busy_share) <= SHARE_TOLERANCE + run.stolen, \
            "%s: %.1f%% of the busy samples, %.1f%% of the busy CPU (%.1f%% of the time " \
            "stolen)\n%s" % (role, 100 * share, 100 * busy_share, 100 * run.stolen,
                             run.describe())
    # CPU time survives the exec: the second program's includes the first's
    assert second["cpu"] > first["cpu"], run.records
    print_table(run, table)


# --- 4: three generations ------------------------------------------------------------

@pytest.mark.parametrize("mode", ["launch", "attach"])
def test_grandchildren(pywalk, interp, start_target, out_path, mode):
    """Python -> subprocess.Popen(python child) -> os.fork (no exec) grandchild: with
    --subprocesses all three appear, each with its exact stack and its share."""
    if mode == "attach":
        if not interp.core:
            pytest.skip("attach mode runs on the core interpreter only (launch mode on all)")
        run = attach(interp, start_target, "gc_parent.py", [], out_path, ["--subprocesses"])
    else:
        run = launch(interp, interp.argv("gc_parent.py"), out_path)
    # the grandchild is a fork child of a Python (so is the parent's child until its exec)
    run.check_common(processes=3, inherited=1)
    check_processes(run, ("parent_work", "child_work", "grandchild_work"))
    recs = dict((r["role"], r) for r in run.records)
    assert recs["parent_work"]["child"] == recs["child_work"]["pid"], run.records
    assert recs["child_work"]["grandchild"] == recs["grandchild_work"]["pid"], run.records
    assert recs["grandchild_work"]["ppid"] == recs["child_work"]["pid"], run.records


# --- pywalk behind the tree --------------------------------------------------------

def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.core_only
def test_children_forked_while_pywalk_lags(pywalk, interp, out_path, tmp_path):
    """pywalk reads the tree's records late (a loaded machine; here it is stopped): a shell
    it follows (-p --subprocesses) execs Python, which forks its workers, all before pywalk
    has read the exec. The kernel saw no config at those forks, so the workers are not
    inherited; pywalk must still sample them as soon as it catches up, not seconds later.
    Own CPU counts from the moment pywalk resumes."""
    fifo = str(tmp_path / "go")
    os.mkfifo(fifo)
    cmd = "echo READY; read go < %s; exec %s" % (
        shlex.quote(fifo), shlex.join(interp.argv("mp_target.py", "fork")))
    sh = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, start_new_session=True)
    pw = None
    stolen = e2e.StolenTime()
    try:
        assert sh.stdout.readline() == b"READY\n"
        argv = [e2e.pywalk_path(), "record", "-v", "-F", str(HZ), "-o", out_path,
                "--subprocesses", "-p", str(sh.pid)]
        with tempfile.TemporaryFile("w+") as err:
            pw = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=err, universal_newlines=True)
            deadline = time.monotonic() + ATTACH_TIMEOUT_S
            while True:
                err.seek(0)
                if "debug: sampling at" in err.read():
                    break
                assert pw.poll() is None and time.monotonic() < deadline, \
                    "pywalk did not start sampling"
                time.sleep(0.02)
            os.kill(pw.pid, signal.SIGSTOP)
            try:
                with open(fifo, "w") as f:
                    f.write("go\n")
                deadline = time.monotonic() + ATTACH_TIMEOUT_S
                while len(_children(sh.pid)) < 2:
                    assert time.monotonic() < deadline, "the workers did not start"
                    time.sleep(0.005)
                before = dict((pid, _cpu_seconds(pid)) for pid in [sh.pid] + _children(sh.pid))
            finally:
                os.kill(pw.pid, signal.SIGCONT)
            pw.wait(timeout=RUN_TIMEOUT_S)
            err.seek(0)
            result = subprocess.CompletedProcess(argv, pw.returncode, "", err.read())
        sh.wait(timeout=RUN_TIMEOUT_S)
        stdout = sh.stdout.read().decode(errors="replace")
    finally:
        for p in (pw, sh):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        sh.stdout.close()
    run = Run(interp, result, out_path, stdout, "stopped while the tree started: %s" % (
        " ".join(argv),), stolen.share())
    for rec in run.records:
        # what ran before pywalk resumed is not to be sampled; busy is bounded below
        rec["cpu_before_go"] = before.get(rec["pid"], 0.0)
        rec["busy"] = max(0.0, rec["busy"] - rec["cpu_before_go"])
    # the kernel saw no config at the forks: nothing was inherited
    check_mp(run, "fork", inherited=0)


# --- usage errors ----------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--subprocesses"],
    ["--subprocesses", "--all"],
    ["--all", "-p", "1"],
], ids=["subprocesses-alone", "subprocesses-all", "all-pid"])
def test_usage_errors_exit_2(pywalk, out_path, args):
    r = e2e.run_pywalk(["record", "-d", 1, "-o", out_path] + args, timeout=30)
    text = "args %s: exit %d\nstdout: %r\nstderr: %r" % (args, r.returncode, r.stdout,
                                                         r.stderr)
    assert r.returncode == 2, text
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    # one line naming the problem, and the usual pointer to --help
    assert len(lines) == 2 and lines[0].startswith("pywalk: "), text
    assert lines[1] == "Try 'pywalk record --help'.", text
    assert r.stdout == "", text
    assert not os.path.exists(out_path), text
