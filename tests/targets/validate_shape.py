# SPDX-License-Identifier: MIT
"""Check known_shape.py's ground truth on real interpreters, without pywalk.

    /usr/bin/python3 tests/targets/validate_shape.py [--seconds 10] [--interval 0.001]

For every interpreter interpreters.py finds, runs the workload in-process under a Python
sampler thread (sys._current_frames() every --interval, frame.f_lineno for lines),
from READY on, and checks per thread that >= 95% of samples are exactly one of
known_shape_expected's stacks, that the main thread's phase split is within 5 points of
PHASES, and that the recursion is RECURSION_DEPTH deep. Prints the numbers, exits 1 on a
failure. Not a pytest module: the e2e tests hold pywalk to the same truth.

The sampler holds the GIL while it samples, so it sees threads only at bytecode
boundaries where they gave up the GIL (and a waiting thread where it stopped): good for
checking stacks and lines, an approximation of pywalk's on-CPU sampling for the split.
Where perf works (3.12+ interpreters built with frame pointers, e.g. Debian's 3.15), it
also samples uniformly on-CPU with perf and CPython's perf trampolines, and checks the
stacks' functions and the split as pywalk should see them.
The --child half runs on the interpreter under test (3.10-3.15, stdlib only).
"""
import collections
import json
import os
import sys
import time

MATCH_MIN = 0.95
SPLIT_TOLERANCE = 0.05


def child(script, seconds, interval, switch_s):
    import runpy
    import threading

    # A shorter GIL switch interval lets the sampler in more often (default 5 ms would
    # cap it near 200 Hz shared by every sample); the workload splits by thread CPU time,
    # so this does not change the split it is designed to have.
    sys.setswitchinterval(switch_s)

    ready = threading.Event()
    stop = threading.Event()
    samples = collections.Counter()

    class ReadyTee:
        """stdout wrapper that notices the workload's READY line."""
        def __init__(self, real):
            self.real = real

        def write(self, s):
            if "READY" in s:
                ready.set()
            return self.real.write(s)

        def flush(self):
            self.real.flush()

    def sampler():
        me = threading.get_ident()
        ready.wait()
        main_ident = threading.main_thread().ident
        names = dict((t.ident, t.name) for t in threading.enumerate())
        while not stop.is_set():
            time.sleep(interval)
            for ident, f in sys._current_frames().items():
                if ident == me:
                    continue
                stack = []
                while f is not None:
                    co = f.f_code
                    stack.append((getattr(co, "co_qualname", co.co_name), co.co_filename,
                                  f.f_lineno))
                    f = f.f_back
                stack.reverse()
                # Drop the validator's and runpy's frames under the script's <module>;
                # a main-thread sample outside the workload (its very end) is not kept.
                for i, (name, path, _) in enumerate(stack):
                    if name == "<module>" and path == script:
                        stack = stack[i:]
                        break
                else:
                    if ident == main_ident:
                        continue
                role = "main" if ident == main_ident else names.get(ident, str(ident))
                samples[(role, tuple(stack))] += 1

    t = threading.Thread(target=sampler, name="validate-sampler", daemon=True)
    t.start()
    real_stdout = sys.stdout
    sys.stdout = ReadyTee(real_stdout)
    sys.argv = [script, str(seconds)]
    t0 = time.monotonic()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        stop.set()
        t.join()
        sys.stdout = real_stdout
    rows = [[role, [list(fr) for fr in stack], n] for (role, stack), n in samples.items()]
    print("RESULT " + json.dumps({"wall_s": time.monotonic() - t0, "samples": rows}))
    sys.stdout.flush()


def analyse(interp, rows, shape, expected):
    """Numbers for one run; returns (ok, report lines)."""
    from known_shape_expected import WORKER, MAIN, classify, format_stack

    by_thread = collections.defaultdict(collections.Counter)
    for role, stack, n in rows:
        thread = MAIN if role == "main" else WORKER if role == "ks-worker" else role
        by_thread[thread][tuple(tuple(fr) for fr in stack)] += n
    ok, lines = True, []
    for thread in (MAIN, WORKER):
        stacks = by_thread.get(thread, collections.Counter())
        total = sum(stacks.values())
        phase_n = collections.Counter()
        unmatched = collections.Counter()
        depth_bad = 0
        for stack, n in stacks.items():
            phase = classify(stack, expected[thread])
            if phase:
                phase_n[phase] += n
            else:
                unmatched[stack] += n
            if stack and stack[-1][2] == shape.markers["leaf:recurse"][1]:
                if sum(1 for fr in stack if fr[0] == "recurse") != shape.recursion_depth:
                    depth_bad += n
        matched = sum(phase_n.values())
        frac = matched / total if total else 0.0
        good = total > 0 and frac >= MATCH_MIN and depth_bad == 0
        text = "  %-6s samples %5d  matched %6.2f%%" % (thread, total, 100 * frac)
        if thread == MAIN:
            parts = []
            for phase in shape.phase_order:
                got = phase_n[phase] / matched if matched else 0.0
                want = shape.phases[phase]
                good = good and abs(got - want) <= SPLIT_TOLERANCE
                parts.append("%s %.1f%% (want %.0f%%)" % (phase, 100 * got, 100 * want))
            text += "  split: " + ", ".join(parts)
            text += "  bad-depth recursion samples %d" % depth_bad
        ok = ok and good
        lines.append(text + ("" if good else "  <-- FAIL"))
        for stack, n in unmatched.most_common(4):
            lines.append("      unmatched x%d: %s" % (n, format_stack(stack)))
    return ok, lines


