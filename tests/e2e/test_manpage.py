"""The man page is the reference: every option each command's --help lists is in the
page's part for that command (its OPTIONS section, or for a command without one the
COMMANDS entry that describes it), and the page renders without a groff warning."""
import os
import re
import subprocess

import pytest

import pywalk_e2e as e2e

MAN_PAGE = os.path.join(e2e.REPO, "doc", "pywalk.1")
COMMANDS = ["record", "top", "dump", "trace", "agent"]
OPTION_RE = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")


def help_options(pywalk, command):
    """The options `pywalk COMMAND --help` lists in its option lines (those that start with
    an option, indented), each as the tuple of its names: ('-p', '--pid')."""
    r = subprocess.run([pywalk, command, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    opts = set()
    for line in r.stdout.splitlines():
        m = re.match(r"^ {2,6}((?:-[a-zA-Z], )?--?[a-zA-Z][\w-]*(?:, --[\w-]+)?)", line)
        if m:
            opts.add(tuple(OPTION_RE.findall(m.group(1))))
    assert opts, "no option lines in %s --help:\n%s" % (command, r.stdout)
    return opts


def man_text():
    """The page's source, troff's escaped hyphens as plain ones and no font changes, by
    section name."""
    with open(MAN_PAGE, encoding="utf-8") as f:
        src = f.read().replace("\\-", "-").replace("\\(em", "-")
    src = re.sub(r"\\f(?:[BIRP]|\(\w\w|\[\w*\])", "", src)  # font changes
    sections, name = {}, None
    for line in src.splitlines():
        m = re.match(r'^\.SH\s+"?([^"]+)"?', line)
        if m:
            name = m.group(1).strip()
        sections[name] = sections.get(name, "") + line + "\n"
    return sections


def command_part(sections, command):
    """The OPTIONS section of `command`, or its entry in COMMANDS (.TP .B command)."""
    own = sections.get("%s OPTIONS" % command.upper())
    if own:
        return own
    cmds = sections.get("COMMANDS", "")
    m = re.search(r"^\.B %s\b.*?(?=^\.TP|\Z)" % command, cmds, re.M | re.S)
    assert m, "no OPTIONS section and no COMMANDS entry for %s" % command
    return m.group(0)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_of_the_help_is_in_the_man_page(pywalk, command):
    sections = man_text()
    part = command_part(sections, command)
    everywhere = "".join(sections.values())
    def named(o, text):
        return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), text)

    # an option is there under any of its names (the page may say -p for --pid)
    missing = sorted("/".join(names) for names in help_options(pywalk, command)
                     if not any(named(o, part) for o in names))
    # -h, -v and -q are described once for every command
    missing = [o for o in missing if not (set(o.split("/")) & {"-h", "-v", "-q"} and
                                          any(named(n, everywhere) for n in o.split("/")))]
    assert not missing, "%s options of --help missing from the man page's %s part: %s" % (
        command, command, missing)


def test_man_page_renders_without_warnings():
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", MAN_PAGE],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
