#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Generate the seed corpora in tests/fuzz/corpus/<target>/ from real data: line tables of
# tests/unit/linetable_vectors.h, _Py_DebugOffsets out of installed interpreters, tiny ELF
# files built here, this process's /proc/self/maps and the hostile names of the e2e tests.
#
# Usage: make_seeds.py   (rewrites every corpus dir; needs gcc and objcopy, uses the
# Debian-unstable chroot and pyenv interpreters when present, skips what is missing)

import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
CHROOT = os.environ.get("PYWALK_CACHE", "/var/cache/pywalk") + "/debian-unstable"
MAX_SEED = 64 * 1024
DBG_READ_SIZE = 1024  # what pyver_detect() reads of _PyRuntime


def write(target, name, data):
    assert len(data) < MAX_SEED, (target, name, len(data))
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


# ---- linetable: format byte, firstlineno s32, instruction u32, table -----------------------

def linetable_seeds():
    text = open(os.path.join(REPO, "tests/unit/linetable_vectors.h")).read()
    tables = {}
    for m in re.finditer(r"static const uint8_t (lt_tab_\d+)\[\] = \{[^\n]*\n(.*?)\};", text,
                         re.S):
        tables[m.group(1)] = bytes(int(b, 16) for b in re.findall(r"0x([0-9a-f]{2})",
                                                                  m.group(2)))
    rows = re.findall(r'\{ "([^"]*)", (LINETABLE_\w+), (-?\d+), (lt_tab_\d+), (\d+), '
                      r'lt_lines_\d+, (\d+) \}', text)
    for i, (name, fmt, first, tab, tlen, units) in enumerate(rows):
        table = tables[tab]
        assert len(table) == int(tlen), name
        head = bytes([1 if fmt == "LINETABLE_LOCATION" else 0])
        # the middle instruction of each code object, and one past the end of a few
        for instr in [int(units) // 2] + ([int(units)] if i % 10 == 0 else []):
            write("linetable", "vec%02d-%d" % (i, instr),
                  head + struct.pack("<iI", int(first), instr) + table)
    return len(rows)


# ---- strdecode: control byte (kind, truncated), then the characters -------------------------

def strdecode_seeds():
    kind_bits = {1: 0, 2: 1, 4: 2}

    def image(s, kind, truncated=False):
        codes = [ord(c) for c in s] if isinstance(s, str) else s
        fmt = {1: "B", 2: "H", 4: "I"}[kind]
        return (bytes([kind_bits[kind] | (4 if truncated else 0)]) +
                struct.pack("<%d%s" % (len(codes), fmt), *codes))

    # names real code objects carry, each in the narrowest kind CPython would use
    seeds = {
        "ascii": image("<module>.handlers.<locals>.<lambda>", 1),
        "latin1": image("caf\u00e9_na\u00efve", 1),
        "bmp": image("\u0444\u0443\u043d\u043a\u0446\u0438\u044f_\u51fd\u6570", 2),
        "lone-surrogate": image("surrogate\udcff", 2),
        "astral": image("fire_\U0001f525", 4),
        "past-unicode": image([0x41, 0x110000, 0xffffffff, 0x10ffff], 4),
        "nul-inside": image("a\0b", 1),
        "truncated": image("V" * 64, 1, truncated=True),
        "truncated-wide": image("\u6587" * 16, 2, truncated=True),
        "bad-kind": bytes([8 | 3 << 4]) + b"xyz",
        "empty": bytes([0]),
    }
    for name, data in seeds.items():
        write("strdecode", name, data)
    return len(seeds)


# ---- debug_offsets: the start of .PyRuntime, which is _Py_DebugOffsets ---------------------

def pyruntime_image(binary):
    with tempfile.NamedTemporaryFile() as tmp:
        r = subprocess.run(["objcopy", "-O", "binary", "--only-section=.PyRuntime", binary,
                            tmp.name], stderr=subprocess.DEVNULL)
        data = open(tmp.name, "rb").read(DBG_READ_SIZE) if r.returncode == 0 else b""
    return data if data.startswith(b"xdebugpy") else None


def debug_offsets_seeds():
    binaries = sorted(glob.glob(CHROOT + "/usr/bin/python3.1[3-9]"))
    binaries += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[3-9]*/lib/"
                                                    "libpython3.*.so.1.0")))
    # the release builds of scripts/get-cpython-release.sh, free-threaded one included
    cache = os.environ.get("PYWALK_CACHE") or "/var/cache/pywalk"
    binaries += sorted(glob.glob(cache + "/cpython-3.1[3-9].*[0-9]/bin/python3.1[3-9]"))
    binaries += sorted(glob.glob(cache + "/cpython-3.1[3-9].*t/bin/python3.1[3-9]t"))
    n = 0
    for b in binaries:
        img = pyruntime_image(b)
        if not img:
            continue
        version = struct.unpack_from("<Q", img, 8)[0]
        tag = "%d.%d.%d" % (version >> 24, (version >> 16) & 0xff, (version >> 8) & 0xff)
        src = "chroot" if b.startswith(CHROOT) else "release" if "/cpython-" in b else "pyenv"
        if struct.unpack_from("<Q", img, 16)[0]:
            tag += "t"  # a real free-threaded build's own table
        write("debug_offsets", "%s-%s" % (tag, src), img)
        n += 1
        if n == 1 or tag.startswith("3.15"):
            # refusals next to each real image: free-threaded, a version without a layout
            write("debug_offsets", "%s-free-threaded" % tag,
                  img[:16] + struct.pack("<Q", 1) + img[24:])
            write("debug_offsets", "%s-as-3.16" % tag,
                  img[:8] + struct.pack("<Q", 0x031000a1) + img[16:])
            write("debug_offsets", "%s-short" % tag, img[:600])
    if not n:
        print("make_seeds: no interpreter with _Py_DebugOffsets found", file=sys.stderr)
    return n


