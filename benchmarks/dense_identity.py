"""Bit-for-bit identity of the dense attention path against a base revision (ISSUE 16, dense13).

Loads ``constructions/dense_attention.py`` of the base revision (``git show BASE:...``, default
``7f96132``, as a module of this package, so it uses this checkout's ``softmax``/``errors``) and
compares it with this checkout's on

* ``dense_eval`` directly: random heads over every mask × rule × soft/hard, key dimensions 1, 2
  (the elementwise score path), 3 and 5 (the BLAS path), value dimensions 1–4, batch sizes
  1, 2, 5, 64, lengths 1–300 (and one 1100 > 1024 query rows per chunk), chunk sizes
  None/1/3/7/N (1 and 3 only where B·N ≤ 400), float64 and float32 inputs, and data that tie (quantised), do not tie (Gaussian),
  flush (1/τ = 10^4 on large scores) or carry ±0, ±inf and NaN;
* the engine's ``forward`` (soft and hard) on notebook 05's random AHA models (depth 1–3) over
  every word of length ≤ 6, with ``engine.dense_eval`` swapped for the base one.

Every output is compared with ``np.array_equal`` on the dtype and on the raw bytes (so ±0 and NaN
payloads count).  Prints the number of comparisons and exits 1 at the first difference::

    python benchmarks/dense_identity.py [--base 7f96132]
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np

from softhard.constructions import dense_attention as new
from softhard.constructions import engine
from softhard.constructions.modelfile import parse_model
from softhard.constructions.random_models import random_model_doc

ROOT = Path(__file__).resolve().parent.parent
MASKS = ["strict_past", "past", "strict_future", "future", "none"]
RULES = ["AHA", "UHA-leftmost", "UHA-rightmost"]


def load_base(rev: str):
    """The base revision's dense_attention module (named inside softhard.constructions)."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:constructions/dense_attention.py"],
                         check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("softhard.constructions._dense_base", loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "softhard.constructions"
    exec(compile(src, f"{rev}:constructions/dense_attention.py", "exec"), mod.__dict__)
    return mod


def same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return (a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())


def data(rng, kind, k, dv, B, N, dtype):
    if kind == "ties":
        Q = np.round(rng.normal(size=(k, B, N)) * 2) / 2
        K = rng.integers(-1, 2, size=(k, B, N)).astype(float)
    elif kind == "flush":
        Q, K = rng.normal(size=(k, B, N)) * 30, rng.normal(size=(k, B, N)) * 30
    else:
        Q, K = rng.normal(size=(k, B, N)), rng.normal(size=(k, B, N))
    V = rng.normal(size=(dv, B, N))
    if kind == "special":
        V.flat[rng.integers(0, V.size, size=3)] = [0.0, -0.0, np.inf][: min(3, V.size)]
        Q.flat[rng.integers(0, Q.size)] = -0.0
        K.flat[rng.integers(0, K.size)] = np.nan if N > 3 else 0.0
    return Q.astype(dtype), K.astype(dtype), V.astype(dtype)


def check_direct(base) -> int:
    rng = np.random.default_rng(2026)
    count = 0
    shapes = [(k, dv, B, N) for k in (1, 2, 3, 5) for dv in (1, 2, 4) for B in (1, 2, 5, 64) for N in (1, 2, 7, 33, 300)
              if B * N * N <= 64 * 300 * 40 and (k, dv) in ((1, 1), (2, 1), (2, 2), (3, 2), (5, 4), (1, 4), (3, 1))]
    shapes += [(2, 2, 3, 1100), (3, 1, 2, 1100)]
    for (k, dv, B, N), kind in itertools.product(shapes, ("gauss", "ties", "flush", "special")):
        dtype = np.float32 if rng.random() < 0.2 else np.float64
        Q, K, V = data(rng, kind, k, dv, B, N, dtype)
        inv_tau = 1e4 if kind == "flush" else float(rng.choice([0.7, 3.0, 40.0]))
        chunks = (None, N) if N > 300 else (None, 7, N) if B * N > 400 else (None, 1, 3, 7, N)
        for mask, rule in itertools.product(MASKS, RULES):
            for chunk in chunks if rule == "AHA" or N <= 33 else (None,):
                for soft in (True, False):
                    with np.errstate(all="ignore"):
                        a = base.dense_eval(Q, K, V, mask, rule, inv_tau, soft, chunk)
                        b = new.dense_eval(Q, K, V, mask, rule, inv_tau, soft, chunk)
                    for x, y, what in zip(a, b, ("soft", "hard", "leak", "ties")):
                        if not same(x, y):
                            print(f"DIFFERENT {what}: k={k} dv={dv} B={B} N={N} {kind} {dtype.__name__} {mask} "
                                  f"{rule} chunk={chunk} soft={soft}")
                            sys.exit(1)
                    count += 1
    return count


def check_engine(base) -> int:
    count = 0
    for depth, seed in itertools.product((1, 2, 3), range(4)):
        tr = parse_model(random_model_doc(seed, layers=depth, width=8, heads=1)).canonical().transformer()
        for L in range(1, 7):
            tok = tr.encode(["".join(w) for w in itertools.product("ab", repeat=L)])
            outs = []
            for impl in (base.dense_eval, new.dense_eval):
                engine.dense_eval = impl
                try:
                    s = engine.forward(tr, tok, mode="soft", inv_tau=float(seed + 2.5))
                    h = engine.forward(tr, tok, mode="hard")
                finally:
                    engine.dense_eval = new.dense_eval
                outs.append([s.x, h.x] + [a for t in (s, h) for nm in sorted(t.heads)
                                          for a in (t.heads[nm].soft, t.heads[nm].hard, t.heads[nm].leak,
                                                    t.heads[nm].ties)])
            for x, y in zip(*outs):
                if not same(x, y):
                    print(f"DIFFERENT engine output: depth {depth} seed {seed} length {L}")
                    sys.exit(1)
                count += 1
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="7f96132")
    base = load_base(ap.parse_args().base)
    n1 = check_direct(base)
    n2 = check_engine(base)
    print(f"dense_eval: {n1} calls bit-identical (4 outputs each); engine forward: {n2} arrays bit-identical")


if __name__ == "__main__":
    main()
