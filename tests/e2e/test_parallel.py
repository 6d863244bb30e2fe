# SPDX-License-Identifier: MIT
"""Eight threads at once, against tests/targets/parallel_target.py, on every interpreter:
thread w<k> runs only work_k -> loop -> mix, and mix is re-specialised all the time (its
argument changes type). On the free-threaded build the threads run truly in parallel, each
in its own copy of mix's bytecode (co_tlbc), so the sampler meets frames whose instruction
pointer lies in several copies of one code object.

* every stack of thread w<k> is its own function: no work_j of another thread, ever;
* >= 95 % of each thread's samples are exact: names, file, and each line one the program
  can be at (the line offset computed against the copy the pointer is in);
* each thread's share of the samples is within 5 points of its share of the CPU time the
  threads used meanwhile (/proc/PID/task/TID/schedstat, in ns);
* no sample rejected for an instruction pointer in no bytecode copy, few rejected at all.
"""
import collections
import os

import pywalk_e2e as e2e

NTHREADS = 8
HZ = 999  # a loaded 2-CPU machine may give the target a fraction of a CPU
DURATION_S = 5
MATCH_MIN = 0.95
SHARE_TOLERANCE = 5.0  # percentage points
REJECTED_MAX = 0.02    # of the perf events: stacks caught mid-change are rejected, not shipped


def samples_needed(nthreads, tolerance):
    """Samples for a thread's share (1/nthreads) to stay within `tolerance` points of its
    CPU share at 3 standard deviations of the sampling noise."""
    p = 1.0 / nthreads
    return int(9 * p * (1 - p) / (tolerance / 100.0) ** 2) + 1


def thread_cpu_ns(pid):
    """{tid: time on CPU in ns} of every thread of pid."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                out[int(tid)] = int(f.read().split()[0])
        except FileNotFoundError:
            continue
    return out


def allowed_lines(m):
    """{function: lines it can be sampled at} below work_k."""
    return {
        # the def line (RESUME) to the return
        "mix": set(range(m["mix_first"] - 1, m["mix_return"] + 1)),
        # from `i = k` to `i += 1`, the barrier wait included
        "loop": set(range(m["loop_call"] - 4, m["loop_call"] + 2)),
    }


def test_each_thread_only_its_own_function_exact_and_fair(pywalk, interp, start_target,
                                                          tmp_path):
    m = e2e.markers("parallel_target.py")
    lines = allowed_lines(m)
    t = start_target(interp, NTHREADS, script="parallel_target.py")
    path = str(tmp_path / "parallel.folded")
    ticks0 = thread_cpu_ns(t.pid)
    r = e2e.run_pywalk(["record", "-p", t.pid, "-d", DURATION_S, "-F", HZ, "--threads",
                        "-o", path], timeout=DURATION_S + 60)
    ticks1 = thread_cpu_ns(t.pid)
    assert r.returncode == 0, e2e.describe_run(r, path)
    total, buckets = e2e.check_summary(r.stderr)
    assert buckets.get("rejected: no bytecode copy", 0) == 0, r.stderr
    rejected = sum(v for k, v in buckets.items() if k.startswith("rejected"))
    assert rejected <= REJECTED_MAX * total + 2, r.stderr

    samples, exact, foreign, by_name = (collections.Counter(), collections.Counter(),
                                        collections.Counter(), {})
    for frames, n in e2e.parse_folded(path):
        task = e2e.parse_task_frame(frames[0])
        assert task, "first frame %r is not 'NAME (TID)'" % frames[0]
        name, tid = task
        if not (name.startswith("w") and name[1:].isdigit()):
            continue  # the main thread, waiting
        by_name[tid] = name
        samples[tid] += n
        py = [e2e.parse_py_frame(f) for f in frames[1:]]
        mine = [f for f in py if f and f[1] == t.script_path]
        works = set(f[0] for f in mine if f[0].startswith("work_"))
        if works - {"work_" + name[1:]}:
            foreign[tid] += n
            continue
        ok = (len(mine) in (2, 3) and mine[0] == ("work_" + name[1:], t.script_path,
                                                  m["work_" + name[1:]]) and
              mine[1][0] == "loop" and mine[1][2] in lines["loop"] and
              (len(mine) == 2 or (mine[2][0] == "mix" and mine[2][2] in lines["mix"])) and
              all(f is not None for f in py))
        if ok:
            exact[tid] += n
    desc = e2e.describe_run(r, path)
    assert not foreign, "stacks with another thread's function: %s\n%s" % (
        dict((by_name[k], v) for k, v in foreign.items()), desc)
    assert sorted(by_name.values()) == ["w%d" % k for k in range(NTHREADS)], \
        "threads sampled: %s\n%s" % (sorted(by_name.values()), desc)
    for tid, n in samples.items():
        assert exact[tid] >= MATCH_MIN * n, "%s: %d of %d samples exact\n%s" % (
            by_name[tid], exact[tid], n, desc)

    cpu = dict((tid, ticks1.get(tid, 0) - ticks0.get(tid, 0)) for tid in samples)
    cpu_total, n_total = sum(cpu.values()), sum(samples.values())
    assert n_total >= samples_needed(NTHREADS, SHARE_TOLERANCE) and cpu_total > 0, \
        "too few samples (%d, %d needed) to compare shares: %s\n%s" % (
            n_total, samples_needed(NTHREADS, SHARE_TOLERANCE), dict(samples), desc)
    print("exact: %s; share of samples / of CPU: %s" % (
        dict((by_name[k], "%.1f%% of %d" % (100.0 * exact[k] / v, v)) for k, v in samples.items()),
        dict((by_name[k], "%.1f/%.1f" % (100.0 * v / n_total, 100.0 * cpu[k] / cpu_total))
             for k, v in samples.items())))
    for tid in samples:
        got = 100.0 * samples[tid] / n_total
        want = 100.0 * cpu[tid] / cpu_total
        assert abs(got - want) <= SHARE_TOLERANCE, \
            "%s: %.1f%% of the samples, %.1f%% of the CPU time (%s)\n%s" % (
                by_name[tid], got, want, dict((by_name[k], v) for k, v in cpu.items()), desc)
