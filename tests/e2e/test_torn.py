# SPDX-License-Identifier: MIT
"""Torn-state proof: a C extension (tests/targets/tornext.c) publishes inconsistent frame
chains while it busy-spins; pywalk must ship none of them and count each as rejected by
reason. Also: a native thread holding a thread state with no frames is an empty stack and
does not spoil the samples of busy threads.

Needs 3.11+ (the extension uses the interpreter's internal frame layout); it is built with
the interpreter's own headers: inside the Debian-unstable chroot with its gcc, or against
the headers of Debian's python3.11-dev or a pyenv build with the host gcc. 3.10 has no
internal frame chain of this kind (frame objects), so it is not covered.
"""
import collections
import os

import pytest

import pywalk_e2e as e2e

EXT_SOURCE = os.path.join(e2e.TARGETS_DIR, "tornext.c")
SECONDS = 2
HZ = 999
CONSISTENT, NULL_PREVIOUS, SKIP, CYCLE, BAD_OWNER, NULL_CODE = range(6)
# what each forged chain must be counted as. A cycle of forged frames outside the data
# stack is caught by the data-stack check first, so it may be counted as torn.
EXPECTED_REASONS = {
    NULL_PREVIOUS: {"rejected: torn chain"},
    SKIP: {"rejected: torn chain"},
    CYCLE: {"rejected: torn chain", "rejected: cycle"},
    BAD_OWNER: {"rejected: bad frame"},
    NULL_CODE: {"rejected: bad frame"},
}
# the only stacks the main thread of torn_target.py can really have, as (name, marker line)
WINDOW_STACK = ["<module>", "outer", "middle", "torn_window"]


def _build_ext(interp, tmp_path_factory):
    """Build tornext for `interp`; returns the directory to put on sys.path, as the
    target process sees it."""
    minor = int(interp.version.split(".")[1])
    if minor < 11:
        pytest.skip("%s: the torn-state extension forges _PyInterpreterFrame chains (3.11+)"
                    % interp.version)
    return e2e.build_ext(interp, EXT_SOURCE, "tornext", tmp_path_factory)[0]


@pytest.fixture(scope="module")
def ext_dir(interp, tmp_path_factory):
    return _build_ext(interp, tmp_path_factory)


def _record(pywalk, start_target, interp, ext_dir, mode, tmp_path, *extra, seconds=SECONDS):
    target = start_target(interp, ext_dir, mode, seconds + 2, *extra, script="torn_target.py")
    out = str(tmp_path / ("torn-%d.folded" % mode))
    r = e2e.run_pywalk(["record", "-p", target.pid, "-d", seconds, "-F", HZ, "--threads",
                        "-o", out])
    assert r.returncode == 0, e2e.describe_run(r, out)
    total, buckets = e2e.check_summary(r.stderr)
    rows = e2e.parse_folded(out)
    return target, buckets, rows, r


def _main_thread_stacks(rows, pid):
    """{tuple of qualnames}: count for the main thread's stacks."""
    stacks = collections.Counter()
    for frames, n in rows:
        task = e2e.parse_task_frame(frames[0])
        if not task or task[1] != pid:
            continue
        stacks[tuple(e2e.parse_py_frame(f)[0] for f in frames[1:])] += n
    return stacks


CHANGERS = 8


def _invalid_changer_stacks(rows, target):
    """{stack text: count} of the changer threads' stacks that are not changer -> descend^d
    at the lines the program has."""
    m = e2e.markers("torn_target.py")
    bad = collections.Counter()
    for frames, n in rows:
        task = e2e.parse_task_frame(frames[0])
        if not task or task[1] == target.pid:
            continue
        mine = [e2e.parse_py_frame(f) for f in frames[1:]]
        mine = [f for f in mine if f is None or f[1] == target.script_path]
        if not mine:
            continue  # a thread starting or ending, in threading.py only
        ok = None not in mine and mine[0][0] == "changer" and all(
            f[0] == "descend" for f in mine[1:]) and len(mine) <= 18
        ok = ok and (len(mine) == 1 or mine[0][2] == m["changer_call"])
        ok = ok and all(f[2] == m["descend_call"] for f in mine[1:-1])
        if ok:
            bad_line = len(mine) > 1 and mine[-1][2] not in range(
                m["descend_call"] - 2, m["descend_leaf"] + 1)
            ok = not bad_line
        if not ok:
            bad[";".join("%s:%s" % (f[0], f[2]) if f else "?" for f in mine)] += n
    return bad


