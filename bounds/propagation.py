"""Per-coordinate error propagation over atoms, shared by the composed bound, Hahn's bound
(:mod:`softhard.bounds.composed`, whose module docstring derives the rules) and the bounds of
compiled Tracr models (:mod:`softhard.bounds.tracr`).

An error is a :data:`LinForm`: a nonnegative rational combination of one *atom* per head.  A head
writes ``Σ_a |(W_V W_O)_ab| e_a + D_b·Θ_h`` into coordinate b (:func:`written_error`, with the
spread ``D_b`` of :func:`spread`); a residual ReLU MLP moves the error as in :func:`mlp_step`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from ..constructions.hard_model import CanonHead, LNSpec
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


# --------------------------------------------------------------------------------------------
# layer norm (THEORY §6; docs/models.md "Layer norm")


def _sqrt_floor(q: Fraction, bits: int = 64) -> Fraction:
    """A rational ≤ √q (q ≥ 0), within 2^-bits."""
    return Fraction(math.isqrt(q.numerator * (1 << (2 * bits)) // q.denominator), 1 << bits)


def _inv_sqrt_up(q: Fraction, bits: int = 64) -> Fraction:
    """A rational ≥ 1/√q (q > 0), within about 2^-bits relative."""
    return Fraction(math.isqrt(q.denominator * (1 << (2 * bits)) // q.numerator) + 1, 1 << bits)


def ln_constants(ln: LNSpec, var_min: Fraction | None) -> tuple[Fraction, Fraction, Fraction]:
    """``(c1, c2, ρ)`` of a layer norm's local Lipschitz bound (:func:`ln_step`): ``c1 ≥ 1/√(v/4 + eps)``,
    ``c2 ≥ 1/√eps``, ``ρ ≤ √(m·v)/2`` for the premise ``v = var_min`` (the smallest variance of the
    norm's input over the analysed hard runs; None or 0: ρ = 0 and only c2 is used).  Exact rationals."""
    m = len(ln.coords)
    c2 = _inv_sqrt_up(ln.eps)
    if not var_min:
        return c2, c2, Fraction(0)
    return _inv_sqrt_up(var_min / 4 + ln.eps), c2, _sqrt_floor(m * var_min) / 2


def ln_step(ln: LNSpec, e: list[LinForm], var_min: Fraction | None, atoms: list[sp.Expr]) -> tuple[list[LinForm], dict]:
    """Errors after a layer norm ``x[target] ← γ ⊙ (x[coords] − μ)/√(v + eps) + β``.

    With ``E = Σ_{a∈coords} e_a`` (≥ the ℓ2 norm of the input error, and centring does not increase
    it), the map ``u ↦ u/√(|u|²/m + eps)`` is ``1/σ``-Lipschitz in ℓ2 wherever ``σ = √(|u|²/m + eps)``,
    so ``|Δy_b| ≤ |γ_b|·E/σ_min`` on the segment between the hard and the soft input.  The premise
    (variance of the hard input ≥ v on every analysed input) gives ``|u| ≥ √(m v) − E``: if
    ``E ≤ ρ = √(m v)/2`` then ``σ ≥ √(v/4 + eps)`` (constant c1), else ``σ ≥ √eps`` (c2).  Since
    ``[E > ρ] ≤ E/ρ``, ``|Δy_b| ≤ |γ_b|·c1·φ`` with the new atom ``φ = E + (c2/c1 − 1)·E²/ρ``
    (just ``c2·E`` without a premise; a polynomial in the parents' atoms: SymPy substitutes into
    rational functions of repeated exponential sums very slowly, so no min and no division here).  The target coordinates' errors are replaced by ``|γ_b|·c1·φ``
    (exact input: 0); returns the new errors and the node's description.  Appends φ to ``atoms``.
    """
    c1, c2, rho = ln_constants(ln, var_min)
    E: LinForm = {}
    for a in ln.coords:
        E = lin_add(E, e[a])
    new = [dict(f) for f in e]
    info = {"c1": str(up(c1)), "c2": str(up(c2)), "rho": str(rho), "variance_min": str(var_min)}
    if not E:
        for t in ln.target:
            new[t] = {}
        info["phi"] = "0"
        return new, info
    Ex = lin_expr(E, atoms)
    if rho > 0:
        k = up((c2 / c1 - 1) / rho)
        phi = Ex + k * Ex**2
        info["local"] = f"phi = E + {k}*E**2, E = sum of e over {len(ln.coords)} coordinates"
    else:
        phi, c1 = Ex, c2
        info["local"] = "phi = E (no variance premise: global constant 1/sqrt(eps))"
    idx = len(atoms)
    atoms.append(phi)
    for k, t in enumerate(ln.target):
        g = abs(ln.gamma[k])
        new[t] = {idx: Fraction(up(g * c1))} if g else {}
    info["phi"] = str(phi)
    return new, info
