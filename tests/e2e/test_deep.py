# SPDX-License-Identifier: MIT
"""Deep stacks and churn: a 1,000-deep recursion is shipped whole by default, a stack deeper
than --max-depth is rejected and counted as "depth bound" (never truncated), --max-depth
reaches 4,096, and under generator/coroutine churn that swings the depth quickly every
shipped stack is one the program can really have."""
import collections
import os
import re

import pytest

import pywalk_e2e as e2e

def function_lines(script):
    """{function name: (first line, last line)} of top-level defs (for leaf frames)."""
    spans, name, start = {}, None, 0
    with open(os.path.join(e2e.TARGETS_DIR, script)) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines, 1):
        m = re.match(r"(?:async )?def (\w+)\(", line)
        if m or (name and line and not line[0].isspace()):
            if name:
                spans[name] = (start, i - 1)
                name = None
        if m:
            name, start = m.group(1), i
    if name:
        spans[name] = (start, len(lines))
    return spans


def _record(interp, start_target, tmp_path, script, args, seconds, hz, *extra):
    target = start_target(interp, *args, script=script)
    out = str(tmp_path / "deep.folded")
    r = e2e.run_pywalk(["record", "-p", target.pid, "-d", seconds, "-F", hz, "-o", out]
                       + list(extra), timeout=120)
    assert r.returncode == 0, e2e.describe_run(r, out)
    total, buckets = e2e.check_summary(r.stderr)
    rows = [([e2e.parse_py_frame(f) for f in frames], n) for frames, n in e2e.parse_folded(out)]
    return target, buckets, rows, r


def _deep_shape(rows, depth, m):
    """Split samples into (full-depth stacks with exact lines, other valid, invalid)."""
    full = valid = 0
    invalid = collections.Counter()
    for frames, n in rows:
        names = [f[0] for f in frames]
        lines = [f[2] for f in frames]
        recs = [i for i, nm in enumerate(names) if nm == "rec"]
        # <module> as the leaf may also be at the loop head: 3.14+ jump back to a NOP on
        # the `while` line every iteration
        module_lines = (m["main_call"],) if len(frames) > 1 else (m["main_call"], m["main_loop"])
        ok = names[0] == "<module>" and lines[0] in module_lines and \
            recs == list(range(1, 1 + len(recs))) and len(recs) <= depth + 1
        # callers of rec are at the recursive call; the bottom rec may call spin
        ok = ok and all(lines[i] == m["rec_call"] for i in recs[:-1])
        rest = names[1 + len(recs):]
        ok = ok and rest in ([], ["spin"])
        if ok and rest == ["spin"]:
            ok = len(recs) == depth + 1 and lines[recs[-1]] == m["rec_base"]
        if not ok:
            invalid[";".join("%s:%d" % (f[0], f[2]) for f in frames)[:300]] += n
        elif rest == ["spin"] and lines[-1] == m["spin"]:
            full += n
        else:
            valid += n
    return full, valid, invalid


def test_1000_deep_recursion_is_shipped_whole(pywalk, interp, start_target, tmp_path):
    depth = 1000
    m = e2e.markers("deep_target.py")
    target, buckets, rows, r = _record(interp, start_target, tmp_path, "deep_target.py",
                                       [depth], 3, 199)
    full, valid, invalid = _deep_shape(rows, depth, m)
    assert not invalid, "stacks the program cannot have: %s" % dict(invalid.most_common(5))
    assert buckets["rejected: depth bound"] == 0, r.stderr
    print("1,000-deep: %d of %d valid samples the whole stack (%.1f%%), %d invalid" % (
        full, full + valid, 100.0 * full / max(1, full + valid), sum(invalid.values())))
    # spin runs ~5 ms per descent of ~1,000 calls: most samples are at the full depth
    assert full >= 0.8 * (full + valid) and full >= 100, \
        "only %d of %d samples were the whole 1,003-frame stack\n%s" % (
            full, full + valid, r.stderr)


def test_stack_deeper_than_max_depth_is_rejected_not_truncated(pywalk, interp, start_target,
                                                                tmp_path):
    depth = 1000
    m = e2e.markers("deep_target.py")
    target, buckets, rows, r = _record(interp, start_target, tmp_path, "deep_target.py",
                                       [depth], 2, 199, "--max-depth", 500)
    full, valid, invalid = _deep_shape(rows, depth, m)
    assert not invalid, "truncated or impossible stacks shipped: %s" % dict(
        invalid.most_common(5))
    assert full == 0, "a stack deeper than --max-depth was shipped"
    assert all(len(frames) <= 500 for frames, _ in rows)
    assert buckets["rejected: depth bound"] >= 100 and \
        buckets["rejected: depth bound"] >= 4 * buckets["shipped"], r.stderr


def test_max_depth_4096(pywalk, interp, start_target, tmp_path):
    depth = 4000
    m = e2e.markers("deep_target.py")
    target, buckets, rows, r = _record(interp, start_target, tmp_path, "deep_target.py",
                                       [depth], 2, 99, "--max-depth", 4096)
    full, valid, invalid = _deep_shape(rows, depth, m)
    assert not invalid, "stacks the program cannot have: %s" % dict(invalid.most_common(5))
    assert buckets["rejected: depth bound"] == 0, r.stderr
    assert full >= 30, "the 4,003-frame stack was shipped %d times\n%s" % (full, r.stderr)


# Which function may call which, at which marker lines. Calling a generator or coroutine
# function runs its frame's prologue (3.11+), so creation sites count as calls too.
CHURN_EDGES = {
    ("<module>", "gen"): {"main_gen"},
    ("<module>", "run_coro"): {"main_coro"},
    ("gen", "descend"): {"gen_yield"},
    ("run_coro", "coro"): {"coro_send", "coro_create"},
    ("coro", "sub"): {"coro_await"},
    ("sub", "descend"): {"sub_call"},
    ("descend", "descend"): {"descend_call"},
    ("descend", "leaf"): {"descend_base"},
}


def test_generator_and_coroutine_churn_ships_only_real_stacks(pywalk, interp, start_target,
                                                              tmp_path):
    m = e2e.markers("churn_target.py")
    spans = function_lines("churn_target.py")
    target, buckets, rows, r = _record(interp, start_target, tmp_path, "churn_target.py",
                                       [], 3, 999)
    invalid = collections.Counter()
    good = 0
    for frames, n in rows:
        ok = frames[0][0] == "<module>"
        for caller, callee in zip(frames, frames[1:]):
            marks = CHURN_EDGES.get((caller[0], callee[0]), ())
            if caller[2] not in set(m[k] for k in marks):
                ok = False
        leaf = frames[-1]
        if leaf[0] != "<module>":
            lo, hi = spans.get(leaf[0].split(".")[-1], (0, -1))
            ok = ok and lo <= leaf[2] <= hi
        if ok:
            good += n
        else:
            invalid[";".join("%s:%d" % (f[0], f[2]) for f in frames)[:300]] += n
    assert not invalid, "stacks the program cannot have: %s" % dict(invalid.most_common(5))
    assert good >= 500, "only %d samples shipped\n%s" % (good, r.stderr)
    rejected = sum(v for k, v in buckets.items() if k.startswith("rejected"))
    assert rejected <= 0.01 * good, "churn caused %d rejections\n%s" % (rejected, r.stderr)
