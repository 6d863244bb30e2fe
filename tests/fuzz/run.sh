#!/bin/sh
# SPDX-License-Identifier: MIT
# Run libFuzzer targets one after the other, each for SECONDS over a scratch copy of its
# committed seeds (libFuzzer adds new inputs to its corpus dir: the repo stays clean).
# A crash, leak, timeout or sanitizer report fails the target and names the reproducer.
# Usage: run.sh OUTDIR SECONDS TARGET...   (extra libFuzzer flags in $FUZZ_ARGS)
set -u
out=$1
secs=$2
shift 2
seeds=$(dirname "$0")/corpus
mkdir -p "$out/crashes"
failed=""
n='[0-9]*'
start=$(date +%s)
for t in "$@"; do
	bin=$out/fuzz_$t
	work=$out/corpus/$t
	log=$out/$t.log
	rm -rf "$work"
	mkdir -p "$work"
	if [ -d "$seeds/$t" ]; then
		cp "$seeds/$t"/* "$work"/
	fi
	# shellcheck disable=SC2086
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$bin" -max_total_time="$secs" \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/crashes/$t-" ${FUZZ_ARGS:-} "$work" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	# the last status line: "#N DONE cov: C ft: F corp: K/..."
	cov=$(sed -n "s/.* cov: \($n\) ft: \($n\) corp: \($n\).*/cov \1, ft \2, corpus \3/p" \
		"$log" | tail -n 1)
	printf '  %-8s %s: %ss, %s runs, %s/s, %s\n' FUZZ "$t" "$secs" "${runs:-?}" "${rate:-?}" \
		"${cov:-no coverage line}"
	if [ "$rc" -ne 0 ]; then
		repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
		echo "fuzz: $t FAILED (exit $rc): reproducer ${repro:-not written}; log $log" >&2
		[ -n "$repro" ] && echo "fuzz: replay with: $bin $repro" >&2
		grep -E '^(==[0-9]+==ERROR|SUMMARY:|fuzz check failed|.*runtime error:)' "$log" |
			head -n 5 | sed 's/^/fuzz:   /' >&2
		failed="$failed $t"
	fi
done
echo "  FUZZ     done in $(($(date +%s) - start))s"
if [ -n "$failed" ]; then
	echo "fuzz: failed:$failed" >&2
	exit 1
fi
