#!/bin/sh
# `make bench`: measure what a sample costs (BPF), what profiling costs the target, what the
# aggregator costs, and the same for the peers installable from Debian; writes
# bench/results/latest.{md,json}. `--quick` runs every section for a few seconds and writes
# $O/bench/quick.{md,json} instead: the CI smoke pass that keeps the harness from rotting.
# Benchmarks measure; only a broken harness makes this exit non-zero. Needs root.
set -eu
cd "$(dirname "$0")/.."
O=${O:-build}
MAKE=${MAKE:-make}
quick=""
for a in "$@"; do
	case "$a" in
	--quick) quick=1 ;;
	-h | --help)
		echo "usage: scripts/bench.sh [--quick] [bench/run.py options...]"
		exec python3 bench/run.py --help
		;;
	esac
done
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (BPF programs, perf events, reading other processes)" >&2
	exit 1
fi

scripts/install-deps.sh
# The peers, when Debian has them; a peer that cannot be installed is left out of the table.
peers=""
for p in linux-perf austin bpftrace; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		peers="$peers $p"
done
if [ -n "$peers" ]; then
	echo "bench: installing peers:$peers"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	{ apt-get update -q && apt-get install -y -q --no-install-recommends $peers; } >/dev/null ||
		echo "bench: warning: could not install$peers; those peers will be missing" >&2
fi

# bench/bench.mk is guarded against double inclusion, so this works before and after the
# top-level Makefile includes it.
"$MAKE" --no-print-directory -f Makefile -f bench/bench.mk "$O/pywalk" "$O/bench/pwbench"

if [ -n "$quick" ]; then
	exec python3 bench/run.py --pywalk "$O/pywalk" --pwbench "$O/bench/pwbench" \
		--out "$O/bench" "$@"
fi
exec python3 bench/run.py --pywalk "$O/pywalk" --pwbench "$O/bench/pwbench" "$@"
