# SPDX-License-Identifier: MIT
"""Ground truth for known_shape.py: the stacks an on-CPU sample of each thread must show.

Built from the script's own source: line numbers from its "# @leaf:NAME" / "# @call:NAME"
markers, qualnames from the AST (the function that encloses each marker), constants
(RECURSION_DEPTH, PHASES) by literal evaluation. So editing the script moves the
expectations with it; only the call structure below is written down here, and
validate_shape.py checks that structure against real interpreters.
Runs on the test driver's Python (3.9+); does not import or run the workload.
"""
import ast
import collections
import os
import re

# A frame as pywalk reports it: qualname (co_name before 3.11), file, line.
# In expected stacks, file is either the script path or a stdlib basename, and
# line None means "any line" (stdlib frames, whose lines change between versions).
Frame = collections.namedtuple("Frame", "qualname file line")

MARKER_RE = re.compile(r"#\s*@(leaf|call):(\w+)")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_shape.py")
MAIN, WORKER = "main", "worker"
# The worker thread's bottom frames, from threading.py (same three from 3.10 to 3.15;
# 3.14+ calls run through Context.run, a C function that adds no Python frame).
THREADING_ROOT = ("Thread._bootstrap", "Thread._bootstrap_inner", "Thread.run")


def _version_tuple(version):
    return tuple(int(x) for x in str(version).split(".")[:2])


def _reported_name(qualname, version):
    """co_qualname from 3.11 on; before that pywalk reports co_name."""
    return qualname if _version_tuple(version) >= (3, 11) else qualname.rsplit(".", 1)[-1]


class Shape:
    """What the script's source says: markers -> (qualname, line), and its constants."""

    def __init__(self, source_path=SCRIPT):
        with open(source_path, encoding="utf-8") as f:
            source = f.read()
        tree = ast.parse(source, source_path)
        scopes = []  # (first line, last line, qualname) of every function

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qual = prefix + child.name
                    scopes.append((child.lineno, child.end_lineno, qual))
                    visit(child, qual + ".<locals>.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, prefix + child.name + ".")
                else:
                    visit(child, prefix)

        visit(tree, "")
        self.markers = {}  # "leaf:NAME" / "call:NAME" -> (qualname, line)
        for lineno, text in enumerate(source.splitlines(), 1):
            found = MARKER_RE.findall(text)
            if len(found) > 1:
                raise ValueError("%s:%d: more than one marker" % (source_path, lineno))
            if not found:
                continue
            key = "%s:%s" % found[0]
            if key in self.markers:
                raise ValueError("%s:%d: duplicate marker %s" % (source_path, lineno, key))
            inner = [s for s in scopes if s[0] <= lineno <= s[1]]
            qual = max(inner)[2] if inner else "<module>"  # innermost = latest start
            self.markers[key] = (qual, lineno)
        self.constants = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                try:
                    self.constants[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
        self.recursion_depth = self.constants["RECURSION_DEPTH"]
        self.phases = dict(self.constants["PHASES"])  # phase -> fraction of main CPU
        self.phase_order = [p for p, _ in self.constants["PHASES"]]

    def chains(self):
        """thread -> {phase: [marker keys, root first]} (the call structure)."""
        top = ["call:main", "call:run"]
        d = self.recursion_depth
        return {
            MAIN: {
                "sort": top + ["call:phase_sort", "call:sorted", "leaf:sort_key"],
                "recurse": top + ["call:phase_recurse", "call:recurse_top"]
                + ["call:recurse"] * (d - 1) + ["leaf:recurse"],
                "gen": top + ["call:phase_gen", "call:chunks", "leaf:gen"],
            },
            WORKER: {
                "worker": ["threading"] * len(THREADING_ROOT) + ["call:crunch", "leaf:worker"],
            },
        }


def expected_stacks(version, script_path=SCRIPT, source_path=None):
    """thread ("main"/"worker") -> {phase: tuple of Frame, root first}.

    version: "3.11" etc. script_path: the script's path as the profiled process sees it
    (co_filename; e.g. the in-chroot path). source_path: where to read the source
    (default: script_path if it exists here, else this directory's known_shape.py).
    """
    if source_path is None:
        source_path = script_path if os.path.exists(script_path) else SCRIPT
    shape = Shape(source_path)
    out = {}
    for thread, phases in shape.chains().items():
        out[thread] = {}
        for phase, keys in phases.items():
            frames, n_threading = [], 0
            for key in keys:
                if key == "threading":
                    qual = THREADING_ROOT[n_threading]
                    n_threading += 1
                    frames.append(Frame(_reported_name(qual, version), "threading.py", None))
                else:
                    qual, line = shape.markers[key]
                    frames.append(Frame(_reported_name(qual, version), script_path, line))
            out[thread][phase] = tuple(frames)
    return out


def frame_matches(got, want):
    """got: (qualname, path, line) as reported; want: a Frame from expected_stacks.

    Script frames need the exact path; stdlib frames (want.line is None) need the file's
    basename and any line.
    """
    qual, path, line = got
    if qual != want.qualname:
        return False
    if want.line is None:
        return os.path.basename(path) == want.file
    return path == want.file and int(line) == want.line


def classify(frames, expected_for_thread):
    """Phase name whose expected stack equals frames exactly (root first), else None."""
    for phase, want in expected_for_thread.items():
        if len(frames) == len(want) and all(map(frame_matches, frames, want)):
            return phase
    return None


def format_stack(stack):
    """Folded-style text of a stack (Frames or (qualname, path, line) tuples)."""
    return ";".join("%s (%s:%s)" % (q, p, "*" if l is None else l) for q, p, l in stack)


if __name__ == "__main__":
    import sys
    ver = sys.argv[1] if len(sys.argv) > 1 else "3.11"
    path = sys.argv[2] if len(sys.argv) > 2 else SCRIPT
    for thread, phases in expected_stacks(ver, path).items():
        for phase, stack in phases.items():
            print("%s/%s: %s" % (thread, phase, format_stack(stack)))
