#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Generate tests/unit/linetable_vectors.h: real co_linetable bytes plus the
# per-code-unit ground-truth line, dumped from every CPython interpreter found.
#
# Usage: gen_linetable_vectors.py [-o OUT.h] [PYTHON ...]
# Without PYTHON arguments, python3.10..3.13 are looked up on PATH, in
# /usr/bin and under $PYENV_ROOT (default ~/.pyenv). The script re-runs itself
# under each interpreter with --dump (JSON on stdout), so it must stay valid
# for every target version.

import glob
import json
import os
import subprocess
import sys

# The sample module. It must compile on 3.10+. Line numbers matter: the
# padding gaps below produce big forward/backward jumps and long-form entries.
PAD = "\n" * 150
LONGLINE = "    s = " + " + ".join("v%d" % i for i in range(90)) + "\n"
SAMPLE = (
    "import os\n"
    "def empty():\n"
    "    pass\n"
    "def docstring_only():\n"
    "    '''doc'''\n"
    "def simple(a, b):\n"
    "    c = a + b\n"
    "    d = c * 2\n"
    "    return d\n"
    "def loops(n):\n"
    "    total = 0\n"
    "    for i in range(n):\n"
    "        if i % 3 == 0:\n"
    "            continue\n"
    "        while total < i:\n"
    "            total += 1\n"
    "        else:\n"
    "            total -= 1\n"
    "    return total\n"
    "def handlers(x):\n"
    "    try:\n"
    "        y = 1 / x\n"
    "    except ZeroDivisionError as e:\n"
    "        y = str(e)\n"
    "    except (TypeError, ValueError):\n"
    "        raise\n"
    "    else:\n"
    "        y = y * 2\n"
    "    finally:\n"
    "        x = None\n"
    "    with open(os.devnull) as f, open(os.devnull) as g:\n"
    "        f.read(); g.read()\n"
    "    return y\n"
    "def lambdas_and_comps(xs):\n"
    "    key = lambda v: (v,\n"
    "                     -v)\n"
    "    sq = [x * x for x in xs if x]\n"
    "    st = {x for x in xs}\n"
    "    dc = {x: [y for y in range(x)] for x in xs}\n"
    "    gen = (x + 1 for x in xs)\n"
    "    return sorted(sq, key=key), st, dc, list(gen)\n"
    "def multiline(a,\n"
    "              b,\n"
    "              c):\n"
    "    r = (a +\n"
    "         b *\n"
    "         c)\n"
    "    return max(a,\n"
    "               b,\n"
    "               c,\n"
    "               r)\n"
    "def big_jumps(a, b):\n"
    "    r = os.path.join(a," + PAD +
    "                     b)\n"
    "    q = (a," + PAD + PAD +
    "         b," + PAD +
    "    )\n"
    "    return r, q\n"
    "def long_body(v0):\n" +
    "".join("    v%d = v%d + %d\n" % (i + 1, i, i) for i in range(80)) +
    "    v81 = (v80 +\n"
    "           v79)\n" +
    "".join("    v%d = v0\n" % i for i in range(82, 100)) +
    LONGLINE +
    "    if v0:\n" +
    "".join("        v0 += %d\n" % i for i in range(70)) +
    "    return v81, s\n"
    "class Klass:\n"
    "    attr = 1\n"
    "    def method(self):\n"
    "        return [self.attr for _ in range(3)]\n"
    "    @property\n"
    "    def prop(self):\n"
    "        return (\n"
    "            self.attr)\n"
    "def generator(n):\n"
    "    for i in range(n):\n"
    "        yield i\n"
    "    yield from range(n)\n"
    "async def coro(x):\n"
    "    async with x:\n"
    "        await x\n"
    "    async for y in x:\n"
    "        pass\n"
    "def nested():\n"
    "    def inner(z):\n"
    "        def innermost():\n"
    "            return z\n"
    "        return innermost\n"
    "    return inner\n"
    "def dispatch(cmd):\n"
    "    match cmd:\n"
    "        case [a, b]:\n"
    "            return a\n"
    "        case {'k': v}:\n"
    "            return v\n"
    "        case _:\n"
    "            return None\n"
    + "\n" * 900 +
    "def far_away(x):\n"
    "    assert x, 'msg'\n"
    "    global G\n"
    "    G = x\n"
    "    del G\n"
    "    return x if x else -x\n"
)
# A second module starting deep in a file (firstlineno ~ 70000).
FAR_SAMPLE = "\n" * 70000 + (
    "def very_far(a):\n"
    "    b = a\n" + "\n" * 300 +
    "    return b\n"
)


def walk(code, out, prefix=""):
    out.append((prefix + code.co_name, code))
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            walk(c, out, prefix + code.co_name + ".")


