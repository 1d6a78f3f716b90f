"""Directed rounding and interval activation bounds of a canonical model (THEORY §6).

Every constant of a composed bound is an exact rational rounded *outward* to :data:`DIGITS`
significant digits (:func:`up` for norms, spreads and Lipschitz coefficients, :func:`down` for
gaps).  The activation boxes ``[lo_a, hi_a]`` for the BOS row and for the other rows are
propagated by interval arithmetic (endpoints rounded outward to 2^-64) through every layer; an
attention output (hard *or* soft) is a convex combination of attendable values, so the boxes hold
for both runs.  Unbounded positional families are bounded using ``n ≤ N``.  The recursion that
uses them is described in :mod:`softhard.bounds.composed`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy as sp

from ..constructions.hard_model import HardModel, LNSpec
from ..constructions.positional import family_range

DIGITS = 12


# --------------------------------------------------------------------------------------------
# directed rounding


def up(x: Fraction, digits: int = DIGITS) -> sp.Rational:
    """Smallest decimal with ``digits`` significant digits that is ≥ x (exact SymPy Rational)."""
    return _round(x, digits, True)


def down(x: Fraction, digits: int = DIGITS) -> sp.Rational:
    """Largest decimal with ``digits`` significant digits that is ≤ x."""
    return _round(x, digits, False)


def _round(x: Fraction, digits: int, upward: bool) -> sp.Rational:
    x = Fraction(x)
    if x == 0:
        return sp.Integer(0)
    neg = x < 0
    a = -x if neg else x
    e = math.floor(math.log10(a.numerator) - math.log10(a.denominator))
    # guard against floating error in e
    while Fraction(10) ** e > a:
        e -= 1
    while Fraction(10) ** (e + 1) <= a:
        e += 1
    s = digits - 1 - e
    scale = Fraction(10) ** s
    v = a * scale
    fl = v.numerator // v.denominator
    mag_up = (upward and not neg) or (not upward and neg)
    k = fl if (not mag_up or fl == v) else fl + 1
    r = Fraction(k) / scale
    r = -r if neg else r
    return sp.Rational(r.numerator, r.denominator)


def _rd(x: Fraction) -> Fraction:
    """Outward rounding helper for interval endpoints: to 2^-64 below."""
    return Fraction(math.floor(x * 2**64), 2**64)


def _ru(x: Fraction) -> Fraction:
    return Fraction(-math.floor(-x * 2**64), 2**64)


# --------------------------------------------------------------------------------------------
# interval activation bounds


@dataclass
class Box:
    """Per-coordinate intervals: ``bos_lo/bos_hi`` (the BOS row), ``lo/hi`` (every other row)."""

    bos_lo: list[Fraction]
    bos_hi: list[Fraction]
    lo: list[Fraction]
    hi: list[Fraction]

    def hull(self) -> tuple[list[Fraction], list[Fraction]]:
        return ([min(a, b) for a, b in zip(self.bos_lo, self.lo)], [max(a, b) for a, b in zip(self.bos_hi, self.hi)])

    def magnitude(self) -> list[Fraction]:
        lo, hi = self.hull()
        return [max(abs(a), abs(b)) for a, b in zip(lo, hi)]


def interval_matmul(lo: list[Fraction], hi: list[Fraction], W: np.ndarray) -> tuple[list[Fraction], list[Fraction]]:
    """Interval of ``x W`` for ``x`` in the box ``[lo, hi]`` (exact, then rounded outward)."""
    d, c = W.shape
    olo, ohi = [Fraction(0)] * c, [Fraction(0)] * c
    for a in range(d):
        la, ha = lo[a], hi[a]
        for j in range(c):
            w = W[a, j]
            if w == 0:
                continue
            p, q = w * la, w * ha
            if p <= q:
                olo[j] += p
                ohi[j] += q
            else:
                olo[j] += q
                ohi[j] += p
    return [_rd(v) for v in olo], [_ru(v) for v in ohi]


def _iadd(a: tuple, b: tuple) -> tuple[list[Fraction], list[Fraction]]:
    return [x + y for x, y in zip(a[0], b[0])], [x + y for x, y in zip(a[1], b[1])]


def _relu(iv: tuple) -> tuple[list[Fraction], list[Fraction]]:
    return [max(x, Fraction(0)) for x in iv[0]], [max(x, Fraction(0)) for x in iv[1]]


def embedding_box(hm: HardModel, n_max: int | None) -> Box:
    """Box of the embedding for words of length ≤ ``n_max`` (``None``: every length; bounded
    positional embeddings only).  Raises ``ValueError`` for an unbounded family with ``n_max=None``."""
    d = hm.d
    E = hm.token_embedding
    bos = [E[0, a] for a in range(d)]
    lo = [min(E[t, a] for t in range(1, E.shape[0])) for a in range(d)]
    hi = [max(E[t, a] for t in range(1, E.shape[0])) for a in range(d)]
    plo, phi = [Fraction(0)] * d, [Fraction(0)] * d
    if hm.table is not None:
        T = hm.table
        last = T.shape[0] - 1 if n_max is None else min(n_max, T.shape[0] - 1)
        for a in range(d):
            bos[a] += T[0, a]
            col = [T[j, a] for j in range(1, last + 1)]
            plo[a] += min(col)
            phi[a] += max(col)
    for f in hm.features:
        flo, fhi = family_range(f, n_max)
        for a in range(d):
            c = f.vector[a]
            if c == 0:
                continue
            p, q = c * flo, c * fhi
            plo[a] += min(p, q)
            phi[a] += max(p, q)
    return Box(bos_lo=list(bos), bos_hi=list(bos), lo=[x + y for x, y in zip(lo, plo)],
               hi=[x + y for x, y in zip(hi, phi)])


def _mlp_box(lo: list[Fraction], hi: list[Fraction], m) -> tuple[list[Fraction], list[Fraction]]:
    """Interval of ``relu(x W1 + b1) W2 + b2`` over the box, tighter than plain interval arithmetic:
    coordinates fixed in the box are folded into the biases; units whose remaining input weights
    are multiples of one direction ``r`` are functions of the single scalar ``z = r·x``, and their
    summed contribution to each output (a piecewise-linear function of z) is bounded exactly by
    its values at the ends of z's interval and at its breakpoints."""
    d = len(lo)
    W1, W2 = m.W1, m.W2
    h = W1.shape[1]
    var = [a for a in range(d) if lo[a] != hi[a]]
    bias = [m.b1[u] + sum((W1[a, u] * lo[a] for a in range(d) if lo[a] == hi[a] and W1[a, u] != 0), Fraction(0))
            for u in range(h)]
    olo, ohi = list(m.b2), list(m.b2)
    groups: dict[tuple, list[tuple[int, Fraction]]] = {}
    for u in range(h):
        col = [W1[a, u] for a in var]
        piv = next((x for x in col if x != 0), None)
        if piv is None:
            r = max(bias[u], Fraction(0))
            if r:
                for b in range(d):
                    if W2[u, b]:
                        olo[b] += W2[u, b] * r
                        ohi[b] += W2[u, b] * r
            continue
        groups.setdefault(tuple(x / piv for x in col), []).append((u, piv))
    for key, units in groups.items():
        zlo, zhi = Fraction(0), Fraction(0)
        for a, r in zip(var, key):
            p, q = r * lo[a], r * hi[a]
            zlo += min(p, q)
            zhi += max(p, q)
        pts = {zlo, zhi}
        for u, al in units:
            z0 = -bias[u] / al
            if zlo < z0 < zhi:
                pts.add(z0)
        outs = [b for b in range(d) if any(W2[u, b] != 0 for u, _ in units)]
        for b in outs:
            vals = [sum((W2[u, b] * max(al * z + bias[u], Fraction(0)) for u, al in units), Fraction(0)) for z in pts]
            olo[b] += min(vals)
            ohi[b] += max(vals)
    return [_rd(v) for v in olo], [_ru(v) for v in ohi]


