#!/usr/bin/env python3
"""Dependencies between user/'s stage folders point one way, from cmd/ down to lib/
(user/README.md): a file may include its own folder's headers and those of folders below
it, never one above. Exit 1 with each include that points up."""
import os
import re
import sys

# top to bottom; a folder not named here is an error, so a new one gets a place
ORDER = ["cmd", "agent", "top", "trace", "engine", "output", "profile", "pystate",
         "symbolize", "inspect", "lib"]
INCLUDE = re.compile(r'^#include "([a-z_]+)/[a-z_]+\.h"', re.M)
BARE = re.compile(r'^#include "([a-z_]+\.h)"', re.M)


def main(root):
    user = os.path.join(root, "user")
    bad = []
    headers = {n for d in os.listdir(user) if os.path.isdir(os.path.join(user, d))
               for n in os.listdir(os.path.join(user, d)) if n.endswith(".h")}
    for folder in sorted(os.listdir(user)):
        path = os.path.join(user, folder)
        if not os.path.isdir(path):
            continue
        if folder not in ORDER:
            bad.append("user/%s/: a folder with no place in scripts/check-layers.py" % folder)
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, name)) as f:
                text = f.read()
                bad += ["user/%s/%s includes %s without its folder" % (folder, name, h)
                        for h in BARE.findall(text) if h in headers]
                for dep in INCLUDE.findall(text):
                    if dep not in ORDER:
                        bad.append("user/%s/%s includes from %s/, no stage folder" %
                                   (folder, name, dep))
                    elif ORDER.index(dep) < ORDER.index(folder):
                        bad.append("user/%s/%s includes from %s/, which is above it" %
                                   (folder, name, dep))
    stray = [n for n in os.listdir(user) if n.endswith((".c", ".h"))]
    bad += ["user/%s: every source lives in a stage folder" % n for n in sorted(stray)]
    for line in bad:
        print("check-layers: " + line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
