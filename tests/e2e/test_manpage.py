"""The man page is the reference: every option that `pywalk --help` and each command's --help
list is in the page's section for it (OPTIONS for pywalk itself, RECORD OPTIONS and its
subsections for record, and so on: one .SH per command), and the page renders without a groff
warning."""
import os
import re
import subprocess

import pytest

import pywalk_e2e as e2e

MAN_PAGE = os.path.join(e2e.REPO, "doc", "pywalk.1")
OPTION_RE = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")
# an option line of --help: indented, the option's names, then its description after a gap
OPTION_LINE_RE = re.compile(r"^ {2,6}(-[a-zA-Z], --[\w-]+|--?[a-zA-Z][\w-]*)( .*)?$")


def run_help(pywalk, *args):
    r = subprocess.run([pywalk, *args, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def commands(pywalk):
    """The commands `pywalk --help` lists (its 'Commands:' block), but 'help'."""
    out, cmds, inside = run_help(pywalk), [], False
    for line in out.splitlines():
        if line == "Commands:":
            inside = True
        elif inside and re.match(r"^  [a-z]+ ", line):
            cmds.append(line.split()[0])
        else:
            inside = False
    cmds = [c for c in cmds if c != "help"]
    assert len(cmds) >= 5, out
    return cmds


def option_groups(help_text):
    """Each option `COMMAND --help` lists, as the tuple of its names, ('-p', '--pid'): an
    option line's names, and each option its description names as another name of its own
    ('-F, --frequency HZ ... (default 99; -r, --rate too)' gives ('-r', '--rate') too)."""
    groups, entry = set(), False
    for line in help_text.splitlines():
        m = OPTION_LINE_RE.match(line)
        if m:
            groups.add(tuple(OPTION_RE.findall(m.group(1))))
            rest, entry = m.group(2) or "", True
        elif entry and re.match(r"^ {8,}\S", line):
            rest = line  # the description goes on
        else:
            entry = False
            continue
        # an alias in the description: '-r, --rate' is one option, '--print, --kernel' two
        for alias in re.findall(r"(-[a-zA-Z]), (--[a-z][\w-]*)", rest):
            groups.add(alias)
        # (another tool's option, "py-spy's --nolineno", is not pywalk's)
        rest = re.sub(r"-[a-zA-Z], --[a-z][\w-]*|\w's --[a-z][\w-]*", "", rest)
        for o in OPTION_RE.findall(rest):
            groups.add((o,))
    assert groups, "no option lines in:\n" + help_text
    return groups


def top_level_groups(help_text):
    """pywalk --help's own options: those of its 'Options:' line."""
    lines = [line for line in help_text.splitlines() if line.startswith("Options:")]
    assert lines, help_text
    groups = set()
    for line in lines:
        for part in line[len("Options:"):].split(";"):
            names = OPTION_RE.findall(part)
            if names:
                groups.add(tuple(names))
    return groups


def unescape(troff):
    """troff's source as text: escaped hyphens and dashes as '-', no font changes."""
    s = troff.replace("\\-", "-").replace("\\(em", "-").replace("\\(en", "-")
    s = re.sub(r"\\f(?:[BIRP]|\(\w\w|\[\w*\])", "", s)
    return s.replace("\\e", "\\")


def man_sections():
    """The page by .SH section, each section's text holding its .SS subsections (and the
    subsections' names, to say where a section ends)."""
    with open(MAN_PAGE, encoding="utf-8") as f:
        src = unescape(f.read())
    sections, subsections, name = {}, {}, None
    for line in src.splitlines():
        m = re.match(r'^\.(SH|SS)\s+"?([^"]*)"?\s*$', line)
        if m and m.group(1) == "SH":
            name = m.group(2).strip()
            assert name not in sections, "two sections %s" % name
            sections[name], subsections[name] = "", []
        elif m:
            assert name, "a .SS before any .SH"
            subsections[name].append(m.group(2).strip())
        if name:
            sections[name] += line + "\n"
    return sections, subsections


def named(option, text):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(option), text)


def missing_from(groups, text):
    """The names of the options in groups that text does not name: an option's short and
    long names are both wanted (-p and --pid), so a reader finds either."""
    return sorted({o for g in groups for o in g if not named(o, text)})


def test_every_command_has_its_section(pywalk):
    sections, _ = man_sections()
    for cmd in commands(pywalk):
        assert "%s OPTIONS" % cmd.upper() in sections, (cmd, sorted(sections))
    assert "OPTIONS" in sections


def test_every_option_of_pywalk_help_is_in_the_options_section(pywalk):
    sections, _ = man_sections()
    groups = top_level_groups(run_help(pywalk))
    assert {("-h", "--help"), ("--version",)} <= groups, groups
    missing = missing_from(groups, sections["OPTIONS"])
    assert not missing, "pywalk --help options missing from OPTIONS: %s" % missing


@pytest.mark.parametrize("command", ["record", "top", "dump", "trace", "agent"])
def test_every_option_of_the_help_is_in_the_commands_section(pywalk, command):
    assert command in commands(pywalk)
    sections, subsections = man_sections()
    section = "%s OPTIONS" % command.upper()
    assert section in sections, "no %s section (.SH) in the man page" % section
    groups = option_groups(run_help(pywalk, command))
    missing = missing_from(groups, sections[section])
    assert not missing, "%s --help options missing from the man page's %s (with %s): %s" % (
        command, section, subsections[section], missing)


def test_a_section_ends_at_the_next_section_not_at_a_subsection():
    sections, subsections = man_sections()
    rec = sections["RECORD OPTIONS"]
    assert "Folded output" in subsections["RECORD OPTIONS"]
    assert "\\x3b" in rec  # the text of its subsection Folded output
    assert not named("--aggregate", rec)  # trace's, in TRACE OPTIONS only
    assert named("--aggregate", sections["TRACE OPTIONS"])


def test_man_page_renders_without_warnings():
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", MAN_PAGE],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
