# SPDX-License-Identifier: MIT
"""End-to-end tests of `make deb`: the package built from this tree, its contents, lintian,
and the package installed into a clean chroot of the host's own Debian release.

The chroot (scripts/get-release-chroot.sh: a minbase debootstrap with python3, cached under
${PYWALK_CACHE:-/var/cache/pywalk}, built when absent) is never changed: each run lays a
throw-away overlay over it, and every command runs in a private mount namespace of its own
(overlay, /proc, /sys, /dev), so nothing is left mounted on the host. In it:
`apt-get install ./pywalk_*.deb` must fetch the libraries the package depends on from the
mirror (none is in the chroot before), then `pywalk --version`, the man page, the unit and
its ExecStart, the conffile, and a 2 s `record` of a launched busy loop whose folded output
must hold the loop's function.

Tools: dpkg-deb and dpkg-shlibdeps (dpkg-dev), lintian, debootstrap; installed by
scripts/install-deps.sh. A missing one, or a chroot that cannot be built, fails under CI and
skips elsewhere.
"""
import os
import re
import shutil
import subprocess
import time

import pytest

import pywalk_e2e as e2e

CHROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUSY = "def spin_in_chroot():\n    while True:\n        pass\n\nspin_in_chroot()\n"
HZ = 499
BUSY_SHARE_MIN = 0.9  # of the folded samples; the rest is interpreter start-up
# 2 s of a busy loop is ~1,000 samples at 499 Hz; a loaded 2-CPU machine gives it less CPU,
# so this floor only says the run sampled the loop for real
SAMPLES_MIN = 30


def unavailable(why):
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def source_version():
    """The version `pywalk --version` prints, from where the binary takes it."""
    text = open(os.path.join(e2e.REPO, "user", "lib", "pywalk.h")).read()
    return re.search(r'^#define PYWALK_VERSION "([^"]+)"$', text, re.M).group(1)