@dataclass
class Stage:
    """The box entering one sublayer: ``kind`` "attn" (layer's heads) or "mlp" (index ``k``)."""

    layer: int
    kind: str
    k: int
    box: Box


def ln_box(box: Box, ln: LNSpec) -> Box:
    """The box after a layer norm: each target coordinate lies in ``β_k ± |γ_k|·√(m−1)``
    (``|c_b| ≤ √((m−1)/m)·|c|`` and ``σ ≥ |c|/√m``); the others are unchanged."""
    m = len(ln.coords)
    r = Fraction(math.isqrt((m - 1) * (1 << 128)) + 1, 1 << 64)  # ≥ √(m−1)
    out = Box(list(box.bos_lo), list(box.bos_hi), list(box.lo), list(box.hi))
    for k, t in enumerate(ln.target):
        w = abs(ln.gamma[k]) * r
        out.bos_lo[t], out.bos_hi[t] = ln.beta[k] - w, ln.beta[k] + w
        out.lo[t], out.hi[t] = ln.beta[k] - w, ln.beta[k] + w
    return out


def activation_boxes(hm: HardModel, n_max: int | None) -> list[Stage]:
    """Boxes entering every sublayer, in order (a layer's norms before its heads, the heads, the
    norms after them, its MLPs, the norms after them; kind "ln" with ``k`` the norm's index in
    ``hm.lns[layer]``), plus the final one (kind "out").  Valid for hard and soft runs (module
    docstring)."""
    box = embedding_box(hm, n_max)
    stages = []

    def norms(li: int, point: str) -> None:
        nonlocal box
        for ln in hm.lns_at(li, point):
            stages.append(Stage(li, "ln", hm.lns[li].index(ln), box))
            box = ln_box(box, ln)

    for li, (hs, ms) in enumerate(zip(hm.heads, hm.mlps)):
        norms(li, "before_heads")
        stages.append(Stage(li, "attn", 0, box))
        if hs:
            bl, bh = list(box.bos_lo), list(box.bos_hi)
            nl, nh = list(box.lo), list(box.hi)
            hl, hh = box.hull()
            for h in hs:
                VO = h.vo()
                wb = interval_matmul(box.bos_lo, box.bos_hi, VO)
                wa = interval_matmul(hl, hh, VO)
                bl, bh = _iadd((bl, bh), wb)
                nl, nh = _iadd((nl, nh), wa)
            box = Box(bl, bh, nl, nh)
        norms(li, "after_heads")
        for mi, m in enumerate(ms):
            stages.append(Stage(li, "mlp", mi, box))
            out = [_iadd((lo, hi), _mlp_box(lo, hi, m)) for lo, hi in ((box.bos_lo, box.bos_hi), (box.lo, box.hi))]
            box = Box(out[0][0], out[0][1], out[1][0], out[1][1])
        norms(li, "after_mlps")
    stages.append(Stage(len(hm.heads), "out", 0, box))
    return stages
