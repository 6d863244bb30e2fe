# SPDX-License-Identifier: MIT
"""The timeline format (speedscope's file with each thread's samples in time order), against
tests/targets/timeline_target.py, whose main thread runs compute (0.3 s busy), rest (0.3 s
asleep) and crunch (0.3 s busy) in that order for ever, on every interpreter:

* --mode wall: the main thread's samples, read left to right, go compute -> rest -> crunch
  -> compute ... and each phase seen whole lasts 0.3 s (±20 %: a phase's edges are known
  to a sampling period, 5 ms at 199 Hz, and preemptions on a loaded machine are counted in
  the phase they interrupt), but for waits the summary reports as not counted; the idler
  thread has its own profile, asleep in doze.
* The weights add up to what the summary says was written, gaps being empty samples.
* cpu mode: the rest phases are gaps (the thread was off CPU), compute and crunch are there.
* speedscope itself (the npm app in headless Chromium) opens the file.
"""
import json
import os
import re
import shutil
import urllib.parse

import pytest

import pywalk_e2e as e2e
import test_formats as formats
from test_offcpu import OFFCPU_RE
from test_formats import chromium_bin, node_tools  # noqa: F401  (fixtures)

SCRIPT = "timeline_target.py"
PHASE_NS = 0.3e9
PHASES = ("compute", "rest", "crunch")
WROTE_RE = re.compile(r"^pywalk: wrote .* \(\d+ stacks?, ([\d.]+) s\)$", re.M)


def record(interp, start_target, tmp_path, *args):
    t = start_target(interp, script=SCRIPT)
    path = str(tmp_path / "t.timeline.json")
    r = e2e.run_pywalk(["record", "-p", t.pid, "-d", "3", "-F", "199", "-o", path] +
                       list(args), timeout=120)
    assert r.returncode == 0, e2e.describe_run(r, path)
    with open(path, encoding="utf-8") as f:
        return t, json.load(f), r, path


def segments(doc, prof, min_gap=0):
    """[(phase or None for a gap or another stack, start ns, ns)] of one profile, runs of
    samples merged; a gap shorter than min_gap inside one phase (the thread ran between two
    samples, or waited between two preemptions) is part of that phase."""
    frames = doc["shared"]["frames"]
    out, t = [], 0
    for sample, w in zip(prof["samples"], prof["weights"]):
        names = [frames[i]["name"] for i in sample]
        key = next((n for n in reversed(names) if n in PHASES), None)
        if out and out[-1][0] == key:
            out[-1][2] += w
        else:
            out.append([key, t, w])
        t += w
    merged = []
    for seg in out:
        if (len(merged) >= 2 and merged[-1][0] is None and merged[-1][2] < min_gap and
                merged[-2][0] == seg[0]):
            gap = merged.pop()
            merged[-1][2] += gap[2] + seg[2]
        elif merged and merged[-1][0] == seg[0]:
            merged[-1][2] += seg[2]
        else:
            merged.append(list(seg))
    return merged


def check_document(doc):
    formats_ok = doc["$schema"] == formats.SPEEDSCOPE_SCHEMA and doc["profiles"]
    assert formats_ok, doc.keys()
    for prof in doc["profiles"]:
        assert prof["type"] == "sampled" and prof["unit"] == "nanoseconds"
        assert len(prof["samples"]) == len(prof["weights"])
        assert all(w > 0 for w in prof["weights"]), prof["name"]
        assert prof["startValue"] == 0 and prof["endValue"] == sum(prof["weights"])


UNSEEN_RE = re.compile(r"^pywalk: off-CPU: (\d+) returns? the kernel did not show", re.M)


def main_and_idler(doc, pid):
    names = [p["name"] for p in doc["profiles"]]
    main = [p for p in doc["profiles"] if p["name"].endswith("(%d)" % pid)]
    idler = [p for p in doc["profiles"] if not p["name"].endswith("(%d)" % pid)]
    assert len(main) == 1 and len(idler) == 1, names
    return main[0], idler[0]


