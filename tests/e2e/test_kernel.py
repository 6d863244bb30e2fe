# SPDX-License-Identifier: MIT
"""--kernel against tests/targets/kernel_target.py: kernel frames at the leaf, below the
exact Python stack, in order, in folded and pprof output, on-CPU and off-CPU.

* record: a thread that reads /dev/zero in a loop spends most of its time in the read
  system call: at least MIN_SYSCALL_SHARE of its samples end in the syscall path, the
  entry (entry_SYSCALL_64...) then do_syscall_64 then the read's own functions (ksys_read,
  vfs_read or __x64_sys_read, whatever this kernel names), all below zero_reader's read line;
  no kernel frame ever sits above a Python frame. Every shipped stack had its kernel stack
  record (the pairing line), and the folded counts add up to what was shipped.
* pprof: `go tool pprof -traces` shows the same path leaf first above zero_reader, and the
  kernel's mapping is [kernel.kallsyms] with the real addresses.
* off-CPU: a thread sleeping in time.sleep weighs its time under nap's sleep line with the
  kernel's sleeping path below it: schedule, and hrtimer_nanosleep / do_nanosleep (3.11+
  sleep in clock_nanosleep) or do_select (3.10's time.sleep is a select with a timeout).
* without --kernel, no kernel frame and no pairing line.

Kernel frames do not depend on the Python version: the interpreter matrix is the core one
and one interpreter of each frame-chain family the record tests cover (3.10, 3.12-3.14,
3.15), not every interpreter.
"""
import os
import re

import pytest

import pywalk_e2e as e2e

SECONDS = 3
# of zero_reader's samples: it is in its read most of the time, and the floor sits well
# below that, for a loaded machine
MIN_SYSCALL_SHARE = 0.30
MIN_SLEEP_SHARE = 0.80    # of nap's time off CPU
PAIRED_RE = re.compile(r"^pywalk: --kernel: (\d+) stacks shipped with their kernel stack; "
                       r"(\d+) kernel stack records without their sample \(not counted\)$",
                       re.M)
SCRIPT = "kernel_target.py"
SLEEP_PATHS = ("hrtimer_nanosleep", "do_nanosleep", "__x64_sys_clock_nanosleep",
               "schedule_hrtimeout_range_clock", "do_select")
# one interpreter per frame-chain family besides the core 3.11 (the record tests' matrix)
FAMILY_OF = {"3.10": "3.10", "3.11": "3.11", "3.12": "shim", "3.13": "shim", "3.14": "shim",
             "3.15": "3.15"}
_chosen = {}


def one_per_family(interp):
    """Skip an interpreter whose family another one of the run covers already."""
    if getattr(interp, "core", False):
        return
    fam = FAMILY_OF.get(interp.version, interp.version)
    if fam == "3.11":
        pytest.skip("kernel frames do not depend on the version: 3.11 is covered by the "
                    "core interpreter")
    if _chosen.setdefault(fam, interp.id) != interp.id:
        pytest.skip("kernel frames do not depend on the version: the %s family is covered "
                    "by %s" % (fam, _chosen[fam]))


def kernel_frame(fr):
    return fr.endswith(" [kernel]")


def kname(fr):
    return fr[:-len(" [kernel]")]


def split_stack(frames):
    """(Python frames, kernel frame names, rest) of a folded stack; asserts no kernel frame
    sits above a Python frame."""
    py, kern, rest = [], [], []
    for fr in frames:
        if kernel_frame(fr):
            assert not rest, "a kernel frame below a pseudo-frame: %s" % ";".join(frames)
            kern.append(kname(fr))
        elif fr.startswith("[off-cpu: "):
            rest.append(fr)
        else:
            assert not kern and not rest, \
                "a Python frame below a kernel frame: %s" % ";".join(frames)
            py.append(fr)
    return py, kern, rest


def expected_read_stack(interp):
    m = e2e.markers(SCRIPT)
    path = interp.script_path(SCRIPT)
    return ["<module> (%s:%d)" % (path, m["main"]), "main (%s:%d)" % (path, m["call_read"]),
            "zero_reader (%s:%d)" % (path, m["read"])]


def record(interp, start_target, tmp_path, mode, *args, out="k.folded"):
    t = start_target(interp, mode, script=SCRIPT)
    path = str(tmp_path / out)
    r = e2e.run_pywalk(["record", "-p", t.pid, "-d", SECONDS, "-F", 499, "-o", path] +
                       list(args), timeout=120)
    assert r.returncode == 0, e2e.describe_run(r, path)
    return t, path, r


