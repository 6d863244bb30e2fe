# SPDX-License-Identifier: MIT
"""A process in a container is labelled with its host PID, its PID in its own namespace and
its container id, in every output that names processes: the folded and HTML root frame,
the speedscope profile name and pprof's labels (read back by `go tool pprof`).

The container is made of real parts: a pid namespace (`unshare --pid --fork`) and a cgroup
whose path holds a 64-hex-digit id, as docker and containerd name theirs
(".../docker-<id>.scope"), in the cgroup v1 pids hierarchy or the cgroup v2 one.
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

import pywalk_e2e as e2e

CONTAINER_ID = "0123456789abcdef" * 4
SPIN = ("import time\n"
        "def boxed_leaf():\n"
        "    while True: pass\n"
        "print('READY', flush=True)\n"
        "boxed_leaf()\n")


def cgroup_dir():
    """A cgroup directory we may create children in, or None."""
    for base in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(base, "cgroup.procs")) and os.access(base, os.W_OK):
            return base
    return None


@pytest.fixture
def boxed(tmp_path):
    """A Python spinning as PID 1 of its own pid namespace, in a docker-named cgroup:
    (host pid, ns pid)."""
    base = cgroup_dir()
    if not base:
        pytest.fail("no writable cgroup hierarchy to make a container cgroup in")
    parent = os.path.join(base, "pywalk-test-%d" % os.getpid())
    group = os.path.join(parent, "docker-%s.scope" % CONTAINER_ID)
    os.makedirs(group)
    script = tmp_path / "boxed.py"
    script.write_text(SPIN)
    p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "/usr/bin/python3.11",
                          str(script)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        assert p.stdout.readline().strip() == b"READY"
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout.split()
        assert len(kids) == 1, kids
        host = int(kids[0])
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write("%d\n" % host)
        with open("/proc/%d/status" % host) as f:
            nspid = int(re.search(r"^NSpid:.*\s(\d+)$", f.read(), re.M).group(1))
        yield host, nspid
    finally:
        os.killpg(p.pid, 9)
        p.wait()
        for _ in range(50):
            try:
                os.rmdir(group)
                os.rmdir(parent)
                break
            except OSError:
                time.sleep(0.1)


@pytest.fixture
def plain():
    """An ordinary Python on the host beside it: its PID."""
    p = subprocess.Popen(["/usr/bin/python3.11", "-c", SPIN], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    assert p.stdout.readline().strip() == b"READY"
    yield p.pid
    p.kill()
    p.wait()


def test_container_process_is_labelled_everywhere(pywalk, boxed, plain, tmp_path):
    host, nspid = boxed
    assert nspid == 1 and host != nspid
    outs = {fmt: str(tmp_path / ("p." + ext)) for fmt, ext in
            (("folded", "folded"), ("html", "html"), ("speedscope", "speedscope.json"),
             ("pprof", "pb.gz"))}
    for fmt, path in outs.items():
        r = e2e.run_pywalk(["record", "-p", "%d,%d" % (host, plain), "-d", 1, "-F", 199,
                            "-o", path])
        assert r.returncode == 0, r.stderr
        e2e.check_summary(r.stderr)
    want = "python3.11 (%d, ns %d, container %s)" % (host, nspid, CONTAINER_ID[:12])
    rows = e2e.parse_folded(outs["folded"])
    roots = set(frames[0] for frames, _ in rows)
    assert want in roots, roots
    assert "python3.11 (%d)" % plain in roots, roots
    boxed_rows = [frames for frames, _ in rows if frames[0] == want]
    assert boxed_rows and all(e2e.parse_py_frame(f[-1])[0] == "boxed_leaf" for f in boxed_rows)
    assert e2e.parse_task_frame(want) == ("python3.11", host)
    # the page's data and the speedscope profile names carry the same label
    with open(outs["html"], encoding="utf-8") as f:
        assert json.dumps(want)[1:-1] in f.read()
    with open(outs["speedscope"], encoding="utf-8") as f:
        names = [p["name"] for p in json.load(f)["profiles"]]
    assert any(n.startswith(want + " / ") for n in names), names
    go = shutil.which("go") or "/usr/lib/go/bin/go"
    if not os.access(go, os.X_OK):
        pytest.fail("go tool pprof is needed to read the pprof labels (apt-get install golang-go)")
    r = subprocess.run([go, "tool", "pprof", "-tags", outs["pprof"]], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                       env=dict(os.environ, HOME=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    assert re.search(r"^\s*container_id:", r.stdout, re.M) and CONTAINER_ID in r.stdout, r.stdout
    assert re.search(r"^\s*ns_pid:", r.stdout, re.M), r.stdout
    assert re.search(r"^\s*pid:", r.stdout, re.M) and str(host) in r.stdout, r.stdout
