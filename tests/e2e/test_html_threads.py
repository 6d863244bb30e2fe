# SPDX-License-Identifier: MIT
"""The HTML page's thread and process filter, in headless Chromium, on a wall-clock
recording of tests/targets/offcpu_target.py (seven threads, each alive the whole time, so
each holds about a seventh of the wall time):

* "All threads" is the whole profile; each thread's choice draws only that thread's frames
  (the nap thread's `nap`, not the main thread's `busy`, and back) and holds its share;
  the thread choices add up to the whole.
* A thread that renamed itself to terminal escapes is listed with them shown as \\xNN.
* A second process adds a choice per process, each with its own samples.
"""
import json
import os
import re

import pytest

import pywalk_e2e as e2e
from test_formats import artifact, browser, chromium_bin, node_tools  # noqa: F401

SECONDS = 3


def page_data(path):
    with open(path, encoding="utf-8") as f:
        page = f.read()
    m = re.search(r'<script type="application/json" id="pywalk-data">(.*?)</script>', page,
                  re.S)
    return json.loads(m.group(1))


def hostile_target(interp):
    t = e2e.Target(interp, "offcpu_target.py",
                   argv=["env", "HOSTILE_COMM=1"] + interp.argv("offcpu_target.py"))
    t.wait_ready()
    return t


@pytest.mark.core_only
def test_html_thread_filter(pywalk, interp, node_tools, tmp_path):
    t = hostile_target(interp)
    try:
        path = str(tmp_path / "wall.html")
        r = e2e.run_pywalk(["record", "-p", t.pid, "--mode", "wall", "-d", SECONDS, "-o", path],
                           timeout=120)
        assert r.returncode == 0, e2e.describe_run(r, path)
    finally:
        t.stop()
    data = page_data(path)
    assert len(data["threads"]) == 7, data["threads"]
    res = browser(node_tools, "flame", path, artifact("flame-threads.png"), "", "",
                  json.dumps({"who": ["busy", "nap"]}))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    choices = dict((w["text"], w) for w in res["who"])
    print("\n".join("%-40r %6.1f%%  %s" % (w["text"], 100 * w["total"] / res["total"], w["drawn"])
                    for w in res["who"]))
    assert res["who"][0]["text"] == "All threads" and res["who"][0]["total"] == res["total"]
    threads = [w for w in res["who"] if w["value"].startswith("t")]
    assert len(threads) == 7 and not any(w["value"].startswith("p") for w in res["who"])
    assert sum(w["total"] for w in threads) == res["total"]
    main = choices["python3.11 (%d)" % t.pid] if "python3.11 (%d)" % t.pid in choices else \
        [w for w in threads if w["text"].endswith(" (%d)" % t.pid)][0]
    nap = [w for w in threads if w["text"].startswith("\\x1b[2J\\x1b]0;x\\x07 (")]
    assert len(nap) == 1, [w["text"] for w in threads]
    nap = nap[0]
    assert main["drawn"] == {"busy": True, "nap": False}, main
    assert nap["drawn"] == {"busy": False, "nap": True}, nap
    for w in threads:
        assert 0.10 <= w["total"] / res["total"] <= 0.19, (w["text"], w["total"], res["total"])
    # wall time: the page counts time, not samples
    assert re.match(r"^\d+\.\d{3} s of \d+\.\d{3} s \(\d+\.\d\d%\), sampled at \d+ Hz",
                    nap["meta"]), nap["meta"]
    assert res["meta"].startswith("%.3f s" % (res["total"] / 1e9)), res["meta"]
    assert res["who"][-1]["who"] == threads[-1]["value"]


@pytest.mark.core_only
def test_html_process_filter(pywalk, interp, start_target, node_tools, tmp_path):
    a = start_target(interp, script="timeline_target.py")
    b = start_target(interp, script="timeline_target.py")
    path = str(tmp_path / "two.html")
    r = e2e.run_pywalk(["record", "-p", "%d,%d" % (a.pid, b.pid), "--mode", "wall", "-d",
                        SECONDS, "-o", path], timeout=120)
    assert r.returncode == 0, e2e.describe_run(r, path)
    res = browser(node_tools, "flame", path, artifact("flame-processes.png"), "", "",
                  json.dumps({"who": ["compute"]}))
    assert not res["pageErrors"] and not res["consoleErrors"], res
    procs = [w for w in res["who"] if w["value"].startswith("p")]
    assert len(procs) == 2, res["who"]
    assert sum(w["total"] for w in procs) == res["total"]
    for w, pid in zip(procs, sorted((a.pid, b.pid))):
        assert w["text"].endswith("(%d) \u2014 all threads" % pid), w["text"]
        assert 0.4 <= w["total"] / res["total"] <= 0.6 and w["drawn"]["compute"], w
    threads = [w for w in res["who"] if w["value"].startswith("t")]
    assert len(threads) == 4 and all(" / " in w["text"] for w in threads), threads
