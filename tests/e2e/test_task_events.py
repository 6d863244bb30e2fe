# SPDX-License-Identifier: MIT
"""End-to-end tests of "only the target pays": with -p and a command, the sampler's perf
events are opened on the target's threads with `inherit`, not on every CPU.

* Threads started after attach: late_threads.py under `record -v -p PID -F 499`; once
  pywalk samples, SIGUSR1 makes the target start `late_parent`, which starts `late_child`
  (neither existed at attach, the second is started by a thread that did not). Each one's
  spin function has stacks, and as many as its measured CPU time gives (within 35 %); the
  -v line names the one thread the events were opened on; the summary adds up.
* Bystanders: a busy `sh` loop runs beside a busy target under `record -p`. Per-task
  events: "not a target process" is 0 (the bystander never took the sampling interrupt);
  with PYWALK_PERF_SCOPE=cpu (per-CPU events, the old way) the same run counts the
  bystander's samples there.
* No /proc reads per loop turn: under strace, the /proc paths pywalk opens are the same
  for 1 s and for 4 s of sampling.
"""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

import pywalk_e2e as e2e
from test_lifetimes import finish_pywalk, start_pywalk

HZ = 499
SPIN_S = 2.0
TOLERANCE = 0.35  # samples vs CPU time x HZ, relative, beyond the stolen share below


def spin_samples(rows, func):
    return sum(n for frames, n in rows if any(f.startswith(func + " (") for f in frames))


@pytest.mark.core_only
def test_threads_started_after_attach_are_sampled(pywalk, interp, start_target, out_path):
    t = start_target(interp, str(SPIN_S), script="late_threads.py")
    assert t.tids() == [t.pid], "late_threads.py should have one thread before SIGUSR1"
    rec, err = start_pywalk(["-p", t.pid, "-F", HZ, "-d", "%ds" % (SPIN_S + 3)], out_path)
    steal_meter = e2e.StolenTime()
    os.kill(t.pid, signal.SIGUSR1)
    line = t.proc.stdout.readline().decode()
    stolen = steal_meter.share()
    stderr = finish_pywalk(rec, err, timeout=60)
    assert rec.returncode == 0, stderr
    cpu = json.loads(line)
    assert ("pywalk: debug: perf events on the target's 1 thread (and on what it starts), "
            "not on every CPU") in stderr.splitlines(), stderr
    e2e.check_summary(stderr)
    rows = e2e.parse_folded(out_path)
    e2e.check_folded_total(stderr, rows, stderr)
    for name, func in (("parent", "late_parent_spin"), ("child", "late_child_spin")):
        # cpu-clock counts the time the host stole, the thread's CPU time does not: with a
        # share s stolen, a CPU second gives up to 1 / (1 - s) seconds of samples
        want = cpu[name] * HZ
        got = spin_samples(rows, func)
        low, high = (1 - TOLERANCE - stolen) * want, (1 + TOLERANCE) * want / (1 - stolen)
        print("%s: %d samples, %.0f from its CPU time, %.1f%% stolen, allowed %.0f-%.0f" % (
            func, got, want, 100 * stolen, low, high))
        assert low <= got <= high, \
            "%s: %d samples, %.0f-%.0f expected from %.2f s of CPU at %d Hz (%.1f%% of the " \
            "time stolen)\n%s" % (func, got, low, high, cpu[name], HZ, 100 * stolen, stderr)


def bystander_run(pywalk, start_target, interp, out_path, scope):
    """One 2 s recording of the target beside a busy shell loop: (buckets, stderr, samples
    the loop's CPU time gives at HZ in a second of it that was surely sampled)."""
    env = dict(os.environ)
    env.pop("PYWALK_PERF_SCOPE", None)
    if scope:
        env["PYWALK_PERF_SCOPE"] = scope
    t = start_target(interp)
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
    rec, err = start_pywalk(["-p", t.pid, "-F", HZ, "-d", "2s"], out_path, env=env)
    try:
        # sampling began before its "sampling at" line and goes on for 2 s after: this
        # second is inside it
        cpu0 = e2e.task_cpu_seconds(busy.pid)
        time.sleep(1.0)  # a measured window, not a wait for a condition
        busy_samples = (e2e.task_cpu_seconds(busy.pid) - cpu0) * HZ
        stderr = finish_pywalk(rec, err, timeout=60)
    finally:
        busy.kill()
        busy.wait()
    assert rec.returncode == 0, stderr
    return e2e.check_summary(stderr)[1], stderr, busy_samples


@pytest.mark.core_only
def test_bystander_takes_no_sampling_interrupt(pywalk, interp, start_target, out_path):
    task, stderr, _ = bystander_run(pywalk, start_target, interp, out_path, None)
    assert task["shipped"] >= HZ // 10, stderr
    assert task["not a target process"] == 0, stderr
    # per-CPU events interrupt whatever runs: the loop's CPU time is sampled, at least as
    # much as in that one second, less 5 sigma (Poisson) of chance
    cpu, stderr, want = bystander_run(pywalk, start_target, interp, out_path, "cpu")
    assert want >= 50, "the busy loop got %.2f s of CPU in 1 s: too loaded to judge" % (
        want / HZ)
    assert cpu["not a target process"] >= want - 5 * want ** 0.5, \
        "%d samples not of a target, the busy loop alone gives %.0f\n%s" % (
            cpu["not a target process"], want, stderr)


def proc_opens(pywalk, pid, seconds, tmp_path):
    """Paths under /proc that `pywalk record -p PID -d SECONDS` opens, from strace."""
    log = tmp_path / ("strace-%d.txt" % seconds)
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(log),
                        pywalk, "record", "-p", str(pid), "-F", str(HZ), "-d", "%ds" % seconds,
                        "-o", "/dev/null"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return sorted(l.split('"')[1] for l in log.read_text().splitlines()
                  if '"/proc/' in l)


@pytest.mark.core_only
def test_no_proc_reads_while_sampling(pywalk, interp, start_target, tmp_path):
    """What pywalk opens under /proc is the same for 1 s and for 4 s of sampling: nothing
    per loop turn (target liveness comes from the kernel's exit records)."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (apt-get install strace)")
    t = start_target(interp)
    short, long = proc_opens(pywalk, t.pid, 1, tmp_path), proc_opens(pywalk, t.pid, 4, tmp_path)
    assert short and long == short, "1 s: %s\n4 s: %s" % (short, long)
