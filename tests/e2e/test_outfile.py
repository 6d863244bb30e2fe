# SPDX-License-Identifier: MIT
"""End-to-end tests of -o against a real unprivileged attacker (uid 65534, run with
setpriv) who plants or races symbolic links at the output path while root records, in a
world-writable sticky directory and in a directory the attacker owns: the victim, a
root-only file, must never change. Also: FIFOs with and without a reader, the stdout names,
the descriptors a launched command inherits, temporary files after failures, the umask.

The kernel's fs.protected_symlinks may be off (it is on some test machines), so nothing
here relies on it.
"""
import ast
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

import pywalk_e2e as e2e

NOBODY = 65534
AS_NOBODY = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
VICTIM_TEXT = b"* * * * * root do-not-touch\n"
OUT_NAME = "out.folded"
REFUSED_LINK = "refusing to write through the symbolic link"
REFUSED_DIR_LINK = "refusing to follow the symbolic link"

# Swaps ATTACK_DIR/out.folded between a link to /dev/null and a link to the victim as fast
# as it can: renameat2(RENAME_EXCHANGE) of two prepared links, one syscall per swap (plain
# renames of fresh links where renameat2 is missing). With HOLD_EVERY > 0 the path is also
# absent now and then, so root's opens see every state.
SWAPPER = r"""
import ctypes, os, sys
d, victim, hold_every = sys.argv[1], sys.argv[2], int(sys.argv[3])
path, spare, hold, fresh = (os.path.join(d, n) for n in ("out.folded", ".spare", ".hold",
                                                          ".fresh"))
libc = ctypes.CDLL(None, use_errno=True)
exchange = getattr(libc, "renameat2", None)

def plant(p, target):
    try:
        os.symlink(target, p)
    except OSError:
        pass

plant(path, "/dev/null")
plant(spare, victim)
n = 0
while True:
    n += 1
    if exchange is not None:
        if exchange(-100, path.encode(), -100, spare.encode(), 2):
            plant(path, "/dev/null")
            plant(spare, victim)
    else:
        plant(fresh, victim if n % 2 else "/dev/null")
        try:
            os.rename(fresh, path)
        except OSError:
            pass
    if hold_every and n % hold_every == 0:
        try:
            os.rename(path, hold)
            os.rename(hold, path)
        except OSError:
            pass
"""

# Waits for pywalk's temporary file in ATTACK_DIR, then once: "final" plants a link to the
# victim at out.folded; "temp" moves the temporary file away and plants the link in its place.
SWAP_DURING_RECORDING = r"""
import os, sys, time
d, victim, mode = sys.argv[1:4]
deadline = time.monotonic() + 30
while True:
    tmps = [n for n in os.listdir(d) if ".pywalk-" in n]
    if tmps:
        break
    if time.monotonic() > deadline:
        sys.exit("no temporary file appeared in %s" % d)
    time.sleep(0.0005)
if mode == "final":
    os.symlink(victim, os.path.join(d, ".evil"))
    os.rename(os.path.join(d, ".evil"), os.path.join(d, "out.folded"))
else:
    tmp = os.path.join(d, tmps[0])
    os.rename(tmp, os.path.join(d, "stolen"))
    os.symlink(victim, tmp)
"""


run = e2e.run_pywalk


def attacker(script, *args):
    return subprocess.Popen(AS_NOBODY + [sys.executable, "-c", script] + [str(a) for a in args],
                            cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, universal_newlines=True)


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    return proc.stderr.read()


def snapshot(path):
    st = os.lstat(path)
    with open(path, "rb") as f:
        return f.read(), st.st_mtime_ns, st.st_size, st.st_ino, stat.S_IMODE(st.st_mode)


def temp_files(d):
    return sorted(n for n in os.listdir(d) if ".pywalk-" in n)


def assert_one_line_error(r, path, mention=None):
    text = e2e.describe_run(r)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert r.returncode == 1, text
    assert len(lines) == 1 and lines[0].startswith("pywalk: cannot write %s: " % path), text
    if mention:
        assert mention in lines[0], "message should say %r: %s" % (mention, text)


@pytest.fixture
def victim(tmp_path):
    """A root-only file (0600, known content) the attacker wants root to write."""
    path = str(tmp_path / "victim")
    with open(path, "wb") as f:
        f.write(VICTIM_TEXT)
    os.chmod(path, 0o600)
    old = time.time() - 3600  # an mtime any write would visibly move
    os.utime(path, (old, old))
    return path


@pytest.fixture(params=["sticky", "attacker-owned"])
def attack_dir(request):
    """(a) a world-writable sticky directory, like /tmp; (b) a directory of the attacker."""
    d = tempfile.mkdtemp(prefix="pywalk-e2e-%s-" % request.param, dir="/tmp")
    if request.param == "sticky":
        os.chmod(d, 0o1777)
    else:
        os.chown(d, NOBODY, NOBODY)
        os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def target(interp, start_target):
    return start_target(interp)


