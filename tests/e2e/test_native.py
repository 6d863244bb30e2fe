# SPDX-License-Identifier: MIT
"""--native end to end: a C extension (tests/targets/nativeext.c, built per interpreter with
its own headers) runs ext_outer -> ext_middle -> ext_inner (busy), which calls back into
Python (reenter), which calls the extension again (ext_spin, busy). Each run records the
target at 499 Hz for a few seconds with `record --native` and checks the merged stacks
exactly, root first: the Python frames sit where the eval loop ran them, between the
extension's native frames, on >= 95 % of the samples, and the eval loop itself never
shows. Also: a stripped copy of the extension (its frames 'lib+0xOFF', each offset inside
the function the unstripped copy's symbol table gives), the extension loaded with dlopen
after recording began, a process in its own pid and mount namespace, and a forged eval
activation (the extension calls a function named like the eval loop's cold part) counted
as a mismatch, never shipped. On 3.12+ the eval loop's activations are found by the
addresses of their entry frames, so Debian unstable's builds, which do not name it, merge
as exactly as the others. pprof: the extension's Mapping has its build-id and holds its
functions' Locations. --native --kernel: the kernel's frames at the leaf, below the native
frames of the C code that made the system call.
"""
import os
import re
import signal
import subprocess
import time

import pytest

import pywalk_e2e as e2e

EXT_SOURCE = os.path.join(e2e.TARGETS_DIR, "nativeext.c")
# no inlining, no tail calls: every ext_* function keeps its own activation
CFLAGS = "-O2 -fno-inline -fno-optimize-sibling-calls"
HZ = 499
SECONDS = 3
MATCH_MIN = 0.95

# the two stacks the main thread has while it is busy, as projected by _project
IN_INNER = ["<module>", "run", "py_outer", "ext_outer", "ext_middle", "ext_inner", "burn"]
IN_SPIN = IN_INNER[:-1] + ["reenter", "py_spin", "ext_spin", "burn"]
EXT_FUNCS = ("py_outer", "ext_outer", "ext_middle", "ext_inner", "py_spin", "ext_spin", "burn",
             "py_sleep", "ext_sleep_outer", "ext_sleep_inner")
NATIVE_RE = re.compile(r"^(?P<name>.+) \[native\]$")
LIB_RE = re.compile(r"^(?P<lib>[^ ]+)\+0x(?P<off>[0-9a-f]+)$")
MISMATCH_TEXT = re.compile(r"(\d+) whose native eval-loop activations and Python entry frames "
                           r"did not pair up")


