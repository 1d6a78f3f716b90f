"""Hahn's obstacle made computable (THEORY §1): the sensitivity bound of a bounded-PE model at a
fixed temperature, the length ``N_fail`` beyond which a one-symbol change cannot move an output
from ≤ η to ≥ 1 − η, and a numeric demonstration.

``hahn_analysis`` substitutes the exact ``τ`` into :func:`softhard.bounds.composed.hahn_bound`,
finds the smallest ``N`` with ``sensitivity(N) ≤ (1 − 10⁻⁹)(1 − 2η)`` (mpmath bisection; the bound
decreases in n) and proves ``∀ n ≥ N_fail: sensitivity(n) ≤ (1 − 10⁻⁹)(1 − 2η)`` with the solver
(Z3 on boxes, n unbounded; arb second check up to 2⁴⁰).  Consequently, for every ``n ≥ N_fail``,
two words that differ only at the changed position cannot both have clean outputs (within η of
0 and of 1): a property whose value flips with that symbol (``Y a`` at the last position,
parity) is computed wrongly on one of them.

``demonstrate`` checks it numerically: it runs the model at the fixed τ on pairs of words that
differ at the changed position and whose hard outputs differ, reports the observed sensitivity
against the bound, the first length at which a pair is no longer clean, and confirms that every
pair fails from ``N_fail`` on; for a formula it also runs the regime T construction with its
temperature ``τ(n)`` and the regime U construction at one fixed τ at the same lengths, which keep
working.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np
import sympy as sp

from ..bounds.composed import hahn_bound
from ..bounds.core import n as n_sym, tau
from ..constructions.engine import forward
from ..constructions.errors import ParameterError
from ..constructions.hard_model import HardModel
from .check import Claim, check_claim
from .pipeline import build

SAFETY = Fraction(1, 10**9)
N_SEARCH_CAP = 10**18


def parse_change_at(s: str) -> tuple[str, int]:
    """``"n-1"`` → ("end", 1) (position k = n−1); ``"3"`` → ("start", 3) (k = 3).
    Raises :class:`ParameterError` otherwise."""
    t = s.replace(" ", "")
    try:
        if t == "n":
            return ("end", 0)
        if t.startswith("n-"):
            c = int(t[2:])
            if c < 0:
                raise ValueError
            return ("end", c)
        c = int(t)
        if c < 1:
            raise ValueError
        return ("start", c)
    except ValueError:
        raise ParameterError(f"--change-at must be n-c (e.g. n-1) or a position c >= 1, got {s!r}") from None


@dataclass
class HahnResult:
    """``applicable`` False: ``reason`` says why (unbounded PE, table PE).  Otherwise, per output,
    the sensitivity expression at the given τ, ``n_fail`` (None if the bound never drops below the
    flip threshold: Hahn's bound gives nothing for this model and change position), the proof."""

    applicable: bool
    reason: str = ""
    n_valid: int = 1
    inv_tau: Fraction | None = None
    eta: Fraction | None = None
    flip: Fraction | None = None
    change_at: tuple[str, int] = ("end", 1)
    outputs: dict[str, dict] = field(default_factory=dict)
    score_range: dict[str, str] = field(default_factory=dict)
    others: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"applicable": self.applicable, "reason": self.reason,
                "inv_tau": None if self.inv_tau is None else str(self.inv_tau),
                "eta": None if self.eta is None else str(self.eta), "flip_threshold": str(self.flip),
                "change_at": ("n-" + str(self.change_at[1])) if self.change_at[0] == "end" else str(self.change_at[1]),
                "valid_for_n_ge": self.n_valid, "outputs": self.outputs, "score_range_per_head": self.score_range,
                "other_positions_seen_per_head": self.others}


def _evaluator(expr: sp.Expr):
    """``expr`` (in n) as a function of an integer n, evaluated in mpmath at 40 digits: lambdified
    once per expression (the bisection below evaluates it ~60 times)."""
    f = sp.lambdify([n_sym], expr, modules="mpmath")

    def ev(nv) -> mpmath.mpf:
        with mpmath.workdps(40):
            return f(mpmath.mpf(nv))
    return ev


