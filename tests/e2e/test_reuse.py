# SPDX-License-Identifier: MIT
"""No wrong frames when code objects are freed and their addresses reused (doc/design.md,
invariant 3): every function of reuse_target.py runs ~5 ms from its own file, so a frame
named after another function's file, or one file collecting far more than its few samples,
means a stale symbol."""
import collections
import re

import pywalk_e2e as e2e

GEN_RE = re.compile(r"^gen_(\d+)\.py$")


def test_reused_code_addresses_never_mislabel(pywalk, interp, start_target, tmp_path):
    target = start_target(interp, script="reuse_target.py")
    out = str(tmp_path / "reuse.folded")
    r = e2e.run_pywalk(["record", "-p", target.pid, "-d", 3, "-F", 999, "-o", out])
    assert r.returncode == 0, e2e.describe_run(r, out)
    e2e.check_summary(r.stderr)
    per_file = collections.Counter()
    for frames, n in e2e.parse_folded(out):
        name, path, line = e2e.parse_py_frame(frames[-1])
        m = GEN_RE.match(path)
        if not m or name == "<module>":  # the generated file's own module code
            continue
        # name and file come from one code object; they must agree
        assert name == "f" + m.group(1), "frame %r is named after another function" % frames[-1]
        per_file[path] += n
    assert len(per_file) >= 50, "only %d generated functions were sampled\n%s" % (
        len(per_file), e2e.describe_run(r, out))
    # each function runs ~5 ms (~5 samples at 999 Hz, more when the machine is loaded):
    # a stale cache would pile many functions' samples onto one file
    worst = per_file.most_common(1)[0]
    assert worst[1] <= 60, "%s collected %d samples: symbols of freed code objects were " \
        "reused\n%s" % (worst[0], worst[1], r.stderr)