# ---- elf: tiny binaries that carry what elfinfo.c looks for ---------------------------------

ELF_SRC = r"""
const unsigned long Py_Version = 0x030d00f0;
__attribute__((section(".PyRuntime"), used)) char _PyRuntime[64] = "xdebugpy";
char PyCode_Type[16];
void _start(void) { for (;;) ; }
"""

ELF_310_SRC = r"""
__attribute__((section(".PyRuntime"), used)) static char runtime[64];
void _start(void) { for (;;) ; }
"""


def handmade_elf(order, rodata_addr=None, version_at=None):
    """An ET_EXEC ELF64 with .rodata holding Py_Version, .PyRuntime, and a symbol table
    naming _PyRuntime, Py_Version and PyCode_Type; `order` is "<" or ">". rodata_addr and
    version_at move .rodata and the Py_Version symbol (default: where they belong)."""
    rodata = struct.pack(order + "Q", 0x030d00f0)
    runtime = b"xdebugpy" + bytes(56)
    strtab = b"\0_PyRuntime\0Py_Version\0PyCode_Type\0"
    shstrtab = b"\0.rodata\0.PyRuntime\0.symtab\0.strtab\0.shstrtab\0"
    sym = order + "IBBHQQ"
    base = 0x400000
    if rodata_addr is None:
        rodata_addr = base + 64 + 56
    if version_at is None:
        version_at = base + 64 + 56
    symtab = bytes(24) + b"".join(struct.pack(sym, name, 0x11, 0, shndx,
                                              (base + off) % 2**64, size)
                                  for name, shndx, off, size in ((1, 2, 0x100, 64),
                                                                 (12, 1, version_at - base, 8),
                                                                 (23, 2, 0x100, 16)))
    blobs = [rodata, runtime, symtab, strtab, shstrtab]
    offs, pos = [], 64 + 56  # ELF header, one program header
    for b in blobs:
        offs.append(pos)
        pos += len(b)
    assert offs[0] == 64 + 56  # where the Py_Version symbol points
    shoff = (pos + 7) & ~7
    ehdr = struct.pack(order + "4sBBBB8sHHIQQQIHHHHHH", b"\x7fELF", 2,
                       1 if order == "<" else 2, 1, 0, bytes(8), 2, 62, 1, base, 64, shoff,
                       0, 64, 56, 1, 64, 6, 5)
    phdr = struct.pack(order + "IIQQQQQQ", 1, 5, 0, base, base, pos, pos, 0x1000)
    sh = order + "IIQQQQIIQQ"
    shdrs = bytes(64)
    shdrs += struct.pack(sh, 1, 1, 2, rodata_addr, offs[0], len(rodata), 0, 0, 8, 0)
    shdrs += struct.pack(sh, 9, 1, 3, base + 0x100, offs[1], len(runtime), 0, 0, 32, 0)
    shdrs += struct.pack(sh, 20, 2, 0, 0, offs[2], len(symtab), 4, 1, 8, 24)
    shdrs += struct.pack(sh, 28, 3, 0, 0, offs[3], len(strtab), 0, 0, 1, 0)
    shdrs += struct.pack(sh, 36, 3, 0, 0, offs[4], len(shstrtab), 0, 0, 1, 0)
    image = ehdr + phdr + b"".join(blobs)
    return image + bytes(shoff - len(image)) + shdrs


