"""CPU time of the reference semantics (``constructions.semantics.accepts``) on 10^4 random words
of length 500 under one formula with every temporal operator and a counting term — the workload
that tests/constructions/test_semantics.py timed (``< 15 s CPU``) until ISSUE 16's rule that
performance is measured here, not asserted in tests.  Prints one JSON line of CPU seconds, so
``benchmarks/interleave.py`` can compare two checkouts:

    python benchmarks/semantics_speed.py [--words 10000] [--length 500]

Checks that the answers are not all equal (some words accepted, some refused); the answers
themselves are checked against a brute-force evaluator in tests/constructions/test_semantics.py.
Bounded: ``--words × --length`` ≤ 10^8 symbols.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from softhard.constructions.parse import parse_formula
from softhard.constructions.semantics import accepts

FORMULA = "(a S (b & Y a)) U (#a > 2*#b - 3) | G (a -> F b) & H (b -> P a)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--words", type=int, default=10_000)
    ap.add_argument("--length", type=int, default=500)
    a = ap.parse_args()
    if a.words < 1 or a.length < 1 or a.words * a.length > 10**8:
        ap.error("--words and --length must be >= 1 with words x length <= 10^8")
    rng = random.Random(1)
    words = ["".join(rng.choices("ab", k=a.length)) for _ in range(a.words)]
    f = parse_formula(FORMULA)
    start = time.process_time()
    results = [accepts(f, w) for w in words]
    cpu = time.process_time() - start
    if not 0 < sum(results) < len(words):
        raise SystemExit(f"every word got the same answer ({sum(results)} of {len(words)} accepted)")
    print(json.dumps({"semantics_accepts_s": round(cpu, 3), "words": a.words, "length": a.length,
                      "accepted": sum(results)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
