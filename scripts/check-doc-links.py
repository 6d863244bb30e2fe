#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every relative link of the Markdown pages, and every path of this tree a page names in
backticks (`doc/usage.md`, `tests/e2e/test_torn.py`), exists: pages that moved text between
them keep pointing at something. Exits 1 naming each that does not."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the tree's top folders: a backticked word that starts with one of them is a path
TOP = ("bpf", "bench", "doc", "examples", "packaging", "scripts", "tests", "user", "vmlinux")
LINK_RE = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PATH_RE = re.compile(r"`((?:%s)/[\w./+-]*)`" % "|".join(TOP))


def pages():
    """The tree's own pages: git's list, or (a tree without git) every .md but build's."""
    try:
        out = subprocess.run(["git", "-C", REPO, "ls-files", "*.md"], capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [os.path.relpath(os.path.join(d, f), REPO)
               for d, dirs, files in os.walk(REPO)
               if not os.path.relpath(d, REPO).split(os.sep)[0] in ("build", ".git")
               for f in files if f.endswith(".md")]
    # the e2e tests' npm packages bring their own pages
    return sorted(p for p in out if not p.startswith("tests/e2e/node/"))


def main():
    bad = 0
    files = pages()
    for page in files:
        here = os.path.dirname(os.path.join(REPO, page))
        with open(os.path.join(REPO, page), encoding="utf-8") as f:
            text = f.read()
        for m in LINK_RE.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            if not os.path.exists(os.path.join(here, target)):
                print("%s: link to %s: no such file" % (page, target))
                bad += 1
        for m in PATH_RE.finditer(text):
            path = m.group(1).rstrip(".")
            # a page names paths from the top of the tree, or from its own folder
            if not any(os.path.exists(os.path.join(base, path)) for base in (REPO, here)):
                print("%s: names %s: no such file" % (page, path))
                bad += 1
    print("check-doc-links: %d pages, %d broken" % (len(files), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