def elf_seeds(tmp):
    src = os.path.join(tmp, "py.c")
    src310 = os.path.join(tmp, "py310.c")
    open(src, "w").write(ELF_SRC)
    open(src310, "w").write(ELF_310_SRC)
    small = ["-Os", "-nostdlib", "-Wl,--build-id=none", "-Wl,-z,noseparate-code",
             "-fno-asynchronous-unwind-tables"]
    builds = {
        "exec": (src, ["-static", "-no-pie"]),
        "pie": (src, ["-static-pie", "-fPIE"]),
        "shared": (src, ["-shared", "-fPIC"]),
        "shared-stripped": (src, ["-shared", "-fPIC", "-s"]),
        "exec-i386": (src, ["-m32", "-static", "-no-pie"]),
        "py310-stripped": (src310, ["-static", "-no-pie", "-s"]),
    }
    n = 0
    for name, (c, flags) in builds.items():
        out = os.path.join(tmp, name)
        if subprocess.run(["gcc"] + small + flags + [c, "-o", out],
                          stderr=subprocess.DEVNULL).returncode:
            print("make_seeds: cannot build the %s ELF seed, skipped" % name, file=sys.stderr)
            continue
        write("elf", name, open(out, "rb").read())
        n += 1
    obj = os.path.join(tmp, "py.o")
    if not subprocess.run(["gcc", "-Os", "-c", src, "-o", obj]).returncode:
        write("elf", "object", open(obj, "rb").read())
        n += 1
    # laid out by hand, so the byte order can be the other one (libelf converts it)
    write("elf", "handmade-le", handmade_elf("<"))
    write("elf", "handmade-be", handmade_elf(">"))
    # Py_Version's 8 bytes "end" past 2^64 in a section at 0: a wrapping bounds check read
    # before the section (fixed in elfinfo.c)
    write("elf", "handmade-wrap", handmade_elf("<", rodata_addr=0, version_at=2**64 - 1))
    n += 3
    # a real, small interpreter binary: pyenv's python3.X is a launcher linked to libpython
    for launcher in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1*/bin/"
                                                        "python3.1?")))[-1:]:
        data = open(launcher, "rb").read()
        if len(data) < MAX_SEED:
            write("elf", "pyenv-launcher", data)
            n += 1
    write("elf", "not-elf", b"#!/bin/sh\nexit 0\n")
    return n + 1


# ---- elfprobe: function symbols and stapsdt notes (trace's uprobes and USDT) ---------------