def _eval_loop_named(interp):
    """Whether the interpreter's binaries name its eval loop where it runs: a symbol table,
    or an exported _PyEval_EvalFrameDefault that is the whole function. Debian unstable's
    PGO+LTO builds (3.13+) export only a small piece of it (the body is in unnamed
    partitions) and ship no .symtab."""
    exe = os.path.join(interp.root, interp.exe.lstrip("/")) if interp.root else interp.exe
    exe = os.path.realpath(exe)
    files = [exe]
    ldd = subprocess.run(["ldd", exe], stdout=subprocess.PIPE, universal_newlines=True)
    for line in ldd.stdout.splitlines():
        if "libpython" in line and "=>" in line:
            path = line.split("=>")[1].split("(")[0].strip()
            files.append(os.path.join(interp.root, path.lstrip("/")) if interp.root else path)
    for f in files:
        sections = subprocess.run(["readelf", "-S", "-W", f], stdout=subprocess.PIPE,
                                  universal_newlines=True).stdout
        if " .symtab " in sections:
            return True
        dyn = subprocess.run(["nm", "-D", "-S", "--defined-only", f], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        for line in dyn.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[3] == "_PyEval_EvalFrameDefault":
                return int(parts[1], 16) >= 0x4000
    return False


def _merges(interp):
    """Whether pywalk can tell the interpreter's eval-loop activations: 3.12+ by the
    addresses of their entry frames (no name needed), 3.10/3.11 only by name."""
    return tuple(int(x) for x in interp.version.split(".")) >= (3, 12) or \
        _eval_loop_named(interp)


@pytest.fixture(scope="module")
def merges(interp):
    if not _merges(interp):
        pytest.skip("%s: a 3.10/3.11 whose binaries do not name the eval loop: every sample "
                    "is counted native_eval_unnamed (tests/unit/test_native_merge.c)"
                    % interp.id)


@pytest.fixture(scope="module")
def ext(interp, tmp_path_factory):
    """(dir as the target sees it, dir on the host) of the built extension."""
    return e2e.build_ext(interp, EXT_SOURCE, "nativeext", tmp_path_factory, CFLAGS)


def _ext_file(host_dir):
    names = [n for n in os.listdir(host_dir) if n.startswith("nativeext") and n.endswith(".so")]
    assert len(names) == 1, names
    return names[0]


def _record(interp, target_argv, tmp_path, pidns=False, script_path=None, ready=True,
            out_name="native.folded", extra=()):
    t = e2e.Target(interp, argv=target_argv, script_path=script_path, pidns=pidns)
    out = str(tmp_path / out_name)
    try:
        t.wait_ready()
        cpu0 = t.cpu_seconds()
        r = e2e.run_pywalk(["record", "-p", t.pid, "--native", "-d", SECONDS, "-F", HZ,
                            "-o", out] + list(extra), timeout=SECONDS + 60)
        r.cpu_s = t.cpu_seconds() - cpu0
    finally:
        t.stop()
    folded = out.endswith(".folded")
    describe = "%s\n(target %.2f CPU s while recorded)" % (
        e2e.describe_run(r, out if folded else None), r.cpu_s)
    assert r.returncode == 0, describe
    e2e.check_summary(r.stderr)
    return (e2e.parse_folded(out) if folded else out), r, describe


def _native_name(frame):
    m = NATIVE_RE.match(frame)
    return m.group("name") if m else None


def _project(frames, keep_lib=None):
    """The frames a test can know: Python frames by qualname, the extension's native
    frames by name (or 'LIB+0xOFF' of the stripped file keep_lib); the interpreter's and
    libc's native frames, which differ by build, are left out."""
    out = []
    for f in frames:
        name = _native_name(f)
        if name is None:
            py = e2e.parse_py_frame(f)
            assert py, "frame %r is neither Python nor native" % f
            out.append(py[0])
        elif name in EXT_FUNCS:
            out.append(name)
        elif keep_lib and name.startswith(keep_lib + "+0x"):
            out.append(name)
    return out


def _floor(r):
    """Samples a run must have at least, for its proportions to mean something: a tenth of
    what the target's CPU time while pywalk ran gives at HZ (on a loaded machine pywalk's
    own start, which that time includes, can take seconds), and never fewer than 20."""
    return max(20, 0.1 * getattr(r, "cpu_s", SECONDS) * HZ)


def _check_merged(rows, describe, also=(), floor=0):
    """>= 95 % of the samples exactly IN_INNER, IN_SPIN or one of `also`, and each of the
    first two >= 20 %."""
    want = (IN_INNER, IN_SPIN) + tuple(also)
    total = sum(n for _, n in rows)
    exact = {tuple(w): 0 for w in want}
    for frames, n in rows:
        assert _native_name(frames[0]), "root frame %r is not native (the thread's start)\n%s" % (
            frames[0], describe)
        for f in frames:
            name = _native_name(f) or ""
            assert not name.startswith("_PyEval_EvalFrameDefault"), \
                "an eval activation was not replaced: %s\n%s" % (";".join(frames), describe)
        got = tuple(_project(frames))
        if got in exact:
            exact[got] += n
    matched = sum(exact.values())
    print("exact: %d of %d samples (%.1f %%)" % (matched, total, 100.0 * matched / max(total, 1)))
    assert total >= floor, "only %d samples\n%s" % (total, describe)
    assert matched >= MATCH_MIN * total, "%d of %d samples exactly %s\n%s" % (
        matched, total, [list(w) for w in want], describe)
    for w in (IN_INNER, IN_SPIN):
        n = exact[tuple(w)]
        assert n >= 0.2 * total, "%s: only %d of %d samples\n%s" % (list(w), n, total, describe)


def test_merged_stacks_are_exact_and_in_order(pywalk, interp, merges, ext, tmp_path):
    rows, r, describe = _record(interp, interp.argv("native_target.py", ext[0], SECONDS + 5),
                                tmp_path)
    _check_merged(rows, describe, floor=_floor(r))
    e2e.check_folded_total(r.stderr, rows, describe)


def _symbols(path):
    """{name: (start, end)} of the extension's functions, from the unstripped file."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in EXT_FUNCS:
            syms[parts[3]] = (int(parts[0], 16), int(parts[0], 16) + int(parts[1], 16))
    return syms


def test_stripped_extension_frames_are_lib_offsets(pywalk, interp, merges, ext, tmp_path):
    so = _ext_file(ext[1])
    syms = _symbols(os.path.join(ext[1], so))
    assert set(syms) == set(EXT_FUNCS), syms
    stripped_host = os.path.join(ext[1], "stripped")
    os.makedirs(stripped_host, exist_ok=True)
    subprocess.run(["strip", "--strip-all", "-o", os.path.join(stripped_host, so),
                    os.path.join(ext[1], so)], check=True)
    rows, r, describe = _record(
        interp, interp.argv("native_target.py", ext[0] + "/stripped", SECONDS + 5), tmp_path)
    total = sum(n for _, n in rows)
    # each LIB frame must lie in the function the unstripped file names at that place
    want = {tuple(IN_INNER): 0, tuple(IN_SPIN): 0}
    for frames, n in rows:
        got = []
        for name in _project(frames, keep_lib=so):
            m = LIB_RE.match(name)
            assert not (name in EXT_FUNCS), "a stripped function was named: %s\n%s" % (
                name, describe)
            if not m:
                got.append(name)
                continue
            off = int(m.group("off"), 16)
            inside = [f for f, (lo, hi) in syms.items() if lo <= off <= hi]
            got.append(inside[0] if inside else name)
        if tuple(got) in want:
            want[tuple(got)] += n
    matched = sum(want.values())
    assert matched >= MATCH_MIN * total, "%d of %d samples exactly the chain, by offsets " \
        "in %s\n%s" % (matched, total, so, describe)


def _minidebuginfo_copy(src, dst):
    """A stripped copy of src whose only symbols are in .gnu_debugdata (MiniDebugInfo: an
    xz-compressed ELF of the function symbols .dynsym lacks), made as distributions do."""
    def syms(*args):
        out = subprocess.run(["nm", "--format=posix", "--defined-only"] + list(args) + [src],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True)
        return [line.split()[0] for line in out.stdout.splitlines()
                if not args or line.split()[1] in "TtWw"]
    work = dst + ".work"
    os.makedirs(work, exist_ok=True)
    dyn = set(syms("-D"))
    with open(os.path.join(work, "keep"), "w") as f:
        f.write("".join(n + "\n" for n in syms("-a") if n not in dyn))
    mini = os.path.join(work, "mini")
    for cmd in (["objcopy", "--only-keep-debug", src, mini + ".debug"],
                ["objcopy", "-S", "--remove-section", ".comment",
                 "--keep-symbols=" + os.path.join(work, "keep"), mini + ".debug", mini],
                ["xz", "-f", mini],
                ["strip", "--strip-all", "-o", dst, src],
                ["objcopy", "--add-section", ".gnu_debugdata=" + mini + ".xz", dst]):
        subprocess.run(cmd, check=True)


def test_minidebuginfo_names_a_stripped_extension(pywalk, interp, merges, ext, tmp_path):
    so = _ext_file(ext[1])
    os.makedirs(os.path.join(ext[1], "mini"), exist_ok=True)
    _minidebuginfo_copy(os.path.join(ext[1], so), os.path.join(ext[1], "mini", so))
    sections = subprocess.run(["readelf", "-S", "-W", os.path.join(ext[1], "mini", so)],
                              stdout=subprocess.PIPE, universal_newlines=True).stdout
    assert ".gnu_debugdata" in sections and " .symtab " not in sections, sections
    rows, r, describe = _record(
        interp, interp.argv("native_target.py", ext[0] + "/mini", SECONDS + 5), tmp_path)
    _check_merged(rows, describe, floor=_floor(r))


def test_library_loaded_after_recording_began(pywalk, interp, merges, ext, tmp_path):
    """The extension is dlopen'ed once recording has unwound stacks of pure Python with
    the maps of then (the target imports it at SIGUSR1, sent half a second after pywalk
    says it samples): its frames are found (the maps are read again for an address
    outside every known module)."""
    t = e2e.Target(interp, "native_target.py", (ext[0], SECONDS + 30, "--late"))
    out = str(tmp_path / "late.folded")
    try:
        t.wait_ready()
        pw = subprocess.Popen([pywalk, "record", "-v", "-p", str(t.pid), "--native", "-d",
                               str(SECONDS + 1), "-F", str(HZ), "-o", out],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, universal_newlines=True)
        err = []
        for line in pw.stderr:
            err.append(line)
            if "sampling at" in line:
                break
        time.sleep(0.5)
        os.kill(t.pid, signal.SIGUSR1)
        err.append(pw.stderr.read())
        pw.wait(timeout=60)
    finally:
        t.stop()
    r = subprocess.CompletedProcess(pw.args, pw.returncode, "", "".join(err))
    describe = e2e.describe_run(r, out)
    assert r.returncode == 0, describe
    e2e.check_summary(r.stderr)
    rows = e2e.parse_folded(out)
    _check_merged(rows, describe, also=(["<module>", "warmup"],))
    warm = sum(n for frames, n in rows if _project(frames) == ["<module>", "warmup"])
    assert warm >= 10, "only %d samples before the dlopen\n%s" % (warm, describe)
    assert re.search(r"maps re-read [1-9]", r.stderr), describe


def test_process_in_its_own_pid_and_mount_namespace(pywalk, interp, merges, ext, tmp_path):
    script = interp.script_path("native_target.py")
    argv = e2e.pidns_argv(interp, script, (ext[0], SECONDS + 5), mount=True)
    rows, r, describe = _record(interp, argv, tmp_path, pidns=True, script_path=script)
    _check_merged(rows, describe, floor=_floor(r))


def test_forged_eval_activation_is_counted_not_shipped(pywalk, interp, merges, ext, tmp_path):
    """ext_middle calls ext_inner through a function named like the eval loop that runs no
    Python frame: every sample taken while it is on the stack is counted a mismatch, never
    shipped. A sample can still land in ext_middle's own few instructions around that call
    (then the forged activation is not on the stack, and the merged stack ending there is
    right); nothing leafward of ext_middle may be counted."""
    rows, r, describe = _record(
        interp, interp.argv("native_target.py", ext[0], SECONDS + 5, "--forge"), tmp_path)
    _, buckets = e2e.parse_summary(r.stderr)
    m = MISMATCH_TEXT.search(r.stderr)
    mismatched = int(m.group(1)) if m else 0
    assert mismatched >= 0.9 * buckets["shipped"] and mismatched >= _floor(r), \
        "%d mismatches of %d shipped\n%s" % (mismatched, buckets["shipped"], describe)
    for frames, n in rows:
        names = _project(frames)
        assert "ext_middle" not in names[:-1], "a half-merged stack was counted: %s\n%s" % (
            ";".join(frames), describe)


DEEP_SCRIPT = "native_deep_target.py"
SHIMS_MAX = 64  # entry frames one stack record carries (bpf/abi.h PW_USTACK_SHIMS)
DEEP_TEXT = re.compile(r"(\d+) with more eval-loop activations than --native matches \(64\)")


def test_more_activations_than_the_bound_are_counted_not_shipped(pywalk, interp, ext,
                                                                 tmp_path):
    """3.12+: a stack of 72 eval-loop activations (recursion through map()) has more entry
    frames than a record carries: such samples are counted native_deep (before any unwind,
    so whatever --native-stack holds), and a stack that is counted never has more
    activations than the bound."""
    if tuple(int(x) for x in interp.version.split(".")) < (3, 12):
        pytest.skip("%s: no entry frames on the C stack (3.10/3.11 merge by name, "
                    "unbounded)" % interp.id)
    rows, r, describe = _record(interp, interp.argv(DEEP_SCRIPT, 70, SECONDS + 5), tmp_path,
                                script_path=interp.script_path(DEEP_SCRIPT))
    _, buckets = e2e.parse_summary(r.stderr)
    m = DEEP_TEXT.search(r.stderr)
    deep = int(m.group(1)) if m else 0
    print("native_deep: %d of %d shipped" % (deep, buckets["shipped"]))
    assert deep >= 0.6 * buckets["shipped"] and deep >= _floor(r), \
        "%d of %d shipped counted native_deep\n%s" % (deep, buckets["shipped"], describe)
    for frames, n in rows:
        py = [e2e.parse_py_frame(f)[0] for f in frames if e2e.parse_py_frame(f)]
        # <module>'s activation, then one per rec (spin runs in the last one)
        assert 1 + py.count("rec") <= SHIMS_MAX, \
            "a stack of %d activations was counted: %s\n%s" % (
                1 + py.count("rec"), ";".join(frames), describe)


@pytest.mark.core_only
def test_cxx_names_are_demangled(pywalk, interp, tmp_path):
    """A C++ library called through ctypes: its frames are named as C++ reads them."""
    lib = str(tmp_path / "libcxxspin.so")
    subprocess.run(["g++", "-shared", "-fPIC", "-O2", "-fno-inline", "-o", lib,
                    os.path.join(e2e.TARGETS_DIR, "cxxspin.cc")], check=True)
    rows, r, describe = _record(interp, interp.argv("cxx_target.py", lib, SECONDS + 5),
                                tmp_path)
    total = sum(n for _, n in rows)
    leafward = "cxx_spin [native];pwtest::Spinner::spin(double) [native]"
    inside = sum(n for frames, n in rows if leafward in ";".join(frames) and
                 [e2e.parse_py_frame(f)[0] for f in frames if e2e.parse_py_frame(f)] ==
                 ["<module>", "spin_cxx"])
    assert inside >= MATCH_MIN * total and total >= _floor(r), \
        "%d of %d samples in '%s' under <module>;spin_cxx\n%s" % (
            inside, total, leafward, describe)
    assert not any(f.startswith("_ZN") for frames, _ in rows for f in frames), describe


def _build_id(path):
    """The GNU build-id `readelf -n` prints for the file, in hex."""
    notes = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, check=True,
                           universal_newlines=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", notes)
    assert m, "no build-id in %s:\n%s" % (path, notes)
    return m.group(1)


MAPPING_RE = re.compile(r"^\s*(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+) ?(\S*)",
                        re.M)
LOCATION_RE = re.compile(r"^\s*\d+: (0x[0-9a-f]+) M=(\d+) (\S+) ", re.M)


def test_pprof_maps_the_extension_with_its_build_id(pywalk, interp, merges, ext, tmp_path):
    """pprof from --native: the extension is a Mapping with its path as the target's maps
    show it and the build-id readelf -n gives, and each of its functions' Locations is a real
    address inside that Mapping (so a tool can symbolize it again); the first Mapping is
    the interpreter's executable (go tool pprof names the profile by it)."""
    path, r, describe = _record(interp, interp.argv("native_target.py", ext[0], SECONDS + 5),
                                tmp_path, out_name="native.pb.gz")
    raw = e2e.go_pprof(tmp_path, "-raw", path)
    so = _ext_file(ext[1])
    maps = {int(m.group(1)): m for m in MAPPING_RE.finditer(raw.split("Mappings")[-1])}
    # the path as the target's maps show it to pywalk: a chrooted target's file under its
    # root (the host's path, where a tool on the host finds the file)
    ours = [m for m in maps.values() if m.group(5) == os.path.join(ext[1], so)]
    assert len(ours) == 1, "no single Mapping for %s:\n%s" % (so, raw.split("Mappings")[-1])
    mapping = ours[0]
    assert mapping.group(6) == _build_id(os.path.join(ext[1], so)), mapping.group(0)
    start, limit = int(mapping.group(2), 16), int(mapping.group(3), 16)
    assert start < limit, mapping.group(0)
    exe = os.path.realpath(os.path.join(interp.root or "/", interp.exe.lstrip("/")))
    first = list(maps.values())[0]
    assert os.path.basename(first.group(5)) == os.path.basename(exe), \
        "first Mapping %s, not the executable %s" % (first.group(0), exe)
    seen = {}
    for m in LOCATION_RE.finditer(raw):
        if m.group(3) in EXT_FUNCS[1:]:
            addr = int(m.group(1), 16)
            assert int(m.group(2)) == int(mapping.group(1)) and start <= addr < limit, \
                "%s outside %s" % (m.group(0), mapping.group(0))
            seen[m.group(3)] = seen.get(m.group(3), 0) + 1
    for f in ("ext_outer", "ext_middle", "ext_inner", "ext_spin", "burn"):
        assert seen.get(f), "no Location of %s in the extension's Mapping\n%s\n%s" % (
            f, raw[-3000:], describe)


KERNEL_SCRIPT = "kernel_target.py"
# of zero_reader's samples: it is in its read most of the time, and the floor sits well
# below that, for a loaded machine
KERNEL_READ_SHARE = 0.30


@pytest.mark.core_only
def test_native_and_kernel_frames_in_order(pywalk, interp, merges, tmp_path):
    """--native --kernel on a read system call made from Python (os.read): root first the
    thread's native start, the Python frames <module>, main, zero_reader where the eval
    loop ran them, then os.read's C frames, then the kernel's read path at the leaf; a
    kernel frame is never above a native or Python one."""
    m = e2e.markers(KERNEL_SCRIPT)
    spath = interp.script_path(KERNEL_SCRIPT)
    want_py = ["<module> (%s:%d)" % (spath, m["main"]),
               "main (%s:%d)" % (spath, m["call_read"]),
               "zero_reader (%s:%d)" % (spath, m["read"])]
    rows, r, describe = _record(interp, interp.argv(KERNEL_SCRIPT, "read"), tmp_path,
                                script_path=spath, extra=["--kernel"])
    total = in_read = 0
    for frames, n in rows:
        kinds = ["kernel" if f.endswith(" [kernel]") else
                 "native" if f.endswith(" [native]") else "python" for f in frames]
        assert kinds[0] == "native", "root %r is not native\n%s" % (frames[0], describe)
        if "kernel" in kinds:
            k = kinds.index("kernel")
            assert set(kinds[k:]) == {"kernel"}, "a frame below a kernel frame: %s\n%s" % (
                ";".join(frames), describe)
        py = [f for f, kd in zip(frames, kinds) if kd == "python"]
        if py != want_py:
            continue
        total += n
        last_py = max(i for i, kd in enumerate(kinds) if kd == "python")
        between = kinds[last_py + 1:kinds.index("kernel")] if "kernel" in kinds else []
        kern = [f[:-len(" [kernel]")] for f, kd in zip(frames, kinds) if kd == "kernel"]
        # os.read's C code (os_read, _Py_read, libc's read) between Python and the kernel
        if between and set(between) == {"native"} and e2e.is_read_path(kern):
            in_read += n
    assert total >= _floor(r), "only %d samples under %s\n%s" % (total, want_py, describe)
    assert in_read >= KERNEL_READ_SHARE * total, \
        "%d of %d samples of zero_reader: Python, native, then the kernel's read path\n%s" % (
            in_read, total, describe)
    paired = re.search(r"^pywalk: --kernel --native: (\d+) stacks shipped with their kernel "
                       r"and native stacks; (\d+) stack records without their sample",
                       r.stderr, re.M)
    assert paired, "no pairing line\n" + r.stderr


NOT_COUNTED_TEXT = re.compile(r"of the shipped stacks, (\d+) were not counted")
CLOSED_TEXT = re.compile(r"binaries held ([\d.]+) MiB at most \(budget (\d+) MiB\), (\d+) "
                         r"processes closed to stay in it")


def test_plt_calls_and_epilogues_unwind_whole(pywalk, interp, merges, tmp_path):
    """json encoding spends its time in short calls through the PLT and in small
    functions' epilogues: samples there unwind to the thread's first frame like any other
    (before the red zone was copied and rip given as a register, 4 % did not on 3.11)."""
    rows, r, describe = _record(interp, interp.argv("libc_churn.py", SECONDS + 5), tmp_path)
    _, buckets = e2e.parse_summary(r.stderr)
    m = NOT_COUNTED_TEXT.search(r.stderr)
    lost = int(m.group(1)) if m else 0
    assert buckets["shipped"] >= _floor(r), describe
    assert lost <= 0.01 * buckets["shipped"], "%d of %d shipped not counted\n%s" % (
        lost, buckets["shipped"], describe)
    script = interp.script_path("libc_churn.py")
    line = e2e.markers("libc_churn.py")["encode_dumps"]
    total = sum(n for _, n in rows)
    in_encode = sum(n for frames, n in rows
                    if any(e2e.parse_py_frame(f) == ("encode", script, line) for f in frames)
                    and _native_name(frames[0]))
    assert in_encode >= 0.95 * total, "%d of %d in encode at line %d, under a native root\n%s" % (
        in_encode, total, line, describe)


@pytest.mark.core_only
def test_binaries_kept_within_their_budget(pywalk, interp, merges, ext, tmp_path):
    """--native-cache bounds what the unwinder keeps open: two processes whose binaries
    outgrow 1 MiB each close the other's at every switch, and both still merge exactly.
    Each reopening costs milliseconds (the binaries are read anew), hence 49 Hz."""
    targets = [e2e.Target(interp, argv=interp.argv("native_target.py", ext[0], SECONDS + 5))
               for _ in range(2)]
    out = str(tmp_path / "budget.folded")
    try:
        for t in targets:
            t.wait_ready()
        r = e2e.run_pywalk(["record", "-p", ",".join(str(t.pid) for t in targets), "--native",
                            "--native-cache", "1M", "-d", SECONDS, "-F", 49, "-o", out],
                           timeout=SECONDS + 60)
    finally:
        for t in targets:
            t.stop()
    describe = e2e.describe_run(r, out)
    assert r.returncode == 0, describe
    e2e.check_summary(r.stderr)
    m = CLOSED_TEXT.search(r.stderr)
    assert m and int(m.group(2)) == 1 and int(m.group(3)) >= 10, describe
    rows = e2e.parse_folded(out)
    for t in targets:
        # by process: the root is "comm (pid)"
        mine = [(frames[1:], n) for frames, n in rows if frames[0].endswith("(%d)" % t.pid)]
        _check_merged(mine, describe, floor=20)
    bad = e2e.run_pywalk(["record", "-p", "1", "--native-cache", "1M"])
    assert bad.returncode == 2 and "--native-cache needs --native" in bad.stderr, bad.stderr
    for size in ("512K", "65G", "lots"):
        run_bad = e2e.run_pywalk(["record", "-p", "1", "--native", "--native-cache", size])
        assert run_bad.returncode == 2 and \
            "invalid --native-cache '%s' (1M-64G)" % size in run_bad.stderr, run_bad.stderr
