"""What a dense-path attention row costs against a structured word position (the unit of
``--max-positions``): the constant behind ``DENSE_ENTRIES_PER_POSITION`` in
``solver/formula_numeric.py`` (issue: ``confirm``/``certify`` at a too-warm ``--tau`` ran minutes on
the dense path that the budget did not count).

tomita4 (regime T) runs soft on random words of length n twice, interleaved: at a cold 1/τ = 10^6
every head takes the O(n) structured path; at a warm 1/τ = 10^3 the clean-ups are inexact and the
second-layer head falls back to the dense path.  Per repetition, CPU time (process time) of each;
reported: the medians, the structured cost per word position (whole model), the dense head's extra
cost per score entry, and their ratio = score entries costing one position.

    python benchmarks/dense_cost.py [--n 2000] [--words 4] [--reps 5]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from pathlib import Path

from softhard.constructions.engine import forward
from softhard.constructions.parse import load_spec
from softhard.constructions.simulate import random_words
from softhard.solver.pipeline import build

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--words", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    c = build(load_spec(str(ROOT / "examples" / "tomita4.ltl")), "T")
    m = c.model
    tok = m.encode(random_words(m.alphabet, a.words, a.n, seed=1, n_min=a.n))
    times: dict[float, list[float]] = {1e6: [], 1e3: []}
    paths = {}
    for _ in range(a.reps):
        for it in times:  # interleaved
            t = time.process_time()
            tr = forward(m, tok, mode="soft", inv_tau=it)
            times[it].append(time.process_time() - t)
            paths[it] = collections.Counter(h.path for h in tr.heads.values())
    cold, warm = statistics.median(times[1e6]), statistics.median(times[1e3])
    positions = a.words * (a.n + 1)
    dense_heads = paths[1e3]["dense"]
    entries = dense_heads * a.words * (a.n + 1) ** 2
    per_pos = cold / positions
    per_entry = (warm - cold) / entries
    print(f"n = {a.n}, {a.words} words, {a.reps} reps; paths at 1/tau = 1e6: {dict(paths[1e6])}, at 1e3: "
          f"{dict(paths[1e3])}")
    print(f"median CPU: cold {cold:.4f} s, warm {warm:.4f} s; per structured word position {per_pos:.3g} s, "
          f"per dense score entry {per_entry:.3g} s; dense entries costing one position: {per_pos / per_entry:.0f}")


if __name__ == "__main__":
    main()
