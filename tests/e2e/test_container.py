# SPDX-License-Identifier: MIT
"""End-to-end tests of a process in a container: known_shape.py as PID 1 of a pid namespace
of its own (unshare --pid --fork), whose thread states hold the namespace's thread ids, not
the host's; pywalk is given the host PID.

Per interpreter, two set-ups: the pid namespace alone (a chroot interpreter is chrooted),
and a pid namespace with a mount namespace and its own /proc (plus the chroot), as a
container has. One 4 s `record -p HOSTPID --threads` at 499 Hz each: each thread has >= 95 %
of its samples exactly on its known-shape stacks (paths as the process sees them), the
thread root frames are the host TIDs of its two threads, shipped >= 80 % of what the
target's measured CPU time gives, the summary adds up and the folded counts + the
not-counted stacks (<= 1 %) are `shipped`. (Before thread ids were translated, every
sample of such a process was "no thread state".)
"""
import subprocess

import pytest

import pywalk_e2e as e2e
from pywalk_e2e import ks
from test_lifetimes import finish_pywalk, start_pywalk

HZ = 499
DURATION_S = 4
MATCH_MIN = 0.95
SHIPPED_FLOOR = 0.8


@pytest.mark.parametrize("mount", [False, True], ids=["pidns", "pidns+mount"])
def test_record_a_process_in_its_own_pid_namespace(pywalk, interp, mount, tmp_path):
    script = interp.script_path("known_shape.py")
    t = e2e.Target(interp, argv=e2e.pidns_argv(interp, script, mount=mount),
                   script_path=script, pidns=True)
    out = str(tmp_path / "ns.folded")
    try:
        t.wait_ready()
        ns = e2e.nspids(t.pid)
        assert len(ns) >= 2 and ns[-1] == 1, "PID %d: NSpid %s, not PID 1 of its own " \
            "pid namespace" % (t.pid, ns)
        tids = t.tids()
        rec, err = start_pywalk(["-p", t.pid, "-d", DURATION_S, "-F", HZ, "--threads"], out)
        # CPU time from when pywalk samples: its start-up (loading and verifying the
        # programs, seconds on a cold machine) is no time it could sample in
        cpu0 = t.cpu_seconds()
        stderr = finish_pywalk(rec, err, timeout=DURATION_S + 60)
        cpu = t.cpu_seconds() - cpu0
        r = subprocess.CompletedProcess(rec.args, rec.returncode, "", stderr)
    finally:
        t.stop()
    describe = "%s\n(target %s, host PID %d, NSpid %s, tids %s, %.2f CPU s)" % (
        e2e.describe_run(r, out), " ".join(t.argv), t.pid, ns, tids, cpu)
    assert r.returncode == 0, describe
    _, buckets = e2e.check_summary(r.stderr)
    rows = e2e.parse_folded(out)
    e2e.check_folded_total(r.stderr, rows, describe)
    assert buckets["shipped"] >= SHIPPED_FLOOR * cpu * HZ, \
        "shipped %d < %.0f%% of %.0f (%.2f CPU s x %d Hz)\n%s" % (
            buckets["shipped"], 100 * SHIPPED_FLOOR, cpu * HZ, cpu, HZ, describe)
    expected = ks.expected_stacks(interp.version, script)
    scores = {}
    for frames, n in rows:
        task = e2e.parse_task_frame(frames[0])
        assert task and task[1] in tids, "first frame %r is not 'COMM (TID)' of host " \
            "TIDs %s\n%s" % (frames[0], tids, describe)
        if task[1] not in scores:
            scores[task[1]] = (
                e2e.ThreadScore(expected[ks.MAIN], [expected[ks.WORKER]]) if task[1] == t.pid
                else e2e.ThreadScore(expected[ks.WORKER], [expected[ks.MAIN]]))
        scores[task[1]].add(e2e.to_py_frames(frames[1:]), n)
    assert sorted(scores) == tids, "sampled threads %s, has %s\n%s" % (
        sorted(scores), tids, describe)
    for tid, s in scores.items():
        assert s.match_fraction >= MATCH_MIN and s.foreign == 0, "TID %d: %s\n%s" % (
            tid, s.report(), describe)
    print("%s %s: %s" % (interp.id, "pidns+mount" if mount else "pidns", "; ".join(
        "TID %d %.1f%% of %d" % (tid, 100 * s.match_fraction, s.total)
        for tid, s in sorted(scores.items()))))