def hahn_analysis(hm: HardModel, inv_tau: Fraction, *, eta: Fraction = Fraction(1, 4),
                  change_at: tuple[str, int] = ("end", 1), prove: bool = True, timeout_s: float = 20.0) -> HahnResult:
    """Sensitivity bound and ``N_fail`` at ``1/τ = inv_tau`` (module docstring); the bound holds at
    every position other than the changed one.

    Raises :class:`ParameterError` for ``inv_tau <= 0``, η outside (0, 1/2), or an output read at
    the changed position.
    """
    if inv_tau <= 0:
        raise ParameterError(f"1/tau must be > 0, got {inv_tau}")
    if not (0 < eta < Fraction(1, 2)):
        raise ParameterError(f"eta must satisfy 0 < eta < 1/2, got {eta}")
    where, c = change_at
    for o in hm.outputs:
        if (o.at == "first" and where == "start" and c == 1) or (o.at == "last" and where == "end" and c == 0):
            raise ParameterError(f"output {o.name} is read at the changed position itself; the sensitivity bound is "
                                 "for the other positions (choose another --change-at)")
    hb = hahn_bound(hm, change_at)
    res = HahnResult(applicable=hb.applicable, reason=hb.reason, inv_tau=inv_tau, eta=eta, flip=1 - 2 * eta,
                     change_at=change_at, score_range=hb.score_range, others=hb.others, n_valid=hb.n_valid)
    if not hb.applicable:
        return res
    target = (1 - 2 * eta) * (1 - SAFETY)
    tval = sp.Rational(inv_tau.denominator, inv_tau.numerator)
    for name, ex in hb.sensitivity.items():
        e = ex.subs(tau, tval)
        _eval = _evaluator(e)
        out = {"sensitivity": str(e), "sensitivity_symbolic": str(ex), "target": str(target)}
        tgt = mpmath.mpf(target.numerator) / target.denominator
        with mpmath.workdps(40):
            lim = _eval(N_SEARCH_CAP)
            if lim > tgt:
                out.update(n_fail=None, message=f"the bound stays above {float(target):.6g} even at n = 1e18: "
                                                "Hahn's lemma gives no failure length for this model/change position")
                res.outputs[name] = out
                continue
            lo, hi = hb.n_valid, hb.n_valid + 1
            while _eval(hi) > tgt:
                lo, hi = hi, hi * 2
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _eval(mid) > tgt:
                    lo = mid
                else:
                    hi = mid
            nf = hi if _eval(lo) > tgt else lo
        out["n_fail"] = nf
        out["sensitivity_at_n_fail"] = float(_eval(nf))
        if prove:
            proof = None
            for _ in range(4):
                r = check_claim(Claim(e, target, nf, None, label=f"hahn:{name}"), timeout_s=timeout_s, minimise=False)
                proof = r
                if r.status == "refuted" and r.counterexample is not None:
                    nf = r.counterexample + 1
                    continue
                break
            out["n_fail"] = nf
            out["sensitivity_at_n_fail"] = float(_eval(nf))
            out["proof"] = {"status": proof.status, "claim": proof.claim.text(), "queries": len(proof.queries),
                            "reason": proof.reason,
                            "second_check": None if proof.second_check is None else proof.second_check.status}
        res.outputs[name] = out
    return res


# --------------------------------------------------------------------------------------------
# numeric demonstration


def _position(change_at: tuple[str, int], n: int) -> int:
    where, c = change_at
    return n - c if where == "end" else c


