"""Per-coordinate error propagation over atoms, shared by the composed bound, Hahn's bound
(:mod:`softhard.bounds.composed`, whose module docstring derives the rules) and the bounds of
compiled Tracr models (:mod:`softhard.bounds.tracr`).

An error is a :data:`LinForm`: a nonnegative rational combination of one *atom* per head.  A head
writes ``Σ_a |(W_V W_O)_ab| e_a + D_b·Θ_h`` into coordinate b (:func:`written_error`, with the
spread ``D_b`` of :func:`spread`); a residual ReLU MLP moves the error as in :func:`mlp_step`.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ..constructions.hard_model import CanonHead
from .intervals import Box, interval_matmul, up

# --------------------------------------------------------------------------------------------
# linear forms over atoms


LinForm = dict  # atom index -> Fraction (nonnegative)


def lin_add(a: LinForm, b: LinForm, c: Fraction = Fraction(1)) -> LinForm:
    out = dict(a)
    if c == 0:
        return out
    for t, v in b.items():
        out[t] = out.get(t, Fraction(0)) + c * v
    return out


def lin_expr(f: LinForm, atoms: list[sp.Expr]) -> sp.Expr:
    return sp.Add(*[up(c) * atoms[t] for t, c in sorted(f.items()) if c != 0])


def max_expr(forms: list[LinForm], atoms: list[sp.Expr]) -> sp.Expr:
    """Max over linear forms, dropping duplicates and forms dominated coefficientwise."""
    uniq: list[LinForm] = []
    for f in forms:
        f = {t: c for t, c in f.items() if c != 0}
        if any(f == g for g in uniq):
            continue
        uniq.append(f)
    keep = []
    for i, f in enumerate(uniq):
        dominated = any(j != i and all(g.get(t, 0) >= c for t, c in f.items()) and g != f for j, g in enumerate(uniq))
        if not dominated:
            keep.append(f)
    exprs = [lin_expr(f, atoms) for f in keep]
    exprs = [e for e in exprs if e != 0]
    if not exprs:
        return sp.Integer(0)
    return exprs[0] if len(exprs) == 1 else sp.Max(*exprs)


def written_error(h: CanonHead, e: list[LinForm], D: list[Fraction], atom: int) -> list[LinForm]:
    """Error the head writes into each residual coordinate (:mod:`softhard.bounds.composed`)."""
    VO = h.vo()
    d = VO.shape[0]
    out = []
    dirty = [a for a in range(d) if e[a]]
    for b in range(d):
        f: LinForm = {}
        for a in dirty:
            c = abs(VO[a, b])
            if c:
                f = lin_add(f, e[a], c)
        if D[b]:
            f[atom] = f.get(atom, Fraction(0)) + D[b]
        out.append(f)
    return out


def spread(h: CanonHead, box: Box) -> list[Fraction]:
    """``D_b``: width of the hull of the written vectors ``x_j W_V W_O`` over attendable positions."""
    VO = h.vo()
    hl, hh = box.hull()
    lo, hi = interval_matmul(hl, hh, VO)
    return [b - a for a, b in zip(lo, hi)]


def _mlp_groups(m, e: list[LinForm]) -> list[tuple[dict[int, Fraction], dict[int, Fraction]]]:
    """Units of a ReLU MLP grouped by their input direction on the error-carrying coordinates:
    per group, ``(|r_ga| by coordinate a, max(P_gb, N_gb) by output coordinate b)``
    (:mod:`softhard.bounds.composed`)."""
    d = len(e)
    dirty = [a for a in range(d) if e[a]]
    if not dirty:
        return []
    W1, W2 = m.W1, m.W2
    groups: dict[tuple, list[tuple[int, Fraction]]] = {}
    for u in range(W1.shape[1]):
        col = [W1[a, u] for a in dirty]
        piv = next((x for x in col if x != 0), None)
        if piv is None:
            continue
        groups.setdefault(tuple(x / piv for x in col), []).append((u, piv))
    out = []
    for key, units in groups.items():
        r = {a: abs(x) for a, x in zip(dirty, key) if x}
        coefs = {}
        for b in range(d):
            P = sum((max(Fraction(0), al * W2[u, b]) for u, al in units), Fraction(0))
            N_ = sum((max(Fraction(0), -al * W2[u, b]) for u, al in units), Fraction(0))
            if max(P, N_):
                coefs[b] = max(P, N_)
        out.append((r, coefs))
    return out


def mlp_step(m, e: list[LinForm]) -> tuple[list[LinForm], list[tuple]]:
    """Error after a residual ReLU MLP (:mod:`softhard.bounds.composed`); also returns the unit groups."""
    groups = _mlp_groups(m, e)
    out = [dict(f) for f in e]
    for r, coefs in groups:
        dz: LinForm = {}
        for a, ra in r.items():
            dz = lin_add(dz, e[a], ra)
        for b, c in coefs.items():
            out[b] = lin_add(out[b], dz, c)
    return out, groups
