"""CPU time of verify on every edited copy of a certificate (the every-edit tests' workload, ISSUE 16).

Certifies ``examples/tracr/frac_prevs`` (or, with ``--formula``, tomita4 in regime T), then runs
``verify_certificate`` on every edit ``tests/tamper.py`` makes (each leaf changed, each key and item
deleted, hashes recomputed), timing each verify with ``time.process_time`` (this process only: the
solver child's CPU is not included).  Prints the CPU seconds and the number of edits per
top-level section (two path components) and in total.

    python benchmarks/verify_edits.py              # Tracr frac_prevs: 4 471 edits
    python benchmarks/verify_edits.py --formula    # tomita4, regime T, n_max 10^6

Bounded: the number of edits is that of the certificate (a few thousand); no other work.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from tamper import edits  # noqa: E402  (tests/tamper.py: the edits the every-edit tests make)

from softhard.constructions.parse import load_spec  # noqa: E402
from softhard.constructions.tracr_load import load_tracr  # noqa: E402
from softhard.solver.certificate import certify  # noqa: E402
from softhard.solver.kinds import verify_certificate  # noqa: E402
from softhard.solver.pipeline import build  # noqa: E402
from softhard.solver.tracr import certify_tracr  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formula", action="store_true", help="tomita4 (regime T) instead of Tracr frac_prevs")
    args = ap.parse_args()
    t = time.process_time()
    if args.formula:
        c = build(load_spec(str(ROOT / "examples" / "tomita4.ltl")), "T", eta=Fraction(1, 4))
        cert, kind = certify(c, n_max=10**6, find_tau=True, numeric=False), "formula"
    else:
        cert, kind = certify_tracr(load_tracr(ROOT / "examples" / "tracr" / "frac_prevs")), "tracr"
    print(f"certify: {time.process_time() - t:.2f} s CPU")
    tot: collections.Counter = collections.Counter()
    cnt: collections.Counter = collections.Counter()
    for path, _, c2 in edits(cert, kind):
        t = time.process_time()
        verify_certificate(c2)
        top = ".".join(str(p) for p in path[:2])
        tot[top] += time.process_time() - t
        cnt[top] += 1
    for k, v in tot.most_common(12):
        print(f"{v:8.2f} s {cnt[k]:6d} edits  {k}")
    print(f"total: {sum(tot.values()):.2f} s CPU, {sum(cnt.values())} edits")


if __name__ == "__main__":
    main()
