# SPDX-License-Identifier: MIT
"""What `pywalk record` tells a user, verbatim: an unknown format or extension, the line per
file written, a launched command's failure and its exit status, -d stopping a command, and
the accounting summary (only the buckets that counted something, a warning naming the bucket
that took every sample). The README's example summary is what pywalk prints."""
import os
import re
import signal
import subprocess
import sys

import pytest

import pywalk_e2e as e2e

FORMATS = "folded, html, svg, speedscope, pprof"
TRY = "Try 'pywalk record --help'.\n"


def run(args, timeout=60):
    return subprocess.run([e2e.pywalk_path()] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def test_unknown_format_lists_the_formats(tmp_path):
    r = run(["record", "-f", "bogus", "-o", tmp_path / "out.folded", "--", "true"])
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "pywalk: unknown format 'bogus' (formats: %s)\n" % FORMATS + TRY


def test_unknown_extension_lists_the_formats_and_writes_nothing(tmp_path):
    out = tmp_path / "x.unknown"
    r = run(["record", "-o", out, "--", "true"])
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("pywalk: no format has the extension of '%s' (formats: %s; or give -f)\n"
                        % (out, FORMATS) + TRY)
    assert os.listdir(tmp_path) == []
