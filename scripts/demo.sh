#!/bin/sh
# Profile the bundled demo workload for 5 seconds and show the hottest stacks.
set -eu
cd "$(dirname "$0")/.."
py=${PYTHON:-/usr/bin/python3}
out=${OUT:-demo.folded}
build/pywalk record -F 499 -o "$out" -- "$py" examples/demo.py 5
echo
echo "Hottest stacks in $out (count, stack):"
sort -t' ' -k2 -n -r "$out" 2>/dev/null | awk '{c=$NF; $NF=""; printf "%8d  %s\n", c, $0}' |
	sort -k1 -n -r | head -5
