"""Numeric confirmation of the composed bound on random models with planted gaps (THEORY §6, §7).

:func:`planted_trial` draws a random quantised model (:mod:`softhard.constructions.random_models`),
plants the gap γ in every head, establishes the premises exhaustively for lengths ≤ N, builds the
composed bound, picks the inverse temperature at which the bound of output ``y0`` equals a target
ε at n = N, and runs the soft model (float64) on *every* word of every length ≤ N against the
exact hard model.  It reports, per output and per head, the worst observed error, the bound
there and their ratio (tightness; ≤ 1 up to float rounding if the bound is right).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from ..constructions.engine import forward
from ..constructions.exact import to_float
from ..constructions.exact_balls import exact_engine
from ..constructions.gaps import analyse_gaps
from ..constructions.modelfile import parse_model
from ..constructions.random_models import plant_gaps, random_model_doc
from .composed import HeadPremise, composed_bound
from .derive import evaluate, required_inv_tau


def planted_trial(seed: int, *, layers: int, width: int, heads: int, n_max: int = 6, gap=Fraction(1, 2),
                  epsilon=Fraction(1, 100), inv_tau: float | None = None) -> dict | None:
    """One trial (module docstring); None when no gap can be planted in the drawn model.

    Returns ``{"inv_tau", "gaps", "ties", "outputs": {name: {observed, bound, ratio, n, violations}},
    "heads": {...}, "violations"}``; a violation is ``observed > bound + 2^-40·(1 + max|x|)``.
    """
    doc = plant_gaps(random_model_doc(seed, layers=layers, width=width, heads=heads), Fraction(gap), n_max)
    if doc is None:
        return None
    hm = parse_model(doc, path=f"<random {seed}>").canonical()
    rep = analyse_gaps(hm, n_max, method="exhaustive")
    cb = composed_bound(hm, {h: HeadPremise(g.gap, g.ties_max, g.tieless) for h, g in rep.heads.items()}, n_max)
    if inv_tau is None:
        inv_tau = float(required_inv_tau(cb.outputs["y0"], n_value=n_max, eta_value=Fraction(epsilon)))
    it = Fraction(inv_tau)
    tr = hm.transformer()
    eng = exact_engine(hm)
    wo = {h.name: h.W_O for b in tr.blocks for h in b.heads}
    outs = {o.name: {"observed": 0.0, "bound": 0.0, "ratio": 0.0, "n": 0, "violations": 0} for o in hm.outputs}
    hds = {h: {"observed": 0.0, "bound": 0.0, "ratio": 0.0, "n": 0, "violations": 0} for h in cb.heads}
    for n in range(1, n_max + 1):
        words = list(itertools.product(hm.alphabet, repeat=n))
        tok = tr.encode(words)
        ex = eng.run(tok, keep_written=True)
        hx = to_float(ex.x)
        soft = forward(tr, tok, mode="soft", inv_tau=inv_tau)
        allow = 2.0**-40 * (1 + float(np.max(np.abs(hx))))
        for o in hm.outputs:
            c = tr.labels.index(hm.labels[o.coords[0]])
            obs = float(np.max(np.abs(soft.x[:, 1:, c] - hx[:, 1:, c])))
            bd = float(evaluate(cb.outputs[o.name], n_value=n, inv_tau=it))
            _update(outs[o.name], obs, bd, n, allow)
        for h, info in cb.heads.items():
            obs = float(np.max(np.abs(soft.heads[h].soft[:, 1:] @ wo[h] - to_float(ex.written[h])[:, 1:])))
            bd = float(evaluate(info["error"], n_value=n, inv_tau=it))
            _update(hds[h], obs, bd, n, allow)
    return {"seed": seed, "layers": layers, "width": width, "heads_per_layer": heads, "n_max": n_max,
            "inv_tau": inv_tau, "gaps": {h: str(g.gap) for h, g in rep.heads.items()},
            "ties": {h: g.ties_max for h, g in rep.heads.items()}, "outputs": outs, "heads": hds,
            "violations": sum(v["violations"] for v in outs.values()) + sum(v["violations"] for v in hds.values())}


def _update(cur: dict, obs: float, bd: float, n: int, allow: float) -> None:
    r = obs / bd if bd > 0 else (0.0 if obs <= allow else float("inf"))
    if obs > bd + allow:
        cur["violations"] += 1
    if r >= cur["ratio"]:
        cur.update(observed=obs, bound=bd, ratio=r, n=n)