def dump():
    vi = sys.version_info
    codes = []
    walk(compile(SAMPLE, "<sample>", "exec"), codes)
    walk(compile(FAR_SAMPLE, "<far>", "exec"), codes)
    res = []
    for name, co in codes:
        n_units = len(co.co_code) // 2
        lines = [None] * n_units
        if vi >= (3, 11):
            pos = list(co.co_positions())
            assert len(pos) == n_units, name
            lines = [p[0] for p in pos]
            # co_lines() must agree wherever it says something.
            for start, end, line in co.co_lines():
                for u in range(start // 2, end // 2):
                    assert lines[u] == line, (name, u, lines[u], line)
        else:
            covered = [False] * n_units
            for start, end, line in co.co_lines():
                assert start % 2 == 0 and end % 2 == 0, name
                for u in range(start // 2, end // 2):
                    lines[u] = line
                    covered[u] = True
            assert all(covered), name
        res.append({
            "name": name,
            "firstlineno": co.co_firstlineno,
            "table": list(co.co_linetable),
            "lines": [0 if ln is None else ln for ln in lines],
        })
    json.dump({"version": "%d.%d.%d" % vi[:3], "codes": res}, sys.stdout)


def find_pythons():
    found = []
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for minor in (10, 11, 12, 13):
        exe = "python3.%d" % minor
        cands = [os.path.join(d, exe)
                 for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin"]]
        cands += sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor,
                                               "bin", exe)))
        for c in cands:
            # pyenv shims only dispatch to the selected version: skip them.
            if os.sep + "shims" + os.sep in c:
                continue
            if os.access(c, os.X_OK) and os.path.realpath(c) not in \
                    [os.path.realpath(f) for f in found]:
                found.append(c)
    return found


def c_ident(s):
    return "".join(ch if ch.isalnum() else "_" for ch in s)


def code_kinds(table):
    """Which 3.11+ entry codes occur (for the coverage comment)."""
    return sorted({(b >> 3) & 15 for b in table if b & 0x80})


def main():
    args = sys.argv[1:]
    if args and args[0] == "--dump":
        dump()
        return
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "linetable_vectors.h")
    if len(args) >= 2 and args[0] == "-o":
        out_path, args = args[1], args[2:]
    pythons = args or find_pythons()
    if not pythons:
        sys.exit("no python3.10+ interpreter found")

    seen = set()
    vectors = []
    summary = []
    dumps = []
    for py in pythons:
        data = json.loads(subprocess.check_output(
            [py, os.path.abspath(__file__), "--dump"]))
        dumps.append((tuple(int(x) for x in data["version"].split(".")), py, data))
    # Oldest first, so the output does not depend on PATH order; a code object
    # byte-identical to one from an earlier interpreter is kept only once.
    for _, py, data in sorted(dumps, key=lambda d: d[0]):
        ver = data["version"]
        fmt = "LINETABLE_PEP626" if ver.startswith("3.10.") else "LINETABLE_LOCATION"
        kept = 0
        allkinds = set()
        for c in data["codes"]:
            key = (fmt, c["firstlineno"], bytes(c["table"]), tuple(c["lines"]))
            if key in seen:
                continue
            seen.add(key)
            kept += 1
            if fmt == "LINETABLE_LOCATION":
                allkinds.update(code_kinds(c["table"]))
            vectors.append((ver, fmt, c))
        print("%s: %s" % (ver, py))
        summary.append("%s: %d vectors (%d code objects)%s" % (
            ver, kept, len(data["codes"]),
            ", entry codes %s" % sorted(allkinds) if allkinds else ""))

    lines = [
        "/* SPDX-License-Identifier: MIT */",
        "/* Generated by tests/unit/gen_linetable_vectors.py -- do not edit.",
        " * Real co_linetable bytes and the ground-truth line of every code unit",
        " * (3.10: co_lines(); 3.11+: co_positions()), 0 = no line. */",
        "/*",
    ] + [" * " + s for s in summary] + [
        " */",
        "#ifndef PYWALK_LINETABLE_VECTORS_H",
        "#define PYWALK_LINETABLE_VECTORS_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        '#include "symbolize/linetable.h"',
        "",
        "struct lt_vector {",
        "\tconst char *name;",
        "\tenum linetable_format fmt;",
        "\tint firstlineno;",
        "\tconst uint8_t *table;",
        "\tsize_t table_len;",
        "\tconst int32_t *lines;\t/* one per code unit, 0 = no line */",
        "\tuint32_t n_units;",
        "};",
        "",
    ]

    def wrap(items, per):
        return ["\t" + ", ".join(items[i:i + per]) + ","
                for i in range(0, len(items), per)]

    for i, (ver, fmt, c) in enumerate(vectors):
        lines.append("static const uint8_t lt_tab_%d[] = {  /* %s %s */" %
                     (i, ver, c["name"]))
        lines += wrap(["0x%02x" % b for b in c["table"]] or ["0"], 16)
        lines.append("};")
        lines.append("static const int32_t lt_lines_%d[] = {" % i)
        lines += wrap([str(x) for x in c["lines"]] or ["0"], 16)
        lines.append("};")
    lines.append("")
    lines.append("static const struct lt_vector lt_vectors[] = {")
    for i, (ver, fmt, c) in enumerate(vectors):
        lines.append('\t{ "%s %s", %s, %d, lt_tab_%d, %d, lt_lines_%d, %d },' % (
            ver, c["name"], fmt, c["firstlineno"], i, len(c["table"]), i,
            len(c["lines"])))
    lines += ["};", "", "#endif /* PYWALK_LINETABLE_VECTORS_H */", ""]
    with open(out_path, "w") as f:
        f.write("\n".join(lines))
    for s in summary:
        print(s)
    print("wrote %s (%d vectors, %d bytes)" % (out_path, len(vectors),
                                               os.path.getsize(out_path)))


if __name__ == "__main__":
    main()