@pytest.mark.core_only
def test_symlink_planted_at_output_is_refused(pywalk, interp, target, attack_dir, victim):
    out = os.path.join(attack_dir, OUT_NAME)
    before = snapshot(victim)
    subprocess.run(AS_NOBODY + ["ln", "-s", victim, out], check=True)
    r = e2e.run_pywalk(["record", "-p", target.pid, "-d", "300ms", "-o", out])
    assert_one_line_error(r, out, REFUSED_LINK)
    assert "name its target instead" in r.stderr
    assert snapshot(victim) == before, "the victim changed\n" + e2e.describe_run(r)
    assert os.path.islink(out) and temp_files(attack_dir) == []


@pytest.mark.core_only
def test_racing_symlink_never_redirects_the_write(pywalk, interp, target, attack_dir, victim):
    out = os.path.join(attack_dir, OUT_NAME)
    before = snapshot(victim)
    # in its own directory the attacker also makes the path absent now and then
    sticky = os.stat(attack_dir).st_mode & stat.S_ISVTX
    swapper = attacker(SWAPPER, attack_dir, victim, 0 if sticky else 16)
    try:
        deadline = time.monotonic() + 10
        while not os.path.islink(out):
            assert swapper.poll() is None and time.monotonic() < deadline, \
                "attacker did not start: " + stop(swapper)
            time.sleep(0.01)
        missing = e2e.missing_pid()
        for i in range(50):
            r = e2e.run_pywalk(["record", "-o", out, "-p", missing, "-d", 1], timeout=30)
            assert r.returncode == 1 and "PID %d" % missing in r.stderr, e2e.describe_run(r)
            assert snapshot(victim) == before, \
                "run %d for a missing PID changed the victim\n%s" % (i, e2e.describe_run(r))
        codes = []
        for i in range(20):
            r = e2e.run_pywalk(["record", "-o", out, "-p", target.pid, "-d", "300ms"])
            assert snapshot(victim) == before, \
                "run %d changed the victim\n%s" % (i, e2e.describe_run(r))
            if r.returncode:
                assert_one_line_error(r, out)
            codes.append(r.returncode)
        assert swapper.poll() is None, "attacker died: " + stop(swapper)
    finally:
        stop(swapper)
    assert snapshot(victim) == before
    assert temp_files(attack_dir) == [], "temporary files left: %s" % temp_files(attack_dir)
    for name in os.listdir(attack_dir):
        st = os.lstat(os.path.join(attack_dir, name))
        assert stat.S_ISLNK(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_uid == 0), \
            "unexpected %s in %s (exit codes %s)" % (name, attack_dir, codes)


@pytest.mark.core_only
@pytest.mark.parametrize("swap", ["final", "temp"])
def test_swap_during_recording_in_attacker_directory(pywalk, interp, target, tmp_path, victim,
                                                      swap):
    d = tempfile.mkdtemp(prefix="pywalk-e2e-owned-", dir="/tmp")
    try:
        os.chown(d, NOBODY, NOBODY)
        out = os.path.join(d, OUT_NAME)
        before = snapshot(victim)
        swapper = attacker(SWAP_DURING_RECORDING, d, victim, swap)
        r = e2e.run_pywalk(["record", "-o", out, "-p", target.pid, "-d", 1])
        try:
            swapper.wait(timeout=30)
        finally:
            why = stop(swapper)
        assert swapper.returncode == 0, "attacker failed: " + why
        assert snapshot(victim) == before, "the victim changed\n" + e2e.describe_run(r)
        if swap == "final":
            # rename replaces the planted link: the profile lands as root's regular file
            assert r.returncode == 0, e2e.describe_run(r)
            st = os.lstat(out)
            assert stat.S_ISREG(st.st_mode) and st.st_uid == 0, e2e.describe_run(r)
            assert e2e.parse_folded(out), "empty profile\n" + e2e.describe_run(r, out)
        else:
            # the temporary name no longer leads to our file: nothing is renamed
            assert_one_line_error(r, out, "replaced or removed by someone else")
            assert not os.path.lexists(out), e2e.describe_run(r)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.core_only
def test_symlinked_directory_component(pywalk, interp, target, tmp_path, attack_dir):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    subprocess.run(AS_NOBODY + ["ln", "-s", str(private), os.path.join(attack_dir, "sub")],
                   check=True)
    out = os.path.join(attack_dir, "sub", OUT_NAME)
    r = e2e.run_pywalk(["record", "-p", target.pid, "-d", "300ms", "-o", out])
    assert_one_line_error(r, out, REFUSED_DIR_LINK)
    assert "uid %d" % NOBODY in r.stderr, e2e.describe_run(r)
    assert os.listdir(str(private)) == [], "pywalk wrote into %s" % private

    # links root owns are followed: /var/run -> /run, and one of our own
    (tmp_path / "root-link").symlink_to(private)
    out = str(tmp_path / "root-link" / OUT_NAME)
    r = e2e.run_pywalk(["record", "-p", target.pid, "-d", "300ms", "-o", out])
    assert r.returncode == 0, e2e.describe_run(r)
    assert e2e.parse_folded(str(private / OUT_NAME))
    if os.path.islink("/var/run") and os.lstat("/var/run").st_uid == 0:
        out = "/var/run/pywalk-e2e-%d.folded" % os.getpid()
        try:
            r = e2e.run_pywalk(["record", "-p", target.pid, "-d", "300ms", "-o", out])
            assert r.returncode == 0, e2e.describe_run(r)
            assert os.path.isfile(out)
        finally:
            if os.path.lexists(out):
                os.unlink(out)