def test_wall_timeline_has_the_phases_in_order_and_length(pywalk, interp, start_target,
                                                          tmp_path):
    t, doc, r, _ = record(interp, start_target, tmp_path, "--mode", "wall")
    check_document(doc)
    main, idler = main_and_idler(doc, t.pid)
    segs = segments(doc, main, min_gap=0.1 * PHASE_NS)
    print("%s: main thread %s" % (interp, ", ".join(
        "%s %.3f s" % (k or "-", n / 1e9) for k, _, n in segs)))
    phases = [s for s in segs if s[0]]
    assert len(phases) >= 8, segs
    for a, b in zip(phases, phases[1:]):
        assert PHASES.index(b[0]) == (PHASES.index(a[0]) + 1) % 3, (a, b, segs)
    whole = phases[1:-1]  # the first and last are cut by the recording's edges
    # a wait whose return the kernel side did not see is not counted ("left again before
    # their return was seen"), or timed from the thread's run time ("returns the kernel did
    # not show"), which time stolen from the VM makes longer: each may cut a phase
    m = UNSEEN_RE.search(r.stderr)
    unseen = int(OFFCPU_RE.search(r.stderr).group("replaced")) + (int(m.group(1)) if m else 0)
    off = [(k, n) for k, _, n in whole if not 0.8 * PHASE_NS <= n <= 1.2 * PHASE_NS]
    assert len(off) <= unseen, (off, unseen, segs)
    # gaps inside the recording are short: wall time covers the thread's whole life
    gaps = [n for k, _, n in segs[1:-1] if k is None]
    assert sum(gaps) < 0.1 * main["endValue"] + unseen * PHASE_NS, segs
    # the idler sleeps in doze from end to end
    idle = segments(doc, idler)
    frames = doc["shared"]["frames"]
    dozing = sum(w for s, w in zip(idler["samples"], idler["weights"])
                 if any(frames[i]["name"] == "doze" for i in s))
    assert dozing >= 0.85 * 3e9, idle
    # what was written is what the summary says
    wrote = float(WROTE_RE.search(r.stderr).group(1))
    stacked = sum(w for p in doc["profiles"] for s, w in zip(p["samples"], p["weights"]) if s)
    assert abs(stacked / 1e9 - wrote) < 0.0015, (stacked, wrote)


@pytest.mark.core_only
def test_cpu_timeline_leaves_the_sleeps_as_gaps(pywalk, interp, start_target, tmp_path):
    t, doc, r, _ = record(interp, start_target, tmp_path)
    check_document(doc)
    main = [p for p in doc["profiles"] if p["name"].endswith("(%d)" % t.pid)]
    assert len(main) == 1, [p["name"] for p in doc["profiles"]]
    # a busy thread on a loaded machine is not on CPU at every sample
    segs = segments(doc, main[0], min_gap=0.5 * PHASE_NS)
    assert not any(k == "rest" for k, _, _ in segs), segs
    busy = [s for s in segs if s[0]]
    for a, b in zip(busy, busy[1:]):
        assert (a[0], b[0]) in (("compute", "crunch"), ("crunch", "compute")), segs
    # a rest phase is a gap of about its length between crunch and compute
    rests = [n for (k0, _, _), (k, _, n), (k1, _, _) in zip(segs, segs[1:], segs[2:])
             if k is None and (k0, k1) == ("compute", "crunch")]
    assert rests and all(0.8 * PHASE_NS <= n <= 1.2 * PHASE_NS for n in rests), segs


@pytest.mark.core_only
def test_timeline_opens_in_speedscope(pywalk, interp, start_target, tmp_path, node_tools):
    t, doc, r, path = record(interp, start_target, tmp_path, "--mode", "wall")
    site = str(tmp_path / "speedscope-site")
    shutil.copytree(os.path.join(node_tools, "node_modules", "speedscope", "dist", "release"),
                    site, dirs_exist_ok=True)
    shutil.copyfile(path, os.path.join(site, "profile.timeline.json"))
    with formats.http_server(site) as base:
        url = "%s/index.html#profileURL=%s" % (
            base, urllib.parse.quote(base + "/profile.timeline.json", safe=""))
        res = formats.browser(node_tools, "speedscope", url, formats.artifact("timeline.png"))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    assert res["title"].endswith(" - speedscope"), res["title"]
    for name in PHASES:  # the active profile: the main thread
        assert name in res["sandwichText"], "%r not in speedscope's sandwich view" % name


def test_trace_timeline_needs_latency(pywalk):
    r = e2e.run_pywalk(["trace", "-f", "timeline", "-p", "1", "software:page-faults"])
    assert r.returncode == 2, r.stderr
    assert "the timeline format places each hit in time by what it lasted: use it with " \
           "--latency" in r.stderr, r.stderr