USDT_SRC = r"""
void probed(void) {
	__asm__ volatile("1: nop\n"
		".pushsection .note.stapsdt,\"?\",\"note\"\n"
		".balign 4\n.4byte 992f-991f, 994f-993f, 3\n"
		"991: .asciz \"stapsdt\"\n992: .balign 4\n"
		"993: .8byte 1b, 0, 0\n.asciz \"python\"\n.asciz \"gc__start\"\n"
		".asciz \"-4@%%edi\"\n994: .balign 4\n.popsection\n");
}
void _start(void) { probed(); for (;;); }
"""


def elfprobe_seeds(tmp):
    src = os.path.join(tmp, "usdt.c")
    out = os.path.join(tmp, "usdt")
    open(src, "w").write(USDT_SRC)
    n = 0
    if subprocess.run(["gcc", "-Os", "-nostdlib", "-static", "-fno-asynchronous-unwind-tables",
                       "-Wl,--build-id=none", "-Wl,-z,max-page-size=0x10",
                       "-Wl,-z,noseparate-code", src, "-o", out],
                      stderr=subprocess.DEVNULL).returncode == 0:
        write("elfprobe", "usdt-and-funcs", open(out, "rb").read())
        n += 1
    else:
        print("make_seeds: cannot build the USDT ELF seed, skipped", file=sys.stderr)
    # the elf target's seeds have symbol tables of every shape
    for name in ("exec", "object", "handmade-le"):
        path = os.path.join(CORPUS, "elf", name)
        if os.path.exists(path):
            write("elfprobe", name, open(path, "rb").read())
            n += 1
    return n


# ---- maps: /proc/self/maps and the shapes the kernel can print ------------------------------

def maps_seeds():
    own = open("/proc/self/maps").read()
    lines = own.splitlines(keepends=True)
    write("maps", "self", "".join(lines[:40]).encode())
    crafted = {
        "spaces-deleted": "7f0000000000-7f0000021000 r-xp 00001000 08:01 123 "
                          "/tmp/my dir/lib python.so (deleted)\n",
        "specials": "55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0 [heap]\n"
                    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
                    "7f0000000000-7f0000001000 r--p 00000000 00:00 0 [vvar]\n"
                    "7f0000100000-7f0000101000 rw-s 00000000 00:01 77 /memfd:jit (deleted)\n",
        "anonymous": "7f1234560000-7f1234570000 rw-p 00000000 00:00 0 \n",
        "huge": "ffffffffffffffffffff-1ffffffffffffffff rwxp fffffffffffffffff "
                "fffffffff:fffffffff 99999999999999999999999 /x\n",
        "missing": "7f0000000000-7f0000021000 r-xp 00001000\n7f00-7f01\n\n-\n",
        "odd": "0x10-0x20 r-xpx 0 1:2 3 relative/path\n-1--2 rw 0 -1:-1 -1 //\r\n"
               "7f0000000000-7f0000021000 r-xp 00001000 08:01 123 /no/newline",
    }
    for name, text in crafted.items():
        write("maps", name, text.encode())
    return len(crafted) + 1


# ---- escape: the hostile names of the e2e tests, and malformed UTF-8 -----------------------

def escape_seeds():
    sys.path.insert(0, os.path.join(REPO, "tests/targets"))
    import hostile_names

    names = [q for q, _, _ in hostile_names.LEAVES] + [f for _, f, _ in hostile_names.LEAVES]
    names += list(hostile_names.CALLER)
    seeds = {"hostile%02d" % i: s.encode("utf-8", "surrogatepass")[:512]
             for i, s in enumerate(names)}
    seeds["thread-name"] = hostile_names.THREAD_NAME
    seeds.update({
        "malformed": b"over\xc0\xaflong trunc\xe2\x82 stray\x80 high\xf5\x80\x80\x80 "
                     b"surr\xed\xa0\x80 cesu\xed\xa0\xbd\xed\xb8\x80 end\xf0\x9f",
        "invisible": "bidi\u202e\u2066 zw\u200b\u200d\ufeff c1\u0085\u009b "
                     "sep\u2028\u2029 nonchar\ufffe\uffff".encode(),
        "ascii-controls": bytes(range(1, 0x80)),
        "html-refs": b"&amp; &#39; &#x27; & &; &#; &#x; <!-- --> </SCRIPT>",
        "plain": b"plain_name 123",
    })
    for name, data in seeds.items():
        write("escape", name, data)
    return len(seeds)


