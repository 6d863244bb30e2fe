# SPDX-License-Identifier: MIT
"""Find the CPython interpreters the end-to-end tests and validate_shape.py run targets on.

* core: Debian's /usr/bin/python3.11 (static, non-PIE); callers fail if it is missing.
* optional: pyenv builds /root/.pyenv/versions/3.X.*/bin/python3.X (X = 10..15), and the
  Debian-unstable chroot at ${PYWALK_CACHE:-/var/cache/pywalk}/debian-unstable whose
  .pywalk-interpreters lists "MINOR PATH FULLVERSION" per line.
* release: CPython 3.14.7 built from the release archive by scripts/get-cpython-release.sh,
  default (${PYWALK_CACHE}/cpython-3.14.7) and free-threaded (.../cpython-3.14.7t); a prefix
  counts once its stamp (.pywalk-sha256) exists, written only after it installed whole.
Chroot interpreters run as `chroot ROOT PATH /tmp/pywalk-tests-HASH/SCRIPT`; prepare_chroot()
copies the targets in. Discovery itself changes nothing.
"""
import glob
import hashlib
import os
import re
import shutil
import subprocess

CORE_EXE = "/usr/bin/python3.11"
PYENV_ROOT = "/root/.pyenv/versions"
MINORS = range(10, 16)
RELEASE_VERSION = "3.14.7"
# (full version as the tests name it, executable under the prefix)
RELEASE_BUILDS = (("3.14.7", "python3.14"), ("3.14.7t", "python3.14t"))
RELEASE_STAMP = ".pywalk-sha256"
TARGETS_DIR = os.path.dirname(os.path.abspath(__file__))
# Inside the chroot, one directory per checkout: test runs of two checkouts at once (two
# branches) must not run each other's copies of a target.
CHROOT_TARGET_DIR = "/tmp/pywalk-tests-%s" % hashlib.sha1(TARGETS_DIR.encode()).hexdigest()[:8]


class Interpreter:
    def __init__(self, kind, version, full_version, exe, root=None):
        self.kind = kind                  # "debian", "pyenv", "unstable" or "release"
        self.version = version            # "3.11"
        self.full_version = full_version  # "3.11.2", "3.14.7t" for a free-threaded build
        self.exe = exe                    # path to the interpreter (inside root if chroot)
        self.root = root                  # chroot directory or None
        self.free_threaded = full_version.endswith("t")
        self.proc_ns = False              # chroot run needs a private /proc mount

    @property
    def id(self):
        return "%s-%s" % (self.kind, self.full_version)

    @property
    def core(self):
        return self.kind == "debian" and self.exe == CORE_EXE

    def wrap(self, argv):
        """argv (whose argv[0] is self.exe) made to run where the interpreter lives."""
        if not self.root:
            return list(argv)
        if not self.proc_ns:
            return ["chroot", self.root] + list(argv)
        # exec chain: unshare -> sh -> chroot -> python, all one PID.
        proc = os.path.join(self.root, "proc")
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount -t proc proc "$0" && exec chroot "$@"', proc, self.root] + list(argv)

    def argv(self, script, *args):
        """Command line running tests/targets/<script> (a basename) with args."""
        return self.wrap([self.exe, self.script_path(script)] + [str(a) for a in args])

    def script_path(self, script):
        """The script's path as the target process sees it (its co_filename)."""
        if self.root:
            return os.path.join(CHROOT_TARGET_DIR, script)
        return os.path.join(TARGETS_DIR, script)

    def __repr__(self):
        return "<Interpreter %s %s>" % (self.id, self.exe)