@pytest.mark.core_only
def test_fifo_without_reader_fails_at_once(pywalk, interp, target, tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    t0 = time.monotonic()
    try:
        r = e2e.run_pywalk(["record", "-p", target.pid, "-d", "300ms", "-o", fifo], timeout=5)
    except subprocess.TimeoutExpired:
        pytest.fail("pywalk hung for 5 s opening a FIFO without a reader")
    assert time.monotonic() - t0 < 5
    assert_one_line_error(r, fifo, "no process is reading FIFO %s" % fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.core_only
def test_fifo_with_reader_gets_the_profile(pywalk, interp, target, tmp_path):
    fifo, got = str(tmp_path / "fifo"), str(tmp_path / "got.folded")
    os.mkfifo(fifo)
    cat = subprocess.Popen(["sh", "-c", 'exec cat "$0" > "$1"', fifo, got])
    try:
        # our own writer keeps cat reading until pywalk is done, and waits for cat to open
        keep = os.open(fifo, os.O_WRONLY)
        try:
            r = e2e.run_pywalk(["record", "-p", target.pid, "-d", "300ms", "-o", fifo])
        finally:
            os.close(keep)
        assert cat.wait(timeout=10) == 0
    finally:
        if cat.poll() is None:
            cat.kill()
            cat.wait()
    assert r.returncode == 0, e2e.describe_run(r)
    assert e2e.parse_folded(got), "nothing came through the FIFO\n" + e2e.describe_run(r)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert temp_files(str(tmp_path)) == []


@pytest.mark.core_only
@pytest.mark.parametrize("name", ["-", "/dev/stdout"])
def test_stdout_names(pywalk, interp, target, tmp_path, name):
    r = e2e.run_pywalk(["record", "-p", target.pid, "-d", "300ms", "-o", name])
    assert r.returncode == 0, e2e.describe_run(r)
    out = tmp_path / "stdout.folded"
    out.write_text(r.stdout)
    assert e2e.parse_folded(str(out)), "no profile on stdout\n" + e2e.describe_run(r)


@pytest.mark.core_only
def test_launched_command_inherits_no_descriptor(pywalk, interp, tmp_path):
    out = str(tmp_path / OUT_NAME)
    code = "import os; print(sorted(os.listdir('/proc/self/fd'), key=int), flush=True)"
    r = e2e.run_pywalk(["record", "-o", out, "--", interp.exe, "-c", code])
    assert r.returncode == 0, e2e.describe_run(r)
    # the profile went to the file; the command's stdout is pywalk's
    fds = ast.literal_eval(r.stdout.strip().splitlines()[-1])
    assert fds[:3] == ["0", "1", "2"] and len(fds) <= 4, \
        "the command inherited descriptors beyond 0-2 and its listing's own: %s" % fds
    assert os.path.isfile(out)


@pytest.mark.core_only
@pytest.mark.parametrize("stderr", ["pipe", "closed-pipe"])
def test_failure_after_open_leaves_no_temp_file(pywalk, interp, tmp_path, stderr):
    out = str(tmp_path / OUT_NAME)
    args = ["record", "-o", out, "--", str(tmp_path / "no-such-command")]
    if stderr == "pipe":
        r = run(args)
        assert r.returncode == 1 and "no-such-command" in r.stderr, e2e.describe_run(r)
    else:
        # the error line hits a closed pipe: that must not kill pywalk before it cleans up
        rfd, wfd = os.pipe()
        os.close(rfd)
        try:
            r = run(args, stderr=wfd)
        finally:
            os.close(wfd)
        assert r.returncode == 1, "exit %s (a negative one is the signal)" % r.returncode
    assert temp_files(str(tmp_path)) == [], "temporary file left: %s" % temp_files(str(tmp_path))
    assert not os.path.lexists(out)


@pytest.mark.core_only
@pytest.mark.parametrize("mask,mode", [(0o077, 0o600), (0o022, 0o644)])
def test_output_mode_honours_umask(pywalk, interp, target, tmp_path, mask, mode):
    out = str(tmp_path / OUT_NAME)
    r = run(["record", "-p", target.pid, "-d", "300ms", "-o", out],
            preexec_fn=lambda: os.umask(mask))
    assert r.returncode == 0, e2e.describe_run(r)
    assert stat.S_IMODE(os.lstat(out).st_mode) == mode
