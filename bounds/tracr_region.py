"""The tolerance region of a discretising MLP that writes an output (THEORY §3, §6; docs/tracr.md,
"Composition per context").

A ReLU MLP whose error-carrying inputs enter its units along one direction z is, around a hard
context P (the vector of hard pre-activations), the piecewise-linear function of the input error Δ

    F_b(Δ) = Σ_u W2[u, b]·(relu(P_u + α_u·Δ) − relu(P_u))        (α_u: the unit's weight along z)

in each written coordinate b.  :mod:`softhard.bounds.tracr` bounds it by the slope at Δ = 0 inside
the distance r(P) to the nearest kink.  When the MLP's output coordinates are read by nothing but
the model's output, what matters is only that the output stays within the tolerance ε, which
holds on a wider interval: :func:`tolerance_region` computes, exactly,

* ``rho`` = sup{δ ≥ 0 : max_{|Δ| ≤ δ} max_b |F_b(Δ)| ≤ ε} (None: every Δ), and
* ``L`` = sup_{0 < δ ≤ rho} max_{|Δ| ≤ δ} max_b |F_b(Δ)| / δ,

so that an input error e_z ≤ rho moves every output coordinate by at most L·e_z ≤ ε·… — the
bound and its condition that :func:`softhard.bounds.tracr.compose` uses per context.  The
supremum of a piecewise-linear ratio is attained at Δ → 0⁺, at a kink, or at rho, so both numbers
are exact rationals from finitely many evaluations.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence


def _F(W2, units: Sequence[tuple[int, Fraction]], P: Sequence[Fraction], coords: Sequence[int], sg: int,
       t: Fraction) -> list[Fraction]:
    zero = Fraction(0)
    return [sum((W2[u, b] * (max(P[u] + sg * al * t, zero) - max(P[u], zero)) for u, al in units), zero)
            for b in coords]


def _kinks(units, P, sg: int) -> list[Fraction]:
    return sorted({-P[u] / (sg * al) for u, al in units if al != 0 and -P[u] / (sg * al) > 0})


def _first_exceed(W2, units, P, coords, sg: int, eps: Fraction) -> Fraction | None:
    """The smallest t > 0 at which some |F_b(sg·t)| reaches ε with F growing past it; None if never."""
    prev = Fraction(0)
    ks = _kinks(units, P, sg)
    for t in ks + [None]:
        end = prev + 1 if t is None else t
        f0, f1 = _F(W2, units, P, coords, sg, prev), _F(W2, units, P, coords, sg, end)
        cands = []
        for a, b in zip(f0, f1):
            slope = (b - a) / (end - prev)
            if slope == 0:
                continue
            for target in (eps, -eps):
                s = prev + (target - a) / slope
                if s > prev and (t is None or s <= t) and abs(a) <= eps:
                    cands.append(s)
        if cands:
            return min(cands)
        if t is None:
            return None
        prev = t
    return None  # pragma: no cover - the loop returns


def _ratio_sup(W2, units, P, coords, sg: int, limit: Fraction | None) -> Fraction:
    """sup over 0 < t ≤ limit of max_b |F_b(sg·t)|/t: the slope at 0⁺, the kinks up to the limit,
    and the limit itself (None: every kink, then the slope of the last, unbounded piece)."""
    zero = Fraction(0)
    eps0 = min((abs(-P[u] / al) for u, al in units if al != 0 and P[u] != 0), default=Fraction(1))
    t0 = eps0 / 2 if eps0 > 0 else Fraction(1, 10**9)
    if limit is not None:
        t0 = min(t0, limit)
    pts = [t0] + [t for t in _kinks(units, P, sg) if limit is None or t <= limit]
    if limit is not None:
        pts.append(limit)
    best = zero
    for t in pts:
        best = max(best, max((abs(v) for v in _F(W2, units, P, coords, sg, t)), default=zero) / t)
    if limit is None:  # the last piece: the ratio tends to its slope, bounded by the value at the last kink
        last = max(pts)
        far = last * 2 + 1
        best = max(best, max((abs(v) for v in _F(W2, units, P, coords, sg, far)), default=zero) / far)
    return best


def tolerance_region(W2, units: Sequence[tuple[int, Fraction]], P: Sequence[Fraction], coords: Sequence[int],
                     eps: Fraction) -> tuple[Fraction | None, Fraction]:
    """``(rho, L)`` of the module docstring for one hard context ``P`` (exact Fractions; ``W2`` the
    MLP's second weight matrix, indexable ``W2[u, b]``; ``units`` the ``(unit, α_u)`` reading the
    error direction; ``coords`` the output coordinates; ``eps`` > 0 the tolerance).  On the first
    piece t ≤ the nearest kink, F is linear, so on [0, rho] the function is below L·t and equals ε
    at rho (when rho is not None).  Raises ValueError for ``eps ≤ 0``."""
    if eps <= 0:
        raise ValueError("the tolerance must be > 0")
    sides = [_first_exceed(W2, units, P, coords, sg, eps) for sg in (1, -1)]
    finite = [r for r in sides if r is not None]
    rho = min(finite) if finite else None
    L = max(_ratio_sup(W2, units, P, coords, sg, rho) for sg in (1, -1))
    return rho, L