def perf_check(interp, seconds, shape, expected):
    """Uniform on-CPU cross-check with perf: CPython's perf trampolines (-X perf, 3.12+)
    put a py::QUALNAME frame per Python frame on the native stack, and frame-pointer
    unwinding reaches them only in interpreters built with -fno-omit-frame-pointer.
    Function level only (no lines): checks the stacks' functions and the phase split as
    an on-CPU sampler like pywalk sees them. Returns (ok, lines) or None if not possible."""
    import re
    import shutil
    import subprocess
    import tempfile
    from known_shape_expected import MAIN, WORKER

    if tuple(map(int, interp.version.split("."))) < (3, 12) or not shutil.which("perf"):
        return None
    r = subprocess.run(interp.wrap([interp.exe, "-c", "import sysconfig; "
                                    "print(sysconfig.get_config_var('CFLAGS'))"]),
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if b"-fno-omit-frame-pointer" not in r.stdout:
        return None
    want = {}
    for thread, phases in expected.items():
        for phase, stack in phases.items():
            want[tuple(f.qualname for f in stack)] = (thread, phase)
    script = interp.script_path("known_shape.py")
    argv = interp.wrap([interp.exe, "-X", "perf", script, str(seconds + 5)])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
    tmp = tempfile.mkdtemp(prefix="validate-perf.")
    host_map = "/tmp/perf-%d.map" % proc.pid
    made_map = False
    try:
        if proc.stdout.readline().strip() != b"READY":
            return False, ["  perf: workload did not print READY"]
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", "999", "-g", "-p", str(proc.pid),
                        "-o", data, "--", "sleep", str(seconds)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        inner_map = "/proc/%d/root/tmp/perf-%d.map" % (proc.pid, proc.pid)
        if interp.root and not os.path.exists(host_map):
            shutil.copy(inner_map, host_map)  # perf reads the map from the host's /tmp
            made_map = True
        text = subprocess.run(["perf", "script", "-i", data], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, check=True).stdout.decode()
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        if made_map or not interp.root:
            try:
                os.unlink(host_map)
            except OSError:
                pass
    counts = collections.defaultdict(collections.Counter)
    unmatched = collections.defaultdict(collections.Counter)
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        if not lines:
            continue
        m = re.match(r"\s*(.+?)\s+(\d+)\s+[\d.]+:", lines[0])
        if not m:
            continue
        thread = MAIN if int(m.group(2)) == proc.pid else WORKER
        funcs = [re.search(r"py::(.+?):", l).group(1) for l in lines[1:] if "py::" in l]
        funcs.reverse()
        hit = want.get(tuple(funcs))
        if hit and hit[0] == thread:
            counts[thread][hit[1]] += 1
        else:
            counts[thread][None] += 1
            unmatched[thread][";".join(funcs[-3:]) or "(no Python frame)"] += 1
    ok, out = True, []
    for thread in (MAIN, WORKER):
        c = counts[thread]
        total = sum(c.values())
        matched = total - c[None]
        frac = matched / total if total else 0.0
        good = frac >= MATCH_MIN
        text = "  perf %-6s samples %5d  function-level matched %6.2f%%" % (
            thread, total, 100 * frac)
        if thread == MAIN:
            parts = []
            for phase in shape.phase_order:
                got = c[phase] / matched if matched else 0.0
                good = good and abs(got - shape.phases[phase]) <= SPLIT_TOLERANCE
                parts.append("%s %.1f%%" % (phase, 100 * got))
            text += "  split: " + ", ".join(parts)
        ok = ok and good
        out.append(text + ("" if good else "  <-- FAIL"))
        for what, n in unmatched[thread].most_common(3):
            out.append("      unmatched x%d: ...%s" % (n, what))
    return ok, out


def parent(seconds, interval, switch_s, use_perf):
    import subprocess
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import interpreters
    from known_shape_expected import Shape, expected_stacks

    found, problems = interpreters.discover_all()
    for p in problems:
        print("note: " + p)
    if interpreters.discover_core() is None:
        print("FAIL: core interpreter %s missing" % interpreters.CORE_EXE)
        return 1
    shape = Shape()
    all_ok = True
    for interp, problem in interpreters.prepare_chroot(found):
        print("FAIL: %s: %s" % (interp.id, problem))
        found.remove(interp)
        all_ok = False
    for interp in found:
        script = interp.script_path("known_shape.py")
        argv = interp.argv("validate_shape.py", "--child", script, seconds, interval,
                           switch_s)
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=seconds + 60)
        out = proc.stdout.decode(errors="replace").splitlines()
        result = [l for l in out if l.startswith("RESULT ")]
        print("%s (%s):" % (interp.id, interp.exe))
        if proc.returncode != 0 or not result:
            print("  FAIL: child exited %d\n%s" % (proc.returncode,
                                                   proc.stderr.decode(errors="replace")))
            all_ok = False
            continue
        data = json.loads(result[-1][len("RESULT "):])
        expected = expected_stacks(interp.version, script)
        ok, lines = analyse(interp, data["samples"], shape, expected)
        print("\n".join(lines))
        all_ok = all_ok and ok
        checked = perf_check(interp, seconds, shape, expected) if use_perf else None
        if checked:
            print("\n".join(checked[1]))
            all_ok = all_ok and checked[0]
    print("OK" if all_ok else "FAILED")
    return 0 if all_ok else 1


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", metavar="SCRIPT", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--interval", type=float, default=0.001, help="sampling period, s")
    ap.add_argument("--switch-interval", type=float, default=0.0005,
                    help="sys.setswitchinterval() in the workload, s")
    ap.add_argument("--no-perf", action="store_true",
                    help="skip the perf cross-check (3.12+ built with frame pointers)")
    ap.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        child(ns.child, *(float(a) for a in ns.args))
        return 0
    return parent(ns.seconds, ns.interval, ns.switch_interval, not ns.no_perf)


if __name__ == "__main__":
    sys.exit(main())
