# SPDX-License-Identifier: MIT
"""Version detection and preconditions: detection must not depend on file names, old and
unsupported interpreters get a clear refusal, and missing privileges or kernel BTF give one
line saying what to do - with no output file left behind."""
import os
import shutil
import subprocess

import pytest

import pywalk_e2e as e2e

SPIN = "def leaf():\n    while True: pass\nprint('READY', flush=True)\nleaf()\n"


def _spin_in(exe_argv, tmp_path):
    script = tmp_path / "spin.py"
    script.write_text(SPIN)
    return subprocess.Popen(exe_argv + [str(script)], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _wait_ready(proc):
    assert proc.stdout.readline().strip() == b"READY"


def _stop(proc):
    proc.kill()
    proc.wait()


def test_renamed_static_interpreter_is_detected(pywalk, tmp_path):
    """Debian's python3.11 copied to a name that says nothing about Python."""
    exe = tmp_path / "worker-bin"
    shutil.copy2("/usr/bin/python3.11", exe)
    proc = _spin_in([str(exe)], tmp_path)
    try:
        _wait_ready(proc)
        out = str(tmp_path / "out.folded")
        r = e2e.run_pywalk(["record", "-p", proc.pid, "-d", 1, "-F", 199, "-o", out])
        assert r.returncode == 0, e2e.describe_run(r, out)
        rows = e2e.parse_folded(out)
        leaf = [e2e.parse_py_frame(frames[-1]) for frames, _ in rows]
        assert ("leaf", str(tmp_path / "spin.py"), 2) in leaf, e2e.describe_run(r, out)
    finally:
        _stop(proc)


def test_renamed_interpreter_in_chroot_is_detected(pywalk, tmp_path):
    """3.15 from the Debian-unstable chroot under another name: base-frame rule applies."""
    root = os.path.join(os.environ.get("PYWALK_CACHE") or "/var/cache/pywalk",
                        "debian-unstable")
    if not os.path.exists(os.path.join(root, "usr/bin/python3.15")):
        pytest.skip("no Debian-unstable python3.15 (scripts/get-interpreters.sh)")
    work = os.path.join(root, "tmp", "pywalk-detect-%d" % os.getpid())
    os.makedirs(work, exist_ok=True)
    try:
        shutil.copy2(os.path.join(root, "usr/bin/python3.15"), os.path.join(work, "svc"))
        with open(os.path.join(work, "spin.py"), "w") as f:
            f.write(SPIN)
        inside = "/" + os.path.relpath(work, root)
        proc = subprocess.Popen(["chroot", root, inside + "/svc", inside + "/spin.py"],
                                stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            _wait_ready(proc)
            out = str(tmp_path / "out.folded")
            r = e2e.run_pywalk(["record", "-p", proc.pid, "-d", 1, "-F", 199, "-o", out])
            assert r.returncode == 0, e2e.describe_run(r, out)
            total, buckets = e2e.check_summary(r.stderr)
            assert buckets["shipped"] >= 50, r.stderr
            leaf = [e2e.parse_py_frame(frames[-1]) for frames, _ in e2e.parse_folded(out)]
            assert ("leaf", inside + "/spin.py", 2) in leaf, e2e.describe_run(r, out)
        finally:
            _stop(proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_python_older_than_310_is_refused(pywalk, tmp_path):
    exes = sorted(p for p in (os.path.join("/root/.pyenv/versions", v, "bin",
                                           "python" + v.rsplit(".", 1)[0])
                              for v in os.listdir("/root/.pyenv/versions")
                              if v.startswith(("3.7.", "3.8.", "3.9.")))
                  if os.path.exists(p)) if os.path.isdir("/root/.pyenv/versions") else []
    if not exes:
        pytest.skip("no pyenv CPython 3.7-3.9 to test the refusal with")
    proc = _spin_in([exes[-1]], tmp_path)
    try:
        _wait_ready(proc)
        out = str(tmp_path / "out.folded")
        r = e2e.run_pywalk(["record", "-p", proc.pid, "-d", 1, "-o", out])
        assert r.returncode == 1, r.stderr
        assert "older than 3.10" in r.stderr and r.stderr.startswith("pywalk: "), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not os.path.exists(out)
        assert not [p for p in os.listdir(tmp_path) if p.startswith("out.folded")]
    finally:
        _stop(proc)


def test_not_root_is_refused_with_remedy(pywalk, tmp_path):
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) not installed")
    os.chmod(tmp_path, 0o777)
    out = str(tmp_path / "out.folded")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "--inh-caps=-all", pywalk, "record", "-p", "1", "-d", "1", "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert "permission denied" in r.stderr and "root" in r.stderr, r.stderr
    assert not os.path.exists(out)


def test_kernel_without_btf_is_refused(pywalk, tmp_path):
    out = str(tmp_path / "out.folded")
    env = dict(os.environ, PYWALK_BTF_PATH=str(tmp_path / "no-such-btf"))
    r = subprocess.run([pywalk, "record", "-p", "1", "-d", "1", "-o", out], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert "no BTF" in r.stderr and "CONFIG_DEBUG_INFO_BTF" in r.stderr, r.stderr
    assert not os.path.exists(out)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupted_record_writes_the_profile_and_exits_zero(pywalk, tmp_path, sig):
    """Ctrl-C (or a service manager's SIGTERM) is a normal end of an open-ended record."""
    import signal
    import time
    proc = _spin_in(["/usr/bin/python3.11"], tmp_path)
    try:
        _wait_ready(proc)
        out = str(tmp_path / "out.folded")
        rec = subprocess.Popen([pywalk, "record", "-p", str(proc.pid), "-F", "199", "-o", out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
        time.sleep(2.0)
        assert not os.path.exists(out), "the profile must appear only when complete"
        rec.send_signal(getattr(signal, sig))
        _, err = rec.communicate(timeout=30)
        assert rec.returncode == 0, err
        total, buckets = e2e.check_summary(err)
        assert buckets["shipped"] >= 50, err
        leaf = [e2e.parse_py_frame(frames[-1]) for frames, _ in e2e.parse_folded(out)]
        assert ("leaf", str(tmp_path / "spin.py"), 2) in leaf, err
    finally:
        _stop(proc)
