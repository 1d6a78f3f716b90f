"""CPU of the dense attention path against a base revision, in one process (ISSUE 16, dense13).

The base revision's ``dense_eval`` is loaded as in ``dense_identity.py``; the two are run
alternately (base, this checkout, base, ...) and the median ``time.process_time`` of each is
printed with the ratio.  Workloads:

* ``nb05``: notebook 05's random-model trials' forward passes — random AHA models (depth 1–3,
  width 8, one head per layer, seeds 0–2), ``forward(mode="soft")`` on every word of each length
  1–6 at 27 values of 1/τ (the notebook's grid and a bisection's worth), ``engine.dense_eval``
  swapped for the base one;
* ``B×n``: ``dense_eval`` alone, soft, on random Gaussian heads (k = 2, dv = 2, mask "past", AHA)
  at a few batch sizes and lengths.

    python benchmarks/dense_bench.py [--base 7f96132] [--reps 5]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np
from dense_identity import load_base

from softhard.constructions import dense_attention as new
from softhard.constructions import engine
from softhard.constructions.modelfile import parse_model
from softhard.constructions.random_models import random_model_doc

SHAPES = [(64, 7), (64, 33), (16, 200), (2, 1100)]
INV_TAUS = [2, 4, 8, 12, 16, 24, 32, 40, 48, 64] + [0.25 + 3.7 * i for i in range(17)]


def nb05_setup():
    out = []
    for depth, seed in itertools.product((1, 2, 3), range(3)):
        tr = parse_model(random_model_doc(seed, layers=depth, width=8, heads=1)).canonical().transformer()
        out.append((tr, [tr.encode(["".join(w) for w in itertools.product("ab", repeat=L)]) for L in range(1, 7)]))
    return out


def nb05(impl, models) -> float:
    engine.dense_eval = impl
    try:
        t = time.process_time()
        for tr, toks in models:
            for it in INV_TAUS:
                for tok in toks:
                    engine.forward(tr, tok, mode="soft", inv_tau=float(it))
        return time.process_time() - t
    finally:
        engine.dense_eval = new.dense_eval


def shape_job(impl, args) -> float:
    t = time.process_time()
    for _ in range(args[-1]):
        impl(*args[:-1])
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="7f96132")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    base = load_base(a.base)
    rng = np.random.default_rng(0)
    jobs = {"nb05": (nb05, nb05_setup())}
    for B, N in SHAPES:
        Q, K, V = rng.normal(size=(2, B, N)), rng.normal(size=(2, B, N)), rng.normal(size=(2, B, N))
        jobs[f"{B}x{N}"] = (shape_job, (Q, K, V, "past", "AHA", 3.0, True, None, max(1, 20_000 // (B * N))))
    for name, (fn, arg) in jobs.items():
        times = {"base": [], "new": []}
        for _ in range(a.reps):
            for label, impl in (("base", base.dense_eval), ("new", new.dense_eval)):
                times[label].append(fn(impl, arg))
        mb, mn = statistics.median(times["base"]), statistics.median(times["new"])
        print(f"{name:>8}: base {mb:7.3f} s  new {mn:7.3f} s  new/base {mn / mb:5.2f}  (median CPU of {a.reps})")


if __name__ == "__main__":
    main()
