# SPDX-License-Identifier: MIT
"""End-to-end tests of the SVG flame graph (`-o x.svg`, `-f svg`): the file is well-formed
XML (Python's xml.etree), its boxes hold the same counts as the folded output of the same
profile, and headless Chromium renders it, zooms on a click and searches; names from a
hostile target stay text (no script runs, no element is injected).

Reuses test_formats.py's fixtures and helpers: the hostile target, the recorder and the
browser driver (tests/e2e/node/browser_check.js, mode svg).
"""
import collections
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

import pywalk_e2e as e2e
from test_formats import (REPO, NEVER_RAW_LEAVES, THREAD_NAME, artifact, browser,  # noqa: F401
                          chromium_bin, hn, node_tools, pywalk_bin, raw_never_raw, record,
                          target)

SVG_NS = "{http://www.w3.org/2000/svg}"
# every element the writer makes; anything else came from a name
ELEMENTS = {"svg", "style", "rect", "text", "g", "title", "script"}
INNER_WIDTH = 1180


def svg_boxes(path):
    """[(path of labels from the root, samples, depth, box text)] in document order; the
    document parsed strictly by xml.etree (a name that broke the syntax fails here)."""
    root = ET.parse(path).getroot()
    assert root.tag == SVG_NS + "svg"
    tags = {el.tag[len(SVG_NS):] if el.tag.startswith(SVG_NS) else el.tag for el in root.iter()}
    assert tags <= ELEMENTS, "elements the writer never makes: %r" % (tags - ELEMENTS)
    boxes, stack = [], []
    for g in root.iter(SVG_NS + "g"):
        if g.get("class") != "f":
            continue
        title = g.find(SVG_NS + "title").text
        label, _, info = title.rpartition("\n")
        depth, n = int(g.get("data-d")), int(g.get("data-n"))
        assert info.startswith("{:,} sample".format(n)), title
        del stack[depth:]
        stack.append(label)
        assert len(stack) == depth + 1, "box %r at depth %d has no parent" % (label, depth)
        boxes.append((tuple(stack[1:]), n, depth, g.find(SVG_NS + "text").text or ""))
    return boxes


def check_tree(boxes):
    """A parent holds at least what its children hold; the root is the first box."""
    assert boxes and boxes[0][0] == () and boxes[0][2] == 0
    children = collections.Counter()
    for p, n, _, _ in boxes[1:]:
        children[p[:-1]] += n
    for p, n, _, _ in boxes:
        assert children[p] <= n, "children of %r hold %d > %d" % (p, children[p], n)


def svg_text(name):
    """A hostile name as the SVG shows it: as the HTML page draws it, and C0 controls
    (other than tab and newline) and DEL, which XML cannot hold, as U+FFFD."""
    shown = hn.shown(name, as_text=True)
    return "".join("\ufffd" if (ord(c) < 0x20 and c not in "\t\n") or c == "\x7f" else c
                   for c in shown)


@pytest.fixture(scope="module")
def hostile_svg(pywalk_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("svg")
    out = str(d / "out.svg")
    with target() as pid:
        r = record(pywalk_bin, pid, out, "--threads")
    return {"path": out, "pid": pid, "stderr": r.stderr}


def test_svg_hostile_is_xml_with_every_name_as_text(hostile_svg):
    boxes = svg_boxes(hostile_svg["path"])
    check_tree(boxes)
    labels = {p[-1] for p, _, _, _ in boxes[1:]}
    assert "%s (%d)" % (THREAD_NAME, hostile_svg["pid"]) in labels  # the --threads root
    missing = [n[:60] for n, f, _ in hn.LEAVES
               if not any(l.startswith("%s (%s:" % (svg_text(n), svg_text(f))) for l in labels)]
    assert not missing, "hostile leaves missing or changed: %r" % missing
    with open(hostile_svg["path"], encoding="utf-8") as f:
        text = f.read()
    assert not raw_never_raw(text), "raw in the SVG: %r" % raw_never_raw(text)
    assert text.count("<script") == 1 and text.count("]]>") == 1
    # every shipped sample is in the root box, less what pywalk says it could not count
    _, buckets = e2e.parse_summary(hostile_svg["stderr"])
    assert 0.99 * buckets["shipped"] <= boxes[0][1] <= buckets["shipped"]


def test_svg_renders_zooms_and_searches_in_chromium(hostile_svg, node_tools):
    heavy = svg_text(hn.LEAVES[0][0])
    res = browser(node_tools, "svg", hostile_svg["path"], artifact("svg-hostile.png"),
                  heavy + " (", "heavy;semi")
    assert not res["pageErrors"] and not res["consoleErrors"], res
    assert res["pwned"] == "undefined", "a name's script ran"
    assert res["requests"] == ["file://" + os.path.abspath(hostile_svg["path"])]
    assert res["scripts"] == 1, "a name added a script element"
    ns = "http://www.w3.org/2000/svg "
    assert set(res["elements"]) <= {ns + e for e in ELEMENTS}, res["elements"]
    assert res["rootWidth"] == INNER_WIDTH
    assert res["before"]["visible"] == res["boxes"] > 10
    # a real click on the heaviest leaf: it spans the width, its ancestors stay below it,
    # everything else is hidden
    assert res["clickTarget"].startswith(heavy + " ("), res["clickTarget"]
    assert res["zoomed"].startswith(heavy + " (")
    assert res["zoomedWidth"] == INNER_WIDTH
    assert res["zoomedText"].startswith(heavy[:10])
    assert 2 <= res["afterZoom"]["visible"] < res["before"]["visible"]
    # the search highlights it and shows the share of all samples it matched
    assert 0 < res["matched"] < 100, res["matched"]
    assert res["matchText"] == "Matched: %.1f%%" % res["matched"]
    assert res["afterSearch"]["highlighted"] >= 1
    assert res["afterReset"]["visible"] == res["before"]["visible"]
    assert res["zoomedAfterReset"] == "all"
    for t in res["before"]["texts"] + res["afterZoom"]["texts"]:
        assert not raw_never_raw(t), "drawn raw: %r" % t


def folded_totals(path):
    """{path of frames from the root: samples of it and below} of a folded file."""
    totals = collections.Counter()
    for frames, n in e2e.parse_folded(path):
        for i in range(len(frames)):
            totals[tuple(frames[:i + 1])] += n
    return totals


def test_svg_boxes_match_the_folded_output_of_the_same_profile(tmp_path):
    """One profile (built by tests/unit/test_out_svg) written as SVG and as folded: every
    path has the same count in both, and nothing is missing."""
    r = subprocess.run(["make", "-s", "-C", REPO, "build/tests/test_out_svg"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, "building test_out_svg failed:\n" + r.stderr
    r = subprocess.run([os.path.join(REPO, "build", "tests", "test_out_svg")],
                       env=dict(os.environ, PYWALK_SVG_PAIR=str(tmp_path)),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    boxes = svg_boxes(str(tmp_path / "pair.svg"))
    check_tree(boxes)
    want = folded_totals(str(tmp_path / "pair.folded"))
    got = {p: n for p, n, _, _ in boxes[1:]}
    assert got == dict(want)
    assert boxes[0][1] == sum(n for _, n in e2e.parse_folded(str(tmp_path / "pair.folded")))