@pytest.fixture(scope="module")
def deb(pywalk):
    """`make deb` for the build directory of the binary under test; the .deb's path."""
    for tool in ("dpkg-deb", "dpkg-shlibdeps"):
        if not shutil.which(tool):
            unavailable("%s is not installed (package dpkg-dev): make deb needs it" % tool)
    out_dir = os.path.dirname(os.path.abspath(pywalk))
    if not os.path.exists(os.path.join(out_dir, "pywalk.skel.h")):
        pytest.skip("PYWALK=%s is not in a make output directory of this tree: make deb "
                    "packages $(O)/pywalk" % pywalk)
    dyn = subprocess.check_output(["readelf", "-d", pywalk], text=True)
    if "libasan" in dyn:
        pytest.skip("%s is a sanitizer build (make SAN=1): not what a package ships" % pywalk)
    t0 = time.monotonic()
    r = subprocess.run(["make", "--no-print-directory", "O=" + out_dir, "deb"], cwd=e2e.REPO,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, "make deb failed:\n%s%s" % (r.stdout, r.stderr)
    arch = subprocess.check_output(["dpkg", "--print-architecture"], text=True).strip()
    path = os.path.join(out_dir, "pywalk_%s_%s.deb" % (source_version(), arch))
    assert os.path.isfile(path), "make deb printed %r but wrote no %s" % (r.stdout, path)
    print("make deb: %.1f s" % (time.monotonic() - t0))
    return path


def control(deb):
    text = subprocess.check_output(["dpkg-deb", "-f", deb], text=True)
    return dict(re.findall(r"^(\S+): (.*(?:\n .*)*)", text, re.M))


def test_control_fields(deb):
    f = control(deb)
    assert f["Package"] == "pywalk"
    assert f["Version"] == source_version()
    assert f["Architecture"] == subprocess.check_output(
        ["dpkg", "--print-architecture"], text=True).strip()
    assert int(f["Installed-Size"]) > 100, f["Installed-Size"]
    assert "Pre-Depends" not in f and "Recommends" not in f


def test_depends_name_the_package_of_every_needed_library(deb, tmp_path):
    """Each DT_NEEDED library of the packaged binary comes from a package that Depends names
    with a version; found here through the host's dpkg database, not through shlibdeps."""
    subprocess.run(["dpkg-deb", "-x", deb, str(tmp_path)], check=True)
    dyn = subprocess.check_output(["readelf", "-d", str(tmp_path / "usr/bin/pywalk")],
                                  text=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dyn)
    assert "libbpf.so.1" in needed and "libc.so.6" in needed, needed
    depends = dict(re.match(r"(\S+) \((.+)\)$", d.strip()).groups()
                   for d in control(deb)["Depends"].split(","))
    for soname in needed:
        owner = subprocess.run(["dpkg", "-S", "*/" + soname], capture_output=True,
                               text=True).stdout
        pkgs = set(re.findall(r"^([^:,\s]+)", owner, re.M))
        assert pkgs & set(depends), "%s (from %s) is in no Depends: %s" % (
            soname, ", ".join(sorted(pkgs)) or "?", control(deb)["Depends"])


def test_contents_owners_and_modes(deb):
    listing = subprocess.check_output(["dpkg-deb", "-c", deb], text=True)
    entries = {}
    for line in listing.splitlines():
        mode, owner, _size, _date, _time, name = line.split(None, 5)
        entries[name[1:].rstrip("/") or "/"] = (mode, owner)
    assert set(o for _m, o in entries.values()) == {"root/root"}
    want = {
        "/usr/bin/pywalk": "-rwxr-xr-x",
        "/usr/share/man/man1/pywalk.1.gz": "-rw-r--r--",
        "/lib/systemd/system/pywalk-agent.service": "-rw-r--r--",
        "/etc/pywalk/agent.conf": "-rw-r-----",
        "/var/lib/pywalk": "drwxr-x---",
        "/usr/share/doc/pywalk/copyright": "-rw-r--r--",
        "/usr/share/doc/pywalk/changelog.gz": "-rw-r--r--",
        "/usr/share/lintian/overrides/pywalk": "-rw-r--r--",
    }
    for name, mode in want.items():
        assert entries.get(name, ("absent",))[0] == mode, "%s: %s" % (name, entries.get(name))
    files = sorted(n for n, (m, _o) in entries.items() if not m.startswith("d"))
    assert files == sorted(n for n, m in want.items() if not m.startswith("d")), files
    ctl = subprocess.check_output(["dpkg-deb", "-I", deb, "conffiles"], text=True)
    assert ctl.split() == ["/etc/pywalk/agent.conf"]
    scripts = [s for s in ("preinst", "postinst", "prerm", "postrm")
               if subprocess.run(["dpkg-deb", "-I", deb, s], capture_output=True).returncode == 0]
    assert scripts == [], "maintainer scripts: the agent must not be enabled on install"


def test_lintian_has_no_error_or_warning(deb):
    if not shutil.which("lintian"):
        unavailable("lintian is not installed (apt-get install lintian)")
    r = subprocess.run(["lintian", "--fail-on", "error,warning", deb], capture_output=True,
                       text=True, timeout=300)
    tags = [l for l in (r.stdout + r.stderr).splitlines() if re.match(r"^[EW]: ", l)]
    assert r.returncode == 0 and not tags, "lintian:\n%s%s" % (r.stdout, r.stderr)


# --- installed into a clean chroot of the host's release -------------------------------

@pytest.fixture(scope="module")
def base_chroot():
    """The cached clean chroot; built (a few minutes) when absent."""
    if not shutil.which("debootstrap"):
        unavailable("debootstrap is not installed: no clean chroot to install the package in")
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(e2e.REPO, "scripts", "get-release-chroot.sh")],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        unavailable("scripts/get-release-chroot.sh failed:\n" + r.stderr[-3000:])
    cached = "cached chroot is complete" in r.stderr
    print("get-release-chroot.sh: %.1f s (%s)" % (time.monotonic() - t0,
                                                  "cached" if cached else "built"))
    return r.stdout.strip()


class Sandbox:
    """An overlay over the base chroot whose changes land in upper/ and stay there from one
    command to the next; each command mounts it anew in a private mount namespace."""

    SETUP = r'''set -e
base=$1 dir=$2; shift 2
r=$dir/root
mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/upper,workdir=$dir/work" "$r"
mount -t proc proc "$r/proc"
mount --rbind /sys "$r/sys"
mount --rbind /dev "$r/dev"
[ -e "$r/etc/resolv.conf" ] || : > "$r/etc/resolv.conf"
mount --bind /etc/resolv.conf "$r/etc/resolv.conf"
mkdir -p "$r/tmp/deb" && mount --bind "$dir/deb" "$r/tmp/deb"
exec chroot "$r" "$@"
'''

    def __init__(self, base, dir, deb):
        self.base, self.dir = base, str(dir)
        for d in ("upper", "work", "root", "deb"):
            os.mkdir(os.path.join(self.dir, d))
        shutil.copy(deb, os.path.join(self.dir, "deb"))
        self.deb_inside = "/tmp/deb/" + os.path.basename(deb)

    def run(self, *argv, timeout=120):
        argv = [str(a) for a in argv]
        env = ["/usr/bin/env", "-i", "HOME=/root", "LC_ALL=C.UTF-8", "PATH=" + CHROOT_PATH,
               "DEBIAN_FRONTEND=noninteractive"]
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "--fork",
                               "sh", "-c", self.SETUP, "sh", self.base, self.dir] + env +
                              list(argv), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)

    def upper(self, path):
        """A file the chroot's commands wrote, read from the overlay's upper layer."""
        return os.path.join(self.dir, "upper", path.lstrip("/"))


@pytest.fixture(scope="module")
def sandbox(base_chroot, deb, tmp_path_factory):
    return Sandbox(base_chroot, tmp_path_factory.mktemp("deb-sandbox"), deb)