def _full_version(exe):
    try:
        out = subprocess.run([exe, "-c", "import platform; print(platform.python_version())"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             timeout=20, check=True)
        return out.stdout.decode().strip()
    except (OSError, subprocess.SubprocessError):
        return None


def cache_root():
    return os.environ.get("PYWALK_CACHE") or "/var/cache/pywalk"


def chroot_root():
    return os.path.join(cache_root(), "debian-unstable")


def discover_release():
    """(release builds found, {full version: why it is missing}) for the 3.14.7 pair."""
    found, missing = [], {}
    for full, exe_name in RELEASE_BUILDS:
        prefix = os.path.join(cache_root(), "cpython-%s" % full)
        exe = os.path.join(prefix, "bin", exe_name)
        if not os.path.isfile(os.path.join(prefix, RELEASE_STAMP)):
            missing[full] = ("no CPython %s build: %s has no %s (make interpreters runs "
                             "scripts/get-cpython-release.sh; it needs ../shared/cpython)"
                             % (full, prefix, RELEASE_STAMP))
        elif not os.access(exe, os.X_OK):
            missing[full] = "CPython %s build at %s has no executable %s" % (full, prefix, exe)
        else:
            found.append(Interpreter("release", RELEASE_VERSION.rsplit(".", 1)[0], full, exe))
    return found, missing


def discover_core():
    """The Debian 3.11 interpreter, or None if it is missing."""
    if not os.access(CORE_EXE, os.X_OK):
        return None
    full = _full_version(CORE_EXE)
    return Interpreter("debian", "3.11", full, CORE_EXE) if full else None


def discover_optional():
    """(interpreters found, [reason strings for those listed but unusable])."""
    found, problems = [], []
    for minor in MINORS:
        pattern = os.path.join(PYENV_ROOT, "3.%d*" % minor, "bin", "python3.%d" % minor)
        for exe in sorted(glob.glob(pattern)):
            full = os.path.basename(os.path.dirname(os.path.dirname(exe)))
            if not re.match(r"^3\.%d\.\d+$" % minor, full):  # skip 3.13t, -dev, etc.
                continue
            if os.access(exe, os.X_OK):
                found.append(Interpreter("pyenv", "3.%d" % minor, full, exe))
    root = chroot_root()
    listing = os.path.join(root, ".pywalk-interpreters")
    if os.path.isfile(listing):
        with open(listing) as f:
            for raw in f:
                parts = raw.split()
                if not parts or parts[0].startswith("#"):
                    continue
                if len(parts) < 3:
                    problems.append("%s: bad line %r" % (listing, raw.strip()))
                    continue
                minor, exe, full = parts[:3]
                if not os.path.isfile(os.path.join(root, exe.lstrip("/"))):
                    problems.append("%s: %s listed but missing in the chroot" % (listing, exe))
                    continue
                found.append(Interpreter("unstable", minor, full, exe, root))
    release, _ = discover_release()
    return found + release, problems


def discover_all():
    core = discover_core()
    optional, problems = discover_optional()
    return ([core] if core else []) + optional, problems


def prepare_chroot(interps):
    """Copy the targets into ROOT/CHROOT_TARGET_DIR for every chroot interpreter, and check
    each runs there. The interpreters need no /proc inside the chroot; if one fails
    without it, it is run with a procfs mounted in a private mount namespace
    (unshare, no fork: the PID stays the interpreter's), so no mount outlives it.
    Nothing is left to clean up (the copied scripts stay in the chroot's /tmp: another
    test run may be using them). Returns [(interp, problem)] for those that do not run."""
    failed = []
    for root in sorted(set(i.root for i in interps if i.root)):
        dest = os.path.join(root, CHROOT_TARGET_DIR.lstrip("/"))
        os.makedirs(dest, exist_ok=True)
        for name in sorted(os.listdir(TARGETS_DIR)):
            if name.endswith(".py"):
                tmp = os.path.join(dest, ".%s.%d" % (name, os.getpid()))
                shutil.copy2(os.path.join(TARGETS_DIR, name), tmp)
                os.replace(tmp, os.path.join(dest, name))  # atomic for concurrent runs
    probe = "import threading, time, sys; print(sys.version)"
    for interp in interps:
        if not interp.root:
            continue
        for with_proc in (False, True):
            interp.proc_ns = with_proc
            argv = interp.wrap([interp.exe, "-c", probe])
            try:
                r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=30)
            except (OSError, subprocess.SubprocessError) as e:
                r, err = None, str(e)
            if r is not None and r.returncode == 0:
                break
            err = err if r is None else r.stderr.decode(errors="replace").strip()
        else:
            failed.append((interp, "%s does not run in %s: %s" % (interp.exe, interp.root,
                                                                   err[-300:])))
    return failed
