#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Print, per installed interpreter, what `pywalk record` makes of the known-shape workload:
shipped and rejected samples, each thread's share of exact expected stacks, and the main
thread's phase split against the designed 50/30/20. The figures the e2e tests assert,
as a table for release notes. Run as root after `make` (and scripts/get-interpreters.sh).
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import pywalk_e2e as e2e  # noqa: E402
import interpreters  # noqa: E402
from test_record import Recording  # noqa: E402


def main():
    found, problems = interpreters.discover_all()
    interpreters.prepare_chroot(found)
    print("| interpreter | shipped | rejected | main exact | worker exact | split sort/recurse/gen |")
    print("|---|--:|--:|--:|--:|---|")
    for interp in found:
        with tempfile.TemporaryDirectory() as tmp:
            rec = Recording(interp, os.path.join(tmp, "out.folded"))
            _, buckets = e2e.parse_summary(rec.result.stderr)
            rejected = sum(v for k, v in buckets.items() if k.startswith("rejected"))
            scores = rec.by_thread()
            main = scores.get(rec.pid)
            workers = [s for t, s in scores.items() if t != rec.pid]
            worker = max(workers, key=lambda s: s.total) if workers else None
            split = "/".join("%.1f" % (100.0 * main.phases[p] / max(main.matched, 1))
                             for p in ("sort", "recurse", "gen")) if main else "-"
            print("| %s | %d | %d | %.2f%% | %s | %s |" % (
                interp.id, buckets["shipped"], rejected,
                100 * main.match_fraction if main else 0,
                "%.2f%%" % (100 * worker.match_fraction) if worker else "-", split))
    for p in problems:
        print("note: %s" % p)


if __name__ == "__main__":
    main()