def installed_status(sb, pkg):
    r = sb.run("dpkg-query", "-W", "-f", "${Status} ${Version}", pkg)
    return r.stdout if r.returncode == 0 else None


@pytest.fixture(scope="module")
def installed(sandbox):
    """`apt-get install ./pywalk_*.deb` in the sandbox; (libbpf1 before it, apt's output)."""
    before = installed_status(sandbox, "libbpf1")
    t0 = time.monotonic()
    r = sandbox.run("apt-get", "install", "-y", "--no-install-recommends", sandbox.deb_inside,
                    timeout=600)
    assert r.returncode == 0, "apt-get install failed:\n%s%s" % (r.stdout, r.stderr)
    print("apt-get install ./%s: %.1f s" % (os.path.basename(sandbox.deb_inside),
                                           time.monotonic() - t0))
    return before, r.stdout


def test_depends_resolve_from_the_mirror(sandbox, installed, deb):
    before, apt_out = installed
    assert before is None, "libbpf1 is in the clean chroot already (%s): the install would " \
        "not show that Depends bring it" % before
    new = re.search(r"^The following NEW packages will be installed:\n((?:  .*\n)+)", apt_out,
                    re.M)
    assert new, apt_out
    new = set(new.group(1).split())
    deps = set(d.split()[0] for d in control(deb)["Depends"].split(","))
    assert "pywalk" in new and {"libbpf1", "libelf1", "libmicrohttpd12", "libcurl4"} <= new, new
    for pkg in deps | {"pywalk"}:
        status = installed_status(sandbox, pkg)
        assert status and status.startswith("install ok installed"), "%s: %s" % (pkg, status)
    assert installed_status(sandbox, "pywalk") == "install ok installed " + source_version()


def test_version_inside(sandbox, installed, pywalk):
    r = sandbox.run("pywalk", "--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, "pywalk %s\n" % source_version(), "")
    host = subprocess.run([pywalk, "--version"], capture_output=True, text=True)
    assert host.stdout == r.stdout
    assert sandbox.run("sh", "-c", "command -v pywalk").stdout == "/usr/bin/pywalk\n"


def test_man_page_inside(sandbox, installed):
    r = sandbox.run("sh", "-c", "gzip -dc /usr/share/man/man1/pywalk.1.gz")
    assert r.returncode == 0, r.stderr
    assert re.search(r'^\.TH PYWALK 1 ', r.stdout, re.M), r.stdout[:500]
    assert "pywalk record" in r.stdout


def test_unit_and_conffile_inside(sandbox, installed):
    r = sandbox.run("cat", "/lib/systemd/system/pywalk-agent.service")
    assert r.returncode == 0, r.stderr
    assert re.findall(r"^ExecStart=(.*)$", r.stdout, re.M) == [
        "/usr/bin/pywalk agent --config /etc/pywalk/agent.conf"]
    assert "/usr/local" not in r.stdout
    # installed, not enabled: no maintainer script wires it into a target
    wants = sandbox.run("sh", "-c", "ls /etc/systemd/system/*.wants/ 2>/dev/null || true")
    assert "pywalk" not in wants.stdout, wants.stdout
    st = sandbox.run("stat", "-c", "%a %U:%G %n", "/etc/pywalk/agent.conf", "/var/lib/pywalk")
    assert st.stdout.splitlines() == ["640 root:root /etc/pywalk/agent.conf",
                                      "750 root:root /var/lib/pywalk"], st.stdout + st.stderr
    r = sandbox.run("dpkg-query", "-W", "-f", "${Conffiles}", "pywalk")
    assert re.fullmatch(r"\s*/etc/pywalk/agent.conf [0-9a-f]{32}\s*", r.stdout), r.stdout
    r = sandbox.run("dpkg", "--verify", "pywalk")
    assert (r.returncode, r.stdout) == (0, ""), r.stdout + r.stderr


def test_record_inside(sandbox, installed):
    r = sandbox.run("pywalk", "record", "-d", "2", "-F", HZ, "-o", "/tmp/x.folded", "--",
                    "python3", "-c", BUSY, timeout=60)
    assert r.returncode == 0, e2e.describe_run(r)
    assert "stopped the command (SIGTERM)" in r.stderr, r.stderr
    rows = e2e.parse_folded(sandbox.upper("/tmp/x.folded"))
    e2e.check_folded_total(r.stderr, rows, "record in the chroot")
    total = sum(n for _stack, n in rows)
    busy = 0
    for stack, n in rows:
        frames = [e2e.parse_py_frame(f) for f in stack]
        if frames and frames[-1] and frames[-1][0] == "spin_in_chroot" and \
                frames[-1][1] == "<string>":
            busy += n
    assert total >= SAMPLES_MIN and busy >= BUSY_SHARE_MIN * total, \
        "%d of %d samples in spin_in_chroot (<string>):\n%s" % (busy, total, rows[:10])