def flip_pairs(hm: HardModel, tr, n: int, change_at: tuple[str, int], read: int,
               out_col: int, threshold: float = 0.5, max_period: int = 2) -> list[tuple[tuple, tuple, int, int]]:
    """Pairs of words of length n differing only at the changed position, built from periodic words
    (period ≤ ``max_period``), whose hard outputs at row ``read`` differ: (w, w', y, y')."""
    k = _position(change_at, n)
    if not 1 <= k <= n or k == read:
        return []
    alph = hm.alphabet
    bases = {}
    for p in range(1, max_period + 1):
        for u in itertools.product(alph, repeat=p):
            bases[tuple((u * (n // p + 1))[:n])] = None
    words = []
    for b in bases:
        for s in alph:
            w = list(b)
            w[k - 1] = s
            words.append(tuple(w))
    words = list(dict.fromkeys(words))
    tok = tr.encode(words)
    hard = forward(tr, tok, mode="hard").x[:, read, out_col]
    ys = {w: int(h > threshold) for w, h in zip(words, hard)}
    pairs = []
    for i, w in enumerate(words):
        for w2 in words[i + 1:]:
            if all(a == b for j, (a, b) in enumerate(zip(w, w2)) if j != k - 1) and ys[w] != ys[w2]:
                pairs.append((w, w2, ys[w], ys[w2]))
    return pairs


def _clean(v: float, y: int, eta: float) -> bool:
    return abs(v - y) <= eta


def demonstrate(hm: HardModel, res: HahnResult, output: str, *, n_values=None, n_cap: int = 20000) -> dict:
    """Numerics for :func:`hahn_analysis` (module docstring): per length, the observed sensitivity
    on flip pairs against the bound, and whether some flip pair is still clean."""
    tr = hm.transformer()
    o = next(x for x in hm.outputs if x.name == output)
    col = tr.labels.index(hm.labels[o.coords[0]])
    inv_tau = float(res.inv_tau)
    eta = float(res.eta)
    info = res.outputs[output]
    nf = info.get("n_fail")
    sens = _evaluator(sp.sympify(info["sensitivity"]))
    if n_values is None:
        top = min(n_cap, 4 * nf if nf else 256)
        n_values = sorted(set(list(range(2, min(top, 64) + 1)) +
                              [int(round(v)) for v in np.geomspace(64, max(top, 65), 40)] +
                              ([nf - 1, nf, nf + 1] if nf and nf + 1 <= n_cap else [])))
    rows = []
    first_break = None
    for n in n_values:
        if n < res.n_valid:
            continue
        read = n if o.at in ("last", "all") else 1
        pairs = flip_pairs(hm, tr, n, res.change_at, read, col, float(o.threshold))
        if not pairs:
            continue
        words = list(dict.fromkeys([p[0] for p in pairs] + [p[1] for p in pairs]))
        soft = forward(tr, tr.encode(words), mode="soft", inv_tau=inv_tau).x[:, read, col]
        sv = dict(zip(words, soft))
        obs = max(abs(sv[a] - sv[b]) for a, b, _, _ in pairs)
        clean_pairs = sum(_clean(sv[a], ya, eta) and _clean(sv[b], yb, eta) for a, b, ya, yb in pairs)
        bound = float(sens(n))
        works = clean_pairs == len(pairs)
        if not works and first_break is None:
            first_break = n
        rows.append({"n": n, "pairs": len(pairs), "clean_pairs": int(clean_pairs), "observed_sensitivity": float(obs),
                     "sensitivity_bound": bound, "all_pairs_clean": works})
    forced = [r for r in rows if nf is not None and r["n"] >= nf]
    # the observed counterpart of N_fail: from this length on, no flip pair moves the output by
    # 1 − 2η or more, so no one-symbol change can carry it from within η of 0 to within η of 1
    insensitive_from = None
    for r in reversed(rows):
        if r["observed_sensitivity"] >= 1 - 2 * eta:
            break
        insensitive_from = r["n"]
    return {"rows": rows, "first_break": first_break, "n_fail": nf, "insensitive_from": insensitive_from,
            "bound_respected": all(r["observed_sensitivity"] <= r["sensitivity_bound"] * (1 + 1e-9) + 1e-12 for r in rows),
            "failure_forced_from_n_fail": all(r["clean_pairs"] == 0 for r in forced) if forced else None}


def constructions_keep_working(spec, n_values, *, change_at=("end", 1), eta=Fraction(1, 4)) -> list[dict]:
    """Regime T (closed-form τ(n) at each n) and regime U (one fixed τ) constructions of a formula
    on the flip pairs at lengths ``n_values``: rounded outputs equal to the hard ones?"""
    out = []
    for regime in ("T", "U"):
        c = build(spec, regime, eta=eta)
        tr = c.model
        col = tr.index(tr.outputs[0])
        hm_like = _AlphabetOnly(tr.alphabet)
        for n in n_values:
            read = n if c.spec.at == "last" else 1
            pairs = flip_pairs(hm_like, tr, n, change_at, read, col)
            if not pairs:
                continue
            words = list(dict.fromkeys([p[0] for p in pairs] + [p[1] for p in pairs]))
            it = c.default_inv_tau(n)
            soft = forward(tr, tr.encode(words), mode="soft", inv_tau=it).x[:, read, col]
            hard = forward(tr, tr.encode(words), mode="hard").x[:, read, col]
            ok = bool(np.all((soft > 0.5) == (hard > 0.5)))
            out.append({"regime": regime, "n": n, "inv_tau": it, "tau_rule": "tau*(n, eta) at this n" if regime == "T"
                        else "one fixed tau for all n", "pairs": len(pairs), "rounded_outputs_equal": ok,
                        "max_abs_diff": float(np.max(np.abs(soft - hard)))})
    return out


class _AlphabetOnly:
    def __init__(self, alphabet):
        self.alphabet = tuple(alphabet)
