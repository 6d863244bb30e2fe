# SPDX-License-Identifier: MIT
"""CPU-bound workload whose function and file names are hostile to every output format.

Usage: python3.11 hostile_names.py [--plain] [SECONDS]   (no SECONDS: run until killed)

Needs CPython 3.11+ (code.replace(co_qualname=...)). Prints READY (flushed) after a
warm-up. The main thread loops forever over LEAVES: each round calls every leaf through
CALLER, and a leaf runs WORK_UNIT * weight iterations of one busy line, so the CPU time of
the leaves splits in the ratio of their weights (the same loop body for all of them).
The names carry ';' (folded's separator), newlines, quotes, '<', '&', '</script>' (an HTML
page's script end), U+2028, a lone surrogate, non-ASCII and very long strings, code points
no output may show raw (NEVER_RAW: a C1 CSI, bidi controls, zero-width characters) and an
embedded NUL; the file names too. The thread's name (comm) is hostile as well: it is what --threads shows.
--plain uses ordinary names with the same weights (for comparing formats by name).

The test imports this module for the expected names: keep module level free of effects.
"""
import sys
import time

LONG = "L" * 3000            # kept whole (pywalk keeps 4096 code points)
VERY_LONG = "V" * 6000       # cut to 4096 code points plus U+2026
SYMTAB_MAX_STR = 4096

# (qualname, filename, weight); the first is the heaviest, so it is the top function
LEAVES = (
    ("heavy;semi;colon", "/srv/evil;dir/semi.py", 8),
    ("new\nline\ttab\rcr", "/srv/new\nline.py", 2),
    ("quote\"apos'back\\slash", "/srv/quo\"te\\s.py", 2),
    ("<b>&amp;bold</b>", "/srv/<b>&amp;.py", 2),
    ("</script><script>window.__pwned=1</script>", "/srv/</script><script>x=1</script>.py", 2),
    ("\u00fcn\u00efc\u00f6d\u00e9_\u51fd\u6570_\U0001f525",  # "ünïcödé_函数_🔥"
     "/srv/\u00fc\u00f1\u00ee/\u6587\u4ef6.py", 2),
    ("ctl\x01\x1f\x7f_end\u2028sep", "/srv/ctl\x02.py", 2),
    ("surrogate\udcff", "/srv/sur\udcffrogate.py", 2),
    (LONG, "/srv/" + "d" * 1000 + ".py", 2),
    (VERY_LONG, "/srv/very_long.py", 2),
    ("csi\u009b31m_red", "/srv/c1\u009b[2J.py", 2),
    ("rlo\u202eevil_txt.py", "/srv/bidi\u202efdp.py", 2),
    ("iso\u2066late\u2069d", "/srv/iso\u2066.py", 2),
    ("zero\u200bwidth", "/srv/zw\u200b.py", 2),
    ("bom\ufeffin_name", "/srv/\ufeffbom.py", 2),
    ("nul\x00after", "/srv/nul\x00after.py", 2),
)
# what those leaves hold that pywalk never shows raw: C1 CSI, bidi override and isolates,
# zero-width space, BOM, and U+0000
NEVER_RAW = ("\u009b", "\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\x00")
CALLER = ("caller;</script>\n&<x>", "/srv/caller;<x>.py")
PLAIN_LEAVES = tuple(("leaf_%d" % i, "/srv/plain.py", w) for i, (_, _, w) in enumerate(LEAVES))
PLAIN_CALLER = ("caller", "/srv/plain.py")
THREAD_NAME = b"<t>;\"&'x"   # comm holds 15 bytes; the process name is the main thread's
WORK_UNIT = 40000


def shown(name, pprof=False, as_text=False):
    """The name as pywalk reports it: lone surrogates become U+FFFD, and names longer than
    SYMTAB_MAX_STR code points are cut and marked with U+2026. U+0000 is kept (JSON has
    \\u0000, folded \\x00), except in pprof, which has U+FFFD for it. as_text: as the
    HTML page and `top` draw it, NEVER_RAW as \\uXXXX text and U+0000 as \\x00."""
    name = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in name)
    if len(name) > SYMTAB_MAX_STR:
        name = name[:SYMTAB_MAX_STR] + "\u2026"
    if pprof:
        name = name.replace("\x00", "\ufffd")
    if as_text:
        name = "".join(("\\x00" if c == "\x00" else "\\u%04x" % ord(c))
                       if c in NEVER_RAW else c for c in name)
    return name


def _leaf_template(n):
    acc = 0
    for i in range(n): acc = (acc * 31 + i) & 0xFFFF  # the busy line of every leaf
    return acc


def _caller_template(f, n):
    return f(n)


def _renamed(template, name, filename):
    code = template.__code__.replace(co_name=name, co_qualname=name, co_filename=filename)
    return type(template)(code, template.__globals__, name)


def _set_thread_name(name):
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def main():
    plain = "--plain" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--plain"]
    seconds = float(args[0]) if args else None
    leaves = [(_renamed(_leaf_template, n, f), w)
              for n, f, w in (PLAIN_LEAVES if plain else LEAVES)]
    caller = _renamed(_caller_template, *(PLAIN_CALLER if plain else CALLER))
    if not plain:
        _set_thread_name(THREAD_NAME)
    for leaf, w in leaves:  # warm-up: every code object exists and has run
        caller(leaf, 10)
    print("READY", flush=True)
    end = time.monotonic() + seconds if seconds else None
    while end is None or time.monotonic() < end:
        for leaf, w in leaves:
            caller(leaf, WORK_UNIT * w)


if __name__ == "__main__":
    main()