def _valid_main_stack(names):
    """A stack the main thread of torn_target.py can really have: a prefix of the window
    chain (the loop also calls time.sleep and time.monotonic, which are C functions)."""
    return list(names) == WINDOW_STACK[:len(names)] and len(names) >= 1


def test_consistent_chain_is_shipped(pywalk, interp, ext_dir, start_target, tmp_path):
    """Control: the same workload without forging ships the window's stack."""
    target, buckets, rows, r = _record(pywalk, start_target, interp, ext_dir, CONSISTENT,
                                       tmp_path)
    stacks = _main_thread_stacks(rows, target.pid)
    window = stacks[tuple(WINDOW_STACK)]
    assert window >= 200, "the control window shipped only %d stacks\n%s" % (
        window, e2e.describe_run(r))
    rejected = sum(v for k, v in buckets.items() if k.startswith("rejected"))
    assert rejected <= 0.01 * window, "control run rejected %d samples\n%s" % (
        rejected, r.stderr)


@pytest.mark.parametrize("mode", sorted(EXPECTED_REASONS),
                         ids=["null-previous", "skip", "cycle", "bad-owner", "null-code"])
def test_forged_chain_is_never_shipped(pywalk, interp, ext_dir, start_target, tmp_path, mode):
    # 3.14t: 8 more threads change their stacks at once on the machine's CPUs
    changers = ("--changers", CHANGERS) if interp.free_threaded else ()
    # (twice as long: the main thread's forged windows share the CPUs with them)
    target, buckets, rows, r = _record(pywalk, start_target, interp, ext_dir, mode, tmp_path,
                                       *changers, seconds=SECONDS * (2 if changers else 1))
    if changers:
        bad = _invalid_changer_stacks(rows, target)
        assert not bad, "changer threads shipped stacks they cannot have: %s\n%s" % (
            dict(bad.most_common(5)), e2e.describe_run(r))
        assert sum(n for frames, n in rows if e2e.parse_task_frame(frames[0])[1] !=
                   target.pid) >= 50, "the changer threads were hardly sampled\n%s" % r.stderr
    stacks = _main_thread_stacks(rows, target.pid)
    # nothing impossible: every shipped main-thread stack is one the program can have
    invalid = dict((s, n) for s, n in stacks.items() if not _valid_main_stack(s))
    assert not invalid, "shipped stacks the program cannot have: %s\n%s" % (
        invalid, e2e.describe_run(r))
    # the window spins ~99% of the time with the forged chain published; a sample that
    # shows torn_window as the leaf can only come from the few microseconds of Python
    # around the C call
    window = stacks[tuple(WINDOW_STACK)]
    rejected = sum(buckets[k] for k in EXPECTED_REASONS[mode])
    assert rejected >= 200, "forged windows were rejected only %d times\n%s" % (
        rejected, r.stderr)
    assert window <= 0.01 * rejected + 2, \
        "%d window stacks shipped while %d were rejected: forged chains got through\n%s" % (
            window, rejected, e2e.describe_run(r))


def test_empty_native_thread_is_empty_and_spoils_nothing(pywalk, interp, ext_dir,
                                                         start_target, tmp_path):
    """3.15: a thread state with current_frame == base_frame is a valid empty stack
    (3.13/3.14: current_frame NULL); busy Python threads are still sampled whole."""
    target, buckets, rows, r = _record(pywalk, start_target, interp, ext_dir, CONSISTENT,
                                       tmp_path, "--empty-thread")
    assert buckets["empty stack"] >= 200, \
        "the native thread without frames was not counted as empty\n%s" % r.stderr
    rejected = sum(v for k, v in buckets.items() if k.startswith("rejected"))
    assert rejected <= 5, "samples were rejected next to an empty thread\n%s" % r.stderr
    busy = 0
    for frames, n in rows:
        names = [e2e.parse_py_frame(f)[0] for f in frames[1:]]
        if names and names[-1] == "busy":
            busy += n
    stacks = _main_thread_stacks(rows, target.pid)
    assert busy >= 50, "the busy Python thread lost its samples\n%s" % e2e.describe_run(r)
    assert stacks[tuple(WINDOW_STACK)] >= 100, e2e.describe_run(r)