def test_syscall_path_below_the_python_stack(pywalk, interp, start_target, tmp_path):
    one_per_family(interp)
    t, path, r = record(interp, start_target, tmp_path, "read", "--kernel")
    rows = e2e.parse_folded(path)
    _, buckets = e2e.check_summary(r.stderr)
    e2e.check_folded_total(r.stderr, rows, e2e.describe_run(r, path))
    m = PAIRED_RE.search(r.stderr)
    assert m, "no --kernel pairing line:\n" + r.stderr
    # every shipped stack came with its kernel stack; none lost its sample here
    assert int(m.group(1)) == buckets["shipped"], r.stderr
    want = expected_read_stack(interp)
    total = with_path = 0
    for frames, n in rows:
        py, kern, _ = split_stack(frames)
        if py != want:
            continue
        total += n
        if e2e.is_read_path(kern):
            with_path += n
    assert total >= SECONDS * 499 * 0.3, "too few samples of zero_reader: %d\n%s" % (
        total, e2e.describe_run(r, path))
    assert with_path >= MIN_SYSCALL_SHARE * total, \
        "%d of %d samples of zero_reader show the read syscall path\n%s" % (
            with_path, total, e2e.describe_run(r, path))


def test_without_kernel_no_kernel_frames(pywalk, start_target, all_interpreters, tmp_path):
    t, path, r = record(all_interpreters[0], start_target, tmp_path, "read")
    rows = e2e.parse_folded(path)
    assert rows, e2e.describe_run(r, path)
    assert not any(kernel_frame(fr) for frames, _ in rows for fr in frames), \
        e2e.describe_run(r, path)
    assert not PAIRED_RE.search(r.stderr), r.stderr


def test_pprof_traces_and_mapping(pywalk, start_target, all_interpreters, tmp_path):
    interp = all_interpreters[0]
    t, path, r = record(interp, start_target, tmp_path, "read", "--kernel", out="k.pb.gz")
    traces = e2e.go_pprof(tmp_path, "-traces", path)
    # a trace is leaf first: the kernel's read path, then zero_reader, main, <module>
    found = 0
    for block in traces.split("-----------+")[1:]:
        names = [ln.split()[-1] for ln in block.splitlines()
                 if ln.strip() and ":" not in ln and not ln.startswith("-")]
        if "zero_reader" not in names:
            continue
        i = names.index("zero_reader")
        assert names[i:i + 3] == ["zero_reader", "main", "<module>"], block
        if e2e.is_read_path(list(reversed(names[:i]))):
            found += 1
    assert found, traces[:3000]
    raw = e2e.go_pprof(tmp_path, "-raw", path)
    assert re.search(r"^\s*\d+: 0x8000000000000000/0xffffffffffffffff/0x0 "
                     r"\[kernel\.kallsyms\]", raw, re.M), raw[-2000:]
    assert re.search(r"^\s*\d+: 0xffff[0-9a-f]{12} M=\d+ do_syscall_64 ", raw, re.M), \
        raw[-3000:]


def test_offcpu_sleep_shows_the_nanosleep_path(pywalk, interp, start_target, tmp_path):
    one_per_family(interp)
    t, path, r = record(interp, start_target, tmp_path, "sleep", "--kernel", "--mode",
                        "off-cpu")
    rows = e2e.parse_folded(path)
    m = e2e.markers(SCRIPT)
    spath = interp.script_path(SCRIPT)
    want = ["<module> (%s:%d)" % (spath, m["main"]), "nap (%s:%d)" % (spath, m["call_nap"]),
            "nap (%s:%d)" % (spath, m["sleep"])]
    total = with_path = 0
    for frames, ns in rows:
        py, kern, rest = split_stack(frames)
        # 3.10 and 3.11 name time.sleep's frame nothing (a C function): the Python stack
        # ends at nap's sleep line
        if py[-2:] != want[1:] and py[-1:] != want[-1:]:
            continue
        total += ns
        # 3.11+ sleep in clock_nanosleep; 3.10's time.sleep is a select() with a timeout
        if "schedule" in kern and any(n in kern for n in SLEEP_PATHS) and \
                rest == ["[off-cpu: sleeping]"]:
            with_path += ns
    assert total >= 0.8 * SECONDS * 1e9, "nap's time off CPU: %d ns\n%s" % (
        total, e2e.describe_run(r, path))
    assert with_path >= MIN_SLEEP_SHARE * total, \
        "%d of %d ns of nap show the nanosleep path\n%s" % (
            with_path, total, e2e.describe_run(r, path))
    m2 = PAIRED_RE.search(r.stderr)
    assert m2 and int(m2.group(2)) == 0, r.stderr


def test_kernel_with_aggregate_is_a_usage_error(pywalk):
    r = e2e.run_pywalk(["trace", "--kernel", "--aggregate", "tracepoint:syscalls:sys_enter_openat",
                        "-p", os.getpid()])
    assert r.returncode == 2, r
    assert r.stderr.splitlines()[0] == ("pywalk: --kernel cannot go with --aggregate: the "
                                        "kernel counts stacks of Python frames only"), r.stderr
