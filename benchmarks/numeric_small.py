"""CPU of a formula certify's small-batch observation runs (ISSUE 16, "numeric, third pass"): the
exhaustive family (every word of length 1..10) and the random family (31 words at each of 32
lengths up to 500, seeds as ``numeric_families``) of a formula, run through
:func:`softhard.constructions.simulate.observe` at 1/τ = 5545177.984 (the certified value of
tomita4 and dyck1_depth2 at ``--n-max 10^6 --eta 1/4``), without ``reuse_memory``: the engine's
per-batch Python overhead.  Prints the in-process minimum of 3 runs per family.  Run it from a
checkout's root with that checkout's Python
(``python /path/to/benchmarks/numeric_small.py dyck1_depth2``), alternating checkouts.
Bounded: 3 × ~3,000 words of length ≤ 500."""

import sys
import time

from softhard.bounds.params import Params
from softhard.constructions.parse import load_spec
from softhard.constructions.simulate import all_words, observe, random_words
from softhard.solver.formula_numeric import random_grid
from softhard.solver.pipeline import build_formula


def main() -> None:
    ex = sys.argv[1] if len(sys.argv) > 1 else "dyck1_depth2"
    c = build_formula(load_spec(f"examples/{ex}.ltl"), Params(regime="T", eta="1/4"))
    it = 5545177.984
    alph = c.model.alphabet
    grid = random_grid(500, 10**6)
    rnd = [w for k, L in enumerate(grid) for w in random_words(alph, 1000 // len(grid), L, seed=k, n_min=L)]
    exh = [w for k in range(1, 11) for w in all_words(alph, k)]
    best: dict[str, float] = {}
    for _ in range(3):
        for fam, ws in (("random", rnd), ("exhaustive", exh)):
            t = time.process_time()
            observe(c.model, ws, it)
            best[fam] = min(best.get(fam, float("inf")), time.process_time() - t)
    print(ex, " ".join(f"{k} {v:.3f}" for k, v in best.items()))


if __name__ == "__main__":
    main()