# ---- debuglink: a tiny library with a .gnu_debuglink, xz streams, "PATH\nSECTION" ---------

def debuglink_section(name):
    data = name + b"\0"
    return data + b"\0" * (-len(data) % 4) + b"\x78\x56\x34\x12"


def debuglink_seeds(tmp):
    import lzma
    src = os.path.join(tmp, "dl.c")
    lib = os.path.join(tmp, "libdl.so")
    sec = os.path.join(tmp, "dl.sec")
    with open(src, "w") as f:
        f.write("int f(void) { return 1; }\n")
    subprocess.run(["gcc", "-O1", "-fPIC", "-shared", "-nostdlib", "-s", "-o", lib, src],
                   check=True)
    with open(sec, "wb") as f:
        f.write(debuglink_section(b"../../../../dev/shm/f"))
    subprocess.run(["objcopy", "--add-section", ".gnu_debuglink=" + sec, lib], check=True)
    seeds = {
        "elf-dotdot-link": open(lib, "rb").read(),
        "xz-zeros": lzma.compress(bytes(1 << 16)),
        "xz-truncated": lzma.compress(b"MiniDebugInfo" * 64)[:40],
        "plain": b"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n" +
                 debuglink_section(b"libpython3.11.so.1.0.debug"),
        "dotdot-dir": b"/usr/../../dev/libx.so\n" + debuglink_section(b"x.debug"),
        "dotdot-link": b"/tmp/a/b/libx.so\n" + debuglink_section(b"../../../../dev/zero"),
        "build-id": b"/lib/libx.so\n" + bytes.fromhex("ab01ff10" * 5),
        "controls": b"/lib/libx.so\n" + debuglink_section(b"a\nb\x7f"),
    }
    for name, data in seeds.items():
        write("debuglink", name, data)
    return len(seeds)


# ---- demangle: C++ names, broken ones and one past the bound --------------------------------

def demangle_seeds():
    seeds = {
        "boost": b"_ZN5boost6detail6thread5startEPv",
        "vector": b"_ZNSt6vectorIiSaIiEE9push_backERKi",
        "template": b"_Z1fIiiiEvT_",
        "broken": b"_Zgarbage!",
        "c-name": b"_PyEval_EvalFrameDefault",
        "long": b"_ZN1014" + b"a" * 1014 + b"1fEv",
    }
    for name, data in seeds.items():
        write("demangle", name, data)
    return len(seeds)


def main():
    for t in ("linetable", "strdecode", "debug_offsets", "elf", "elfprobe", "maps", "escape",
              "debuglink", "demangle"):
        shutil.rmtree(os.path.join(CORPUS, t), ignore_errors=True)
        os.makedirs(os.path.join(CORPUS, t))
    with tempfile.TemporaryDirectory() as tmp:
        counts = {
            "linetable": linetable_seeds(),
            "strdecode": strdecode_seeds(),
            "debug_offsets": debug_offsets_seeds(),
            "elf": elf_seeds(tmp),
            "elfprobe": elfprobe_seeds(tmp),
            "maps": maps_seeds(),
            "escape": escape_seeds(),
            "debuglink": debuglink_seeds(tmp),
            "demangle": demangle_seeds(),
        }
    total = sum(os.path.getsize(p) for p in glob.glob(CORPUS + "/*/*"))
    print("make_seeds: %s; %d bytes" % (", ".join("%s %d" % kv for kv in counts.items()),
                                        total))


if __name__ == "__main__":
    main()
