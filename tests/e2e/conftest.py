# SPDX-License-Identifier: MIT
"""Fixtures for pywalk's end-to-end tests: interpreters, preconditions, the binary,
and target workloads.

Run as root:  /usr/bin/python3 -m pytest tests/e2e   (--hog or PYWALK_TEST_HOG=1: with a
busy loop pinned to one CPU, see tests/README.md)
Interpreters: the core Debian 3.11 must exist (its tests fail otherwise); pyenv builds and
the Debian-unstable chroot are optional (skipped with the reason when absent). Versions
outside SUPPORTED are collected but skipped, so enabling one is a one-line edit.
"""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pywalk_e2e as e2e  # noqa: E402
import interpreters  # noqa: E402  (tests/targets, put on sys.path by pywalk_e2e)

# Versions pywalk supports: a new one is enabled here.
SUPPORTED = {"3.10", "3.11", "3.12", "3.13", "3.14", "3.15"}
UNSUPPORTED_REASON = "pywalk supports 3.10 to 3.15"


def pytest_addoption(parser):
    parser.addoption("--hog", action="store_true", default=bool(os.environ.get("PYWALK_TEST_HOG")),
                     help="run a CPU-bound loop pinned to one CPU for the whole session, to "
                          "shake out tests that depend on timing (or PYWALK_TEST_HOG=1)")


HOG = "while True: pass"
_hog = []


def pytest_sessionstart(session):
    if not session.config.getoption("--hog"):
        return
    cpu = max(os.sched_getaffinity(0))
    proc = subprocess.Popen([sys.executable, "-c", HOG], stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    _hog.append(proc)
    sys.stderr.write("\nhog: PID %d busy on CPU %d for the session\n" % (proc.pid, cpu))


def pytest_sessionfinish(session):
    while _hog:
        proc = _hog.pop()
        proc.kill()
        proc.wait()


def pytest_configure(config):
    config.addinivalue_line("markers", "core_only: run on the core interpreter only")
    config.addinivalue_line("markers", "long: soak and scale cases, run by make test-long "
                            "(make test deselects them)")
    # Always print skip reasons (missing interpreters, unsupported versions, no root).
    chars = config.option.reportchars or ""
    if "s" not in chars and "a" not in chars and "A" not in chars:
        config.option.reportchars = chars + "s"


class Absent:
    """Parametrization placeholder for an interpreter that is not installed."""

    def __init__(self, id, version, reason, fail):
        self.id, self.version, self.reason, self.fail = id, version, reason, fail
        self.root = None

    def __repr__(self):
        return "<Absent %s>" % self.id


def _interpreter_params():
    core = interpreters.discover_core()
    optional, problems = interpreters.discover_optional()
    params = []
    if core:
        params.append(core)
    else:
        params.append(Absent("debian-3.11-missing", "3.11",
                             "core interpreter %s is missing or does not run "
                             "(apt-get install python3.11)" % interpreters.CORE_EXE, True))
    params.extend(optional)
    have = set(i.version for i in params)
    for minor in interpreters.MINORS:
        ver = "3.%d" % minor
        if ver not in have:
            params.append(Absent("absent-%s" % ver, ver,
                                 "no %s interpreter: neither %s/%s.*/bin/python%s nor a "
                                 "chroot listing (scripts/get-interpreters.sh)" % (
                                     ver, interpreters.PYENV_ROOT, ver, ver), False))
    for n, p in enumerate(problems):
        params.append(Absent("unstable-broken-%d" % n, "?", p, False))
    _, release_missing = interpreters.discover_release()
    for full, why in sorted(release_missing.items()):
        params.append(Absent("release-%s" % full, "3.14", why, False))
    return params


INTERPRETERS = _interpreter_params()


def pytest_generate_tests(metafunc):
    if "interp" in metafunc.fixturenames:
        params = INTERPRETERS
        if metafunc.definition.get_closest_marker("core_only"):
            params = [i for i in INTERPRETERS if getattr(i, "core", False) or
                      (isinstance(i, Absent) and i.fail)]
        metafunc.parametrize("interp", params, ids=[p.id for p in params], indirect=True,
                             scope="module")


@pytest.fixture(scope="session")
def chroot_problems():
    """Copy targets into the chroot once; {interp id: why it cannot run}."""
    found = [i for i in INTERPRETERS if not isinstance(i, Absent)]
    try:
        return dict((i.id, why) for i, why in interpreters.prepare_chroot(found))
    except (OSError, subprocess.SubprocessError) as e:
        return dict((i.id, "cannot prepare chroot %s: %s" % (i.root, e))
                    for i in found if i.root)


@pytest.fixture(scope="module")
def interp(request, chroot_problems):
    """The interpreter under test; skips unsupported versions and absent optional ones."""
    it = request.param
    if isinstance(it, Absent):
        if it.fail:
            pytest.fail(it.reason)
        pytest.skip(it.reason)
    if it.id in chroot_problems:
        pytest.skip(chroot_problems[it.id])
    if it.version not in SUPPORTED:
        pytest.skip("%s: %s" % (it.version, UNSUPPORTED_REASON))
    return it


@pytest.fixture(scope="session")
def all_interpreters(chroot_problems):
    """Every supported interpreter that runs here, core first, for tests that run them side
    by side; fails without the core one (the parametrized tests print why others are
    absent)."""
    found = [i for i in INTERPRETERS if not isinstance(i, Absent) and
             i.id not in chroot_problems and i.version in SUPPORTED]
    if not any(i.core for i in found):
        pytest.fail("core interpreter %s is missing or does not run" % interpreters.CORE_EXE)
    return sorted(found, key=lambda i: not i.core)


@pytest.fixture(scope="session")
def ft_interp():
    """The free-threaded 3.14.7t build, for tests of what only a build without a GIL does;
    skips with the reason it is missing."""
    found, missing = interpreters.discover_release()
    ft = [i for i in found if i.free_threaded]
    if not ft:
        pytest.skip(" ".join(why for full, why in missing.items() if full.endswith("t")))
    return ft[0]


@pytest.fixture(scope="session")
def pywalk():
    """Path of the pywalk binary, after the preconditions: root and kernel BTF (skip
    without them), and a built binary (fail without it: that is a build problem)."""
    if os.geteuid() != 0:
        pytest.skip("pywalk e2e tests need root (BPF, perf events); run them with sudo")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("kernel has no BTF (/sys/kernel/btf/vmlinux); pywalk needs "
                    "CONFIG_DEBUG_INFO_BTF=y")
    path = e2e.pywalk_path()
    if not os.access(path, os.X_OK):
        pytest.fail("pywalk binary %s not found: run `make` first (or set PYWALK)" % path)
    return path


@pytest.fixture
def start_target():
    """start_target(interp, *args) -> Target that printed READY; all stopped at teardown."""
    started = []

    def start(interp, *args, script="known_shape.py", ready=True):
        t = e2e.Target(interp, script, args)
        started.append(t)
        return t.wait_ready() if ready else t

    yield start
    for t in started:
        t.stop()


@pytest.fixture
def out_path(tmp_path):
    return str(tmp_path / "out.folded")
